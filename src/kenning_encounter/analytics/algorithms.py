"""The in-process engine: python-igraph for graph algorithms, scipy for the ranks.

python-igraph is GPL-2.0-or-later; it is used as an ordinary dependency of this
Apache-2.0 package, never vendored.

Loading a projection builds one igraph graph, the simple undirected view
(``load_simple``); afterwards a loaded graph is only read, so threads may share
it. The one piece of shared state is igraph's random
number generator, which is process-wide: Leiden is the only algorithm here that
draws from it, and it does so under a lock with a generator seeded for the call,
so concurrent calls give the same communities as sequential ones.
"""

from __future__ import annotations

import itertools
import logging
import random
import threading
from collections.abc import Sequence
from types import TracebackType
from typing import Self

import igraph as ig
import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from kenning_encounter.analytics import power
from kenning_encounter.analytics.engine import (
    DAMPING,
    DEFAULT_SEED,
    ENGINE_IGRAPH,
    ENGINE_SCIPY,
    Clustering,
    Communities,
    Components,
    Fragility,
    IntArray,
    Scores,
    by_size,
    check_rank_arguments,
)
from kenning_encounter.analytics.projection import Projection, distinct

logger = logging.getLogger(__name__)

# Edges handed to igraph at a time when a projection is loaded.
LOAD_CHUNK = 1 << 20

# Guards igraph's process-wide random number generator (see the module docstring).
_IGRAPH_RNG_LOCK = threading.Lock()


def pair_keys(n: int, sources: IntArray, targets: IntArray) -> IntArray:
    """Each relation's unordered pair of ends as one key, ``hi * n + lo``: the simple
    undirected view has one edge per distinct key, in the keys' sorted order."""
    return np.maximum(sources, targets) * max(n, 1) + np.minimum(sources, targets)


def load_simple(n: int, sources: IntArray, targets: IntArray) -> ig.Graph:
    """A projection's edges as igraph's simple undirected view: one edge per pair of
    ends that any relation joins, ordered by (higher end, lower end), which is the order
    igraph's own collapse of the directed graph gives. The same edges give the same graph,
    so a worker process that loads them (analytics/aside.py) finds what this one would.

    Only this view is loaded: the directed multigraph held another 110 MiB at a million
    nodes, and what was read from it (weak components, bridges) the view and the
    relations' multiplicities answer (``InProcessGraph.wcc``, ``fragility``)."""
    keys = distinct(pair_keys(n, sources, targets))
    width = max(n, 1)
    simple = ig.Graph(n=n, directed=False)
    # Lists of pairs load faster than a numpy array, but a list of three million pairs
    # held 675 MiB at once: the edges go in a chunk at a time, in order. (Smaller chunks
    # cost time: each call indexes the whole graph again.)
    for lo in range(0, keys.shape[0], LOAD_CHUNK):
        chunk = keys[lo : lo + LOAD_CHUNK]
        simple.add_edges(
            list(zip((chunk % width).tolist(), (chunk // width).tolist(), strict=True))
        )
    return simple


def leiden_of(simple: ig.Graph, iterations: int, seed: int) -> Communities:
    """Leiden on a simple undirected view, modularity objective, seeded for the call."""
    if simple.vcount() == 0:
        empty = np.zeros(0, dtype=np.int64)
        return Communities(ENGINE_IGRAPH, empty, empty.copy(), 0.0, iterations, seed)
    with _IGRAPH_RNG_LOCK:
        ig.set_random_number_generator(random.Random(seed))
        try:
            found = simple.community_leiden(
                objective_function="modularity", n_iterations=iterations
            )
        finally:
            ig.set_random_number_generator(random)
    membership, sizes = by_size(np.asarray(found.membership, dtype=np.int64))
    modularity = 0.0
    if simple.ecount():
        modularity = float(simple.modularity(membership.tolist()))
    return Communities(ENGINE_IGRAPH, membership, sizes, modularity, iterations, seed)


class InProcessEngine:
    """Computes everything in this process; needs no server."""

    @property
    def name(self) -> str:
        return "in-process"

    def load(self, projection: Projection) -> InProcessGraph:
        return InProcessGraph(projection)


class InProcessGraph:
    """A projection loaded into igraph."""

    def __init__(self, projection: Projection) -> None:
        self._projection = projection
        self._simple = load_simple(projection.node_count, projection.sources, projection.targets)

    @property
    def projection(self) -> Projection:
        return self._projection

    def articlerank(
        self,
        *,
        damping: float = DAMPING,
        tolerance: float = 1e-7,
        max_iterations: int = 100,
    ) -> Scores:
        p = self._projection
        values, steps, converged = power.articlerank(
            p.node_count,
            p.sources,
            p.targets,
            damping=damping,
            tolerance=tolerance,
            max_iterations=max_iterations,
        )
        state = "converged" if converged else "stopped before converging"
        return Scores(
            "articlerank",
            ENGINE_SCIPY,
            values,
            f"damping {damping}, {state} after {steps} iterations, tolerance {tolerance:g}",
        )

    def pagerank(
        self,
        *,
        damping: float = DAMPING,
        seeds: Sequence[int] | None = None,
        directed: bool = True,
        tolerance: float = 1e-9,
        max_iterations: int = 200,
    ) -> Scores:
        """PageRank by power iteration (see ``power``); restarts at ``seeds`` if given."""
        check_rank_arguments(damping, seeds)
        p = self._projection
        values, steps, converged = power.pagerank(
            p.node_count,
            p.sources,
            p.targets,
            damping=damping,
            seeds=None if seeds is None else np.asarray(seeds, dtype=np.int64),
            directed=directed,
            tolerance=tolerance,
            max_iterations=max_iterations,
        )
        view = "directed" if directed else "undirected"
        start = f"restarting at {len(seeds)} seeds" if seeds is not None else "uniform restart"
        state = "converged" if converged else "stopped before converging"
        return Scores(
            "pagerank",
            ENGINE_SCIPY,
            values,
            f"{view}, damping {damping}, {start}, {state} after {steps} iterations",
        )

    def betweenness(self, *, sources: int | None = None, seed: int = DEFAULT_SEED) -> Scores:
        """Betweenness of the undirected view; estimated from ``sources`` sampled
        sources (scaled by n / sources) when given, else exact."""
        n = self._projection.node_count
        if sources is not None and sources < 1:
            raise ValueError("sources must be at least 1, or None for exact betweenness")
        if sources is None or sources >= n:
            raw = self._simple.betweenness(directed=False) if n else []
            return Scores("betweenness", ENGINE_IGRAPH, np.asarray(raw, dtype=np.float64), "exact")
        chosen = np.sort(np.random.default_rng(seed).choice(n, size=sources, replace=False))
        raw = self._simple.betweenness(directed=False, sources=chosen.tolist())
        values = np.asarray(raw, dtype=np.float64) * (n / sources)
        return Scores(
            "betweenness",
            ENGINE_IGRAPH,
            values,
            f"estimated from {sources} of {n} sources (seed {seed}), scaled by n/{sources}",
            sampled_from=sources,
        )

    def leiden(self, *, iterations: int = -1, seed: int = DEFAULT_SEED) -> Communities:
        """Leiden on the simple undirected view, modularity objective."""
        return leiden_of(self._simple, iterations, seed)

    def wcc(self) -> Components:
        # Weak components of the relations are the components of the undirected view.
        found = self._simple.connected_components()
        membership, sizes = by_size(np.asarray(found.membership, dtype=np.int64))
        degree = np.asarray(self._simple.degree(), dtype=np.int64)
        isolated = np.flatnonzero(degree == 0).astype(np.int64)
        return Components(ENGINE_IGRAPH, membership, sizes, isolated)

    def fragility(self) -> Fragility:
        cut_points = np.asarray(sorted(self._simple.articulation_points()), dtype=np.int64)
        # The relations read as an undirected multigraph: two relations between the same
        # pair are not a bridge, though the simple view would say so. So a bridge is a
        # bridge of the view whose pair one relation alone joins.
        p = self._projection
        if p.edge_count == 0:
            return self.fragility_of(cut_points)
        keys = pair_keys(p.node_count, p.sources, p.targets)
        order = np.argsort(keys, kind="stable")
        ordered = keys[order]
        starts = np.flatnonzero(np.concatenate(([True], ordered[1:] != ordered[:-1])))
        pairs = ordered[starts]  # the view's edges, in its order (``load_simple``)
        joined = np.diff(np.append(starts, ordered.shape[0]))  # relations per pair
        first = order[starts]  # each pair's first relation
        del keys, order, ordered
        view_bridges = np.asarray(self._simple.bridges(), dtype=np.int64)
        view_bridges = view_bridges[joined[view_bridges] == 1]
        if not view_bridges.shape[0]:
            return self.fragility_of(cut_points)
        ids = np.sort(first[view_bridges])  # each bridge as the one relation it is
        ends = np.column_stack((p.sources[ids], p.targets[ids]))
        return Fragility(
            ENGINE_IGRAPH, cut_points, ends, self._cut_sizes(pairs, view_bridges, ends)
        )

    @staticmethod
    def fragility_of(cut_points: IntArray) -> Fragility:
        """Fragility with cut points and no bridge."""
        none = np.zeros(0, dtype=np.int64)
        return Fragility(ENGINE_IGRAPH, cut_points, none.reshape(0, 2), none.copy())

    def _cut_sizes(self, pairs: IntArray, bridges: IntArray, ends: IntArray) -> IntArray:
        """Nodes on the smaller side of each bridge.

        Removing every bridge leaves 2-edge-connected blocks; blocks joined by
        bridges form a forest, and a bridge's smaller side is the lighter of the
        two subtrees it separates. One traversal from a virtual root covers all
        trees at once. The blocks are found by scipy over the view's pairs without
        the bridges (a copy of the igraph view was this panel's peak: 110 MiB at 1M).
        """
        n = self._projection.node_count
        width = max(n, 1)
        rest = np.ones(pairs.shape[0], dtype=np.bool_)
        rest[bridges] = False
        lower = (pairs[rest] % width).astype(np.int32)
        upper = (pairs[rest] // width).astype(np.int32)
        joins = sparse.coo_matrix(
            (np.ones(lower.shape[0], dtype=np.int8), (lower, upper)), shape=(n, n)
        )
        _, found = csgraph.connected_components(joins, directed=False)
        block = np.asarray(found, dtype=np.int64)
        blocks = int(block.max()) + 1
        weight = np.bincount(block, minlength=blocks).astype(np.int64)
        a, b = block[ends[:, 0]], block[ends[:, 1]]
        forest = ig.Graph(n=blocks, edges=np.column_stack((a, b)), directed=False)
        tree_of = np.asarray(forest.connected_components().membership, dtype=np.int64)
        roots = np.full(int(tree_of.max()) + 1, blocks, dtype=np.int64)
        np.minimum.at(roots, tree_of, np.arange(blocks, dtype=np.int64))
        virtual = blocks
        forest.add_vertices(1)
        forest.add_edges([(virtual, int(r)) for r in roots])
        order, layers, parents = forest.bfs(virtual)
        order_a = np.asarray(order, dtype=np.int64)
        parent = np.asarray(parents, dtype=np.int64)
        subtree = np.concatenate((weight, np.zeros(1, dtype=np.int64)))
        for start, stop in reversed(list(itertools.pairwise(layers[1:]))):
            layer = order_a[start:stop]
            np.add.at(subtree, parent[layer], subtree[layer])
        child = np.where(parent[a] == b, a, b)
        total = subtree[roots[tree_of[child]]]
        below = subtree[child]
        return np.minimum(below, total - below)

    def clustering(self) -> Clustering:
        coefficient = self._simple.transitivity_local_undirected(mode="zero")
        return Clustering(
            ENGINE_IGRAPH,
            np.asarray(coefficient, dtype=np.float64),
            np.asarray(self._simple.degree(), dtype=np.int64),
        )

    def close(self) -> None:
        """Nothing to release: the graphs go when the last reference does."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
