"""The Neo4j backend against a real server: GDS, schema, connection failures, values."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kenning_encounter.errors import ConfigError, StoreUnavailable
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j.backend import server_too_old
from kenning_encounter.store.neo4j.queries import (
    FULLTEXT_INDEX,
    LEGACY_CONSTRAINTS,
    SERVER_VERSION,
)
from kenning_encounter.vocabulary import NODE_TYPES
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri
from tests.support.counted import Counter
from tests.support.neo4j_store import open_emptied

pytestmark = pytest.mark.neo4j

CAPS: dict[str, Any] = {"row_cap": 100, "char_cap": 100_000, "timeout_s": 5.0}


def _schema_names(driver: Any) -> tuple[set[str], dict[str, str]]:
    records, _, _ = driver.execute_query("SHOW CONSTRAINTS YIELD name")
    constraints = {str(r["name"]) for r in records}
    records, _, _ = driver.execute_query("SHOW INDEXES YIELD name, state")
    return constraints, {str(r["name"]): str(r["state"]) for r in records}


def _kernel_at_the_floor_or_later(engine: str) -> bool:
    """'Neo4j Kernel 5.26.30 (community)', '... 2025.12.1 (enterprise)' (any from the floor:
    the suite may be pointed at a newer server)."""
    name, _, rest = engine.partition(" Kernel ")
    version = rest.split(" ")[0]
    return name == "Neo4j" and version[:1].isdigit() and server_too_old(version) is None


def test_gds_is_loaded_and_its_version_read_from_the_server(neo4j_store: Neo4jStore) -> None:
    result = neo4j_store.read_cypher("RETURN gds.version() AS version", **CAPS)
    version = result.rows[0][0]
    assert isinstance(version, str) and version.startswith("2."), version
    assert neo4j_store.info()["gds"] == version
    assert _kernel_at_the_floor_or_later(neo4j_store.info()["engine"])


def test_the_store_offers_gds_and_the_services_build_the_engine_on_it(
    neo4j_store: Neo4jStore, tmp_path: Any
) -> None:
    """One detection: the store finds GDS when it opens and offers its executor through
    the port; the services build the GDS engine from that alone."""
    from kenning_encounter.analytics.gds import GdsEngine
    from kenning_encounter.config import load_settings
    from kenning_encounter.server.services import build_services

    executor = neo4j_store.analytics_executor()
    assert executor is not None
    assert executor.name == f"gds {neo4j_store.info()['gds']}"
    rows = executor.run("RETURN gds.version() AS version", doing="reading the version")
    assert rows == [{"version": neo4j_store.info()["gds"]}]
    settings = load_settings(data_dir=tmp_path, matcher="off")
    services = build_services(settings, Memory(neo4j_store))
    try:
        assert isinstance(services.engine, GdsEngine)
        assert services.engine.name == executor.name
    finally:
        services.close()


def test_the_gds_executor_translates_refusals_into_our_errors(neo4j_store: Neo4jStore) -> None:
    from kenning_encounter.errors import EngineError

    executor = neo4j_store.analytics_executor()
    assert executor is not None
    with pytest.raises(EngineError, match="while listing nothing") as info:
        executor.run("CALL gds.no.such.procedure()", doing="listing nothing")
    assert info.value.code.startswith("Neo.ClientError.")


def test_schema_is_created_once_and_opening_again_changes_nothing(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    constraints, indexes = _schema_names(raw_driver)
    expected = {f"kenning_{label.lower()}_memory_id" for label in NODE_TYPES}
    expected |= {"kenning_meta_memory_key", "kenning_namekey_memory_name"}
    expected |= {"kenning_sourcekey_memory_key", "kenning_ledger_memory_session"}
    assert expected <= constraints
    assert not constraints & set(LEGACY_CONSTRAINTS)  # unique per memory, not per database
    assert indexes[FULLTEXT_INDEX] == "ONLINE"
    assert indexes["kenning_note_memory_valid_from"] == "ONLINE"  # world time, per type
    again = Neo4jStore.open(neo4j_uri(), *credentials())
    again.close()
    assert _schema_names(raw_driver) == (constraints, indexes)


def test_the_engine_itself_refuses_a_second_live_name(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    import neo4j.exceptions

    make = "CREATE (:NameKey {_memory: $m, name: 'twin', id: $id})"
    raw_driver.execute_query(make, m="default", id="not_000000000001")
    with pytest.raises(neo4j.exceptions.ConstraintError):
        raw_driver.execute_query(make, m="default", id="not_000000000002")
    raw_driver.execute_query(make, m="work", id="not_000000000003")  # a name per memory


def test_open_emptied_empties_the_database_and_restarts_the_clock(
    neo4j_store: Neo4jStore,
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    memory.create_entities("s", [{"type": "Note", "name": "left behind"}])
    fresh = open_emptied(neo4j_uri())
    try:
        assert fresh.read(
            lambda tx: (tx.clock(), tx.loci(), tx.head_id_by_name("left behind"))
        ) == (
            0,
            [],
            None,
        )
        assert Memory(fresh).advance_encounter("s", "again").encounter.opened_tick == 1
    finally:
        fresh.close()


def test_an_unreachable_server_is_a_clear_store_unavailable() -> None:
    # "while connecting": the first check answers, not the retried schema work behind it.
    with pytest.raises(
        StoreUnavailable,
        match=r"Neo4j at bolt://127\.0\.0\.1:1 is not answering \(connection refused\) while connecting",
    ):
        Neo4jStore.open("bolt://127.0.0.1:1", "neo4j", "x", connection_timeout_s=2.0)


def test_wrong_credentials_name_the_settings_to_fix(neo4j_store: Neo4jStore) -> None:
    # Another user name, so the failed logins cannot lock out the test user.
    with pytest.raises(StoreUnavailable, match="NEO4J_USERNAME and NEO4J_PASSWORD"):
        Neo4jStore.open(neo4j_uri(), "kenning-nobody", "wrong")


def test_http_uris_are_refused_because_timeouts_would_not_apply() -> None:
    with pytest.raises(ConfigError, match="bolt://"):
        Neo4jStore.open("http://127.0.0.1:7474", "neo4j", "x")


def test_credentials_in_the_uri_are_refused_without_repeating_them() -> None:
    user, password = credentials()
    host = neo4j_uri().split("://", 1)[1]
    with pytest.raises(ConfigError, match="NEO4J_USERNAME") as info:
        Neo4jStore.open(f"bolt://{user}:{password}@{host}", user, password)
    assert password not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_read_cypher_values_come_back_as_plain_json(neo4j_store: Neo4jStore) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    memory.create_entities(
        "s",
        [
            {"type": "Observation", "name": "seen", "description": "a thing"},
            {"type": "Concept", "name": "idea", "description": "an idea"},
        ],
    )
    memory.create_relations("s", [{"source": "seen", "type": "GROUNDS", "target": "idea"}])
    result = neo4j_store.read_cypher(
        "MATCH p = (a:Observation)-[r:GROUNDS]->(b:Concept) "
        "RETURN a, r, p, datetime('2026-11-02T09:00:00Z') AS at, duration('P1DT2H') AS span, "
        "point({x: 1.5, y: 2.0}) AS pt, 0.0 / 0.0 AS nan",
        **CAPS,
    )
    node, rel, path, at, span, pt, nan = result.rows[0]
    json.dumps(result.rows)  # everything is JSON-safe
    assert node["_LABEL"] == "Observation" and node["name"] == "seen"
    assert rel["_LABEL"] == "GROUNDS" and rel["encounter"] == "E1"
    assert [n["name"] for n in path["_nodes"]] == ["seen", "idea"]
    assert [r["_LABEL"] for r in path["_rels"]] == ["GROUNDS"]
    assert at.startswith("2026-11-02T09:00:00") and span == "P1DT2H"
    assert pt == {"srid": 7203, "coordinates": [1.5, 2.0]} and nan == "nan"


def test_search_hits_come_best_first_and_filters_apply_before_the_limit(
    neo4j_store: Neo4jStore,
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    memory.create_entities(
        "s",
        [
            {"type": "Note", "name": f"storm note {i}", "description": "storm " * i}
            for i in range(1, 9)
        ]
        + [{"type": "Observation", "name": "one storm", "description": "a storm"}],
    )
    hits = neo4j_store.fulltext("storm", limit=20)
    assert len(hits) == 9
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    only = neo4j_store.fulltext("storm", types=["Observation"], limit=1)
    assert [h.id for h in only] == [memory.find_by_name("one storm").node.id]


def test_search_text_with_lucene_syntax_is_just_words(neo4j_store: Neo4jStore) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    memory.create_entities("s", [{"type": "Note", "name": "title", "description": "foo bar"}])
    hits = neo4j_store.fulltext('name:(foo) AND bar* ~2 "unclosed \\ [x TO y] /re/')
    assert len(hits) == 1 and hits[0].score > 0
    assert neo4j_store.fulltext("the and of") == []  # only stop words: nothing to look for
    assert neo4j_store.fulltext("") == []


def test_a_database_emptied_under_a_server_is_said_so_and_nothing_is_written(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    from kenning_encounter.errors import StoreError

    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    raw_driver.execute_query("MATCH (n) WHERE n._memory = 'default' DETACH DELETE n")
    with pytest.raises(StoreError, match=r"clock is missing.*restart the server"):
        memory.create_entities("s", [{"type": "Note", "name": "into nothing"}])
    # The reads whose first statement synchronises the node cache say so too, rather
    # than failing on an answer with no row.
    for read in (lambda: memory.search("into nothing"), lambda: memory.find_by_name("x")):
        with pytest.raises(StoreError, match=r"clock is missing.*restart the server"):
            read()
    [[left]] = raw_driver.execute_query(
        "MATCH (n) WHERE n._memory = 'default' RETURN count(n)"
    ).records
    assert left == 0


def test_an_index_dropped_under_a_server_is_named_with_the_fix_and_a_restart_makes_it(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    from kenning_encounter.errors import StoreError
    from kenning_encounter.infusion.config import InfusionConfig
    from kenning_encounter.infusion.pipeline import Infuser

    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    memory.create_entities("s", [{"type": "Note", "name": "lantern", "description": "lit"}])
    raw_driver.execute_query(f"DROP INDEX {FULLTEXT_INDEX}")
    with pytest.raises(StoreError, match=rf"no index {FULLTEXT_INDEX} .*restart the server"):
        memory.search("lantern")
    # infusion states the store's account rather than an engine error's class name
    said = Infuser(neo4j_store, InfusionConfig()).infuse("reader", "the lantern")
    assert f"no index {FULLTEXT_INDEX}" in json.dumps(said), said
    user, password = credentials()
    restarted = Neo4jStore.open(neo4j_uri(), user, password)
    try:
        assert [h.name for h in Memory(restarted).search("lantern").hits] == ["lantern"]
    finally:
        restarted.close()


def test_document_frequencies_are_counted_once_while_the_corpus_barely_moves(
    neo4j_store: Neo4jStore,
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "many notes")
    notes = [{"type": "Note", "name": f"n{i}", "description": "storm"} for i in range(1_000)]
    memory.create_entities("s", notes)
    counts: list[str] = []
    tracer = neo4j_store._tracer  # pyright: ignore[reportPrivateUsage]

    def counting(statement: str, params: Any, seconds: float) -> None:
        if "queryNodes($index, t.query)" in statement:
            counts.append(statement)
        tracer(statement, params, seconds)

    neo4j_store._tracer = counting  # pyright: ignore[reportPrivateUsage]
    try:
        assert neo4j_store.fulltext_stats(["storm"]).doc_freqs["storm"] == 1_000
        more = [{"type": "Note", "name": f"m{i}", "description": "storm"} for i in range(10)]
        memory.create_entities("s", more)
        assert neo4j_store.fulltext_stats(["storm"]).doc_freqs["storm"] == 1_000  # 1%: kept
        memory.create_entities("s", [{"type": "Note", "name": "one more", "description": "storm"}])
        assert neo4j_store.fulltext_stats(["storm"]).doc_freqs["storm"] == 1_011  # past 1%
    finally:
        neo4j_store._tracer = tracer  # pyright: ignore[reportPrivateUsage]
    assert len(counts) == 2


def test_the_server_s_version_is_read_and_judged_before_any_schema_statement() -> None:
    # An older server would take some schema statements and refuse others; the floor
    # (server_too_old, tests/unit/test_neo4j_version_floor.py) is applied first.
    counter = Counter()
    store = open_emptied(neo4j_uri(), tracer=counter)
    try:
        assert _kernel_at_the_floor_or_later(store.server_version)
        asked = counter.texts.index(SERVER_VERSION)
        schema = [i for i, t in enumerate(counter.texts) if t.startswith(("SHOW ", "CREATE "))]
        assert schema and asked < schema[0], counter.texts[: schema[0] + 1]
    finally:
        store.close()
