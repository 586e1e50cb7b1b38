"""Nodes already read, kept for read transactions that see the same committed state.

A lookup by id is one engine statement per node type, which costs more than the
text search that found the ids. Nodes change only when a write commits, and in
the embedded store every write commits through one connection, so the store can
know exactly which committed state a cached node belongs to.

The cache always holds nodes as the last commit left them. The protocol is a
sequence lock: the generation is even while no commit is in flight; the writer
makes it odd just before COMMIT, and after it drops the nodes the transaction
changed, adds the ones it created (as written), and makes it even again. A
failed COMMIT empties the cache. Every change to a stored node goes through
the few write methods of ``EmbeddedTx`` that report it (a test holds the list
of node-changing statements to them). Beside the nodes it keeps their relations,
their latest confirmations and the classification of every classified node (the
read gate's question, answered without reading a node); a classification is fixed
when its node is created, so only the statement that creates nodes moves that set.

A read transaction notes the generation when it starts and opens its engine
snapshot only when it first needs the engine (a read served
wholly from the cache never touches it). If the generation is unchanged once
the snapshot is open, no commit overlapped, and the snapshot is that same
state. If it moved, a transaction that has not yet used the cache just goes on
without it; one that has raises ``SnapshotMoved`` and is run again, without the
cache, so no transaction ever mixes two states.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Final, cast

import ladybug

from kenning_encounter.store.embedded.engine import DEFAULT_TRACER, execute
from kenning_encounter.store.persons import Confirmation
from kenning_encounter.store.records import EdgeRecord, NodeRecord, approx_bytes
from kenning_encounter.store.tracing import Tracer

DEFAULT_CAPACITY = 50_000
# A memory of at most this many authored nodes is read whole into the cache by the first
# read that misses it (``EmbeddedTx.warm``): every later read of its nodes and their
# relations is answered here, not by a seek per node (about 1 ms each).
WARM_LIMIT = 20_000
# Past this many classified nodes the set is not kept: the gate reads the nodes instead.
MAX_MARKS = 100_000
# The classified set of a memory that holds more than MAX_MARKS of them.
TOO_MANY: Final[Mapping[str, str]] = MappingProxyType({})
# Roughly what the cached nodes may hold in memory; the oldest go first past it.
DEFAULT_MAX_BYTES = 64 * 1024 * 1024
_OVERHEAD = 400  # a record, its dict slot and its short strings, roughly
_EDGE_OVERHEAD = 250  # an edge record and its strings, roughly

# A node's authored relations: those out of it, then those into it.
Adjacency = tuple[tuple[EdgeRecord, ...], tuple[EdgeRecord, ...]]
# A whole memory for the cache: its nodes, their relation lists, their latest confirmations.
Whole = tuple[Iterable[NodeRecord], dict[str, Adjacency], dict[str, Confirmation | None]]
_COLD, _WARMING, _WARM = "cold", "warming", "warm"


_weight = approx_bytes


def _edges_weight(edges: Adjacency) -> int:
    return _OVERHEAD + sum(
        _EDGE_OVERHEAD + len(e.revision_why or "") for e in (*edges[0], *edges[1])
    )


class SnapshotMoved(Exception):
    """Internal: a read used cached nodes, then found a newer snapshot; it is run again."""


class NodeCache:
    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_bytes: int = DEFAULT_MAX_BYTES,
        *,
        warm_limit: int = WARM_LIMIT,
    ) -> None:
        self._capacity = capacity
        self.warm_limit = min(warm_limit, capacity)
        self._max_bytes = max_bytes
        self._lock = threading.Lock()
        self._generation = 0
        self._nodes: dict[str, NodeRecord] = {}
        self._edges: dict[str, Adjacency] = {}
        self._confirmed: dict[str, Confirmation | None] = {}
        # Every classified node's classification (the read gate's question), whole once a
        # read filled it from a scan; None while not known. A node's classification is
        # fixed when the node is written, so only the writes that create nodes move it.
        self._marks: Mapping[str, str] | None = None
        self._bytes = 0
        # Whether the whole memory is yet to be offered (cold), is being read by one
        # reader (warming), or was offered or found too large (warm): ``take_warming``.
        self._warmth = _COLD

    @property
    def generation(self) -> int:
        return self._generation

    def begin_commit(self) -> None:
        """A commit is about to happen: no read may use or fill the cache until it ends."""
        with self._lock:
            self._generation += 1

    def end_commit(
        self,
        changed: Iterable[str] | None,
        created: Iterable[NodeRecord] = (),
        edges_changed: Iterable[str] | None = None,
        marks: Mapping[str, str | None] | None = None,
        *,
        sought: Mapping[str, Adjacency] | None = None,
        linked: Iterable[EdgeRecord] = (),
    ) -> None:
        """The commit is done: drop what it changed (None: it may have changed anything),
        keep what it created; drop the relation lists of ``edges_changed`` (None: all),
        and start an empty one for each created node that gained none. ``marks``: the
        classification (or None) of every node the commit wrote into being, an import's
        included; None when that is not known, which forgets the classified set.
        ``sought``: relation lists the write read before it moved them, kept unless in
        ``edges_changed``; ``linked``: relations it only added, each put at the end of its
        ends' lists where the cache then holds them (a list it lacks stays unread)."""
        with self._lock:
            if changed is None or marks is None:
                self._marks = None
            elif self._marks is not None:
                self._mark(marks)
            if edges_changed is None:
                for node_id in list(self._edges):
                    self._drop_edges(node_id)
                self._confirmed = {}
            else:
                for node_id in edges_changed:
                    self._drop_edges(node_id)
            if changed is None:
                self._nodes = {}
                self._edges = {}
                self._confirmed = {}
                self._bytes = 0
                self._warmth = _COLD
            else:
                for node_id in changed:
                    self._drop(node_id)
                created = list(created)
                self._put(created)
                if edges_changed is not None:
                    moved = set(edges_changed)
                    kept = {i: lists for i, lists in (sought or {}).items() if i not in moved}
                    kept |= {n.id: ((), ()) for n in created if n.id not in moved}
                    self._put_edges(kept)
                    self._link(linked)
            self._generation += 1

    def _link(self, linked: Iterable[EdgeRecord]) -> None:
        grown: dict[str, tuple[list[EdgeRecord], list[EdgeRecord]]] = {}
        held = self._edges
        for edge in linked:
            for end, way in ((edge.source, 0), (edge.target, 1)):
                if end not in grown:
                    if end not in held:
                        continue
                    out, into = held[end]
                    grown[end] = (list(out), list(into))
                grown[end][way].append(edge)
        self._put_edges({i: (tuple(out), tuple(into)) for i, (out, into) in grown.items()})

    def take_warming(self, generation: int) -> bool:
        """Whether the reader at ``generation`` is to read the whole memory and hand it
        over (``end_warming``): True for one reader at a time, while the cache is cold."""
        with self._lock:
            if not self._serves(generation) or self._warmth != _COLD:
                return False
            self._warmth = _WARMING
            return True

    def end_warming(self, generation: int, whole: Whole | None) -> None:
        """The warming reader is done: ``whole`` is the memory it read at ``generation``
        (None: it read nothing, the memory being too large). If a commit landed since,
        the cache stays cold for a later reader; a failed read passes ``generation`` -1."""
        with self._lock:
            if not self._serves(generation):
                self._warmth = _COLD
                return
            self._warmth = _WARM
            if whole is not None:
                nodes, edges, confirmed = whole
                self._put(nodes)
                self._put_edges(edges)
                self._confirmed.update(confirmed)

    def _serves(self, generation: int) -> bool:
        return generation == self._generation and generation % 2 == 0

    def get(self, generation: int, ids: list[str]) -> dict[str, NodeRecord]:
        with self._lock:
            if not self._serves(generation):
                return {}
            nodes = self._nodes
            return {i: nodes[i] for i in ids if i in nodes}

    def offer(self, generation: int, found: dict[str, NodeRecord]) -> None:
        with self._lock:
            if self._serves(generation):
                self._put(found.values())

    def get_edges(self, generation: int, ids: list[str]) -> dict[str, Adjacency]:
        with self._lock:
            if not self._serves(generation):
                return {}
            edges = self._edges
            return {i: edges[i] for i in ids if i in edges}

    def offer_edges(self, generation: int, found: dict[str, Adjacency]) -> None:
        with self._lock:
            if self._serves(generation):
                self._put_edges(found)

    def get_confirmations(self, generation: int, ids: list[str]) -> dict[str, Confirmation | None]:
        with self._lock:
            if not self._serves(generation):
                return {}
            held = self._confirmed
            return {i: held[i] for i in ids if i in held}

    def offer_confirmations(self, generation: int, found: dict[str, Confirmation | None]) -> None:
        with self._lock:
            if self._serves(generation):
                self._confirmed.update(found)
                excess = len(self._confirmed) - self._capacity
                for stale in list(itertools.islice(self._confirmed, max(0, excess))):
                    del self._confirmed[stale]

    def _mark(self, marks: Mapping[str, str | None]) -> None:
        # A reader of an older state may still hold the set: a new node's mark goes in
        # as is (that reader never meets the id), but a mark that would change or go
        # (an id written again after its erasure) goes into a copy.
        kept = self._marks
        if kept is None or kept is TOO_MANY:
            return
        held = cast(dict[str, str], kept)
        if any(held.get(i) not in (None, m) for i, m in marks.items()):
            held = dict(held)
        for node_id, mark in marks.items():
            if mark:
                held[node_id] = mark
            else:
                held.pop(node_id, None)
        self._marks = held if len(held) <= MAX_MARKS else TOO_MANY

    def get_marks(self, generation: int) -> Mapping[str, str] | None:
        """Every classified node's classification at ``generation``; None when not known
        (or not serving): the caller reads them from the store and offers them. TOO_MANY:
        more than MAX_MARKS, so not kept."""
        with self._lock:
            return self._marks if self._serves(generation) else None

    def offer_marks(self, generation: int, marks: dict[str, str]) -> None:
        with self._lock:
            if self._serves(generation) and self._marks is None:
                self._marks = marks if len(marks) <= MAX_MARKS else TOO_MANY

    def _drop(self, node_id: str) -> None:
        self._confirmed.pop(node_id, None)
        gone = self._nodes.pop(node_id, None)
        if gone is not None:
            self._bytes -= _weight(gone)

    def _drop_edges(self, node_id: str) -> None:
        gone = self._edges.pop(node_id, None)
        if gone is not None:
            self._bytes -= _edges_weight(gone)

    def _put_edges(self, found: dict[str, Adjacency]) -> None:
        for node_id, edges in found.items():
            self._drop_edges(node_id)
            self._edges[node_id] = edges
            self._bytes += _edges_weight(edges)
        self._bound()

    def _put(self, records: Iterable[NodeRecord]) -> None:
        for record in records:
            self._drop(record.id)
            self._nodes[record.id] = record
            self._bytes += _weight(record)
        self._bound()

    def _bound(self) -> None:
        # Oldest first out (a dict keeps insertion order), past either bound; relation
        # lists go before nodes, being cheaper to read again.
        while self._edges and (len(self._edges) > self._capacity or self._bytes > self._max_bytes):
            excess = max(1, len(self._edges) - self._capacity)
            for stale in list(itertools.islice(self._edges, excess)):
                self._drop_edges(stale)
        while self._nodes and (len(self._nodes) > self._capacity or self._bytes > self._max_bytes):
            excess = max(1, len(self._nodes) - self._capacity)
            for stale in list(itertools.islice(self._nodes, excess)):
                self._drop(stale)

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def weight(self) -> int:
        """Roughly the bytes the cached nodes hold."""
        return self._bytes


class LazySnapshot:
    """A read transaction's engine snapshot, opened at its first statement."""

    def __init__(
        self, conn: ladybug.Connection, cache: NodeCache | None, tracer: Tracer = DEFAULT_TRACER
    ) -> None:
        self._conn = conn
        self._tracer = tracer
        self._cache = cache
        # None: this transaction does not use the cache (none given, or a commit in flight).
        self.generation: int | None = None
        if cache is not None and cache.generation % 2 == 0:
            self.generation = cache.generation
        self._served = False
        self._open = False

    def cached(self, ids: list[str]) -> dict[str, NodeRecord]:
        if self._cache is None or self.generation is None:
            return {}
        found = self._cache.get(self.generation, ids)
        self._served = self._served or bool(found)
        return found

    def offer(self, found: dict[str, NodeRecord]) -> None:
        if self._cache is not None and self.generation is not None:
            self._cache.offer(self.generation, found)

    def cached_edges(self, ids: list[str]) -> dict[str, Adjacency]:
        if self._cache is None or self.generation is None:
            return {}
        found = self._cache.get_edges(self.generation, ids)
        self._served = self._served or bool(found)
        return found

    def offer_edges(self, found: dict[str, Adjacency]) -> None:
        if self._cache is not None and self.generation is not None:
            self._cache.offer_edges(self.generation, found)

    def cached_confirmations(self, ids: list[str]) -> dict[str, Confirmation | None]:
        if self._cache is None or self.generation is None:
            return {}
        found = self._cache.get_confirmations(self.generation, ids)
        self._served = self._served or bool(found)
        return found

    def offer_confirmations(self, found: dict[str, Confirmation | None]) -> None:
        if self._cache is not None and self.generation is not None:
            self._cache.offer_confirmations(self.generation, found)

    def take_warming(self) -> bool:
        """Whether this reader is to read the whole memory for the cache (its snapshot
        open first, so that what it reads is the state the cache holds)."""
        if self._cache is None or self.generation is None or self._cache.warm_limit <= 0:
            return False
        self.ensure_open()  # which forgets the generation if a commit landed since
        generation = self._generation_now()
        return generation is not None and self._cache.take_warming(generation)

    def _generation_now(self) -> int | None:
        return self.generation

    def end_warming(self, whole: Whole | None, *, failed: bool = False) -> None:
        if self._cache is not None and self.generation is not None:
            self._cache.end_warming(-1 if failed else self.generation, whole)

    @property
    def warm_limit(self) -> int:
        return 0 if self._cache is None else self._cache.warm_limit

    @property
    def uses_cache(self) -> bool:
        return self._cache is not None and self.generation is not None

    def cached_marks(self) -> Mapping[str, str] | None:
        if self._cache is None or self.generation is None:
            return None
        found = self._cache.get_marks(self.generation)
        self._served = self._served or found is not None
        return found

    def offer_marks(self, marks: dict[str, str]) -> None:
        if self._cache is not None and self.generation is not None:
            self._cache.offer_marks(self.generation, marks)

    def ensure_open(self) -> None:
        if self._open:
            return
        execute(self._conn, "BEGIN TRANSACTION READ ONLY", tracer=self._tracer).close()
        self._open = True
        if self._cache is None or self.generation == self._cache.generation:
            return
        if self._served:
            raise SnapshotMoved
        self.generation = None

    def close(self) -> None:
        if self._open:
            self._open = False
            execute(self._conn, "ROLLBACK", tracer=self._tracer).close()
