"""Checks that deliberate bugs once slipped past: each test here fails with its bug put back.

A mutation run found the suite green with the endpoint rules' target check removed, with a
revising node allowed to revise a second one, and with unknown relation fields let through on
the service path. Both backends run each test: without our check the embedded engine fails
with a raw error of its own and Neo4j stores the edge, so only our refusal, naming the field,
passes here.
"""

from __future__ import annotations

from functools import partial

import pytest

from kenning_encounter.errors import EndpointRule, InvalidInput, SupersessionRule
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    RELATION_TYPES,
)
from tests.support.snapshot import snapshot
from tests.support.store_reads import refused

A = "locus-mutants"


# Two nodes of every authored type: "<type>" and "<type> 2" (a same-type link needs two).
def _props(node_type: str, n: int) -> dict[str, str]:
    if node_type == "Component":
        return {"source_kind": "file", "source_label": "repo", "source_key": f"{n}.py"}
    if node_type == "Citation":
        return {"kind": "web", "uri": f"https://example.org/{n}"}
    return {}


def _two_of_each(memory: Memory) -> None:
    memory.advance_encounter(A, "two nodes of every type")
    memory.create_entities(
        A,
        [
            {"type": t, "name": f"{t.lower()}{suffix}", **_props(t, n)}
            for t in AUTHORED_NODE_TYPES
            for n, suffix in enumerate(("", " 2"))
        ],
    )


def _wrong_targets() -> list[tuple[str, str, str]]:
    """(relation, an allowed source, a target type the rules forbid from that source)."""
    cases: list[tuple[str, str, str]] = []
    for name in AUTHORED_RELATION_TYPES:
        spec = RELATION_TYPES[name]
        if spec.same_type:
            continue  # SUPERSEDES: a type change is the supersession rule's, tested below
        for source in spec.sources:
            cases += [(name, source, t) for t in AUTHORED_NODE_TYPES if not spec.allows(source, t)]
    return cases


def test_a_target_type_the_rules_forbid_is_refused_naming_the_target(
    memory: Memory, store: GraphStore
) -> None:
    _two_of_each(memory)
    cases = _wrong_targets()
    assert len({c[0] for c in cases}) == len(AUTHORED_RELATION_TYPES) - 1
    # Every case is refused on the same store, so each must leave it as it was at the start:
    # one snapshot before the 170 cases, not one before each (a whole-store read apiece).
    before = snapshot(store)
    for relation, source, target in cases:
        link = {"source": source.lower(), "type": relation, "target": f"{target.lower()} 2"}
        err = refused(store, partial(memory.create_relations, A, [link]), EndpointRule, before)
        assert isinstance(err, EndpointRule)
        allowed = sorted(
            t
            for t in RELATION_TYPES[relation].targets
            if RELATION_TYPES[relation].allows(source, t)
        )
        assert (err.field, err.value, list(err.allowed)) == (
            "relations[0].target",
            target,
            allowed,
        ), (relation, source, target)
        assert f"cannot have a {target} at its target end" in str(err)


def test_a_node_that_revises_one_cannot_revise_a_second(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(A, "revisions")
    memory.create_entities(
        A, [{"type": "Concept", "name": "first"}, {"type": "Concept", "name": "second"}]
    )
    memory.create_entities(
        A,
        [{"type": "Concept", "name": "first v2", "supersedes": "first", "revision_why": "better"}],
    )
    err = refused(
        store,
        lambda: memory.create_relations(
            A,
            [
                {
                    "source": "first v2",
                    "type": "SUPERSEDES",
                    "target": "second",
                    "revision_why": "merging two lines",
                }
            ],
        ),
        SupersessionRule,
    )
    assert str(err) == (
        "relations[0].target: 'first v2' already revises another node; a chain is a line"
    )


def test_a_revised_node_takes_no_second_successor_by_relation(
    memory: Memory, store: GraphStore
) -> None:
    memory.advance_encounter(A, "revisions")
    memory.create_entities(
        A, [{"type": "Concept", "name": "first"}, {"type": "Concept", "name": "rival"}]
    )
    memory.create_entities(
        A,
        [{"type": "Concept", "name": "first v2", "supersedes": "first", "revision_why": "better"}],
    )
    old = memory.find_by_name("first v2").history[0]
    err = refused(
        store,
        lambda: memory.create_relations(
            A, [{"source": "rival", "type": "SUPERSEDES", "target": old.id, "revision_why": "fork"}]
        ),
        SupersessionRule,
    )
    assert "is already superseded by" in str(err) and "relations[0].target" in str(err)


@pytest.mark.parametrize("call", ["create_relations", "delete_relations"])
def test_an_unknown_relation_field_is_refused_on_the_service_path(
    memory: Memory, store: GraphStore, call: str
) -> None:
    _two_of_each(memory)
    relation = {"source": "observation", "type": "GROUNDS", "target": "concept", "weight": "9"}
    err = refused(store, lambda: getattr(memory, call)(A, [relation]), InvalidInput)
    assert isinstance(err, InvalidInput)
    assert err.field == "relations[0].weight"
    assert "unknown field; a relation takes: source, type, target, revision_why" in str(err)
