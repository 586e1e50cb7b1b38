"""Nodes already read, kept for read transactions that see the same committed state.

A lookup by id is one engine statement per node type, which costs more than the
text search that found the ids. Nodes change only when a write commits, and in
the embedded store every write commits through one connection, so the store can
know exactly which committed state a cached node belongs to.

The protocol is a sequence lock. The generation is even while no commit is in
flight; the writer bumps it just before COMMIT and again just after, and every
bump empties the cache, so every cached node belongs to the state of the
current generation. A read transaction notes the generation when it starts and
opens its engine snapshot only when it first needs the engine (a read served
wholly from the cache never touches it). If the generation is unchanged once
the snapshot is open, no commit overlapped, and the snapshot is that same
state. If it moved, a transaction that has not yet used the cache just goes on
without it; one that has raises ``SnapshotMoved`` and is run again, without the
cache, so no transaction ever mixes two states.
"""

from __future__ import annotations

import itertools
import threading

import ladybug

from kenning_encounter.store.records import NodeRecord

DEFAULT_CAPACITY = 50_000


class SnapshotMoved(Exception):
    """Internal: a read used cached nodes, then found a newer snapshot; it is run again."""


class NodeCache:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._lock = threading.Lock()
        self._generation = 0
        self._nodes: dict[str, NodeRecord] = {}

    @property
    def generation(self) -> int:
        return self._generation

    def bump(self) -> None:
        """A commit is about to happen, or has just happened: forget everything."""
        with self._lock:
            self._generation += 1
            self._nodes = {}

    def get(self, generation: int, ids: list[str]) -> dict[str, NodeRecord]:
        with self._lock:
            if generation != self._generation:
                return {}
            nodes = self._nodes
            return {i: nodes[i] for i in ids if i in nodes}

    def offer(self, generation: int, found: dict[str, NodeRecord]) -> None:
        with self._lock:
            if generation != self._generation:
                return
            nodes = self._nodes
            nodes.update(found)
            excess = len(nodes) - self._capacity
            if excess > 0:  # oldest first out: a dict keeps insertion order
                for stale in list(itertools.islice(nodes, excess)):
                    del nodes[stale]

    def __len__(self) -> int:
        return len(self._nodes)


class LazySnapshot:
    """A read transaction's engine snapshot, opened at its first statement."""

    def __init__(self, conn: ladybug.Connection, cache: NodeCache | None) -> None:
        self._conn = conn
        self._cache = cache
        generation = cache.generation if cache is not None else 1
        self.generation: int | None = generation if generation % 2 == 0 else None
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

    def ensure_open(self) -> None:
        if self._open:
            return
        self._conn.execute("BEGIN TRANSACTION READ ONLY")
        self._open = True
        if self._cache is None or self.generation == self._cache.generation:
            return
        if self._served:
            raise SnapshotMoved
        self.generation = None

    def close(self) -> None:
        if self._open:
            self._open = False
            self._conn.execute("ROLLBACK")
