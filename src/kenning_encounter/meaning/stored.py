"""Meanings kept by the store, read through a cache in each process.

``MeaningStore`` is what the matcher, the maintainer and the rebuild need of a home
for meanings. ``SidecarStore`` (a file beside an embedded memory, one process owning
it) is one; ``StoredMeanings`` is the other, for a store several server processes
share (Neo4j): the store keeps the entries, their seqs and a version counter, so
every replica lists the same meanings under the same handles, and a meaning made on
one replica is there for all.

Reads stay local: each ``version`` or ``snapshot`` asks the store for the changes
since the version this process holds (one small read when there are none) and folds
them into its cache; ``get``, ``len`` and ``in`` answer from the cache as of the last
such call. A store that cannot be read leaves the cache as it was (WARNING): a stale
listing costs a little relevance, a failed prompt would cost the turn.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Iterable
from typing import Protocol

from kenning_encounter.errors import StoreError
from kenning_encounter.meaning.sidecar import SidecarSnapshot
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.store.meanings import (
    Claim,
    MeaningChanges,
    MeaningEntry,
    MeaningItem,
    MeaningTable,
)
from kenning_encounter.store.records import NodeRecord

logger = logging.getLogger(__name__)

# Long enough for a model call and its retries; a holder that died delays the node
# by this much at most.
DEFAULT_CLAIM_TTL_S = 300.0


class MeaningStore(Protocol):
    """Where meanings live: node id -> one-sentence meaning, in creation order."""

    @property
    def version(self) -> int: ...

    def __len__(self) -> int: ...

    def __contains__(self, node_id: object) -> bool: ...

    def get(self, node_id: str) -> MeaningEntry | None: ...

    def entries(self) -> tuple[MeaningEntry, ...]: ...

    def snapshot(self) -> SidecarSnapshot: ...

    def missing(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]: ...

    def stale(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]: ...

    def orphans(self, live_ids: Iterable[str]) -> list[str]: ...

    def put(
        self, node_id: str, meaning: str, source_hash: str, *, order: int | None = None
    ) -> MeaningEntry | None:
        """The entry as recorded; None when the memory no longer holds the node."""
        ...

    def put_many(self, items: Iterable[MeaningItem]) -> list[MeaningEntry]:
        """The entries as recorded; a node the memory no longer holds is left out."""
        ...

    def drop(self, node_id: str) -> bool: ...

    def claim(self, node_id: str, source_hash: str) -> Claim:
        """Before a model call: go ahead, another process is making it, or it is made."""
        ...

    def release(self, node_id: str) -> None: ...

    def close(self) -> None: ...


def _text_chars(entry: MeaningEntry) -> int:
    return len(entry.meaning) + len(str(entry.seq))


class StoredMeanings:
    """A ``MeaningStore`` over a store's meaning table. Thread-safe."""

    def __init__(
        self,
        table: MeaningTable,
        *,
        claim_ttl_s: float = DEFAULT_CLAIM_TTL_S,
        holder: str | None = None,
    ) -> None:
        self._table = table
        self._claim_ttl_s = claim_ttl_s
        self.holder = holder or uuid.uuid4().hex  # this process's name in claims
        self._lock = threading.Lock()
        self._refreshing = threading.Lock()
        self._entries: dict[str, MeaningEntry] = {}
        self._ordered: tuple[MeaningEntry, ...] | None = None
        self._chars = 0
        self._version = 0
        self.refresh()

    # -- the cache ---------------------------------------------------------------

    def refresh(self) -> int:
        """Fold the store's changes since the held version into the cache; the version."""
        # One refresh at a time: a second caller waits and then finds little to read.
        with self._refreshing:
            since = self._version
            try:
                changes = self._table.changes(since)
            except StoreError as exc:
                logger.warning("could not read the meanings (%s); using those held", exc)
                return since
            with self._lock:
                self._apply(changes)
                return self._version

    def _apply(self, changes: MeaningChanges) -> None:
        if changes.version == self._version and not changes.full:
            return
        if changes.full:
            self._entries = {}
            self._chars = 0
        for entry in changes.put:
            old = self._entries.get(entry.id)
            if old is not None:
                self._chars -= _text_chars(old)
            self._entries[entry.id] = entry
            self._chars += _text_chars(entry)
        for node_id in changes.dropped:
            old = self._entries.pop(node_id, None)
            if old is not None:
                self._chars -= _text_chars(old)
        self._ordered = None
        self._version = changes.version

    # -- reading -----------------------------------------------------------------

    @property
    def version(self) -> int:
        """The store's version, after folding in its changes: one small read."""
        return self.refresh()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._entries

    def get(self, node_id: str) -> MeaningEntry | None:
        return self._entries.get(node_id)

    def entries(self) -> tuple[MeaningEntry, ...]:
        return self.snapshot().entries

    def snapshot(self) -> SidecarSnapshot:
        self.refresh()
        with self._lock:
            if self._ordered is None:
                self._ordered = tuple(
                    sorted(self._entries.values(), key=lambda e: (e.order, e.seq))
                )
            return SidecarSnapshot(self._ordered, self._version, self._chars)

    def missing(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]:
        self.refresh()
        return [n for n in nodes if n.id not in self._entries]

    def stale(self, nodes: Iterable[NodeRecord]) -> list[NodeRecord]:
        self.refresh()
        out: list[NodeRecord] = []
        for node in nodes:
            entry = self._entries.get(node.id)
            if entry is not None and entry.source_hash != source_hash(node):
                out.append(node)
        return out

    def orphans(self, live_ids: Iterable[str]) -> list[str]:
        self.refresh()
        live = set(live_ids)
        with self._lock:
            return [node_id for node_id in self._entries if node_id not in live]

    # -- writing -----------------------------------------------------------------

    def put(
        self, node_id: str, meaning: str, source_hash: str, *, order: int | None = None
    ) -> MeaningEntry | None:
        made = self.put_many([(node_id, meaning, source_hash, order)])
        return made[0] if made else None

    def put_many(self, items: Iterable[MeaningItem]) -> list[MeaningEntry]:
        made = self._table.put_many(list(items))
        self.refresh()  # our own write, and any other since, in the cache at once
        return made

    def drop(self, node_id: str) -> bool:
        dropped = self._table.drop(node_id)
        self.refresh()
        return dropped

    def claim(self, node_id: str, source_hash: str) -> Claim:
        return self._table.claim(node_id, source_hash, self.holder, self._claim_ttl_s)

    def release(self, node_id: str) -> None:
        self._table.release(node_id, self.holder)

    def close(self) -> None:
        """Nothing to close: the store owns the connection."""

    def __enter__(self) -> StoredMeanings:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
