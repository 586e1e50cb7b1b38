"""Several named memories in one Neo4j database, beside other applications' data that
uses our very type and bookkeeping names, and the migration of a store made before
memories had names (issue #15 item 1; store/neo4j/namespace.py)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import ConfigError, NotFound, ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.vocabulary import NODE_TYPES
from tests.contract.test_read_cypher_attacks import S, _seed
from tests.integration.conftest import credentials
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.neo4j

CAPS: dict[str, Any] = {"row_cap": 100, "char_cap": 100_000, "timeout_s": 5.0}
MEMORY_NODES = 8  # _seed: five authored nodes, the session's Locus, its director and its encounter

# Another application's nodes, named as ours are: types, ids, bookkeeping keys.
FOREIGN = (
    "CREATE (:Encounter {id: 'E1', locus: 'attacker'}), (:Locus {id: 'attacker'}), "
    "(:Observation {id: 'obs_1', name: 'storm', _terms: 'storm'}), "
    "(:Meta {key: 'clock', ival: 99}), (:Meta {key: 'theirs', ival: 1}), "
    "(:NameKey {name: 'storm', id: 'obs_1'}), (:SourceKey {key: 'k', id: 'x'}), "
    "(:KenningLedger {session: 'attacker', turn: 5, at: 0.0})"
)
FOREIGN_HASH = (
    "MATCH (n) WHERE n._memory IS NULL AND NOT n:KenningEncounterTestMarker "
    "RETURN labels(n) AS l, properties(n) AS p"
)


def _foreign(driver: Any) -> str:
    with driver.session() as s:
        rows = [json.dumps([sorted(r["l"]), r["p"]], sort_keys=True) for r in s.run(FOREIGN_HASH)]
    return hashlib.sha256("\n".join(sorted(rows)).encode()).hexdigest() + f":{len(rows)}"


def _open(store: Neo4jStore, memory: str) -> Neo4jStore:
    user, password = credentials()
    return Neo4jStore.open(store.uri, user, password, store.database, memory=memory)


@pytest.fixture
def work(neo4j_store: Neo4jStore) -> Iterator[Neo4jStore]:
    """A second memory, "work", in the database of the default one."""
    opened = _open(neo4j_store, "work")
    try:
        yield opened
    finally:
        opened.close()


def _count(store: Neo4jStore, query: str = "MATCH (n) RETURN count(n)") -> Any:
    return store.read_cypher(query, None, **CAPS).rows[0][0]


def test_two_memories_hold_the_same_names_and_ids_and_never_see_each_other(
    neo4j_store: Neo4jStore, work: Neo4jStore, raw_driver: Any
) -> None:
    home, other = Memory(neo4j_store), Memory(work)
    _seed(home)
    before = snapshot(neo4j_store)
    _seed(other)  # the same session, encounter E1, the same names: all of them again
    other.advance_encounter(S, "more work", close_summary="seeded")
    other.create_entities(S, [{"type": "Concept", "name": "zephyrine", "description": "x"}])
    assert snapshot(neo4j_store) == before  # nothing of the default memory moved
    assert _count(neo4j_store) == MEMORY_NODES
    assert _count(work) == MEMORY_NODES + 2  # the second encounter and the concept
    with pytest.raises(NotFound):
        home.find_by_name("zephyrine")
    assert [h.name for h in other.search("zephyrine").hits] == ["zephyrine"]
    assert [h.name for h in home.search("zephyrine").hits] == []
    # Each memory keeps its own clock; both started at zero.
    assert snapshot(work)["clock"] > before["clock"]
    with raw_driver.session() as s:
        [[memories]] = s.run("MATCH (e:Encounter {id: 'E1'}) RETURN collect(e._memory)").values()
    assert sorted(memories) == ["default", "work"]


def test_a_query_in_one_memory_cannot_name_another_memorys_label(
    neo4j_store: Neo4jStore, work: Neo4jStore
) -> None:
    _seed(Memory(neo4j_store))
    _seed(Memory(work))
    for query in ("MATCH (n:KenningMemory) RETURN count(n)", "MATCH (n:Meta) RETURN count(n)"):
        with pytest.raises(ReadOnlyViolation) as info:
            work.read_cypher(query, None, **CAPS)
        assert info.value.layer == "scope"
    rows = work.read_cypher(
        "MATCH (n:Concept) RETURN labels(n) AS l, properties(n) AS p", None, **CAPS
    ).rows
    assert [sorted(r[0]) for r in rows] == [["Concept", "KenningMemory_work"]]
    [[node]] = work.read_cypher("MATCH (n:Concept) RETURN n", None, **CAPS).rows
    assert node["_LABEL"] == "Concept" and "_memory" not in node


@pytest.mark.parametrize(
    "query",
    [
        "CALL db.labels()",
        "CALL db.labels() YIELD label RETURN collect(label) AS all",
        "CALL db.relationshipTypes() YIELD relationshipType RETURN relationshipType",
        "CALL db.propertyKeys()",
        "CALL db.schema.visualization()",
        "CALL db.schema.nodeTypeProperties() YIELD nodeLabels RETURN nodeLabels",
        "CALL db.schema.relTypeProperties()",
        "MATCH (n:Concept) CALL db.labels() YIELD label RETURN n.name, label",
    ],
)
def test_the_database_schema_is_not_read_through_a_memory(
    neo4j_store: Neo4jStore, work: Neo4jStore, raw_driver: Any, query: str
) -> None:
    """The schema procedures list every label of the database, another memory's (which
    carries its name) and other applications' too: refused, naming the memory's own read."""
    with raw_driver.session() as s:
        s.run(FOREIGN).consume()
    _seed(Memory(work))
    _seed(Memory(neo4j_store))
    with pytest.raises(ReadOnlyViolation, match="whole database") as info:
        neo4j_store.read_cypher(query, None, **CAPS)
    assert info.value.layer == "scope"
    assert "UNWIND labels(n)" in str(info.value)
    # The read it names sees the memory's labels alone.
    rows = neo4j_store.read_cypher(
        "MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label", None, **CAPS
    ).rows
    seen = {r[0] for r in rows}
    assert "Concept" in seen and not any(label.startswith("KenningMemory_") for label in seen)


@pytest.mark.parametrize(
    "query",
    [
        "UNWIND range(0, 200) AS i WITH gds.util.asNode(i) AS n WHERE n IS NOT NULL "
        "RETURN n.name AS name",
        "RETURN [n IN gds.util.asNodes(range(0, 200)) | n.name] AS names",
        "CALL db.index.fulltext.queryNodes('kenning_text', '*:*') YIELD node "
        "RETURN node.name AS name",
    ],
)
def test_a_query_reaches_no_node_of_another_memory_by_internal_id_or_the_text_index(
    neo4j_store: Neo4jStore, work: Neo4jStore, raw_driver: Any, query: str
) -> None:
    # Both reach nodes through no pattern, so no label holds them to the memory: the
    # text index holds every memory's nodes, an internal id names any node at all.
    with raw_driver.session() as s:
        s.run(FOREIGN).consume()
    other = Memory(work)
    _seed(other)
    other.advance_encounter(S, "their own", close_summary="seeded")
    other.create_entities(S, [{"type": "Concept", "name": "zephyrine", "description": "x"}])
    _seed(Memory(neo4j_store))
    with pytest.raises(ReadOnlyViolation, match="search tool") as info:
        neo4j_store.read_cypher(query, None, **CAPS)
    assert info.value.layer == "scope"


def test_other_applications_nodes_with_our_names_collide_with_nothing(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    with raw_driver.session() as s:
        s.run(FOREIGN).consume()
    theirs = _foreign(raw_driver)
    memory = Memory(neo4j_store)
    _seed(memory)  # Encounter E1, Locus "attacker", name "storm": all taken by them too
    assert memory.find_by_name("storm").node.id != "obs_1"
    assert snapshot(neo4j_store)["clock"] < 99  # their clock is not ours
    assert _count(neo4j_store) == MEMORY_NODES
    memory.advance_encounter(S, "again", close_summary="sealed: ours, not theirs")
    assert _foreign(raw_driver) == theirs  # their data, byte for byte


def _make_legacy(driver: Any, version: int) -> None:
    """What a store of schema ``version`` (< 3) looked like: no ``_memory`` anywhere,
    keys unique database-wide; at schema 1, no memory label either."""
    with driver.session() as s:
        for name, statement in q.schema_statements():
            if name == q.FULLTEXT_INDEX:
                continue
            kind = "CONSTRAINT" if statement.startswith("CREATE CONSTRAINT") else "INDEX"
            s.run(f"DROP {kind} {name} IF EXISTS").consume()
        # Nothing a store of that age could hold: directors (#17) and the record of the
        # past (#16) came after names; opening it makes them, with the memory's name.
        s.run("MATCH (n) WHERE n:Person OR n:KenningPast DETACH DELETE n").consume()
        # Nor the memory's identity (nodecache.py's remade memory), which came later still.
        s.run("MATCH (m:Meta) WHERE m.key IN ['past_backfill', 'made'] DELETE m").consume()
        s.run("MATCH (n) WHERE n._memory IS NOT NULL REMOVE n._memory").consume()
        for label in NODE_TYPES:
            s.run(
                f"CREATE CONSTRAINT kenning_{label.lower()}_id FOR (n:{label}) REQUIRE n.id IS UNIQUE"
            ).consume()
        s.run("CREATE CONSTRAINT kenning_meta_key FOR (m:Meta) REQUIRE m.key IS UNIQUE").consume()
        s.run(
            "CREATE CONSTRAINT kenning_name_key FOR (k:NameKey) REQUIRE k.name IS UNIQUE"
        ).consume()
        s.run("CREATE INDEX kenning_encounter_locus FOR (e:Encounter) ON (e.locus)").consume()
        s.run(
            "CREATE CONSTRAINT kenning_ledger_session FOR (s:KenningLedger) REQUIRE s.session IS UNIQUE"
        ).consume()
        s.run("MATCH (v:Meta {key: 'schema_version'}) SET v.ival = $v", v=version).consume()
        if version < 2:
            s.run("MATCH (n:KenningMemory) REMOVE n:KenningMemory").consume()


@pytest.mark.parametrize("version", [1, 2])
def test_a_store_made_before_names_becomes_the_default_memory_when_opened(
    neo4j_store: Neo4jStore, raw_driver: Any, version: int
) -> None:
    _seed(Memory(neo4j_store))
    before = snapshot(neo4j_store)
    with raw_driver.session() as s:  # someone else's, among the bookkeeping labels
        s.run("CREATE (:Meta {key: 'theirs', ival: 1}), (:Thing {id: 'E1'})").consume()
    theirs = _foreign(raw_driver)
    _make_legacy(raw_driver, version)
    reopened = _open(neo4j_store, "default")
    try:
        assert reopened.schema_version() == q.SCHEMA_VERSION
        assert snapshot(reopened) == before
        assert _count(reopened) == MEMORY_NODES
        Memory(reopened).create_entities(S, [{"type": "Note", "name": "after", "description": "y"}])
    finally:
        reopened.close()
    # The constraints that were database-wide are gone: another memory may hold E1 now.
    work = _open(neo4j_store, "work")
    try:
        _seed(Memory(work))
        assert _count(work) == MEMORY_NODES
    finally:
        work.close()
    assert _foreign(raw_driver) == theirs  # the migration claimed none of it
    with raw_driver.session() as s:
        names = {r["name"] for r in s.run("SHOW CONSTRAINTS YIELD name")}
    assert not names & set(q.LEGACY_CONSTRAINTS)


def test_a_name_that_cannot_be_a_label_is_refused_before_anything_is_written(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    with raw_driver.session() as s:
        [[nodes]] = s.run("MATCH (n) RETURN count(n)").values()
    for name in ("my-notes", "", "a b", "x`) DETACH DELETE n //"):
        with pytest.raises(ConfigError) as info:
            _open(neo4j_store, name)
        assert "memory" in str(info.value) and "letters, digits" in str(info.value)
    with raw_driver.session() as s:
        [[after]] = s.run("MATCH (n) RETURN count(n)").values()
    assert after == nodes


def test_a_memory_moves_into_another_of_the_same_database_and_the_first_is_untouched(
    neo4j_store: Neo4jStore, work: Neo4jStore, tmp_path: Path
) -> None:
    from kenning_encounter.memory import dump, load
    from tests.support import dumps

    dumps.seed(neo4j_store)
    source = dumps.fingerprint(neo4j_store)
    path = tmp_path / "default.jsonl"
    with path.open("wb") as out:
        dump.export(neo4j_store, out, app_version="test")
    dumped = load.verify(path)

    class Interrupted(Exception):
        pass

    def stop(done: int, total: int) -> None:
        raise Interrupted(done)

    with pytest.raises(Interrupted):  # an import broken off after its first batch
        load.load(work, dumped, batch_size=7, progress=stop)
    # Clearing what an interrupted import wrote (--restart) clears that memory alone.
    load.load(work, dumped, restart=True, batch_size=7)
    assert dumps.fingerprint(work) == source
    assert dumps.fingerprint(neo4j_store) == source


def test_a_search_scores_by_its_own_memory_whatever_another_holds(
    neo4j_store: Neo4jStore, work: Neo4jStore
) -> None:
    """The text index is one for the database, and its own scores count every memory's
    nodes: another memory's use of a word made it weak, and the note that held it fell.
    A search scores by its own memory's statistics: score for score and in order, its
    page is the same whether or not another memory holds the word."""
    from tests.contract.test_search_scores import ALL, QUERY, STILL, VISIBLE, WRITER

    def page(store: Neo4jStore, granted: tuple[str, ...]) -> list[tuple[str, float]]:
        found = Memory(store, granted=granted, activation=STILL).search(QUERY, limit=10)
        return [(h.name, h.score) for h in found.hits]

    mine = Memory(neo4j_store)
    mine.advance_encounter(WRITER, "mine")
    mine.create_entities(
        WRITER, [{"type": "Note", "name": n, "description": d} for n, d in VISIBLE]
    )
    before = {granted: page(neo4j_store, granted) for granted in ((), ALL)}
    assert [n for n, _ in before[()]] == ["heron sighting", "marsh walk"]
    theirs = Memory(work)
    theirs.advance_encounter(WRITER, "theirs")
    theirs.create_entities(
        WRITER,
        [{"type": "Note", "name": f"heron {i}", "description": "heron heron"} for i in range(40)],
    )
    assert {granted: page(neo4j_store, granted) for granted in ((), ALL)} == before
    assert len(page(work, ALL)) == 10  # theirs, found in their memory
