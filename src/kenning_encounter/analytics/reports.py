"""What the focused projection tools answer: a projection's facts, an algorithm's report.

Apart from the catalog that fills them, because the tools publish these as their
output schemas when the server is built, and building the server must not
import the numeric stack the catalog runs on.
"""

from __future__ import annotations

from kenning_encounter.analytics.panel import (
    CommunitiesSection,
    ComponentsSection,
    FrozenModel,
    Listing,
    Ranked,
)


class ProjectionInfo(FrozenModel):
    name: str
    nodes: int
    edges: int
    scope: str
    engine: str
    idle_seconds: float  # how long it has gone unused


class AlgorithmReport(FrozenModel):
    projection: str
    algorithm: str
    engine: str
    detail: str
    nodes: int
    edges: int
    top: Listing[Ranked] | None = None
    communities: CommunitiesSection | None = None
    components: ComponentsSection | None = None
    text: str = ""
