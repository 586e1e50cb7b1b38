"""The Neo4j backend's pure parts: no server needed."""

from __future__ import annotations

import sys

import pytest

from kenning_encounter.errors import ConfigError, ReadOnlyViolation
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.cypher import check_neo4j_text, check_plan, plan_calls
from kenning_encounter.store.neo4j.text import lucene_term, query_terms, text_props


def test_without_the_driver_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "neo4j", None)  # as if the extra were not installed
    with pytest.raises(ConfigError, match=r"pip install 'kenning-encounter\[neo4j\]'"):
        Neo4jStore.open("bolt://127.0.0.1:7687", "neo4j", "pw")


def test_labels_and_types_reach_query_text_only_from_the_vocabulary() -> None:
    assert "(n:Concept:KenningMemory {id: r.id})" in q.render(q.NODES_SET_STATUS, label="Concept")
    with pytest.raises(ValueError, match="not a vocabulary name"):
        q.render(q.NODES_SET_STATUS, label="Concept) DETACH DELETE (n")
    statements = dict(q.schema_statements())
    assert all("IF NOT EXISTS" in s for s in statements.values())
    assert (
        "FOR (n:Observation|Question|Hypothesis|Concept|Note|Component|Citation)"
        in (statements[q.FULLTEXT_INDEX])
    )


def test_search_terms_are_the_shared_tokenizers_and_lucene_reads_them_literally() -> None:
    assert query_terms("The retries were failing, failing again") == ["retri", "fail"]
    assert text_props("Retry storm", "Retries failed.") == {
        "_terms": "retri storm retri fail",
        "_len": 4,
    }
    assert lucene_term('a+b:(c)*"d"') == r"a\+b\:\(c\)\*\"d\""
    assert len(query_terms(" ".join(f"w{i}" for i in range(500)))) == 64


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("SHOW USERS", "SHOW"),
        ("  show settings", "SHOW"),
        ("MATCH (s)-->(t) RETURN gds.graph.project('g', s, t)", "gds.graph.project"),
        ("RETURN apoc . util . sleep(10)", "apoc"),
        ("RETURN dbms.procedures()", "dbms.procedures"),
    ],
)
def test_neo4j_only_text_checks_refuse(text: str, why: str) -> None:
    with pytest.raises(ReadOnlyViolation, match=why):
        check_neo4j_text(text)


@pytest.mark.parametrize(
    "text",
    [
        "MATCH (show:Concept) RETURN show.name",
        "RETURN datetime.truncate('day', datetime()) AS d, duration.between(date(), date())",
        "RETURN gds.version(), gds.similarity.cosine([1.0], [1.0]), gds.util.asNode(0)",
        "CALL db.labels() YIELD label RETURN label",
        "MATCH (n) WHERE n.name STARTS WITH 'x' RETURN n.name",
    ],
)
def test_neo4j_only_text_checks_let_reads_through(text: str) -> None:
    check_neo4j_text(text)


def test_the_plan_must_be_a_read_without_writing_operators() -> None:
    read = {
        "operatorType": "ProduceResults@neo4j",
        "children": [{"operatorType": "AllNodesScan@neo4j"}],
    }
    check_plan("r", read)
    with pytest.raises(ReadOnlyViolation, match="'rw'"):
        check_plan("rw", read)
    with pytest.raises(ReadOnlyViolation, match="LoadCSV"):
        check_plan(
            "r", {"operatorType": "ProduceResults", "children": [{"operatorType": "LoadCSV@neo4j"}]}
        )
    call = {"operatorType": "ProcedureCall@neo4j", "args": {"Details": "gds.graph.drop(g) :: (x)"}}
    with pytest.raises(ReadOnlyViolation, match=r"gds\.graph\.drop"):
        check_plan("r", call)
    check_plan(
        "r", {"operatorType": "ProcedureCall@neo4j", "args": {"Details": "db.labels() :: (label)"}}
    )


@pytest.mark.parametrize(
    ("text", "calls"),
    [
        ("apoc.create.node (x)", ["apoc.create.node"]),
        ("db . index . fulltext . queryNodes ($q)", ["db.index.fulltext.querynodes"]),
        ("a.b (c.d(x))", ["a.b", "c.d"]),
        ("x1abc.def(", ["x1abc.def"]),
        ("n.name = $a AND toLower(n.x)", []),  # a property read, a plain function
        ("a.b.c x(", []),
        ("a.b.c.d", []),
    ],
)
def test_the_plan_names_the_dotted_calls_it_makes(text: str, calls: list[str]) -> None:
    assert plan_calls(text) == calls


@pytest.mark.timeout(10)  # one pass takes about a millisecond; the old reading, minutes
def test_a_plan_with_a_long_name_is_read_in_one_pass() -> None:
    # Read from every letter of a name to its end, a plan naming one of 20,000 characters
    # (a query may be that long) held the interpreter, and the whole server, for seconds.
    for unit in ("a", "_", "a.", "a . "):
        name = (unit * 20_000)[:20_000].rstrip(". ")
        assert plan_calls(name) == []
        assert plan_calls(name + "(") == ([name.replace(" ", "").lower()] if "." in name else [])


def test_a_plan_a_thousand_operators_deep_is_checked() -> None:
    plan: dict[str, object] = {"operatorType": "AllNodesScan@neo4j"}
    for _ in range(5_000):
        plan = {"operatorType": "Projection@neo4j", "children": [plan]}
    check_plan("r", plan)
    deepest = {"operatorType": "LoadCSV@neo4j"}
    for _ in range(5_000):
        deepest = {"operatorType": "Projection@neo4j", "children": [deepest]}
    with pytest.raises(ReadOnlyViolation, match="LoadCSV"):
        check_plan("r", deepest)
