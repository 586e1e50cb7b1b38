"""Neo4j schema 5 (store/neo4j/standing.py): a memory made before relevance over time has
no used_at on its nodes; opened, each node takes the latest time of its dated edges, page
by page, and the store is at schema 5."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore, standing
from kenning_encounter.store.neo4j import queries as q
from tests.integration.conftest import credentials

pytestmark = pytest.mark.neo4j

W = "standing-writer"


def _used(driver: Any) -> dict[str, str | None]:
    with driver.session() as s:
        rows = s.run(
            "MATCH (n:KenningMemory) WHERE n.tick IS NOT NULL AND NOT n:Encounter "
            "AND NOT n:Locus AND NOT n:Person RETURN n.name AS name, n.used_at AS u"
        )
        return {r["name"]: r["u"] for r in rows}


def test_a_store_made_before_used_at_is_backfilled_from_its_dated_edges_when_opened(
    neo4j_store: Neo4jStore, raw_driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    m = Memory(neo4j_store)
    m.advance_encounter(W, "before relevance")
    m.create_entities(
        W,
        [
            *({"type": "Observation", "name": f"o{i}", "description": "seen"} for i in range(5)),
            {"type": "Hypothesis", "name": "h", "description": "guessed"},
            {"type": "Note", "name": "alone", "description": "never linked"},
        ],
    )
    m.create_relations(W, [{"source": "o0", "type": "SUPPORTS", "target": "h"}])
    m.create_relations(W, [{"source": "o3", "type": "SUPPORTS", "target": "h"}])
    m.confirm_entities(W, ["o1"])
    m.find_by_name("o4", session_id=W)  # a consultation: a dated edge as well
    before = _used(raw_driver)
    assert before["alone"] is None and before["o2"] is None
    assert before["h"] is not None and before["h"] == before["o3"] != before["o0"]
    with raw_driver.session() as s:  # as a schema-4 server left it
        s.run("MATCH (n:KenningMemory) REMOVE n.used_at").consume()
        s.run("MATCH (v:Meta {key: 'schema_version'}) SET v.ival = 4").consume()
    assert set(_used(raw_driver).values()) == {None}
    monkeypatch.setattr(standing, "PAGE", 2)  # five Observations: three pages of them
    user, password = credentials()
    reopened = Neo4jStore.open(
        neo4j_store.uri, user, password, neo4j_store.database, memory=neo4j_store.memory
    )
    try:
        assert reopened.schema_version() == q.SCHEMA_VERSION >= 5
        assert _used(raw_driver) == before
    finally:
        reopened.close()
