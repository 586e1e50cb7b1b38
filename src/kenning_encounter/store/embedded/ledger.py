"""The infusion ledger on the embedded store: one ``LedgerSession`` row per session.

The engine has no index but the primary key, so a session's deliveries live in
its own row as parallel lists (node, turn, time, fact-state): a load is one
key lookup, a save one read and one write of that row. Every write here is
its own transaction on the store's one writer; none takes a tick, so the text
index, the node cache and the read_cypher snapshot (whose table list drops
``LedgerSession``) never hear of it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from kenning_encounter.store.ledger import Stamp, StoredLedger, newest

T = TypeVar("T")

TABLE: Final = "LedgerSession"
CREATE_TABLE: Final = (
    "CREATE NODE TABLE LedgerSession(session STRING, turn INT64, at DOUBLE, "
    "nodes STRING[], turns INT64[], ats DOUBLE[], states STRING[], PRIMARY KEY(session))"
)
LEDGER_GET: Final = (
    "MATCH (s:LedgerSession {session: $session}) "
    "RETURN s.turn, s.at, s.nodes, s.turns, s.ats, s.states"
)
LEDGER_PUT: Final = (
    "MERGE (s:LedgerSession {session: $session}) SET s.turn = $turn, s.at = $at, "
    "s.nodes = $nodes, s.turns = $turns, s.ats = $ats, s.states = $states"
)
LEDGER_PRUNE: Final = (
    "MATCH (s:LedgerSession) WHERE s.at < $before WITH s LIMIT $limit DELETE s RETURN count(*)"
)

Rows = Callable[[str, dict[str, Any]], list[list[Any]]]


class LedgerUnits(Protocol):
    """What the backend lends: a statement runner inside one transaction."""

    def ledger_read(self, work: Callable[[Rows], T]) -> T: ...

    def ledger_write(self, work: Callable[[Rows], T]) -> T:
        """On the store's writer, serialized with every other write, committed at the end."""
        ...


def _decode(row: list[Any]) -> StoredLedger:
    turn, at, nodes, turns, ats, states = row
    stamps = {
        str(n): Stamp(str(n), int(t), float(a), str(s))
        for n, t, a, s in zip(nodes or [], turns or [], ats or [], states or [], strict=True)
    }
    return StoredLedger(int(turn or 0), float(at or 0.0), stamps)


def _get(rows: Rows, session: str) -> StoredLedger | None:
    found = rows(LEDGER_GET, {"session": session})
    return _decode(found[0]) if found else None


def _put(rows: Rows, session: str, turn: int, at: float, stamps: Sequence[Stamp]) -> None:
    rows(
        LEDGER_PUT,
        {
            "session": session,
            "turn": turn,
            "at": at,
            "nodes": [s.node for s in stamps],
            "turns": [s.turn for s in stamps],
            "ats": [s.at for s in stamps],
            "states": [s.state for s in stamps],
        },
    )


class EmbeddedLedgers:
    def __init__(self, units: LedgerUnits) -> None:
        self._units = units

    def load(self, session: str) -> StoredLedger | None:
        return self._units.ledger_read(lambda rows: _get(rows, session))

    def save(
        self, session: str, turn: int, stamps: Sequence[Stamp], *, at: float, keep: int
    ) -> None:
        def work(rows: Rows) -> None:
            # Read again under the writer: a save made since this session's load is kept.
            before = _get(rows, session)
            merged = dict(before.stamps) if before is not None else {}
            merged.update({s.node: s for s in stamps})
            latest = max(turn, before.turn) if before is not None else turn
            _put(rows, session, latest, at, newest(list(merged.values()), keep))

        self._units.ledger_write(work)

    def forget(self, session: str, *, at: float) -> None:
        def work(rows: Rows) -> None:
            before = _get(rows, session)
            if before is not None:
                _put(rows, session, before.turn, at, [])

        self._units.ledger_write(work)

    def prune(self, before: float, *, limit: int) -> int:
        found = self._units.ledger_write(
            lambda rows: rows(LEDGER_PRUNE, {"before": before, "limit": limit})
        )
        return int(found[0][0]) if found else 0
