"""Fault injection for server subprocesses started by the tests, never imported otherwise.

A test that needs the memory to fail puts this folder first on the server's
PYTHONPATH and names the fault in KENNING_ENCOUNTER_TEST_FAULT; Python imports
this module at start-up. The fault is placed at the storage boundary (the
lexical index's queries raise as a failing disk would), so everything
above it — the pipeline, /infuse, the hook — runs as it would in a real failure.
Production code carries no switch for it.
"""

from __future__ import annotations

import os

if os.environ.get("KENNING_ENCOUNTER_TEST_FAULT") == "infuse":
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    def _failing_query(self: object, *args: object, **kwargs: object) -> object:
        raise OSError("injected fault: the text index cannot be read")

    EmbeddedStore.fulltext = _failing_query  # type: ignore[method-assign,assignment]
