"""Nodes already read, kept by one server process while other processes write.

A read of a node by id costs a seek on the server (tens of microseconds each, and a
prompt's infusion reads a hundred and more of them); most of those nodes have not
changed since the last prompt read them. Here a node changes only when a write
commits, and every write that changes a stored node (its status, successor, use or
pin: the ops' ``_on_changed`` family of hooks) marks it with the tick it was
written at (``_touched``, indexed per type). Deleting a node or emptying the memory
moves the ``deletions`` count, and an erasure moves ``erasures``.

The cache knows the clock as it was at its last synchronisation (``synced``). To
synchronise, a read asks in one statement, clock first, for the counts and for the
ids touched at ``synced`` or after; it drops those ids (everything, when a count
moved) and moves ``synced`` to the clock it read. A writer takes the clock's lock for
its whole transaction and one tick with it, so a write that commits after that read
holds a later tick and the next synchronisation sees it.

The tick read is asked for again because Neo4j shows a committed transaction record
by record, its index entries last, and a read takes no lock: a synchronisation can
read the clock at the tick of a write still being applied and miss the nodes it
touched, and a read then can cache a node as it was before that write (a whole
batch of pins stayed stale that way). A writer gives the clock's lock up only once
applied, so a clock read past a tick proves that tick's write whole; until a
synchronisation has read the clock at a tick and asked again after, the tick is not
trusted. A write that deleted nodes leaves its tick beside the deletion count
(``deleted_at``): while the clock stands at it, each synchronisation starts again,
and once more when it has moved on (a node read before the deletion was applied may
have been kept meanwhile).

A memory emptied and made again under a running server (restored from an earlier
export, say) starts its clock and counts again, and may hold the same ids: its clock
and counts can show values this cache already passed, so no change would be heard.
The memory's identity (``Meta {key: 'made'}``, a random number made with its clock)
rides with each synchronisation, and a read that finds another than the store opened
with refuses to answer (tx.py ``_same_memory``): a restart starts every cache afresh.

A node read from the server may be offered to the cache by a read that noted the
cache's generation before reading it: the offer is taken only if no synchronisation
dropped anything since (the node may otherwise predate a change already dropped).
A read uses cached nodes only after synchronising once itself. Derived and per
process, like the term frequencies beside it: a replica keeps its own.

Beside the nodes, the cache keeps the director of each locus a read found one for.
That tie is made once, at a locus's first advance, and nothing changes or removes it,
nor the person's name and key; so it needs no synchronisation. It goes when the
nodes all go (a count moved), in case the memory itself was emptied.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from kenning_encounter.store.persons import PersonRecord
from kenning_encounter.store.records import NodeRecord, approx_bytes

DEFAULT_CAPACITY: Final = 100_000
# More nodes touched than this since the last synchronisation (a process that read
# nothing through a long run of writes): the cache starts again rather than drop each.
DROP_LIMIT: Final = 5_000
# Roughly what the cached nodes may hold in memory; the least recently used go first past it.
DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
# Loci whose directors are kept; past it, newly found ones are not (about 200 bytes each).
DIRECTORS_LIMIT: Final = 100_000


class NodeCache:
    def __init__(
        self,
        capacity: int = DEFAULT_CAPACITY,
        max_bytes: int = DEFAULT_MAX_BYTES,
        drop_limit: int = DROP_LIMIT,
    ) -> None:
        self.drop_limit = drop_limit
        self._capacity = capacity
        self._max_bytes = max_bytes
        self._bytes = 0
        self._lock = threading.Lock()
        self._nodes: OrderedDict[str, NodeRecord] = OrderedDict()
        self._synced: int | None = None  # the clock at the last synchronisation
        self._counts: tuple[int, int] | None = None  # erasures, deletions then
        self._deleting: int | None = None  # a deletion's tick no clock read has passed
        self._generation = 0  # moves whenever anything is dropped
        self._directors: dict[str, PersonRecord] = {}  # locus -> its director

    @property
    def capacity(self) -> int:
        return self._capacity

    @property
    def synced(self) -> int | None:
        return self._synced

    @property
    def generation(self) -> int:
        return self._generation

    def __len__(self) -> int:
        return len(self._nodes)

    @property
    def held_bytes(self) -> int:
        return self._bytes

    def _drop(self, node_id: str) -> bool:
        gone = self._nodes.pop(node_id, None)
        if gone is None:
            return False
        self._bytes -= approx_bytes(gone)
        return True

    def _empty(self) -> None:
        self._nodes.clear()
        self._bytes = 0
        self._directors.clear()

    def holds_any(self, ids: Iterable[str]) -> bool:
        nodes = self._nodes
        return any(i in nodes for i in ids)

    def synchronise(
        self,
        clock: int,
        counts: tuple[int, int],
        touched: Sequence[str],
        deleted_at: int | None = None,
    ) -> int:
        """Apply one synchronisation's answer (the nodes touched at ``synced`` or after,
        and the tick of the last write that deleted any); the generation after it."""
        with self._lock:
            deleting = self._deleting
            if (
                self._synced is None
                or counts != self._counts
                or deleting is not None
                or len(touched) > self.drop_limit
            ):
                self._empty()
                self._generation += 1
            else:
                dropped = [i for i in touched if self._drop(i)]
                if dropped:
                    self._generation += 1
            if deleting is not None and clock > deleting:
                self._deleting = None  # that write was applied whole before this read
            if deleted_at is not None and deleted_at >= clock:
                self._deleting = max(deleted_at, self._deleting or deleted_at)
            self._counts = counts
            if self._synced is None or clock > self._synced:
                self._synced = clock
            return self._generation

    def get(self, ids: Iterable[str]) -> dict[str, NodeRecord]:
        with self._lock:
            nodes = self._nodes
            found = {i: n for i in ids if (n := nodes.get(i)) is not None}
            for i in found:
                nodes.move_to_end(i)
            return found

    def directors(self, loci: Iterable[str]) -> dict[str, PersonRecord]:
        """The directors kept of ``loci``."""
        with self._lock:
            held = self._directors
            return {locus: p for locus in loci if (p := held.get(locus)) is not None}

    def keep_directors(self, found: Mapping[str, PersonRecord]) -> None:
        """Keep directors a read found (committed ties, which never change)."""
        with self._lock:
            if len(self._directors) + len(found) <= DIRECTORS_LIMIT:
                self._directors.update(found)

    def offer(self, generation: int, found: Mapping[str, NodeRecord]) -> None:
        """Keep nodes read by a read that noted ``generation`` before reading them."""
        if not found:
            return
        with self._lock:
            if generation != self._generation or self._synced is None:
                return
            nodes = self._nodes
            for i, node in found.items():
                self._drop(i)
                nodes[i] = node
                self._bytes += approx_bytes(node)
            while nodes and (len(nodes) > self._capacity or self._bytes > self._max_bytes):
                self._drop(next(iter(nodes)))
