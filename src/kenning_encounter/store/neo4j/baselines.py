"""Mass baselines on Neo4j (store/meanings.py): a ``:KenningBaseline`` node per
encounter's reading, and one ``:KenningBaselines`` node per memory that saves queue
on, so two replicas saving at once never both prune the same reading.

Neither label is the memory's; both carry ``_memory`` and are unique within it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final, LiteralString

from kenning_encounter.store.meanings import StoredBaseline
from kenning_encounter.store.neo4j.beside import Beside

if TYPE_CHECKING:
    pass

SCHEMA: Final[list[tuple[str, LiteralString]]] = [
    (
        "kenning_baseline_memory_key",
        "CREATE CONSTRAINT kenning_baseline_memory_key IF NOT EXISTS "
        "FOR (b:KenningBaseline) REQUIRE (b._memory, b.key) IS UNIQUE",
    ),
    (
        "kenning_baselines_memory",
        "CREATE CONSTRAINT kenning_baselines_memory IF NOT EXISTS "
        "FOR (a:KenningBaselines) REQUIRE a._memory IS UNIQUE",
    ),
]
LABELS: Final = ("KenningBaseline", "KenningBaselines")

# A reading outside any encounter is kept under a key no encounter name can take.
NO_ENCOUNTER_KEY: Final = "\x00"

BASELINES_GET: Final = (
    "MATCH (b:KenningBaseline {_memory: $memory}) RETURN b.encounter, b.tick, b.saved_at, b.body"
)
BASELINE_SAVE: Final = (
    "MERGE (a:KenningBaselines {_memory: $memory}) SET a.saves = coalesce(a.saves, 0) + 1 "
    "MERGE (b:KenningBaseline {_memory: $memory, key: $key}) "
    "SET b.encounter = $encounter, b.tick = $tick, b.saved_at = $saved_at, b.body = $body "
    "WITH a "
    "CALL (a) { MATCH (o:KenningBaseline {_memory: $memory}) "
    "  WITH o ORDER BY o.tick DESC, o.saved_at DESC SKIP $keep DELETE o }"
)


class Neo4jBaselines(Beside):
    def load(self) -> list[StoredBaseline]:
        rows = self._rows(BASELINES_GET, {}, write=False, doing="reading the mass baselines")
        return [
            StoredBaseline(
                None if encounter is None else str(encounter), int(tick), str(at), str(body)
            )
            for encounter, tick, at, body in rows
        ]

    def save(self, baseline: StoredBaseline, *, keep: int) -> None:
        params: dict[str, Any] = {
            "key": NO_ENCOUNTER_KEY if baseline.encounter is None else baseline.encounter,
            "encounter": baseline.encounter,
            "tick": baseline.tick,
            "saved_at": baseline.saved_at,
            "body": baseline.body,
            "keep": max(keep, 1),
        }
        self._rows(BASELINE_SAVE, params, write=True, doing="saving a mass baseline")
