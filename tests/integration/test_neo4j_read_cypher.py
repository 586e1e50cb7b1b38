"""read_cypher's Neo4j-only layers: the EXPLAIN check on its own, the allow-lists, timeouts."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from tests.contract.test_read_cypher_attacks import ALL_REFUSALS, FILES, PROCEDURES, _seed
from tests.support.neo4j_store import check_read_only_plan

pytestmark = pytest.mark.neo4j

CAPS: dict[str, Any] = {"row_cap": 100, "char_cap": 100_000, "timeout_s": 5.0}
# Attempts only the text checks can judge: an oversized but harmless read is
# refused for its size.
TEXT_ONLY = {"oversized"}
# Refused by size before sending: deep nesting overflows the server's parser stack.
TEXT_ONLY |= {"nested lists", "nested maps", "nested case"}
# Reads whose only harm is their work: the planner has no opinion on a range's
# length, so the gate's bound on range() is the layer that refuses them.
TEXT_ONLY |= {
    "huge range",
    "huge range returned",
    "huge range by parameter",
    "computed range bound",
    "nested ranges",
    # Bounds in digits int() cannot read: the gate's refusal; Neo4j reads full-width
    # digits as a number, and a range is a read to its planner.
    "range bound in superscript digits",
    "range bound in full-width digits",
}


@pytest.fixture
def seeded(neo4j_store: Neo4jStore) -> Neo4jStore:
    memory = Memory(neo4j_store)
    _seed(memory)
    return neo4j_store


def test_explain_alone_refuses_every_attempt_it_can_judge(seeded: Neo4jStore) -> None:
    """With the lexical gate bypassed, the planner's verdict still refuses each attempt."""
    let_through = []
    for attempt in ALL_REFUSALS:
        if attempt.name in TEXT_ONLY:
            continue
        try:
            check_read_only_plan(seeded, attempt.query, attempt.params)
        except ReadOnlyViolation:
            continue
        let_through.append(attempt.name)
    assert let_through == []


def test_the_gds_projection_function_is_refused_by_name(
    seeded: Neo4jStore, raw_driver: Any
) -> None:
    query = "MATCH (s)-->(t) RETURN gds.graph.project('leak', s, t)"
    before = _server_state(raw_driver)["graphs"]
    # The planner calls it a plain read; the plan's function scan refuses it alone...
    with pytest.raises(ReadOnlyViolation, match=r"gds\.graph\.project") as by_plan:
        check_read_only_plan(seeded, query)
    assert by_plan.value.layer == "plan"
    # ...and the whole path refuses it, hidden behind a comment that ends at a lone CR.
    for text in (query, "// note\r" + query):
        with pytest.raises(ReadOnlyViolation, match=r"gds\.graph\.project|comment"):
            seeded.read_cypher(text, **CAPS)
    assert _server_state(raw_driver)["graphs"] == before
    assert "leak" not in before


def _server_state(driver: Any) -> dict[str, Any]:
    def names(query: str) -> list[str]:
        records, _, _ = driver.execute_query(query)
        return sorted(str(r[0]) for r in records)

    return {
        "constraints": names("SHOW CONSTRAINTS YIELD name"),
        "indexes": names("SHOW INDEXES YIELD name"),
        "labels": names("CALL db.labels()"),
        "types": names("CALL db.relationshipTypes()"),
        "keys": names("CALL db.propertyKeys()"),
        "graphs": names("CALL gds.graph.list() YIELD graphName"),
    }


def test_procedure_and_file_attempts_leave_schema_tokens_and_catalog_alone(
    seeded: Neo4jStore, raw_driver: Any
) -> None:
    before = _server_state(raw_driver)
    for attempt in PROCEDURES + FILES:
        with pytest.raises(ReadOnlyViolation):
            seeded.read_cypher(attempt.query, attempt.params, **CAPS)
    assert _server_state(raw_driver) == before


def test_read_only_procedures_and_functions_on_the_lists_work(seeded: Neo4jStore) -> None:
    # The schema procedures are reads, but of the whole database: the scope refuses them
    # and names the read of the memory's own (test_neo4j_memories.py).
    labels = seeded.read_cypher(
        "MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label ORDER BY label", **CAPS
    )
    assert ["Concept"] in labels.rows
    # The text index holds every memory's nodes: the search tool reads it for the memory.
    with pytest.raises(ReadOnlyViolation, match="search tool"):
        seeded.read_cypher(
            "CALL db.index.fulltext.queryNodes('kenning_text', 'storm') YIELD node, score "
            "RETURN node.name AS name",
            **CAPS,
        )
    values = seeded.read_cypher(
        "RETURN gds.similarity.cosine([1.0, 0.0], [1.0, 0.0]) AS same, "
        "date.truncate('month', date('2026-11-29')) AS month",
        **CAPS,
    )
    assert values.rows == [[1.0, "2026-11-01"]]


def test_a_long_read_is_stopped_by_its_timeout_and_the_store_carries_on(
    seeded: Neo4jStore,
) -> None:
    # 10^9 rows from one range the gate admits: only the server's timeout can end this read.
    with pytest.raises(ReadOnlyViolation, match=r"ran past its 0\.5 s timeout") as info:
        seeded.read_cypher(
            "UNWIND range(1, 1000) AS i WITH collect(i) AS xs "
            "UNWIND xs AS a UNWIND xs AS b UNWIND xs AS c RETURN count(*)",
            row_cap=10,
            char_cap=10_000,
            timeout_s=0.5,
        )
    assert info.value.layer == "timeout"
    memory = Memory(seeded)
    assert memory.create_entities("attacker", [{"type": "Note", "name": "after"}]).tick > 0
