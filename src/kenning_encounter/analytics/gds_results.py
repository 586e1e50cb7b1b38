"""Arithmetic on what GDS returns: renumbering groups, modularity, bridge cut sizes.

Kept apart from the engine so the numbers the GDS engine reports are computed
the in-process engine's way, from plain arrays, without a server.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from kenning_encounter.analytics.engine import IntArray


def modularity(membership: IntArray, sources: IntArray, targets: IntArray) -> float:
    """Newman's modularity (resolution 1) of a partition of a simple undirected graph."""
    m = sources.shape[0]
    if m == 0:
        return 0.0
    groups = int(membership.max()) + 1
    inside = membership[sources] == membership[targets]
    internal = np.bincount(membership[sources[inside]], minlength=groups).astype(np.float64)
    degree = np.bincount(
        np.concatenate((membership[sources], membership[targets])), minlength=groups
    ).astype(np.float64)
    return float(np.sum(internal / m - (degree / (2.0 * m)) ** 2))


def cut_sizes(n: int, sources: IntArray, targets: IntArray, bridges: IntArray) -> IntArray:
    """Nodes on the smaller side of each bridge.

    Without its bridges the graph falls into 2-edge-connected blocks, and the
    bridges join the blocks into a forest; a bridge's smaller side is the
    lighter of the two subtrees it separates.
    """
    if bridges.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    key = np.minimum(sources, targets) * n + np.maximum(sources, targets)
    cut = np.minimum(bridges[:, 0], bridges[:, 1]) * n + np.maximum(bridges[:, 0], bridges[:, 1])
    keep = ~np.isin(key, cut)
    ones = np.ones(int(keep.sum()), dtype=np.int8)
    rest = sparse.csr_matrix((ones, (sources[keep], targets[keep])), shape=(n, n))
    _, block = csgraph.connected_components(rest, directed=False)
    block = block.astype(np.int64)
    weight = np.bincount(block).astype(np.int64)
    a, b = block[bridges[:, 0]], block[bridges[:, 1]]
    # Only blocks a bridge touches matter; number them densely.
    touched, dense = np.unique(np.concatenate((a, b)), return_inverse=True)
    k = touched.shape[0]
    da, db = dense[: a.shape[0]], dense[a.shape[0] :]
    forest = sparse.csr_matrix((np.ones(da.shape[0], dtype=np.int8), (da, db)), shape=(k, k))
    trees, tree_of = csgraph.connected_components(forest, directed=False)
    roots = np.full(trees, k, dtype=np.int64)
    np.minimum.at(roots, tree_of, np.arange(k, dtype=np.int64))
    # A virtual node above every tree's root: one traversal covers the forest.
    virtual = k
    rows = np.concatenate((da, db, np.full(trees, virtual)))
    cols = np.concatenate((db, da, roots))
    linked = sparse.csr_matrix(
        (np.ones(rows.shape[0], dtype=np.int8), (rows, cols)), shape=(k + 1, k + 1)
    )
    order, parents = csgraph.breadth_first_order(
        linked, virtual, directed=True, return_predecessors=True
    )
    parent = parents.astype(np.int64).tolist()
    subtree = [*weight[touched].tolist(), 0]
    for v in reversed(order.tolist()[1:]):
        subtree[parent[v]] += subtree[v]
    out = np.empty(bridges.shape[0], dtype=np.int64)
    for j, (x, y) in enumerate(zip(da.tolist(), db.tolist(), strict=True)):
        child = x if parent[x] == y else y
        below = subtree[child]
        out[j] = min(below, subtree[int(roots[tree_of[child]])] - below)
    return out
