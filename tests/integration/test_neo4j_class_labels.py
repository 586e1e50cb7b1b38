"""The class labels read_cypher's gate is held by on Neo4j (store/neo4j/classified.py):
set on every classified node a write or an import makes, given by the schema-4 migration
to the nodes of a store made before them, and never shown as a node's type."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.memory import load
from kenning_encounter.memory.dump import export
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.integration.conftest import credentials
from tests.support import classified as plan
from tests.support.backends import open_neo4j_store
from tests.support.classified import MARK

pytestmark = pytest.mark.neo4j

ALL = tuple(CLASSIFICATIONS)
EVERY_TEXT = "MATCH (n) RETURN n.name AS name, n.description AS d"


def _plant(store: Neo4jStore) -> None:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, "lanterns and patients")
    writer.create_entities(plan.WRITER, plan.entities())
    writer.create_relations(plan.WRITER, plan.relations())


def _labelled(driver: Any) -> dict[str, list[str]]:
    with driver.session() as s:
        rows = s.run(
            "MATCH (n:KenningMemory) WHERE n.classification IS NOT NULL "
            "RETURN n.name AS name, [l IN labels(n) WHERE l STARTS WITH 'KenningClass_'] AS l"
        )
        return {r["name"]: sorted(r["l"]) for r in rows}


def _reopen(store: Neo4jStore) -> Neo4jStore:
    user, password = credentials()
    return Neo4jStore.open(store.uri, user, password, store.database, memory=store.memory)


EXPECTED = {
    f"ward note {MARK}": ["KenningClass_phi"],
    f"open ask {MARK}": ["KenningClass_pii"],
    f"old policy {MARK}": ["KenningClass_secret"],
    f"card number {MARK}": ["KenningClass_pci", "KenningClass_pii"],
}


def test_a_write_labels_each_classified_node_by_its_classes(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    _plant(neo4j_store)
    assert _labelled(raw_driver) == EXPECTED


def test_an_import_labels_the_nodes_it_loads(
    neo4j_store: Neo4jStore, raw_driver: Any, tmp_path: Path
) -> None:
    _plant(neo4j_store)
    path = tmp_path / "d.jsonl"
    with path.open("wb") as out:
        export(neo4j_store, out, app_version="test")
    fresh = open_neo4j_store()  # the test database emptied again
    assert not isinstance(fresh, str)
    try:
        load.load(fresh, load.verify(path))
        assert _labelled(raw_driver) == EXPECTED
        assert MARK not in str(Memory(fresh).read_cypher(EVERY_TEXT).rows)
    finally:
        fresh.close()


def test_a_store_made_before_class_labels_gains_them_when_opened(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    _plant(neo4j_store)
    with raw_driver.session() as s:  # as a schema-3 server left it
        for c in CLASSIFICATIONS:
            s.run(f"MATCH (n:KenningClass_{c}) REMOVE n:KenningClass_{c}").consume()
        s.run("MATCH (v:Meta {key: 'schema_version'}) SET v.ival = 3").consume()
    assert MARK in str(Memory(neo4j_store).read_cypher(EVERY_TEXT).rows)  # what it fixes
    reopened = _reopen(neo4j_store)
    try:
        assert reopened.schema_version() == q.SCHEMA_VERSION
        assert _labelled(raw_driver) == EXPECTED
        assert MARK not in str(Memory(reopened).read_cypher(EVERY_TEXT).rows)
    finally:
        reopened.close()


# The one relation of the plan that moves a status from a classified node: the phi ward
# note challenges the public hypothesis (classified.py, the moved labels).
EXPECTED_MOVED = {"lantern guess": ["KenningMoved_phi"]}
STATUSES = "MATCH (n:Hypothesis) RETURN n.name AS name, n.status AS status"


def _prefixed(driver: Any, prefix: str) -> dict[str, list[str]]:
    """Each node (or encounter, by its name) carrying labels that start with ``prefix``."""
    with driver.session() as s:
        rows = s.run(
            "MATCH (n:KenningMemory) WITH n, "
            "[l IN labels(n) WHERE l STARTS WITH $prefix] AS l WHERE l <> [] "
            "RETURN coalesce(n.name, n.id) AS name, l",
            prefix=prefix,
        )
        return {r["name"]: sorted(r["l"]) for r in rows}


def _round_trip(store: Neo4jStore, tmp_path: Path) -> None:
    """``store`` exported, the test database emptied, and the dump imported into it."""
    path = tmp_path / "d.jsonl"
    with path.open("wb") as out:
        export(store, out, app_version="test")
    fresh = open_neo4j_store()  # the test database emptied again
    assert not isinstance(fresh, str)
    try:
        load.load(fresh, load.verify(path))
    finally:
        fresh.close()


def _moved(driver: Any) -> dict[str, list[str]]:
    return _prefixed(driver, "KenningMoved_")


def test_a_relation_from_a_classified_node_labels_what_it_moves(
    neo4j_store: Neo4jStore, raw_driver: Any, tmp_path: Path
) -> None:
    _plant(neo4j_store)
    assert _moved(raw_driver) == EXPECTED_MOVED
    assert "lantern guess" not in str(Memory(neo4j_store).read_cypher(STATUSES).rows)
    _round_trip(neo4j_store, tmp_path)
    assert _moved(raw_driver) == EXPECTED_MOVED  # an import labels them too


def test_a_store_made_before_moved_labels_gains_them_when_opened(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    _plant(neo4j_store)
    with raw_driver.session() as s:  # as a schema-6 server left it
        for c in CLASSIFICATIONS:
            s.run(f"MATCH (n:KenningMoved_{c}) REMOVE n:KenningMoved_{c}").consume()
        s.run("MATCH (v:Meta {key: 'schema_version'}) SET v.ival = 6").consume()
    # What it fixes: the status the withheld challenge gave, read by a caller not granted it.
    assert "challenged" in str(Memory(neo4j_store).read_cypher(STATUSES).rows)
    reopened = _reopen(neo4j_store)
    try:
        assert reopened.schema_version() == q.SCHEMA_VERSION
        assert _moved(raw_driver) == EXPECTED_MOVED
        assert "challenged" not in str(Memory(reopened).read_cypher(STATUSES).rows)
    finally:
        reopened.close()


# A public concept a phi note alone used (its ``used_marks``), and the encounter a secret
# node was erased from (its ``tombstones_marked``): each carries the used label of the
# class (classified.py ``USED_LABEL_PREFIX``), which an import gives them again.
EXPECTED_USED = {"lamp idea": ["KenningUsed_phi"], "E1": ["KenningUsed_secret"]}


def _used(driver: Any) -> dict[str, list[str]]:
    return _prefixed(driver, "KenningUsed_")


def test_an_import_labels_what_classified_nodes_used_and_erased(
    neo4j_store: Neo4jStore, raw_driver: Any, tmp_path: Path
) -> None:
    from kenning_encounter.memory import erasure

    _plant(neo4j_store)
    writer = Memory(neo4j_store, granted=ALL)
    writer.create_entities(plan.WRITER, [{"type": "Concept", "name": "lamp idea"}])
    writer.create_relations(
        plan.WRITER, [{"source": f"ward note {MARK}", "type": "ABOUT", "target": "lamp idea"}]
    )
    erasure.erase(neo4j_store, erasure.plan(neo4j_store, [f"old policy {MARK}"]))
    assert _used(raw_driver) == EXPECTED_USED
    _round_trip(neo4j_store, tmp_path)
    assert _used(raw_driver) == EXPECTED_USED
