"""The panel's sections, each built from the algorithm results of one reading.

Definitions the agent sees are stated here once, as the ``definition`` strings
of the sections; everything is ranked deterministically (ties go to the older
node), so the same graph always gives the same panel.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from kenning_encounter.analytics.engine import (
    Clustering,
    Communities,
    Components,
    FloatArray,
    Fragility,
    IntArray,
    Scores,
)
from kenning_encounter.analytics.panel import (
    BetweennessSection,
    Bridge,
    CommunitiesSection,
    Community,
    ComponentsSection,
    DivergenceSection,
    FragilitySection,
    FrontierMassSection,
    FrontierView,
    Leaning,
    Listing,
    MassSection,
    NodeRef,
    QuietSection,
    Ranked,
    Star,
    Waiting,
    WeaveSection,
)
from kenning_encounter.analytics.projection import Projection
from kenning_encounter.vocabulary import FRONTIER_STATUSES, NODE_TYPES

BoolArray = npt.NDArray[np.bool_]
Ref = Callable[[int], NodeRef]

PROMINENT_PCT = 0.75
DIVERGENCE_GAP = 0.25
QUIET_MASS_PCT = 0.5
STAR_MIN_DEGREE = 5
STAR_MAX_CLUSTERING = 0.1
LABEL_MEMBERS = 3
GROUNDING_RELATIONS = ("GROUNDS", "SUPPORTS")

MASS_DEFINITION = (
    "ArticleRank: weight accumulated along relations; each node passes on its score "
    "divided by its out-degree plus the mean out-degree"
)
FRONTIER_DEFINITION = (
    "PageRank over the undirected graph, restarting at open questions and untested or "
    "challenged hypotheses; lists what that walk reaches most, the seeds themselves left out"
)
DIVERGENCE_DEFINITION = (
    "percentiles of mass vs frontier mass: accumulated_only = top quarter by mass, "
    "at least 25 points lower by frontier mass; leaned_on = top quarter by frontier mass "
    "(seeds excluded), at least 25 points lower by mass"
)
QUIET_DEFINITION = (
    "lower half by mass, yet directly related to an open question or live hypothesis; "
    "most such relations first"
)
WEAVE_DEFINITION = (
    f"at least {STAR_MIN_DEGREE} neighbours, local clustering at most {STAR_MAX_CLUSTERING}: "
    "hubs whose neighbours are not related to each other"
)


def status_of(projection: Projection, i: int) -> str | None:
    node = projection.nodes[i]
    if node.status is not None:
        return node.status
    kind = NODE_TYPES.get(node.type)
    return kind.default_status if kind is not None else None


def frontier_seeds(projection: Projection) -> BoolArray:
    seeds = np.zeros(projection.node_count, dtype=np.bool_)
    for i, node in enumerate(projection.nodes):
        live = FRONTIER_STATUSES.get(node.type)
        if live is not None and status_of(projection, i) in live:
            seeds[i] = True
    return seeds


def top(values: FloatArray, candidates: IntArray, k: int) -> IntArray:
    """The ``k`` candidates with the highest values, ties to the lower position."""
    if candidates.shape[0] == 0:
        return candidates
    order = np.lexsort((candidates, -values[candidates]))
    return candidates[order[:k]]


def ranked(values: FloatArray, candidates: IntArray, ref: Ref, k: int) -> Listing[Ranked]:
    chosen = top(values, candidates, k)
    return Listing[Ranked](
        total=int(candidates.shape[0]),
        items=tuple(Ranked(node=ref(i), score=float(values[i])) for i in chosen.tolist()),
    )


def percentiles(values: FloatArray) -> FloatArray:
    """0 for the lowest value, 1 for the highest; ties share their average."""
    n = values.shape[0]
    if n < 2:
        return np.ones(n)
    # Average ranks, 0-based (scipy.stats.rankdata would cost the server 0.4 s of start-up).
    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts_run = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    starts = np.flatnonzero(starts_run)
    ends = np.append(starts[1:], n)
    run_of = np.cumsum(starts_run) - 1
    ranks = np.empty(n, dtype=np.float64)
    ranks[order] = ((starts + ends - 1) / 2.0)[run_of]
    return ranks / (n - 1)


def everyone(n: int) -> IntArray:
    return np.arange(n, dtype=np.int64)


def mass_section(mass: Scores, ref: Ref, k: int) -> MassSection:
    n = mass.values.shape[0]
    return MassSection(
        definition=MASS_DEFINITION,
        detail=mass.detail,
        top=ranked(mass.values, everyone(n), ref, k),
    )


def frontier_mass_section(
    frontier: Scores | None, seeds: BoolArray, ref: Ref, k: int
) -> FrontierMassSection:
    if frontier is None:
        return FrontierMassSection(
            definition=FRONTIER_DEFINITION,
            detail="no open questions or live hypotheses: nothing to rank from. Record a "
            "Question for what you need to find out, or a Hypothesis to test",
            top=Listing[Ranked](total=0),
        )
    reached = np.flatnonzero((frontier.values > 0) & ~seeds)
    return FrontierMassSection(
        definition=FRONTIER_DEFINITION,
        detail=frontier.detail,
        top=ranked(frontier.values, reached, ref, k),
    )


def frontier_links(projection: Projection, seeds: BoolArray) -> IntArray:
    """Relations each node has with frontier nodes, in either direction."""
    n = projection.node_count
    s, t = projection.sources, projection.targets
    into = np.bincount(t[seeds[s]], minlength=n)
    out = np.bincount(s[seeds[t]], minlength=n)
    return (into + out).astype(np.int64)


def _leanings(
    idx: IntArray, mass_pct: FloatArray, front_pct: FloatArray, links: IntArray, ref: Ref
) -> tuple[Leaning, ...]:
    return tuple(
        Leaning(
            node=ref(i),
            mass_pct=round(float(mass_pct[i]), 3),
            frontier_pct=round(float(front_pct[i]), 3),
            frontier_links=int(links[i]),
        )
        for i in idx.tolist()
    )


def divergence_and_quiet(
    projection: Projection,
    mass: Scores,
    frontier: Scores | None,
    seeds: BoolArray,
    ref: Ref,
    k: int,
) -> tuple[DivergenceSection, QuietSection]:
    empty = Listing[Leaning](total=0)
    if frontier is None:
        return (
            DivergenceSection(
                definition=DIVERGENCE_DEFINITION, accumulated_only=empty, leaned_on=empty
            ),
            QuietSection(definition=QUIET_DEFINITION, nodes=empty),
        )
    mass_pct = percentiles(mass.values)
    front_pct = percentiles(frontier.values)
    gap = front_pct - mass_pct
    links = frontier_links(projection, seeds)
    pos = everyone(projection.node_count)

    accumulated = pos[(mass_pct >= PROMINENT_PCT) & (gap <= -DIVERGENCE_GAP)]
    accumulated = accumulated[
        np.lexsort((accumulated, -mass.values[accumulated], gap[accumulated]))
    ]
    leaned = pos[(front_pct >= PROMINENT_PCT) & (gap >= DIVERGENCE_GAP) & ~seeds]
    leaned = leaned[np.lexsort((leaned, -frontier.values[leaned], -gap[leaned]))]
    quiet = pos[(mass_pct < QUIET_MASS_PCT) & (links > 0) & ~seeds]
    quiet = quiet[np.lexsort((quiet, -frontier.values[quiet], -links[quiet]))]

    def listing(idx: IntArray) -> Listing[Leaning]:
        return Listing[Leaning](
            total=int(idx.shape[0]), items=_leanings(idx[:k], mass_pct, front_pct, links, ref)
        )

    return (
        DivergenceSection(
            definition=DIVERGENCE_DEFINITION,
            accumulated_only=listing(accumulated),
            leaned_on=listing(leaned),
        ),
        QuietSection(definition=QUIET_DEFINITION, nodes=listing(quiet)),
    )


def betweenness_section(between: Scores, ref: Ref, k: int) -> BetweennessSection:
    return BetweennessSection(
        detail=f"undirected; {between.detail}",
        exact=between.sampled_from is None,
        top=ranked(between.values, np.flatnonzero(between.values > 0), ref, k),
    )


def communities_section(
    communities: Communities, mass: FloatArray, ref: Ref, k: int
) -> CommunitiesSection:
    sizes = communities.sizes
    groups = int(np.count_nonzero(sizes > 1))
    shown = min(groups, k)
    # Members sorted by community, then by mass: each community's label is the
    # head of its run.
    order = np.lexsort((np.arange(mass.shape[0]), -mass, communities.membership))
    starts = np.searchsorted(communities.membership[order], np.arange(shown))
    largest = tuple(
        Community(
            size=int(sizes[c]),
            label=tuple(
                ref(int(i)) for i in order[starts[c] : starts[c] + min(LABEL_MEMBERS, sizes[c])]
            ),
        )
        for c in range(shown)
    )
    runs = communities.iterations
    how = "until stable" if runs < 0 else f"{runs} iteration{'' if runs == 1 else 's'}"
    return CommunitiesSection(
        detail=f"Leiden, modularity objective, {how}, seed {communities.seed}; "
        "labelled by their most massive members",
        count=communities.count,
        singletons=communities.count - groups,
        modularity=round(communities.modularity, 4),
        largest=Listing[Community](total=groups, items=largest),
    )


def components_section(
    components: Components, projection: Projection, ref: Ref, k: int
) -> ComponentsSection:
    n = projection.node_count
    isolated = components.isolated
    recent = isolated[np.lexsort((-isolated, -projection.first_tick[isolated]))]
    return ComponentsSection(
        count=components.count,
        largest_share=round(float(components.sizes[0]) / n, 4) if n else 0.0,
        sizes=Listing[int](
            total=components.count, items=tuple(int(s) for s in components.sizes[:k])
        ),
        isolated=Listing[NodeRef](
            total=int(isolated.shape[0]), items=tuple(ref(i) for i in recent[:k].tolist())
        ),
    )


def fragility_section(
    fragility: Fragility, between: FloatArray, ref: Ref, k: int
) -> FragilitySection:
    structural = np.flatnonzero(fragility.cut_off > 1)
    structural = structural[np.lexsort((structural, -fragility.cut_off[structural]))]
    bridges = tuple(
        Bridge(
            a=ref(int(fragility.bridges[j, 0])),
            b=ref(int(fragility.bridges[j, 1])),
            cut_off=int(fragility.cut_off[j]),
        )
        for j in structural[:k].tolist()
    )
    return FragilitySection(
        articulation_points=ranked(between, fragility.articulation_points, ref, k),
        bridges=Listing[Bridge](total=int(structural.shape[0]), items=bridges),
        pendant_bridges=int(fragility.cut_off.shape[0] - structural.shape[0]),
    )


def weave_section(clustering: Clustering, ref: Ref, k: int) -> WeaveSection:
    degree, coeff = clustering.degree, clustering.coefficient
    stars = np.flatnonzero((degree >= STAR_MIN_DEGREE) & (coeff <= STAR_MAX_CLUSTERING))
    score = degree * (1.0 - coeff)
    stars = stars[np.lexsort((stars, -score[stars]))]
    return WeaveSection(
        definition=WEAVE_DEFINITION,
        stars=Listing[Star](
            total=int(stars.shape[0]),
            items=tuple(
                Star(node=ref(i), degree=int(degree[i]), clustering=round(float(coeff[i]), 3))
                for i in stars[:k].tolist()
            ),
        ),
    )


def frontier_view(projection: Projection, seeds: BoolArray, ref: Ref, k: int) -> FrontierView:
    """What is still open, longest waiting first."""
    nodes = projection.nodes
    grounded = np.zeros(projection.node_count, dtype=np.bool_)
    grounded[projection.targets[projection.edge_mask(GROUNDING_RELATIONS)]] = True
    questions: list[int] = []
    hypotheses: list[int] = []
    concepts: list[int] = []
    for i, node in enumerate(nodes):
        if node.type == "Question" and seeds[i]:
            questions.append(i)
        elif node.type == "Hypothesis" and seeds[i]:
            hypotheses.append(i)
        elif node.type == "Concept" and not grounded[i]:
            concepts.append(i)

    def waiting(idx: list[int]) -> Listing[Waiting]:
        # Positions follow (tick, id), so position order is age order.
        return Listing[Waiting](
            total=len(idx),
            items=tuple(
                Waiting(node=ref(i), encounter=nodes[i].encounter, tick=nodes[i].tick)
                for i in idx[:k]
            ),
        )

    return FrontierView(
        open_questions=waiting(questions),
        live_hypotheses=waiting(hypotheses),
        ungrounded_concepts=waiting(concepts),
    )
