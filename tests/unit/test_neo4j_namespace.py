"""Every statement the Neo4j backend sends is made its memory's: the memory label
renamed, ``_memory`` in every node pattern carrying it, and ``$memory`` supplied;
bookkeeping patterns carry ``_memory`` themselves (store/neo4j/namespace.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from kenning_encounter.store.neo4j import ledger
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.namespace import (
    Namespace,
    is_memory_label,
    label_of,
    name_problem,
)
from kenning_encounter.store.port import MAX_CHAIN
from kenning_encounter.vocabulary import NODE_TYPES, RELATION_TYPES

# Sent as written, never namespaced: they make a store of schema < 3 the default memory.
RAW = {q.LEGACY_VERSION, q.MIGRATE_MEMORY_LABEL, *q.MIGRATE_MEMORY_NAME}
BOOKKEEPING = ("Meta", "NameKey", "SourceKey", "KenningLedger", "KenningDelivery")
_PATTERN = re.compile(r"\(\s*\w*\s*((?::\s*\w+\s*)+)(\{[^}]*\})?\s*\)")


def _statements() -> Iterator[str]:
    """Every data statement of queries.py and ledger.py, templates filled with each
    node type (and a relation type) in turn."""
    texts: list[str] = []
    for module in (q, ledger):
        for name, value in vars(module).items():
            if name.isupper() and isinstance(value, str):
                texts.append(value)
            elif name.isupper() and isinstance(value, tuple):
                texts += [v for v in value if isinstance(v, str) and " " in v]
    for text in dict.fromkeys(texts):
        if text in RAW or text.startswith(("CREATE ", "DROP ", "SHOW ", "CALL db.await")):
            continue
        if "{label}" in text or "{source}" in text:
            for label in NODE_TYPES:
                yield text.format(
                    label=label,
                    source=label,
                    target=label,
                    rel=next(iter(RELATION_TYPES)),
                    hops=MAX_CHAIN,  # a chain read's bound (store/port.py)
                )
        elif "{{" in text:
            yield text.format(hops=MAX_CHAIN)
        else:
            yield text


STATEMENTS = sorted(set(_statements()))


def test_the_statement_list_is_the_whole_of_queries_py() -> None:
    assert len(STATEMENTS) > 80  # the collection above found them all, not a few


@pytest.mark.parametrize("memory", ["default", "work"])
def test_every_node_pattern_of_ours_is_held_to_one_memory(memory: str) -> None:
    ns = Namespace(memory)
    for text in STATEMENTS:
        made = ns.statement(text)
        assert "KenningMemory" not in made.replace(ns.label, ""), made
        for labels, props in _PATTERN.findall(made):
            names = {n.strip() for n in labels.split(":") if n.strip()}
            if ns.label in names or names & set(BOOKKEEPING):
                assert props.startswith("{_memory: $memory"), (text, made)
        if "$memory" in made:
            assert ns.params(made, {"a": 1}) == {"a": 1, "memory": memory}


def test_bookkeeping_statements_name_their_memory_themselves() -> None:
    """Bookkeeping nodes carry no memory label, so the rewrite cannot find them."""
    for text in STATEMENTS:
        for labels, props in _PATTERN.findall(text):
            if {n.strip() for n in labels.split(":")} & set(BOOKKEEPING):
                assert "_memory: $memory" in props, text


def test_the_rewrite_keeps_a_pattern_its_own_properties() -> None:
    ns = Namespace("work")
    made = ns.statement("MATCH (e:Encounter:KenningMemory {id: $name})-[:RECORDED]->(n) RETURN n")
    assert made == (
        "MATCH (e:Encounter:KenningMemory_work {_memory: $memory, id: $name})"
        "-[:RECORDED]->(n) RETURN n"
    )
    bare = ns.statement(
        "MATCH (a:KenningMemory)-[r]->(b:KenningMemory) WHERE a:KenningMemory RETURN r"
    )
    assert bare == (
        "MATCH (a:KenningMemory_work {_memory: $memory})-[r]->"
        "(b:KenningMemory_work {_memory: $memory}) WHERE a:KenningMemory_work RETURN r"
    )
    assert ns.params("RETURN 1", None) == {}  # asked for nothing, given nothing


def test_names_and_labels() -> None:
    assert label_of("default") == "KenningMemory"  # stores made before names keep theirs
    assert label_of("team_notes") == "KenningMemory_team_notes"
    assert is_memory_label("KenningMemory") and is_memory_label("KenningMemory_x")
    assert not is_memory_label("KenningMemoryX") and not is_memory_label("Concept")
    for bad in ("", "my-notes", "a b", "x`) DETACH DELETE n //", "é", "a" * 65):
        assert name_problem(bad) is not None
        with pytest.raises(ValueError, match="letters, digits"):
            Namespace(bad)
    assert name_problem("a" * 64) is None
