"""The authored-edge graph as an immutable projection an engine can load.

A projection is built from the plain records the store hands out. By default it
holds the *heads* of supersession chains only: a revised node is folded into its
latest revision, so relations made to or from an older revision count for the
idea as it stands now, and the SUPERSEDES edges themselves disappear. With
``include_history`` every revision is a node of its own and SUPERSEDES edges are
ordinary edges.

Nodes are ordered by (tick, id), so the same records give the same projection
whatever order they arrive in. Arrays are read-only and nothing is shared
between projections: two orient calls at once never touch each other's state.
"""

from __future__ import annotations

import logging
from array import array
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from types import MappingProxyType

import numpy as np
import numpy.typing as npt
from scipy import sparse

from kenning_encounter.errors import InvalidInput, NotFound, UnknownType
from kenning_encounter.store.outline import Relations, as_numpy
from kenning_encounter.store.records import (
    HIDDEN_SUCCESSOR,
    WITHHELD_SUCCESSOR,
    EdgeRecord,
    NodeRecord,
)
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

logger = logging.getLogger(__name__)

IntArray = npt.NDArray[np.int64]

MAX_HOPS = 4
SUPERSEDES = "SUPERSEDES"


@dataclass(frozen=True, slots=True)
class Scope:
    """What part of the memory a projection covers."""

    include_history: bool = False
    node_types: tuple[str, ...] | None = None
    around: str | None = None  # id of the centre node (a head unless include_history)
    hops: int | None = None

    @property
    def scoped(self) -> bool:
        return self.node_types is not None or self.around is not None

    def describe(self) -> str:
        parts = ["every revision" if self.include_history else "heads of revision chains"]
        if self.node_types is not None:
            parts.append("types " + ", ".join(self.node_types))
        if self.around is not None:
            parts.append(f"within {self.hops} hops of {self.around}")
        return "; ".join(parts)


def _frozen(array: npt.NDArray[np.int64]) -> IntArray:
    array.setflags(write=False)
    return array


@dataclass(frozen=True, slots=True, eq=False)
class Projection:
    """Nodes and directed edges, by position; ``nodes[i]`` is node ``i``.

    ``sources[j] -> targets[j]`` is edge ``j``, of relation type
    ``relation_names[relation_codes[j]]``. ``first_tick[i]`` is the tick of the
    oldest revision folded into node ``i`` (its own tick when nothing was
    folded). ``folded`` counts superseded revisions folded into heads.
    """

    nodes: tuple[NodeRecord, ...]
    sources: IntArray
    targets: IntArray
    relation_codes: IntArray
    relation_names: tuple[str, ...]
    first_tick: IntArray
    folded: int
    scope: Scope
    index: Mapping[str, int]
    heads: Mapping[str, str]  # each folded (superseded) input id -> the head standing for it

    @property
    def node_count(self) -> int:
        return len(self.nodes)

    @property
    def edge_count(self) -> int:
        return int(self.sources.shape[0])

    def position(self, node_id: str) -> int | None:
        """Position of a node, following a superseded id to its head."""
        head = self.heads.get(node_id, node_id)
        return self.index.get(head)

    def edge_mask(self, relations: Collection[str]) -> npt.NDArray[np.bool_]:
        codes = [i for i, name in enumerate(self.relation_names) if name in relations]
        return np.isin(self.relation_codes, np.asarray(codes, dtype=np.int64))

    def ids(self) -> list[str]:
        return [n.id for n in self.nodes]


def build_projection(
    nodes: Sequence[NodeRecord],
    edges: Sequence[EdgeRecord] | Relations,
    *,
    include_history: bool = False,
    node_types: Collection[str] | None = None,
    around: str | None = None,
    hops: int = 2,
) -> Projection:
    """Project authored records into a graph, optionally scoped.

    ``edges`` are records, or columns over ``nodes`` (store/outline.py: what a whole
    memory's outline holds); records are put in columns first, so there is one path.
    ``node_types`` keeps only nodes of those types (the induced subgraph).
    ``around`` names a node (by id or by name) and keeps what lies within
    ``hops`` relations of it, followed in either direction; the type filter is
    applied after the neighbourhood is taken, and the centre is always kept.
    """
    types = _check_types(node_types)
    if around is not None and not 1 <= hops <= MAX_HOPS:
        raise InvalidInput("hops", f"must be between 1 and {MAX_HOPS}", value=hops)
    relations = edges if isinstance(edges, Relations) else Relations.of_records(nodes, edges)
    columns = _Columns.of(relations)

    # Maps and arrays are built by map() over C-level getters: a generator's frame per
    # item was most of a million-node projection.
    ids = list(map(_ID, nodes))
    ticks = np.fromiter(map(_TICK, nodes), dtype=np.int64, count=len(ids))
    # Only the superseded nodes are mapped; any other node stands for itself. (No map of
    # every id is made: at a million nodes it was 70 MiB, for the few successors it names.)
    heads = {} if include_history else _folded_into(nodes, _places_of_successors(nodes), columns)
    standing = np.ones(len(ids), dtype=np.bool_)
    folded_at = np.fromiter(heads, dtype=np.int64, count=len(heads))
    standing[folded_at] = False
    if not include_history:
        # A version revised by one its reader may not see (memory/gates.py), or only in
        # sessions it hides (Outline.without_loci), is no head, and the head it would fold
        # into is not there: it stands for nothing, and its relations go with it, as the
        # unseen head's do.
        unseen = [
            i
            for i, n in enumerate(nodes)
            if n.superseded_by in (WITHHELD_SUCCESSOR, HIDDEN_SUCCESSOR)
        ]
        standing[np.asarray(unseen, dtype=np.int64)] = False
    kept_at = np.flatnonzero(standing)
    kept_at = kept_at[_by_tick_then_id(ticks[kept_at], [ids[i] for i in kept_at.tolist()])]
    kept = [nodes[i] for i in kept_at.tolist()]
    index = dict(zip(map(_ID, kept), range(len(kept)), strict=True))
    if len(index) != len(kept):
        raise ValueError("a projection's nodes must be distinct")

    position = np.full(len(ids), -1, dtype=np.int64)
    position[kept_at] = np.arange(len(kept), dtype=np.int64)
    first_tick = ticks[kept_at]
    if heads:
        head_at = np.fromiter(heads.values(), dtype=np.int64, count=len(heads))
        position[folded_at] = position[head_at]
        np.minimum.at(first_tick, position[folded_at], ticks[folded_at])

    src, dst, codes, names = _edges(columns, position, include_history)
    folded = len(heads)
    head_ids = {ids[i]: ids[h] for i, h in heads.items()}

    centre: str | None = None
    keep: npt.NDArray[np.bool_] | None = None
    if around is not None:
        centre = _resolve(around, nodes, index, head_ids, kept)
        keep = _neighbourhood(index[centre], hops, src, dst, len(kept))
    if types is not None:
        typed = np.fromiter((n.type in types for n in kept), dtype=np.bool_, count=len(kept))
        if centre is not None:
            typed[index[centre]] = True
        keep = typed if keep is None else keep & typed

    scope = Scope(
        include_history=include_history,
        node_types=types,
        around=centre,
        hops=hops if centre is not None else None,
    )
    if keep is not None:
        kept, src, dst, codes, first_tick = _induced(keep, kept, src, dst, codes, first_tick)
        index = {n.id: i for i, n in enumerate(kept)}
        head_ids = {k: v for k, v in head_ids.items() if v in index}

    logger.debug(
        "projection: %d nodes, %d edges, %d folded, scope %s",
        len(kept),
        src.shape[0],
        folded,
        scope.describe(),
    )
    return Projection(
        nodes=tuple(kept),
        sources=_frozen(src),
        targets=_frozen(dst),
        relation_codes=_frozen(codes),
        relation_names=names,
        first_tick=_frozen(first_tick),
        folded=folded,
        scope=scope,
        index=MappingProxyType(index),
        heads=MappingProxyType(head_ids),
    )


def _check_types(node_types: Collection[str] | None) -> tuple[str, ...] | None:
    if node_types is None:
        return None
    chosen = tuple(sorted(set(node_types)))
    if not chosen:
        raise InvalidInput(
            "node_types", "is empty; name at least one type, or leave it out for all types"
        )
    for name in chosen:
        if name not in AUTHORED_NODE_TYPES:
            raise UnknownType("node_types", name, AUTHORED_NODE_TYPES)
    return chosen


@dataclass(frozen=True, slots=True)
class _Columns:
    """A ``Relations`` seen as numpy arrays (without a copy)."""

    source: IntArray
    target: IntArray
    kind: IntArray
    names: tuple[str, ...]

    @classmethod
    def of(cls, relations: Relations) -> _Columns:
        def seen(column: array[int]) -> IntArray:
            return as_numpy(column).astype(np.int64)  # a copy of the projection's own

        return cls(
            seen(relations.source), seen(relations.target), seen(relations.kind), relations.names
        )

    def of_kind(self, name: str) -> npt.NDArray[np.bool_]:
        if name not in self.names:
            return np.zeros(self.kind.shape[0], dtype=np.bool_)
        return self.kind == self.names.index(name)


def _places_of_successors(nodes: Sequence[NodeRecord]) -> dict[str, int]:
    """Where each node named as another's successor stands in ``nodes``."""
    named = {n.superseded_by for n in nodes if n.superseded_by is not None}
    if not named:
        return {}
    return {n.id: i for i, n in enumerate(nodes) if n.id in named}


def _folded_into(
    nodes: Sequence[NodeRecord], successors_at: Mapping[str, int], columns: _Columns
) -> dict[int, int]:
    """Map each superseded node (by place) to the head of its supersession chain (a head
    is not mapped: where a bad record makes a cycle, one of its nodes stands as the head)."""
    successor: dict[int, int] = {}
    for i, n in enumerate(nodes):
        if (
            n.superseded_by is not None
            and (after := successors_at.get(n.superseded_by)) is not None
        ):
            successor[i] = after
    # The edge and the record say the same thing; either is enough.
    supersedes = columns.of_kind(SUPERSEDES)
    supersedes &= (columns.source >= 0) & (columns.target >= 0)
    later: list[int] = columns.source[supersedes].tolist()
    earlier: list[int] = columns.target[supersedes].tolist()
    # Two successors of one node is a bad record; the first by id stands, whatever order
    # the relations came in.
    for source, target in sorted(zip(later, earlier, strict=True), key=lambda p: nodes[p[0]].id):
        successor.setdefault(target, source)
    heads: dict[int, int] = {}
    for start in successor:
        path: list[int] = []
        cur = start
        while cur not in heads and cur in successor and cur not in path:
            path.append(cur)  # the store forbids cycles; the check keeps a bad record finite
            cur = successor[cur]
        head = heads.get(cur, cur)
        for p in path:
            heads[p] = head
    return {i: h for i, h in heads.items() if i != h}


def _by_tick_then_id(ticks: IntArray, ids: Sequence[str]) -> IntArray:
    """The order of nodes by (tick, id): by tick in numpy, then each run of one tick (a
    batch's nodes share it) by id. Sorting a million records by a key of both took 3 s."""
    order = np.argsort(ticks, kind="stable")
    if order.shape[0] < 2:
        return order
    ordered = ticks[order]
    bounds = np.concatenate(([0], np.flatnonzero(ordered[1:] != ordered[:-1]) + 1, [len(order)]))
    at = ids.__getitem__
    for run in np.flatnonzero(np.diff(bounds) > 1).tolist():
        lo, hi = int(bounds[run]), int(bounds[run + 1])
        order[lo:hi] = sorted(order[lo:hi].tolist(), key=at)
    return order


def distinct(values: IntArray) -> IntArray:
    """The distinct values, sorted. (``np.unique`` without its extra answers takes a
    hashing path in numpy 2: 3.2 s for three million keys, against 0.17 s sorted.)"""
    ordered = np.sort(values)
    if ordered.shape[0] < 2:
        return ordered
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


_ID = attrgetter("id")
_TICK = attrgetter("tick")


def _edges(
    columns: _Columns, position: IntArray, include_history: bool
) -> tuple[IntArray, IntArray, IntArray, tuple[str, ...]]:
    inside = (columns.source >= 0) & (columns.target >= 0)
    src = np.where(inside, position[np.where(inside, columns.source, 0)], -1)
    dst = np.where(inside, position[np.where(inside, columns.target, 0)], -1)
    # Codes by the sorted names of the types present, whatever order the store read them.
    present = np.flatnonzero(np.bincount(columns.kind, minlength=len(columns.names)))
    names = tuple(sorted(columns.names[c] for c in present.tolist()))
    recode = np.zeros(max(len(columns.names), 1), dtype=np.int64)
    for c in present.tolist():
        recode[c] = names.index(columns.names[c])
    codes = recode[columns.kind]
    count = codes.shape[0]
    # An endpoint outside the input, or a loop made by folding a revision into
    # its head, says nothing about structure.
    keep = (src >= 0) & (dst >= 0) & (src != dst)
    if SUPERSEDES in names and not include_history:
        keep &= codes != names.index(SUPERSEDES)
    dropped = count - int(keep.sum())
    if dropped:
        logger.debug("projection: left out %d edges (supersessions, loops, unknown ends)", dropped)
    # Folding can turn two relations into one: keep one per (source, target,
    # type), ordered by that key so the projection does not depend on input order.
    n, k = max(position.shape[0], 1), max(len(names), 1)
    key = distinct((src[keep] * n + dst[keep]) * k + codes[keep])
    pair, code = np.divmod(key, k)
    source, target = np.divmod(pair, n)
    return source, target, code, names


def _resolve(
    ref: str,
    nodes: Sequence[NodeRecord],
    index: Mapping[str, int],
    heads: Mapping[str, str],
    kept: Sequence[NodeRecord],
) -> str:
    if ref in index or ref in heads:  # every node is kept or folded into a head
        return heads.get(ref, ref)
    live = [n.id for n in kept if n.name == ref]
    if live:
        return live[0]
    older = sorted((n for n in nodes if n.name == ref), key=lambda n: -n.tick)
    if older:
        return heads[older[0].id]
    raise NotFound(
        "node", ref, "give the exact name or id of a recorded node (find_by_name looks names up)"
    )


def _neighbourhood(
    centre: int, hops: int, src: IntArray, dst: IntArray, n: int
) -> npt.NDArray[np.bool_]:
    ones = np.ones(src.shape[0], dtype=np.int8)
    adj = sparse.csr_matrix((ones, (src, dst)), shape=(n, n))
    adj = (adj + adj.T).tocsr()
    reached = np.zeros(n, dtype=np.bool_)
    reached[centre] = True
    frontier = reached.copy()
    for _ in range(hops):
        step = adj @ frontier.astype(np.int8)
        frontier = (np.asarray(step).ravel() > 0) & ~reached
        if not frontier.any():
            break
        reached |= frontier
    return reached


def _induced(
    keep: npt.NDArray[np.bool_],
    kept: Sequence[NodeRecord],
    src: IntArray,
    dst: IntArray,
    codes: IntArray,
    first_tick: IntArray,
) -> tuple[list[NodeRecord], IntArray, IntArray, IntArray, IntArray]:
    new_pos = np.cumsum(keep, dtype=np.int64) - 1
    inside = keep[src] & keep[dst]
    nodes = [n for n, k in zip(kept, keep.tolist(), strict=True) if k]
    return (
        nodes,
        np.ascontiguousarray(new_pos[src[inside]]),
        np.ascontiguousarray(new_pos[dst[inside]]),
        np.ascontiguousarray(codes[inside]),
        np.ascontiguousarray(first_tick[keep]),
    )
