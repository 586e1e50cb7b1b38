"""Analytics over the authored-edge graph.

- ``build_projection`` / ``Projection``: the graph, heads of revision chains by default,
  optionally scoped by node types or around a node;
- ``Engine`` / ``EngineGraph``: the engine port; ``InProcessEngine`` (igraph + scipy);
- ``build_panel`` / ``orient_panel``: the orient panel (the latter with drift baselines); ``BaselineStore``: mass readings for drift;
- ``ProjectionCatalog``: named projections for the focused tools.
"""

from kenning_encounter.analytics.algorithms import InProcessEngine
from kenning_encounter.analytics.baseline import Baseline, BaselineStore
from kenning_encounter.analytics.catalog import (
    ALGORITHMS,
    AlgorithmReport,
    ProjectionCatalog,
    ProjectionInfo,
)
from kenning_encounter.analytics.engine import Engine, EngineGraph
from kenning_encounter.analytics.orient import SectionTimer, build_panel, orient_panel
from kenning_encounter.analytics.panel import Panel
from kenning_encounter.analytics.projection import Projection, Scope, build_projection

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
