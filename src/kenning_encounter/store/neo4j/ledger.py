"""The infusion ledger on Neo4j: a ``:KenningLedger`` node per session and a
``:KenningDelivery`` node per delivered body, each unique by its key.

Neither label is the memory's (``KenningMemory``), so read_cypher's scope never
reads them, and no memory statement matches them; like every node of ours they carry
``_memory``, and their keys are unique per memory (namespace.py). A write here is a managed
transaction of its own that never touches the clock node: it takes no tick and
does not queue behind the memory's writers. Replicas saving one session at once
each MERGE their own deliveries, so the last write wins per node; the turn is
raised, never lowered.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, LiteralString, TypeVar

from kenning_encounter.store.ledger import Stamp, StoredLedger
from kenning_encounter.store.neo4j.beside import Beside

if TYPE_CHECKING:
    pass

T = TypeVar("T")

# A delivery's key: the session and the node, joined by a character neither holds.
KEY_SEPARATOR: Final = "\x1f"

SCHEMA: Final[list[tuple[str, LiteralString]]] = [
    (
        "kenning_ledger_memory_session",
        "CREATE CONSTRAINT kenning_ledger_memory_session IF NOT EXISTS "
        "FOR (s:KenningLedger) REQUIRE (s._memory, s.session) IS UNIQUE",
    ),
    (
        "kenning_ledger_memory_at",
        "CREATE INDEX kenning_ledger_memory_at IF NOT EXISTS FOR (s:KenningLedger) ON (s._memory, s.at)",
    ),
    (
        "kenning_delivery_memory_key",
        "CREATE CONSTRAINT kenning_delivery_memory_key IF NOT EXISTS "
        "FOR (d:KenningDelivery) REQUIRE (d._memory, d.key) IS UNIQUE",
    ),
    (
        "kenning_delivery_memory_session",
        "CREATE INDEX kenning_delivery_memory_session IF NOT EXISTS "
        "FOR (d:KenningDelivery) ON (d._memory, d.session)",
    ),
]
# Before memories had names (schema < 3): replaced by the composite ones above.
LEGACY_CONSTRAINTS: Final = ("kenning_ledger_session", "kenning_delivery_key")
LEGACY_INDEXES: Final = ("kenning_ledger_at", "kenning_delivery_session")
LABELS: Final = ("KenningLedger", "KenningDelivery")

LEDGER_GET: Final = (
    "OPTIONAL MATCH (s:KenningLedger {_memory: $memory, session: $session}) "
    "OPTIONAL MATCH (d:KenningDelivery {_memory: $memory, session: $session}) "
    "RETURN s.turn AS turn, s.at AS at, collect(d {.node, .turn, .at, .state}) AS stamps"
)
# One statement: the session raised to this turn, the stamps put, then only the
# newest ``keep`` of the session's deliveries left.
LEDGER_SAVE: Final = (
    "MERGE (s:KenningLedger {_memory: $memory, session: $session}) "
    "SET s.turn = CASE WHEN s.turn > $turn THEN s.turn ELSE $turn END, s.at = $at "
    "WITH s "
    "CALL (s) { UNWIND $stamps AS st "
    "  MERGE (d:KenningDelivery {_memory: $memory, key: st.key}) "
    "  SET d.session = s.session, d.node = st.node, d.turn = st.turn, d.at = st.at, "
    "      d.state = st.state } "
    "WITH s WHERE size($stamps) > 0 "
    "CALL (s) { MATCH (d:KenningDelivery {_memory: $memory, session: s.session}) "
    "  WITH d ORDER BY d.turn DESC, d.at DESC SKIP $keep DELETE d }"
)
LEDGER_FORGET: Final = (
    "OPTIONAL MATCH (s:KenningLedger {_memory: $memory, session: $session}) SET s.at = $at "
    "WITH count(*) AS seen "
    "MATCH (d:KenningDelivery {_memory: $memory, session: $session}) DELETE d"
)
LEDGER_PRUNE: Final = (
    "MATCH (s:KenningLedger {_memory: $memory}) WHERE s.at < $before "
    "WITH s LIMIT $limit "
    "CALL (s) { MATCH (d:KenningDelivery {_memory: $memory, session: s.session}) DELETE d } "
    "DELETE s RETURN count(*)"
)


def _decode(row: list[Any]) -> StoredLedger | None:
    turn, at, stamps = row
    if turn is None:
        return None
    found: dict[str, Stamp] = {}
    for s in stamps:
        node = str(s["node"])
        found[node] = Stamp(node, int(s["turn"]), float(s["at"]), str(s["state"]))
    return StoredLedger(int(turn), float(at or 0.0), found)


class Neo4jLedgers(Beside):
    def load(self, session: str) -> StoredLedger | None:
        rows = self._rows(
            LEDGER_GET, {"session": session}, write=False, doing="reading the infusion ledger"
        )
        return _decode(rows[0]) if rows else None

    def save(
        self, session: str, turn: int, stamps: Sequence[Stamp], *, at: float, keep: int
    ) -> None:
        params: dict[str, Any] = {
            "session": session,
            "turn": turn,
            "at": at,
            "keep": max(keep, 0),
            "stamps": [
                {
                    "key": session + KEY_SEPARATOR + s.node,
                    "node": s.node,
                    "turn": s.turn,
                    "at": s.at,
                    "state": s.state,
                }
                for s in stamps
            ],
        }
        self._rows(LEDGER_SAVE, params, write=True, doing="writing the infusion ledger")

    def forget(self, session: str, *, at: float) -> None:
        self._rows(
            LEDGER_FORGET,
            {"session": session, "at": at},
            write=True,
            doing="resetting the infusion ledger",
        )

    def prune(self, before: float, *, limit: int) -> int:
        rows = self._rows(
            LEDGER_PRUNE,
            {"before": before, "limit": limit},
            write=True,
            doing="pruning the infusion ledger",
        )
        return int(rows[0][0]) if rows else 0
