"""An embedded store made before the shared ledger gains its table when it opens, and the
ledger then works on it (the Neo4j counterpart: tests/integration/test_neo4j_ledger_replicas.py)."""

from __future__ import annotations

from pathlib import Path

from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.schema import SCHEMA_VERSION
from kenning_encounter.store.ledger import Stamp
from tests.support.embedded_store import made_at_schema


def test_a_schema_4_store_gains_the_ledger_table_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old"
    made_at_schema(path, 4)
    store = EmbeddedStore.open(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION >= 5
        store.ledgers.save("s", 1, [Stamp("n", 1, 1.0, "open")], at=1.0, keep=5)
        loaded = store.ledgers.load("s")
        assert loaded is not None and set(loaded.stamps) == {"n"}
    finally:
        store.close()
