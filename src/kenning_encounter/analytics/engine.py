"""The engine port: what orient and the focused tools ask of a graph engine.

An ``Engine`` loads a ``Projection`` and hands back an ``EngineGraph``; the
caller runs algorithms on it and closes it. This is the shape of a Neo4j GDS
named graph (project, run, drop), and the in-process engine follows it too, so
either can serve the panel. Every result is aligned with ``projection.nodes``
(value ``i`` belongs to node ``i``) and names the engine that computed it.

Conventions an implementation must keep, so that two engines agree:

- ``articlerank`` and ``pagerank`` with ``directed=True`` follow edge direction;
  the other algorithms read the graph as undirected.
- ``articlerank`` returns unnormalised scores: every node starts from
  ``1 - damping`` and nothing is redistributed from nodes without out-edges
  (GDS's convention).
- ``pagerank`` returns a distribution that sums to one; with ``seeds`` the walk
  restarts uniformly at the seeds, and a walk at a node without out-edges
  restarts the same way.
- ``betweenness(sources=k)`` estimates from ``k`` sources drawn with ``seed``
  and scales the sums by ``n / k``; ``sources=None`` is exact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Protocol, Self

import numpy as np
import numpy.typing as npt

from kenning_encounter.analytics.projection import Projection

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

ENGINE_IGRAPH = "igraph"
ENGINE_SCIPY = "scipy"

DEFAULT_SEED = 42
DAMPING = 0.85

# Betweenness is exact up to this many nodes (about a quarter second at 2,000
# nodes); beyond it, sources are sampled. The sample is bounded both by count
# and by the work it implies (sources x (nodes + edges)), because one source
# costs a full traversal: ~1 ms of CPU at 10k nodes but ~40 ms at 100k (cache
# misses grow with the graph). So 10k nodes get 256 sources, 100k get 62, and a
# million get the floor of 16 (0.47 s a source there: 64 of them took 30 s of a
# 30 s orient budget).
EXACT_BETWEENNESS_LIMIT = 2_000
MAX_BETWEENNESS_SOURCES = 256
MIN_BETWEENNESS_SOURCES = 16
BETWEENNESS_WORK = 25_000_000

# Leiden runs to convergence on small graphs; on large ones two iterations give
# nearly the same modularity at a fraction of the time (2.3 s vs 0.06 s at 10k). Past
# half a million nodes one iteration is run: at a million, 8.5 s instead of 13-16 s
# (26 s on a slower machine), modularity 0.689 instead of 0.719. The panel says which.
LEIDEN_CONVERGE_LIMIT = 2_000
LEIDEN_ITERATIONS_LARGE = 2
LEIDEN_ONE_PASS_LIMIT = 500_000


def betweenness_sources(nodes: int, edges: int) -> int | None:
    """How many sources to sample, or None for exact betweenness."""
    if nodes <= EXACT_BETWEENNESS_LIMIT:
        return None
    by_work = BETWEENNESS_WORK // max(nodes + edges, 1)
    return max(MIN_BETWEENNESS_SOURCES, min(MAX_BETWEENNESS_SOURCES, by_work, nodes))


def by_size(membership: IntArray) -> tuple[IntArray, IntArray]:
    """Renumber dense groups largest first (ties: earliest member first): every
    engine numbers its communities and components this way."""
    if membership.shape[0] == 0:
        return membership, np.zeros(0, dtype=np.int64)
    sizes = np.bincount(membership)
    first = np.full(sizes.shape[0], membership.shape[0], dtype=np.int64)
    np.minimum.at(first, membership, np.arange(membership.shape[0], dtype=np.int64))
    order = np.lexsort((first, -sizes))
    rename = np.empty_like(order)
    rename[order] = np.arange(order.shape[0], dtype=np.int64)
    return rename[membership], sizes[order]


def check_rank_arguments(damping: float, seeds: Sequence[int] | None = None) -> None:
    """What every engine's ranks refuse alike, before any work."""
    if seeds is not None and len(seeds) == 0:
        raise ValueError("seeds is empty; pass None for unpersonalized PageRank")
    if not 0.0 < damping < 1.0:
        raise ValueError(f"damping must lie strictly between 0 and 1, got {damping}")


def leiden_iterations(nodes: int) -> int:
    """Iterations for Leiden: -1 means until the partition stops changing."""
    if nodes <= LEIDEN_CONVERGE_LIMIT:
        return -1
    return LEIDEN_ITERATIONS_LARGE if nodes <= LEIDEN_ONE_PASS_LIMIT else 1


@dataclass(frozen=True, slots=True, eq=False)
class Scores:
    """One value per node. ``sampled_from`` is set when sources were sampled."""

    algorithm: str
    engine: str
    values: FloatArray
    detail: str
    sampled_from: int | None = None

    def __post_init__(self) -> None:
        self.values.setflags(write=False)


@dataclass(frozen=True, slots=True, eq=False)
class Communities:
    engine: str
    membership: IntArray  # community of each node, numbered by size, largest first
    sizes: IntArray  # sizes[c] is the size of community c
    modularity: float
    iterations: int  # -1: run until stable
    seed: int

    def __post_init__(self) -> None:
        self.membership.setflags(write=False)
        self.sizes.setflags(write=False)

    @property
    def count(self) -> int:
        return int(self.sizes.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class Components:
    """Weakly connected components."""

    engine: str
    membership: IntArray  # component of each node, numbered by size, largest first
    sizes: IntArray
    isolated: IntArray  # positions of nodes with no relation at all

    def __post_init__(self) -> None:
        for a in (self.membership, self.sizes, self.isolated):
            a.setflags(write=False)

    @property
    def count(self) -> int:
        return int(self.sizes.shape[0])


@dataclass(frozen=True, slots=True, eq=False)
class Fragility:
    """Cut points of the undirected view.

    ``bridges`` is an (k, 2) array of node positions; ``cut_off[j]`` is how many
    nodes end up on the smaller side when bridge ``j`` is removed (1 for a
    pendant node hanging by one relation).
    """

    engine: str
    articulation_points: IntArray
    bridges: IntArray
    cut_off: IntArray

    def __post_init__(self) -> None:
        for a in (self.articulation_points, self.bridges, self.cut_off):
            a.setflags(write=False)


@dataclass(frozen=True, slots=True, eq=False)
class Clustering:
    """Local clustering coefficient and degree in the simple undirected view."""

    engine: str
    coefficient: FloatArray
    degree: IntArray

    def __post_init__(self) -> None:
        self.coefficient.setflags(write=False)
        self.degree.setflags(write=False)


class EngineGraph(Protocol):
    """A projection loaded into an engine. Safe to share between threads."""

    @property
    def projection(self) -> Projection: ...

    def articlerank(
        self,
        *,
        damping: float = DAMPING,
        tolerance: float = 1e-7,
        max_iterations: int = 100,
    ) -> Scores: ...

    def pagerank(
        self,
        *,
        damping: float = DAMPING,
        seeds: Sequence[int] | None = None,
        directed: bool = True,
        tolerance: float = 1e-9,
        max_iterations: int = 200,
    ) -> Scores: ...

    def betweenness(self, *, sources: int | None = None, seed: int = DEFAULT_SEED) -> Scores: ...

    def leiden(self, *, iterations: int = -1, seed: int = DEFAULT_SEED) -> Communities: ...

    def wcc(self) -> Components: ...

    def fragility(self) -> Fragility: ...

    def clustering(self) -> Clustering: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Engine(Protocol):
    """Loads projections. One engine serves many concurrent callers."""

    @property
    def name(self) -> str: ...

    def load(self, projection: Projection) -> EngineGraph: ...
