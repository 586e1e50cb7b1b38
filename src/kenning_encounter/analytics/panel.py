"""The orient panel as structured data: frozen pydantic models, JSON-ready.

Every list is a ``Listing``: the items shown and how many there were in all, so
a reader always knows what the budget left out. ``trim(k)`` returns a copy
with at most ``k`` items in every listing; the panel builder uses it to fit the
rendering into its character budget.
"""

from __future__ import annotations

from typing import Generic, Self, TypeVar

from pydantic import ConfigDict

from kenning_encounter.lazymodel import LazyModel

T = TypeVar("T")


class FrozenModel(LazyModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NodeRef(FrozenModel):
    id: str
    name: str
    type: str
    status: str | None = None


class Listing(FrozenModel, Generic[T]):
    total: int
    items: tuple[T, ...] = ()

    def trim(self, k: int) -> Self:
        return self if len(self.items) <= k else self.model_copy(update={"items": self.items[:k]})


class Ranked(FrozenModel):
    node: NodeRef
    score: float


class Leaning(FrozenModel):
    """A node placed by both readings; percentiles run 0 (lowest) to 1 (highest)."""

    node: NodeRef
    mass_pct: float
    frontier_pct: float
    frontier_links: int = 0  # relations to open questions or live hypotheses


class Community(FrozenModel):
    size: int
    label: tuple[NodeRef, ...]  # its most massive members


class Bridge(FrozenModel):
    a: NodeRef
    b: NodeRef
    cut_off: int  # nodes on the smaller side


class Star(FrozenModel):
    node: NodeRef
    degree: int
    clustering: float


class Shift(FrozenModel):
    node: NodeRef
    before: int | None  # mass rank at the baseline; None: below the ranks kept
    after: int | None  # mass rank now; None: gone from the graph


class Waiting(FrozenModel):
    node: NodeRef
    encounter: str | None
    tick: int


class Summary(FrozenModel):
    nodes: int
    edges: int
    folded: int  # revisions folded into their heads
    scope: str
    frontier_seeds: int
    engines: dict[str, str]  # section -> engine that computed it
    shown_per_section: int


class MassSection(FrozenModel):
    definition: str
    detail: str
    top: Listing[Ranked]


class FrontierMassSection(FrozenModel):
    definition: str
    detail: str
    top: Listing[Ranked]


class DivergenceSection(FrozenModel):
    definition: str
    accumulated_only: Listing[Leaning]
    leaned_on: Listing[Leaning]


class QuietSection(FrozenModel):
    definition: str
    nodes: Listing[Leaning]


class BetweennessSection(FrozenModel):
    detail: str
    exact: bool
    top: Listing[Ranked]


class CommunitiesSection(FrozenModel):
    detail: str
    count: int
    singletons: int
    modularity: float
    largest: Listing[Community]


class ComponentsSection(FrozenModel):
    count: int
    largest_share: float
    sizes: Listing[int]
    isolated: Listing[NodeRef]


class FragilitySection(FrozenModel):
    articulation_points: Listing[Ranked]  # scored by betweenness
    bridges: Listing[Bridge]  # bridges that cut off more than one node
    pendant_bridges: int  # bridges that cut off a single node


class WeaveSection(FrozenModel):
    definition: str
    stars: Listing[Star]


class DriftSection(FrozenModel):
    baseline_encounter: str | None
    baseline_saved_at: str | None
    note: str
    risers: Listing[Shift]
    fallers: Listing[Shift]
    new: Listing[Ranked]


class FrontierView(FrozenModel):
    open_questions: Listing[Waiting]
    live_hypotheses: Listing[Waiting]  # untested or challenged
    ungrounded_concepts: Listing[Waiting]


class Faded(FrozenModel):
    node: NodeRef
    tier: str
    idle_days: float  # since its latest use


class FadingSection(FrozenModel):
    """Relevance over time (memory/activation.py): how many nodes stand in each tier, and
    the most massive ones that are fading, which the work leans on but stopped using."""

    definition: str
    half_life_days: float
    tiers: dict[str, int]
    massive_fading: Listing[Faded]


class Panel(FrozenModel):
    """What orient returns. ``text`` is the budgeted rendering of the rest."""

    summary: Summary
    guide: str | None = None  # set when there is too little to read
    mass: MassSection | None = None
    frontier_mass: FrontierMassSection | None = None
    divergence: DivergenceSection | None = None
    quiet: QuietSection | None = None
    frontier: FrontierView | None = None
    drift: DriftSection | None = None
    betweenness: BetweennessSection | None = None
    communities: CommunitiesSection | None = None
    components: ComponentsSection | None = None
    fragility: FragilitySection | None = None
    weave_audit: WeaveSection | None = None
    fading: FadingSection | None = None
    omitted: tuple[str, ...] = ()  # sections left out to fit the budget
    text: str = ""

    def trim(self, k: int) -> Panel:
        """A copy with at most ``k`` items per listing."""
        update: dict[str, object] = {
            "summary": self.summary.model_copy(update={"shown_per_section": k})
        }
        for name in SECTION_ORDER:
            section = getattr(self, name)
            if section is None:
                continue
            changes = {
                field: value.trim(k) for field, value in section if isinstance(value, Listing)
            }
            update[name] = section.model_copy(update=changes)
        return self.model_copy(update=update)


# Reading order of the rendering.
SECTION_ORDER: tuple[str, ...] = (
    "mass",
    "frontier_mass",
    "divergence",
    "quiet",
    "frontier",
    "drift",
    "betweenness",
    "communities",
    "components",
    "fragility",
    "weave_audit",
    "fading",
)

# When even one item per section will not fit, sections go in this order; the
# frontier and the readings that push against mass go last.
DROP_ORDER: tuple[str, ...] = (
    "fading",
    "weave_audit",
    "components",
    "communities",
    "betweenness",
    "fragility",
    "drift",
    "mass",
    "quiet",
    "divergence",
    "frontier_mass",
    "frontier",
)
