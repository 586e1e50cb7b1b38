"""read_cypher on Neo4j reads the memory's nodes and nothing else in the database:
each scoping layer alone, the schema migration that makes it possible, and what it
does to other data beside ours (neo4j/scope.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import NotFound, ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j.scope import scope_nodes
from kenning_encounter.vocabulary import NODE_TYPES
from tests.contract.test_read_cypher_attacks import _seed

pytestmark = pytest.mark.neo4j

CAPS: dict[str, Any] = {"row_cap": 100, "char_cap": 100_000, "timeout_s": 5.0}
# Five authored nodes, the seed session's Locus, its director (a Person) and its encounter.
MEMORY_NODES = 8


@pytest.fixture
def seeded(neo4j_store: Neo4jStore, raw_driver: Any) -> Neo4jStore:
    _seed(Memory(neo4j_store))
    with raw_driver.session() as s:  # another application's data, one name like ours
        s.run("CREATE (:Thing {name: 'backoff', id: 'c_foreign'})").consume()
    return neo4j_store


def _run(store: Neo4jStore, query: str, *, scope: bool) -> list[list[Any]]:
    """The plan, scope and engine layers, without the token gate or the rewrite."""
    run = store._run_cypher  # pyright: ignore[reportPrivateUsage]
    return run(query, {}, CAPS["row_cap"], CAPS["char_cap"], CAPS["timeout_s"], scope=scope).rows


def test_through_the_tool_a_query_sees_the_memory_alone(seeded: Neo4jStore) -> None:
    def rows(query: str) -> list[list[Any]]:
        return seeded.read_cypher(query, None, **CAPS).rows

    assert rows("MATCH (n) RETURN count(n)") == [[MEMORY_NODES]]
    assert rows("MATCH (n) WHERE n.name = 'backoff' RETURN n.id <> 'c_foreign'") == [[True]]
    assert rows("MATCH (n {name: 'backoff'}) RETURN count(*)") == [[1]]
    labels = rows("MATCH (n) UNWIND labels(n) AS l RETURN DISTINCT l ORDER BY l")
    assert ["Meta"] not in labels and ["NameKey"] not in labels and ["Thing"] not in labels
    [[node]] = rows("MATCH (n:Concept) RETURN n")
    assert node["_LABEL"] == "Concept"  # the scope label is not the node's type


def test_the_rewrite_alone_keeps_a_query_to_the_memory(seeded: Neo4jStore) -> None:
    query = "MATCH (n) WHERE n.name = 'backoff' OR n.key IS NOT NULL RETURN count(n)"
    assert _run(seeded, scope_nodes(query), scope=False) == [[1]]
    assert _run(seeded, scope_nodes("MATCH (n) RETURN count(n)"), scope=False) == [[MEMORY_NODES]]


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("MATCH (n) RETURN n.name", "every node"),
        ("MATCH (n) RETURN count(n)", "names no label"),
        ("MATCH (m:Meta) RETURN m.key", "Meta is not a label"),
        ("MATCH (k:NameKey|Concept) RETURN k.name", "NameKey is not a label"),
        ("MATCH (k:SourceKey {key: 'x'}) RETURN k.id", "SourceKey is not a label"),
        ("MATCH (t:Thing) RETURN t.name", "Thing is not a label"),
        ("MATCH (n) WHERE elementId(n) = 'x' RETURN n", "internal id"),
    ],
)
def test_the_plan_check_alone_refuses_what_the_rewrite_would_have_scoped(
    seeded: Neo4jStore, query: str, said: str
) -> None:
    with pytest.raises(ReadOnlyViolation, match=said) as info:
        _run(seeded, query, scope=True)
    assert info.value.layer == "scope"
    # Without the check the same query reaches beyond the memory.
    if "Meta" in query or "Thing" in query:
        assert _run(seeded, query, scope=False) != []


# A store of schema 1 (no memory label) gaining it when opened: test_neo4j_memories.py.


def test_other_applications_nodes_with_our_type_names_are_never_read(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    """mcp-neo4j-memory writes :Memory:Observation and :Memory:Concept nodes without our
    ids; on one database with us they once crashed advance_encounter (KeyError 'id')."""
    with raw_driver.session() as s:
        s.run(
            "CREATE (:Memory:Observation {content: 'retries at nine'}), "
            "(:Memory:Concept {name: 'backoff', type: 'concept', _terms: 'backoff'}), "
            "(:Question {name: 'why nine', status: 'open'})"
        ).consume()
    memory = Memory(neo4j_store)
    _seed(memory)  # opens the "attacker" session's first encounter
    again = memory.advance_encounter("attacker", "second look", close_summary="seeded")
    assert [q.name for q in again.open_questions] == ["why"]  # theirs is not listed
    assert [c.name for c in again.recent_concepts] == ["backoff"]
    hits = memory.search("backoff")
    assert [h.name for h in hits.hits] == ["backoff"]
    assert memory.find_by_name("backoff").node.id.startswith("c")
    with pytest.raises(NotFound):  # the foreign Question is not ours
        memory.find_by_name("why nine")
    rows = memory.read_cypher("MATCH (n:Question) RETURN n.name").rows
    assert rows == [["why"]]
    with raw_driver.session() as s:
        [[left]] = s.run("MATCH (n:Memory) RETURN count(n)").values()
    assert left == 2  # and theirs is left alone


def test_a_query_the_scope_refuses_never_waits_for_a_busy_slot(neo4j_store: Neo4jStore) -> None:
    nine = "|".join(sorted(NODE_TYPES))  # nine labels a node: 9^4 ways to plan
    query = "MATCH " + ", ".join(f"(x{i}:{nine})" for i in range(4)) + " RETURN 1"
    slots = neo4j_store._cypher_slots  # pyright: ignore[reportPrivateUsage]
    held = 0
    while slots.acquire(blocking=False):  # every slot taken, as by slow queries
        held += 1
    try:
        with pytest.raises(ReadOnlyViolation) as info:
            neo4j_store.read_cypher(query, None, **{**CAPS, "timeout_s": 0.5})
    finally:
        for _ in range(held):
            slots.release()
    assert info.value.layer == "size"  # not "busy": the text was judged first
