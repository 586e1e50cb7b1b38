"""orient: one call, an instrument panel over the authored-edge graph.

The panel is composed against rich-get-richer feedback. An agent that writes
about what its analytics make prominent makes it more prominent still, so mass
(ArticleRank) is never shown alone: every panel carries the frontier (what is
still open), frontier mass (the graph ranked from the open work), their
divergence, and a quiet list of low-mass nodes the open work touches directly.
When the budget forces sections out, those go last.

Each call builds its own projection and loads it into the engine itself, so
two calls at once share nothing but the (read-only) records.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from kenning_encounter import abandon
from kenning_encounter.analytics.algorithms import InProcessEngine
from kenning_encounter.analytics.aside import LeidenAside, worth_it
from kenning_encounter.analytics.baseline import RANKS_KEPT, Baseline, BaselineStore
from kenning_encounter.analytics.drift import compute_drift, take_baseline
from kenning_encounter.analytics.engine import (
    DEFAULT_SEED,
    Engine,
    FloatArray,
    betweenness_sources,
    leiden_iterations,
)
from kenning_encounter.analytics.fading import fading_section
from kenning_encounter.analytics.panel import NodeRef, Panel, Summary
from kenning_encounter.analytics.projection import Projection, build_projection
from kenning_encounter.analytics.render import fit
from kenning_encounter.analytics.sections import (
    betweenness_section,
    communities_section,
    components_section,
    divergence_and_quiet,
    fragility_section,
    frontier_mass_section,
    frontier_seeds,
    frontier_view,
    mass_section,
    status_of,
    weave_section,
)
from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory.activation import Activation, Present
from kenning_encounter.store.bulk import collector_paused
from kenning_encounter.store.outline import Relations
from kenning_encounter.store.records import EdgeRecord, NodeRecord

logger = logging.getLogger(__name__)

DEFAULT_BUDGET_CHARS = 8_000
MIN_BUDGET_CHARS = 500
DEFAULT_TOP_K = 10
MAX_TOP_K = 50
# The fading section's policy and the moment it is read at (memory/activation.py).
Standing = tuple[Activation, Present]

GUIDE_EMPTY = (
    "Nothing recorded yet, so there is nothing to read. To start: call advance_encounter; "
    "record what you see as Observations and what you need to find out as Questions "
    "(create_entities); link them with create_relations (an Observation GROUNDS a Concept, "
    "RAISES a Question, SUPPORTS or CHALLENGES a Hypothesis); then call orient again."
)
GUIDE_NO_EDGES = (
    "No relations yet: every node stands alone, so mass, communities and fragility say "
    "little. Link what belongs together with create_relations (GROUNDS, RAISES, SUPPORTS, "
    "ABOUT, ...)."
)


@dataclass
class SectionTimer:
    """Seconds per step of one build_panel call, wall clock and CPU (for benchmarks:
    on a busy machine CPU time is the steadier figure)."""

    seconds: dict[str, float] = field(default_factory=dict[str, float])
    cpu_seconds: dict[str, float] = field(default_factory=dict[str, float])

    @contextmanager
    def step(self, name: str) -> Generator[None]:
        abandon.check()  # a reading given up takes no next step
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - wall
            self.cpu_seconds[name] = self.cpu_seconds.get(name, 0.0) + time.process_time() - cpu


def build_panel(
    nodes: Sequence[NodeRecord],
    edges: Sequence[EdgeRecord] | Relations,
    *,
    baseline: Baseline | None = None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    top_k: int = DEFAULT_TOP_K,
    engine: Engine | None = None,
    seed: int = DEFAULT_SEED,
    timer: SectionTimer | None = None,
    standing: Standing | None = None,
) -> Panel:
    """Read the authored graph and return the panel, its text within ``budget_chars``.

    ``baseline`` is the mass reading drift compares against (see
    ``BaselineStore.previous``); ``top_k`` is the most items any list shows
    before the budget trims it. An empty graph gives a panel that says how to
    start, not an error.
    """
    with collector_paused():  # a panel makes no cycles; the memory's records are many
        panel, _ = _compose(
            nodes,
            edges,
            baseline=baseline,
            budget_chars=budget_chars,
            top_k=top_k,
            engine=engine,
            seed=seed,
            timer=timer,
            encounter=None,
            standing=standing,
        )
    return panel


def orient_panel(
    nodes: Sequence[NodeRecord],
    edges: Sequence[EdgeRecord] | Relations,
    *,
    baselines: BaselineStore,
    encounter: str | None,
    budget_chars: int = DEFAULT_BUDGET_CHARS,
    top_k: int = DEFAULT_TOP_K,
    engine: Engine | None = None,
    standing: Standing | None = None,
) -> Panel:
    """build_panel with drift against the previous encounter's reading, saving this
    reading as ``encounter``'s baseline. A reading outside any encounter is not saved."""
    with collector_paused():
        panel, reading = _compose(
            nodes,
            edges,
            baseline=baselines.previous(encounter),
            budget_chars=budget_chars,
            top_k=top_k,
            engine=engine,
            seed=DEFAULT_SEED,
            timer=None,
            encounter=encounter,
            standing=standing,
        )
    if reading is not None and encounter is not None:
        baselines.save(reading)
    return panel


def _compose(
    nodes: Sequence[NodeRecord],
    edges: Sequence[EdgeRecord] | Relations,
    *,
    baseline: Baseline | None,
    budget_chars: int,
    top_k: int,
    engine: Engine | None,
    seed: int,
    timer: SectionTimer | None,
    encounter: str | None,
    standing: Standing | None = None,
) -> tuple[Panel, Baseline | None]:
    """The panel and the mass reading to keep as a baseline (None for an empty graph)."""
    if budget_chars < MIN_BUDGET_CHARS:
        raise InvalidInput(
            "budget_chars", f"must be at least {MIN_BUDGET_CHARS}", value=budget_chars
        )
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidInput("top_k", f"must be between 1 and {MAX_TOP_K}", value=top_k)
    clock = timer if timer is not None else SectionTimer()
    started = time.perf_counter()
    with clock.step("projection"):
        projection = build_projection(nodes, edges)
    last = (
        edges.last_tick()
        if isinstance(edges, Relations)
        else max((e.tick for e in edges), default=0)
    )
    tick = max(max((n.tick for n in nodes), default=0), last)
    if projection.node_count == 0:
        panel = Panel(summary=_summary(projection, 0, {}, top_k), guide=GUIDE_EMPTY)
        return fit(panel, budget_chars, [top_k]), None

    panel, mass = _read(projection, baseline, top_k, engine or InProcessEngine(), seed, clock)
    if standing is not None:
        with clock.step("fading"):
            fading = fading_section(projection, mass, *standing, panel_ref(projection), top_k)
        panel = panel.model_copy(update={"fading": fading})
    with clock.step("render"):
        ks = range(top_k, 0, -1)
        fitted = fit(panel, budget_chars, ks)
    reading = take_baseline(
        projection,
        mass,
        encounter=encounter,
        tick=tick,
        saved_at=datetime.now(UTC).isoformat(timespec="seconds"),
        keep=RANKS_KEPT,
    )
    logger.debug(
        "orient: %d nodes, %d edges in %.3f s (%s)",
        projection.node_count,
        projection.edge_count,
        time.perf_counter() - started,
        ", ".join(f"{k} {v:.3f}" for k, v in clock.seconds.items()),
    )
    return fitted, reading


def _summary(projection: Projection, seeds: int, engines: dict[str, str], k: int) -> Summary:
    return Summary(
        nodes=projection.node_count,
        edges=projection.edge_count,
        folded=projection.folded,
        scope=projection.scope.describe(),
        frontier_seeds=seeds,
        engines=engines,
        shown_per_section=k,
    )


def panel_ref(projection: Projection) -> Callable[[int], NodeRef]:
    def ref(i: int) -> NodeRef:
        node = projection.nodes[i]
        return NodeRef(id=node.id, name=node.name, type=node.type, status=status_of(projection, i))

    return ref


def _read(
    projection: Projection,
    baseline: Baseline | None,
    k: int,
    engine: Engine,
    seed: int,
    clock: SectionTimer,
) -> tuple[Panel, FloatArray]:
    ref = panel_ref(projection)

    n, m = projection.node_count, projection.edge_count
    seeds = frontier_seeds(projection)
    iterations = leiden_iterations(n)
    # A large graph's communities are found by a worker while the rest is computed here.
    aside = None
    if isinstance(engine, InProcessEngine) and worth_it(n):
        aside = LeidenAside.start(projection, iterations, seed)
    try:
        with clock.step("load"):
            graph = engine.load(projection)
        with graph:
            with clock.step("mass"):
                mass = graph.articlerank()
            with clock.step("frontier_mass"):
                seed_positions = np.flatnonzero(seeds).tolist()
                frontier = (
                    graph.pagerank(seeds=seed_positions, directed=False) if seed_positions else None
                )
            with clock.step("betweenness"):
                between = graph.betweenness(sources=betweenness_sources(n, m), seed=seed)
            with clock.step("components"):
                components = graph.wcc()
            with clock.step("fragility"):
                fragility = graph.fragility()
            with clock.step("weave_audit"):
                clustering = graph.clustering()
            with clock.step("communities"):  # last: the worker has had the most time
                found = aside.result() if aside is not None else None
                communities = found or graph.leiden(iterations=iterations, seed=seed)
    finally:
        if aside is not None:
            aside.close()

    with clock.step("sections"):
        divergence, quiet = divergence_and_quiet(projection, mass, frontier, seeds, ref, k)
        engines = {
            "mass": mass.engine,
            "betweenness": between.engine,
            "communities": communities.engine,
            "components": components.engine,
            "fragility": fragility.engine,
            "weave_audit": clustering.engine,
        }
        if frontier is not None:
            engines["frontier_mass"] = frontier.engine
        panel = Panel(
            summary=_summary(projection, int(seeds.sum()), engines, k),
            guide=GUIDE_NO_EDGES if m == 0 else None,
            mass=mass_section(mass, ref, k),
            frontier_mass=frontier_mass_section(frontier, seeds, ref, k),
            divergence=divergence,
            quiet=quiet,
            frontier=frontier_view(projection, seeds, ref, k),
            betweenness=betweenness_section(between, ref, k),
            communities=communities_section(communities, mass.values, ref, k),
            components=components_section(components, projection, ref, k),
            fragility=fragility_section(fragility, between.values, ref, k),
            weave_audit=weave_section(clustering, ref, k),
        )
    with clock.step("drift"):
        drift = compute_drift(projection, mass.values, baseline, ref, k)
    return panel.model_copy(update={"drift": drift}), mass.values
