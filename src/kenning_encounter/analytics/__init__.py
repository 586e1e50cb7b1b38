"""Analytics over the authored-edge graph.

- ``build_projection`` / ``Projection``: the graph, heads of revision chains by default,
  optionally scoped by node types or around a node;
- ``Engine`` / ``EngineGraph``: the engine port; ``InProcessEngine`` (igraph + scipy);
- ``build_panel`` / ``orient_panel``: the orient panel (the latter with drift baselines); ``BaselineStore``: mass readings for drift;
- ``ProjectionCatalog``: named projections for the focused tools.

The names are looked up on first use (PEP 562): importing one light module of
this package (the panel's models, the reports) must not import igraph, numpy
and scipy, which the server needs only when an analytics tool runs.
"""

from __future__ import annotations

import importlib as _importlib
import typing as _typing

if _typing.TYPE_CHECKING:
    from kenning_encounter.analytics.algorithms import InProcessEngine
    from kenning_encounter.analytics.baseline import Baseline, BaselineStore
    from kenning_encounter.analytics.catalog import ALGORITHMS, ProjectionCatalog
    from kenning_encounter.analytics.engine import Engine, EngineGraph
    from kenning_encounter.analytics.orient import SectionTimer, build_panel, orient_panel
    from kenning_encounter.analytics.panel import Panel
    from kenning_encounter.analytics.projection import Projection, Scope, build_projection
    from kenning_encounter.analytics.reports import AlgorithmReport, ProjectionInfo

_HOME: _typing.Final[dict[str, str]] = {
    "ALGORITHMS": "catalog",
    "AlgorithmReport": "reports",
    "Baseline": "baseline",
    "BaselineStore": "baseline",
    "Engine": "engine",
    "EngineGraph": "engine",
    "InProcessEngine": "algorithms",
    "Panel": "panel",
    "Projection": "projection",
    "ProjectionCatalog": "catalog",
    "ProjectionInfo": "reports",
    "Scope": "projection",
    "SectionTimer": "orient",
    "build_panel": "orient",
    "build_projection": "projection",
    "orient_panel": "orient",
}

__all__ = [
    "ALGORITHMS",
    "AlgorithmReport",
    "Baseline",
    "BaselineStore",
    "Engine",
    "EngineGraph",
    "InProcessEngine",
    "Panel",
    "Projection",
    "ProjectionCatalog",
    "ProjectionInfo",
    "Scope",
    "SectionTimer",
    "build_panel",
    "build_projection",
    "orient_panel",
]


def __getattr__(name: str) -> _typing.Any:
    # An AttributeError for anything else lets ``from ... import power`` load the submodule.
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(_importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value
