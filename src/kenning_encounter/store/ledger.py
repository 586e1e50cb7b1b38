"""The infusion ledger as a store keeps it: beside the memory, never part of it.

What each session was already shown lives in the store so that every server on
one memory, and the same server after a restart, renews bodies the same way.
It is bookkeeping, not authored data: its writes take no tick (the spine clock
never moves for it), no tool reads it, and read_cypher cannot see it (the
embedded sandbox drops its table; on Neo4j its labels are not the memory's).

It stays bounded: a session keeps its newest ``keep`` deliveries, and a session
untouched since a cutoff is dropped by ``prune``. Times are wall-clock UTC
seconds, the only clock two processes share.

Two replicas saving one session at once: each delivery is its own entry, so the
last write wins per node, and the turn only ever grows.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Stamp:
    """One body delivered: at which prompt of the session, when, and in which fact-state."""

    node: str
    turn: int
    at: float
    state: str


@dataclass(frozen=True, slots=True)
class StoredLedger:
    """A session's ledger as read: its last turn, when it was last saved, its deliveries."""

    turn: int
    at: float
    stamps: dict[str, Stamp] = field(default_factory=dict[str, Stamp])


class SessionLedgers(Protocol):
    """A backend's ledger tables. Each call is one short transaction of its own."""

    def load(self, session: str) -> StoredLedger | None: ...

    def save(
        self, session: str, turn: int, stamps: Sequence[Stamp], *, at: float, keep: int
    ) -> None:
        """Set the turn (never lowering it) and the save time, put each stamp (replacing
        the session's earlier one for that node), and keep the newest ``keep``."""
        ...

    def forget(self, session: str, *, at: float) -> None:
        """Drop the session's deliveries; its turn stays."""
        ...

    def prune(self, before: float, *, limit: int) -> int:
        """Drop up to ``limit`` sessions last saved before ``before``; how many went."""
        ...


def newest(stamps: Sequence[Stamp], keep: int) -> list[Stamp]:
    """The ``keep`` most recent stamps (by turn, then time), the order a backend keeps."""
    return sorted(stamps, key=lambda s: (s.turn, s.at), reverse=True)[: max(keep, 0)]
