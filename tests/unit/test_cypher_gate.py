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
    # A bound whose digits are not ASCII ("1²": a digit to str.isdigit, not to int) is
    # no literal: refused, never a ValueError out of the gate.
    for bound in ("1\u00b2", "1\u0661", "1\uff10", "\u0661"):
        _refusal(f"UNWIND range(1, {bound}) AS i RETURN i")


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


def _refused_in(rules: Any, query: str) -> str:
    with pytest.raises(ReadOnlyViolation) as info:
        check_read_only(query, rules)
    assert info.value.layer == "gate"
    return info.value.reason


CALL_SHAPE = (
    "CALL must name an allowed procedure and call it with (...); "
    "subqueries and settings are not allowed"
)


def test_a_procedure_is_named_and_called_or_refused() -> None:
    check_read_only("CALL show_tables() RETURN *", LADYBUG_RULES)
    check_read_only("CALL db.labels() YIELD label RETURN label", NEO4J_RULES)
    check_read_only(
        "CALL db.index.fulltext.queryNodes('kenning_text', 'storm') YIELD node RETURN node",
        NEO4J_RULES,
    )
    assert _refused_in(NEO4J_RULES, "CALL { MATCH (n) RETURN n } RETURN 1") == CALL_SHAPE
    assert _refused_in(LADYBUG_RULES, "CALL threads=1") == CALL_SHAPE
    assert _refused_in(LADYBUG_RULES, "CALL show_tables RETURN *") == CALL_SHAPE
    assert _refused_in(LADYBUG_RULES, "CALL show_functions() RETURN *") == (
        "procedure 'show_functions' is not on the read-only allow-list "
        "(db_version, show_connection, show_tables, table_info)"
    )
    # A second, forbidden call after an allowed one is still found.
    reason = _refused_in(NEO4J_RULES, "CALL db.labels() YIELD label CALL db.createLabel('x')")
    assert reason.startswith("procedure 'db.createlabel' is not on the read-only allow-list")


def test_functions_are_held_to_each_dialect_s_list() -> None:
    check_read_only("RETURN lower('A'), size([1, 2]), coalesce(null, 1)", LADYBUG_RULES)
    # On Neo4j any plain (built-in) function passes the gate; namespaced ones must be listed.
    check_read_only("RETURN toUpper('a'), reverse('ab')", NEO4J_RULES)
    assert _refused_in(NEO4J_RULES, "RETURN apoc.text.join(['a'], ',')") == (
        "function 'apoc.text.join' is not on this store's read-only allow-list "
        "(functions that read files, change settings or sequences, or build unbounded values "
        "are refused)"
    )
    assert _refused_in(LADYBUG_RULES, "RETURN lower('a'), repeat('a', 3)").startswith(
        "function 'repeat' is not"
    )
    # Words followed by "(" that are not calls: a pattern, a list predicate.
    check_read_only("MATCH (n) WHERE any(x IN [1] WHERE x = 1) RETURN n", LADYBUG_RULES)


@pytest.mark.parametrize(
    ("params", "reason"),
    [
        ({"x": float("nan")}, "x is nan; give a finite number"),
        ({"x": 2**63}, "x does not fit in a 64-bit integer"),
        ({"x": {1: "a"}}, "x has a key that is not a string"),
        ({"x": []}, "x is an empty list, which this store cannot type; leave it out"),
        (
            {"x": ["a", 1]},
            "x mixes number, string; this store needs every item of a list to be of one type "
            "(split it into one list per type)",
        ),
        ({"x": [{"a": 1}, {"b": 1}]}, "x holds maps with different keys; give each the same keys"),
        ({"": 1}, "'' is not a usable parameter name; use a plain word"),
        (
            {"_kenning_one_statement": 1},
            "'_kenning_one_statement' is not a usable parameter name; use a plain word",
        ),
    ],
)
def test_each_param_refusal_says_what_to_do(params: dict[Any, Any], reason: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_params(params, homogeneous_lists=True)
    assert info.value.layer == "params" and info.value.reason == reason


def test_what_neo4j_can_type_is_let_through() -> None:
    check_params({"x": [], "y": ["a", 1, None], "z": [{"a": 1}, {"b": 2}]}, homogeneous_lists=False)
    check_params({"x": [None, "a"], "b": True, "i": -(2**63)}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation, match="not plain JSON"):
        check_params({"x": {1, 2}}, homogeneous_lists=True)


def test_a_value_json_cannot_carry_is_named_by_its_path() -> None:
    # check_params refuses it as not plain JSON first; the walk names it when called alone.
    with pytest.raises(ReadOnlyViolation) as info:
        g._check_value("x.y[0]", b"raw", 1, True)  # pyright: ignore[reportPrivateUsage]
    assert info.value.reason == "x.y[0] is a bytes; use strings, numbers, booleans, lists and maps"


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("   ", "the query is empty"),
        ("/* nothing */ // at all", "the query holds only comments"),
        ("RETURN (1))", "an unbalanced ')' (at character 10)"),
        ("RETURN [1", "an unclosed bracket or CASE (expected ']')"),
        ("RETURN CASE WHEN true THEN (1", "an unclosed bracket or CASE (expected ')')"),
        ("RETURN 1; RETURN 2", "only one statement is allowed (a ';' at character 8)"),
        ("UNWIND range(1, 5, 0) AS x RETURN x", "range() with a step of 0"),
    ],
)
def test_each_shape_refusal_says_where(query: str, reason: str) -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_read_only(query, LADYBUG_RULES)
    assert info.value.reason == reason


def test_limits_count_nesting_not_length() -> None:
    # Side by side, brackets and CASEs never add up: only what is open at once counts.
    many_cases = " + ".join(["CASE WHEN true THEN 1 ELSE 0 END"] * (g.MAX_CASE_DEPTH + 4))
    check_read_only(f"RETURN {many_cases}", LADYBUG_RULES)
    many_lists = ", ".join(["[[1]]"] * (g.MAX_DEPTH + 4))
    check_read_only(f"RETURN [{many_lists}]", LADYBUG_RULES)
    check_read_only("RETURN 1;", LADYBUG_RULES)  # one statement may end with its ';'


def test_range_bounds_are_read_with_their_sign_and_step() -> None:
    check_read_only("UNWIND range(-5, 5) AS x RETURN x", LADYBUG_RULES)
    check_read_only("UNWIND range(-3, -1) AS x RETURN x", LADYBUG_RULES)
    _refusal(f"UNWIND range(-{g.MAX_RANGE_VALUES}, 1) AS x RETURN x")
    check_read_only("UNWIND range(1, 2000000, 2) AS x RETURN x", LADYBUG_RULES)
    _refusal("UNWIND range(1, 2000001, 2) AS x RETURN x")
    # An empty range makes the product empty.
    check_read_only(
        "UNWIND range(10, 1) AS a UNWIND range(1, 1000000) AS b UNWIND range(1, 2) AS c RETURN 1",
        LADYBUG_RULES,
    )
    assert "integer literals or $parameters" in str(_refusal("RETURN range(1, $b)", {"b": True}))
    assert "integer literals or $parameters" in str(_refusal("RETURN range(1, 2.5)"))


def test_keywords_as_names_are_names_and_a_write_after_them_is_still_found() -> None:
    check_read_only(
        "MATCH (show:Concept) WHERE show.set = 1 RETURN {delete: 1, merge: show.create}",
        LADYBUG_RULES,
    )
    assert "SET" in _refused_in(LADYBUG_RULES, "MATCH (n) WHERE n.set = 1 SET n.x = 2")
    assert "DELETE" in _refused_in(LADYBUG_RULES, "MATCH (n) RETURN {set: 1} AS m DELETE n")
    assert "CREATE" in _refused_in(LADYBUG_RULES, "MATCH (show:Concept) CREATE (:Note)")


def test_a_mix_names_every_kind_it_found() -> None:
    with pytest.raises(ReadOnlyViolation) as info:
        check_params({"x": [[1], {"a": 1}, None, True, 1.5]}, homogeneous_lists=True)
    assert info.value.reason.startswith("x mixes boolean, list, map, number;")


def test_the_messages_of_the_limits() -> None:
    from kenning_encounter.store.cypher_lexer import tokenize

    assert _refusal(f"UNWIND range(1, {g.MAX_RANGE_VALUES + 1}) AS x RETURN x").reason == (
        f"range() would build more than {g.MAX_RANGE_VALUES:,} values (the product of every "
        "range in the query); narrow the bounds"
    )
    assert _refusal("RETURN range(1, 2 * 3)").reason.startswith(
        "range() takes two or three integer literals or $parameters here (at character 7)"
    )
    deep = g.MAX_DEPTH + 1
    assert _refusal("RETURN " + "[" * deep + "1" + "]" * deep).reason == (
        f"brackets and CASE nested deeper than {g.MAX_DEPTH} levels (at character "
        f"{7 + g.MAX_DEPTH}); flatten the expression"
    )
    nested = "1"
    for _ in range(g.MAX_CASE_DEPTH + 1):
        nested = f"CASE WHEN true THEN {nested} ELSE 0 END"
    assert _refusal(f"RETURN {nested}").reason == (
        f"CASE nested deeper than {g.MAX_CASE_DEPTH} levels; flatten it"
    )
    long = "RETURN 1 " + " " * g.MAX_QUERY_CHARS
    assert _refusal(long).reason == (
        f"the query is longer than {g.MAX_QUERY_CHARS} characters; narrow it"
    )
    # Exactly the token limit passes; one more is refused.
    query = "RETURN 1" + " + 1" * ((g.MAX_TOKENS - 2) // 2)
    assert len(tokenize(query, LADYBUG_RULES.dialect)) == g.MAX_TOKENS
    check_read_only(query, LADYBUG_RULES)
    assert _refusal(query + " + 1").reason == (
        f"the query has more than {g.MAX_TOKENS} tokens; split it into smaller reads"
    )
    assert _refusal("RETURN 1;;").reason.startswith("only one statement is allowed")


def test_deep_cases_side_by_side_pass() -> None:
    nested = "1"
    for _ in range(g.MAX_CASE_DEPTH):
        nested = f"CASE WHEN true THEN {nested} ELSE 0 END"
    check_read_only(f"RETURN {nested} + {nested} + {nested}", LADYBUG_RULES)


def test_an_empty_allow_list_says_none() -> None:
    bare = g.Rules(dialect=LADYBUG_RULES.dialect, procedures=frozenset(), functions=frozenset())
    assert _refused_in(bare, "CALL show_tables() RETURN *") == (
        "procedure 'show_tables' is not on the read-only allow-list (none)"
    )


def test_names_in_every_position_are_names() -> None:
    check_read_only("MATCH (a)-[set:GROUNDS]->(b) RETURN a", LADYBUG_RULES)
    check_read_only("RETURN {a: 1, set: 2, delete: 3} AS m", LADYBUG_RULES)
    check_read_only("MATCH (delete:Note) RETURN delete.name", LADYBUG_RULES)
    check_read_only("CALL `show_tables`() RETURN *", LADYBUG_RULES)
    check_read_only("UNWIND range(-999999, 0) AS x RETURN x", LADYBUG_RULES)
    _refusal("UNWIND range(-1000000, 0) AS x RETURN x")


def test_param_limits_at_their_edges_and_paths() -> None:
    check_params({"i": -(2**63)}, homogeneous_lists=True)
    check_params({"i": 2**63 - 1}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation, match="64-bit"):
        check_params({"i": -(2**63) - 1}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation) as nan:
        check_params({"x": {"y": {"z": float("nan")}}}, homogeneous_lists=True)
    assert nan.value.reason == "x.y.z is nan; give a finite number"
    with pytest.raises(ReadOnlyViolation) as inf:
        check_params({"x": [1.0, float("inf")]}, homogeneous_lists=True)
    assert inf.value.reason == "x[1] is inf; give a finite number"
    with pytest.raises(ReadOnlyViolation) as mixed:
        check_params({"x": {"y": ["a", 1]}}, homogeneous_lists=True)
    assert mixed.value.reason.startswith("x.y mixes")
    with pytest.raises(ReadOnlyViolation) as listed:
        check_params({"x": [["a", 1]]}, homogeneous_lists=True)
    assert listed.value.reason.startswith("x[0] mixes")
    check_params({"x": [{"a": 1}]}, homogeneous_lists=True)
    deep: Any = 1
    for _ in range(g.MAX_PARAM_DEPTH - 1):
        deep = {"k": deep}
    check_params({"d": deep}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation) as nested:
        check_params({"d": {"k": deep}}, homogeneous_lists=True)
    assert nested.value.reason.endswith(
        f"is nested deeper than {g.MAX_PARAM_DEPTH} levels; flatten it"
    )
    limit = g.MAX_PARAM_CHARS - len('{"s": ""}')
    check_params({"s": "x" * limit}, homogeneous_lists=True)
    with pytest.raises(ReadOnlyViolation) as long:
        check_params({"s": "x" * (limit + 1)}, homogeneous_lists=True)
    assert long.value.reason == (
        f"the values are longer than {g.MAX_PARAM_CHARS} characters as JSON"
    )
    with pytest.raises(ReadOnlyViolation) as odd:
        check_params({"x": {1, 2}}, homogeneous_lists=True)
    assert odd.value.reason.startswith("the values are not plain JSON (")
