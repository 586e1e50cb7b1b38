"""One read_cypher query may not take a Neo4j server down by its memory.

A list comprehension over a collected million strings is not bounded by the
server's global transaction pool: with no per-transaction cap it exhausted a
1 GB heap and the JVM exited (reproduced). The test server caps a transaction
(`db.memory.transaction.max`, tools/neo4j-launcher), doctor warns when a
server does not, and the refusal names its layer.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.server.doctor import run_doctor
from kenning_encounter.store.neo4j import Neo4jStore
from tests.support.backends import neo4j_target

pytestmark = pytest.mark.neo4j

WIDE = "x" * 120
HEAP_EATER = (
    f"UNWIND range(1, 1000000) AS a WITH collect('{WIDE}' + a) AS l "
    "WITH [x IN l | [x + 'a', x + 'b', x + 'c', x + 'd', x + 'e', x + 'f']] AS m "
    "RETURN size(m)"
)


def test_a_query_past_the_transaction_cap_fails_alone(neo4j_store: Neo4jStore) -> None:
    with pytest.raises(ReadOnlyViolation) as refused:
        neo4j_store.read_cypher(HEAP_EATER, None, row_cap=5, char_cap=5_000, timeout_s=20.0)
    assert refused.value.layer == "memory", refused.value
    assert "db.memory.transaction.max" in str(refused.value)
    # The server is still there, for reads and for writes.
    memory = Memory(neo4j_store)
    memory.advance_encounter("memory-cap", "after the refusal")
    memory.create_entities("memory-cap", [{"type": "Note", "name": "still writable"}])
    rows = neo4j_store.read_cypher(
        "MATCH (n:Note) RETURN n.name", None, row_cap=5, char_cap=5_000, timeout_s=5.0
    ).rows
    assert rows == [["still writable"]]


def test_doctor_reads_the_server_s_transaction_cap(tmp_path: Any) -> None:
    target = neo4j_target()
    settings = load_settings(
        data_dir=tmp_path / "m",
        store="neo4j",
        neo4j_uri=target.uri,
        neo4j_username=target.username,
        neo4j_password=target.password,
        neo4j_database=target.database,
        matcher="off",
    )
    [finding] = [f for f in run_doctor(settings) if f.topic == "neo4j memory"]
    assert finding.status == "ok" and "at most" in finding.detail, finding
