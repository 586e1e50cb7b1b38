"""Meanings and mass baselines as a store keeps them: derived data beside the memory.

Both are made from the graph (a meaning by a model, a baseline by an orient) and
never part of it: no tick, no tool reads them as nodes, read_cypher cannot see
them. On the embedded store one process owns the memory, so they live in files
beside it (``meaning/sidecar.py``, ``analytics/baseline.py``). Where several server
processes serve one memory (Neo4j), the store keeps them, so every replica reads
the same meanings and the same baselines and a meaning is made once, not once per
replica. These are the operations such a store offers; the layers above keep
their own caches over them.

Meanings are versioned: every change takes the next value of one counter kept
with them, and each entry records the version that last wrote it. A reader asks
for the changes since the version it holds (one small read when there are none),
so a listing is never reloaded whole per prompt. A dropped entry stays behind as
a tombstone for a while so readers hear of the drop; ``floor`` says how far back
tombstones have been purged, and a reader holding less must reload everything.

Claims keep two replicas from paying the model for one node: a replica claims a
node before it calls the model, and a claim expires on the store's clock, so a
replica that died holding one delays the node, never blocks it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class MeaningEntry:
    id: str
    meaning: str
    source_hash: str
    order: int  # the node's tick at creation
    seq: int  # assigned where the meanings are kept, never reused; the entry's handle in prompts


# (node id, meaning, source hash, order or None for "after every entry held")
MeaningItem = tuple[str, str, str, int | None]


@dataclass(frozen=True, slots=True)
class MeaningChanges:
    """What changed after a reader's version, up to and including ``version``."""

    version: int
    full: bool  # True: ``put`` is every live entry, and the reader drops what it held
    put: tuple[MeaningEntry, ...]
    dropped: tuple[str, ...]


ClaimVerdict = Literal["granted", "held", "done"]


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer to a claim: go ahead, another replica is on it (until when), or made already."""

    verdict: ClaimVerdict
    until_s: float = 0.0  # when another holder's claim expires (seconds from now)


class MeaningTable(Protocol):
    """A backend's meanings. Each call is one short transaction of its own."""

    def changes(self, since: int) -> MeaningChanges:
        """The changes after ``since`` (0: everything held)."""
        ...

    def put_many(self, items: Sequence[MeaningItem]) -> list[MeaningEntry]:
        """Record meanings; a new entry takes the next seq, a re-made one keeps its seq
        (and, unless given, its order). Returns the entries as recorded: a meaning of a
        node the memory no longer holds (deleted, or erased while the meaning was being
        made) is recorded nowhere and left out."""
        ...

    def drop(self, node_id: str) -> bool:
        """Forget a meaning; False when none was held. A put still being written when the
        drop comes is waited for and dropped."""
        ...

    def claim(self, node_id: str, source_hash: str, holder: str, ttl_s: float) -> Claim:
        """Claim the making of ``node_id``'s meaning from text hashing to ``source_hash``."""
        ...

    def release(self, node_id: str, holder: str) -> None:
        """Give up ``holder``'s claim on ``node_id`` (made, or failed)."""
        ...


@dataclass(frozen=True, slots=True)
class StoredBaseline:
    """One mass reading as kept: its encounter (None outside one), when, and its body."""

    encounter: str | None
    tick: int
    saved_at: str
    body: str  # the reading's JSON, owned by analytics/baseline.py


class BaselineTable(Protocol):
    def load(self) -> list[StoredBaseline]: ...

    def save(self, baseline: StoredBaseline, *, keep: int) -> None:
        """Replace the encounter's reading with ``baseline``, then keep the newest ``keep``
        (by tick, then time saved)."""
        ...


@runtime_checkable
class KeepsDerived(Protocol):
    """A store that keeps meanings and baselines itself, for every process serving it."""

    @property
    def meanings(self) -> MeaningTable: ...

    @property
    def baselines(self) -> BaselineTable: ...


def checked_items(items: Sequence[MeaningItem]) -> None:
    for node_id, meaning, _digest, _order in items:
        if not node_id or not meaning.strip():
            raise ValueError("a meaning entry needs an id and a non-empty meaning")
