"""The ledger kept in the memory's store: one per session, shared by every replica.

With several servers on one memory a session's prompts land on any of them; a
ledger of each process's own would show a body again on every replica, and
forget everything at a restart. This one reads and writes the store's ledger
tables (store/ledger.py), which take no tick and are not authored data.

Bounded: a session keeps its newest ``max_deliveries`` deliveries (in the same
write), and sessions not infused for ``retention_s`` are dropped by ``prune``,
which the full face's idle sweeper calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from kenning_encounter.infusion.ledger import MAX_DELIVERIES, Delivery, SessionLedger
from kenning_encounter.store.ledger import SessionLedgers, Stamp

# A session quiet this long has nothing left in any context the hook could reach.
RETENTION_S: Final = 7 * 86_400.0
PRUNE_BATCH: Final = 1_000


class StoreLedger:
    def __init__(
        self,
        ledgers: SessionLedgers,
        *,
        max_deliveries: int = MAX_DELIVERIES,
        retention_s: float = RETENTION_S,
    ) -> None:
        self._ledgers = ledgers
        self._keep = max_deliveries
        self._retention_s = retention_s

    def load(self, session: str) -> SessionLedger:
        stored = self._ledgers.load(session)
        if stored is None:
            return SessionLedger()
        return SessionLedger(
            stored.turn,
            {n: Delivery(s.turn, s.at, s.state) for n, s in stored.stamps.items()},
        )

    def save(self, session: str, turn: int, stamps: Mapping[str, Delivery], *, at: float) -> None:
        rows = [Stamp(node, d.turn, d.at, d.state) for node, d in stamps.items()]
        self._ledgers.save(session, turn, rows, at=at, keep=self._keep)

    def forget(self, session: str, *, at: float) -> None:
        self._ledgers.forget(session, at=at)

    def prune(self, now: float) -> int:
        """Drop the sessions quiet past the retention; how many went."""
        gone = 0
        while True:
            batch = self._ledgers.prune(now - self._retention_s, limit=PRUNE_BATCH)
            gone += batch
            if batch < PRUNE_BATCH:
                return gone
