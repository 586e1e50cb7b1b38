"""Undoing within the open encounter: exactly the named relation goes, and the status the
remaining evidence gives comes back. Every refusal names its field (both backends)."""

from __future__ import annotations

import pytest

from kenning_encounter.errors import InvalidInput, NotFound
from kenning_encounter.memory.service import Memory

S = "undo-session"


def _link(source: str, type_: str, target: str) -> dict[str, str]:
    return {"source": source, "type": type_, "target": target}


@pytest.fixture
def held(memory: Memory) -> Memory:
    memory.advance_encounter(S, "undo")
    memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1", "description": "one"},
            {"type": "Observation", "name": "o2", "description": "two"},
            {"type": "Hypothesis", "name": "h", "description": "guess"},
            {"type": "Hypothesis", "name": "h2", "description": "other guess"},
            {"type": "Hypothesis", "name": "put aside", "status": "retired"},
            {"type": "Question", "name": "q", "description": "why"},
            {"type": "Concept", "name": "c", "description": "idea"},
        ],
    )
    return memory


def _status(memory: Memory, name: str) -> str | None:
    return memory.find_by_name(name).node.status


def test_an_empty_batch_names_its_field(held: Memory) -> None:
    with pytest.raises(InvalidInput) as refs:
        held.delete_entities(S, [])
    assert refs.value.field == "refs"
    with pytest.raises(InvalidInput) as rels:
        held.delete_relations(S, [])
    assert rels.value.field == "relations"


def test_a_revision_is_not_undone_by_its_edge(held: Memory) -> None:
    with pytest.raises(InvalidInput) as info:
        held.delete_relations(S, [{**_link("h2", "SUPERSEDES", "h"), "revision_why": "undo"}])
    assert str(info.value) == (
        "relations[0].type: a revision is not undone by deleting its edge; delete the "
        "revising node instead (if your open encounter recorded it)"
    )


def test_exactly_the_named_relation_goes(held: Memory) -> None:
    held.create_relations(
        S,
        [
            _link("o1", "SUPPORTS", "h"),
            _link("o1", "CHALLENGES", "h2"),
            _link("o2", "SUPPORTS", "h"),
        ],
    )
    with pytest.raises(NotFound) as missing:
        held.delete_relations(S, [_link("o1", "SUPPORTS", "h2")])
    assert str(missing.value) == "no relation 'o1 -SUPPORTS-> h2'"
    with pytest.raises(NotFound, match=r"relations\[0\]\.source must name"):
        held.delete_relations(S, [_link("nobody", "SUPPORTS", "h")])
    with pytest.raises(NotFound, match=r"relations\[0\]\.target must name"):
        held.delete_relations(S, [_link("o1", "SUPPORTS", "nothing")])
    done = held.delete_relations(S, [_link("o1", "SUPPORTS", "h")])
    assert len(done.deleted) == 1 and "-SUPPORTS->" in done.deleted[0]
    # The others are untouched: o2 still supports h, o1 still challenges h2.
    assert _status(held, "h") == "supported" and _status(held, "h2") == "challenged"
    with pytest.raises(NotFound):
        held.delete_relations(S, [_link("o1", "SUPPORTS", "h")])


def test_the_remaining_evidence_sets_the_status(held: Memory) -> None:
    held.create_relations(S, [_link("o1", "SUPPORTS", "h"), _link("o2", "SUPPORTS", "h")])
    held.delete_relations(S, [_link("o1", "SUPPORTS", "h")])
    assert _status(held, "h") == "supported"  # o2 still supports it
    held.delete_relations(S, [_link("o2", "SUPPORTS", "h")])
    assert _status(held, "h") == "untested"
    held.create_relations(S, [_link("o1", "SUPPORTS", "h"), _link("o2", "CHALLENGES", "h")])
    assert _status(held, "h") == "challenged"
    held.delete_relations(S, [_link("o2", "CHALLENGES", "h")])
    assert _status(held, "h") == "supported"
    held.create_relations(S, [_link("c", "RESOLVES", "q")])
    assert _status(held, "q") == "resolved"
    held.delete_relations(S, [_link("c", "RESOLVES", "q")])
    assert _status(held, "q") == "open"


def test_a_status_set_by_hand_is_left_alone(held: Memory) -> None:
    held.create_relations(S, [_link("o1", "GROUNDS", "put aside"), _link("o1", "GROUNDS", "c")])
    held.delete_relations(S, [_link("o1", "GROUNDS", "put aside"), _link("o1", "GROUNDS", "c")])
    assert _status(held, "put aside") == "retired"
    assert _status(held, "c") is None
