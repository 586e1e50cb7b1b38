"""The read_cypher gate on its own (store/cypher_guard.py), in both dialects, with no engine.

It must refuse the whole attack corpus and pass ordinary reads; its limits
hold at their edge and not one step inside. These are the tests the gate's
mutation run uses: quick, so every mutant is judged.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store import cypher_guard as g
from kenning_encounter.store.cypher_guard import LADYBUG_RULES, check_params, check_read_only
from kenning_encounter.store.neo4j.cypher import NEO4J_RULES
from tests.contract.test_read_cypher_attacks import ALL_REFUSALS

DIALECTS = pytest.mark.parametrize("rules", [LADYBUG_RULES, NEO4J_RULES], ids=["ladybug", "neo4j"])

READS = [
    "MATCH (n:Concept) RETURN n.name AS name",
    "MATCH (n:Question) WHERE n.status = $s RETURN n.name ORDER BY n.name DESC LIMIT 20",
    "MATCH (a:Observation)-[r:GROUNDS]->(b:Concept) RETURN a.name, b.name, r.tick",
    "OPTIONAL MATCH (n:Note) WITH n RETURN count(n) AS c",
    "MATCH (n) /* CREATE */ WHERE n.description CONTAINS 'set' RETURN {delete: 1} AS m // DROP",
    "UNWIND range(1, 1000) AS x RETURN sum(x)",
    "UNWIND range(1, $n) AS x RETURN x",
    "RETURN [x IN range(0, 9) | x * 2] AS doubled",
    "RETURN CASE WHEN 1 < 2 THEN 'a' ELSE 'b' END AS c",
    "MATCH (n:Concept) RETURN n.name, size(n.description) AS chars",
    "MATCH (`weird name`:Note) RETURN `weird name`.name",
    "RETURN 'CREATE (n) DETACH DELETE n' AS text",
    "MATCH (n:Note) WHERE n.name STARTS WITH 'a' RETURN lower(n.name), upper(n.name)",
    "MATCH (n:Concept) RETURN collect(n.name)[0..3] AS first",
]


@DIALECTS
def test_the_whole_corpus_is_refused_by_the_gate(rules: Any) -> None:
    through: list[str] = []
    for attempt in ALL_REFUSALS:
        if "engine" in attempt.layers:
            continue  # not Cypher at all: the engine's parser refuses it
        try:
            check_params(attempt.params, homogeneous_lists=rules is LADYBUG_RULES)
            check_read_only(attempt.query, rules, attempt.params)
        except ReadOnlyViolation as exc:
            assert exc.layer in attempt.layers, (attempt.name, exc.layer)
            continue
        through.append(attempt.name)
    assert through == []


@DIALECTS
@pytest.mark.parametrize("query", READS)
def test_ordinary_reads_pass(rules: Any, query: str) -> None:
    check_read_only(query, rules, {"s": "open", "n": 10})


def _refusal(query: str, params: dict[str, Any] | None = None) -> ReadOnlyViolation:
    with pytest.raises(ReadOnlyViolation) as info:
        check_read_only(query, LADYBUG_RULES, params)
    return info.value


def test_the_size_limit_holds_at_its_edge() -> None:
    head = "RETURN 1 AS x "
    g.check_size(head + " " * (g.MAX_QUERY_CHARS - len(head)))
    refused = _refusal(head + " " * (g.MAX_QUERY_CHARS - len(head) + 1))
    assert refused.layer == "size"


def test_nesting_holds_at_its_edge() -> None:
    deep = g.MAX_DEPTH
    check_read_only("RETURN " + "[" * deep + "1" + "]" * deep, LADYBUG_RULES)
    refused = _refusal("RETURN " + "[" * (deep + 1) + "1" + "]" * (deep + 1))
    assert refused.layer == "size"
    cases = g.MAX_CASE_DEPTH
    nested = "1"
    for _ in range(cases):
        nested = f"CASE WHEN true THEN {nested} ELSE 0 END"
    check_read_only(f"RETURN {nested}", LADYBUG_RULES)
    refused = _refusal(f"RETURN CASE WHEN true THEN {nested} ELSE 0 END")
    assert refused.layer == "size"


def test_ranges_are_bounded_by_their_product() -> None:
    check_read_only(f"UNWIND range(1, {g.MAX_RANGE_VALUES}) AS x RETURN x", LADYBUG_RULES)
    assert "1,000,000 values" in str(
        _refusal(f"UNWIND range(1, {g.MAX_RANGE_VALUES + 1}) AS x RETURN x")
    )
    check_read_only("UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b RETURN 1", LADYBUG_RULES)
    _refusal("UNWIND range(1, 1000) AS a UNWIND range(0, 1000) AS b RETURN 1")
    check_read_only("UNWIND range(1, 100, 2) AS x RETURN x", LADYBUG_RULES)
    check_read_only("UNWIND range(1, $n) AS x RETURN x", LADYBUG_RULES, {"n": g.MAX_RANGE_VALUES})
    _refusal("UNWIND range(1, $n) AS x RETURN x", {"n": g.MAX_RANGE_VALUES + 1})
    assert "integer literals or $parameters" in str(_refusal("RETURN range(1, 2 * 3)"))


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("MATCH (n) SET n.x = 1 RETURN n", "SET"),
        ("MATCH (n) DELETE n", "DELETE"),
        ("MATCH (n) REMOVE n.x RETURN n", "REMOVE"),
        ("MERGE (n:Note {id: 'x'}) RETURN n", "MERGE"),
        ("CREATE (n:Note) RETURN n", "CREATE"),
        ("COPY Note FROM 'x.csv'", "COPY"),
        ("LOAD FROM 'x.csv' RETURN *", "LOAD"),
    ],
)
def test_a_write_keyword_is_named(query: str, word: str) -> None:
    refused = _refusal(query)
    assert refused.layer == "gate" and word in str(refused)


def test_calls_are_held_to_the_allow_list() -> None:
    check_read_only("RETURN lower('A')", LADYBUG_RULES)
    assert "allow-list" in str(_refusal("RETURN repeat('a', 3)"))


def test_params_are_checked_as_values() -> None:
    check_params({"a": ["x", "y"], "b": {"c": 1}}, homogeneous_lists=True)
    check_params({"a": ["x", 0]}, homogeneous_lists=False)
    with pytest.raises(ReadOnlyViolation) as mixed:
        check_params({"a": ["x", 0]}, homogeneous_lists=True)
    assert mixed.value.layer == "params" and mixed.value.field == "params"
    deep: Any = 1
    for _ in range(g.MAX_PARAM_DEPTH - 1):
        deep = [deep]
    check_params({"d": deep}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation):
        check_params({"d": [deep]}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation):
        check_params({"s": "x" * (g.MAX_PARAM_CHARS + 1)}, homogeneous_lists=True)
    check_params(None, homogeneous_lists=True)
