"""The port's operations, written once for every backend.

Each aggregate (the spine, nodes, relations) is a mixin over one abstract statement
runner: a backend's transaction class inherits them, supplies its query text for each
aggregate (``text.py``), its executor (``rows``), its row decoding (``node``) and the
bookkeeping only it needs (the hooks named ``_on_…``). What a walk, a union or a lookup
does is decided here, once.
"""
