"""What reaches a store past validation's back door comes back as our error, on every backend.

The services check endpoint rules and names before anything is written; these tests
skip them and call a write transaction directly, as a service with a bug would. The
store must still refuse a relation its endpoint rules forbid (the embedded schema
would, with an engine message; Neo4j would store it), and whatever the engine itself
refuses must arrive in the errors.py tree with a message that says what happened,
never as the engine's raw exception. Nothing of the refused write may remain.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kenning_encounter.errors import (
    EndpointRule,
    EngineError,
    KenningError,
    ProcessTypeForbidden,
    SupersessionRule,
)
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx, WriteTx
from kenning_encounter.store.records import EdgeRecord
from tests.support.snapshot import snapshot

SESSION = "boundary"


def _source(path: str) -> dict[str, str]:
    return {"source_kind": "file", "source_label": "repo", "source_key": path}


def _seed(memory: Memory) -> tuple[str, dict[str, str]]:
    """The open encounter's name, and name -> id of one node of each kind used here."""
    memory.advance_encounter(SESSION, "past validation")
    memory.create_entities(
        SESSION,
        [
            {"type": "Observation", "name": "seen"},
            {"type": "Question", "name": "asked"},
            {"type": "Concept", "name": "idea"},
            {"type": "Component", "name": "file", **_source("a.py")},
            {"type": "Component", "name": "other", **_source("b.py")},
        ],
    )

    def work(tx: ReadTx) -> tuple[str, dict[str, str]]:
        encounter = tx.open_encounter_of(SESSION)
        assert encounter is not None
        names = ["seen", "asked", "idea", "file", "other"]
        return encounter.name, tx.head_ids_by_names(names)

    return memory.store.read(work)


def _refusal(
    store: GraphStore, work: Callable[[WriteTx], Any], error: type[KenningError]
) -> KenningError:
    before = snapshot(store)
    with pytest.raises(error) as info:
        store.write(work)
    assert snapshot(store) == before, "a refused write changed the store"
    return info.value


def _refused(store: GraphStore, work: Callable[[WriteTx], Any], error: type[KenningError]) -> str:
    return str(_refusal(store, work, error))


def _edge(source: str, rel: str, target: str, encounter: str) -> Callable[[WriteTx], None]:
    def work(tx: WriteTx) -> None:
        tx.create_edge(EdgeRecord(source, target, rel, tx.tick, encounter, None))

    return work


def test_a_wrong_target_type_is_refused_by_the_store_itself(
    store: GraphStore, memory: Memory
) -> None:
    encounter, ids = _seed(memory)
    message = _refused(store, _edge(ids["seen"], "ABOUT", ids["asked"], encounter), EndpointRule)
    assert message == (
        "relation.target: ABOUT cannot have a Question at its target end; "
        "allowed: Component, Concept"
    )


def test_a_wrong_source_type_and_a_component_pair_are_refused(
    store: GraphStore, memory: Memory
) -> None:
    encounter, ids = _seed(memory)
    message = _refused(store, _edge(ids["idea"], "GROUNDS", ids["idea"], encounter), EndpointRule)
    assert message.startswith("relation.source: GROUNDS cannot have a Concept at its source end")
    # ABOUT may point at a Component, but two Components are never linked directly.
    message = _refused(store, _edge(ids["file"], "ABOUT", ids["other"], encounter), EndpointRule)
    assert message.startswith("relation.source: ABOUT cannot have a Component at its source end")


def test_a_revision_across_types_and_a_process_relation_are_refused(
    store: GraphStore, memory: Memory
) -> None:
    encounter, ids = _seed(memory)

    def supersede(tx: WriteTx) -> None:
        edge = EdgeRecord(ids["seen"], ids["asked"], "SUPERSEDES", tx.tick, encounter, "why")
        tx.create_edge(edge)

    message = _refused(store, supersede, SupersessionRule)
    assert message == (
        "relation.target: a Observation cannot supersede a Question; revisions keep their type"
    )
    message = _refused(
        store, _edge(ids["seen"], "RECORDED", ids["idea"], encounter), ProcessTypeForbidden
    )
    assert message.startswith("relation.type: RECORDED belongs to the process layer")


def test_a_refusal_by_the_engine_arrives_as_our_error(store: GraphStore, memory: Memory) -> None:
    """A node written twice under one id: only the engine's uniqueness check can see it."""
    encounter, ids = _seed(memory)
    node = store.read(lambda tx: tx.get_node(ids["seen"]))
    assert node is not None

    def again(tx: WriteTx) -> None:
        tx.create_nodes([node], encounter)

    refusal = _refusal(store, again, EngineError)
    assert isinstance(refusal, EngineError) and refusal.code and refusal.detail
    message = str(refusal)
    # What was being done, and the engine's own words about which value it refused.
    assert "while writing" in message and ids["seen"] in message
    assert not message.startswith(("Runtime exception", "Binder exception"))
    # The store stays usable after the refusal.
    memory.create_entities(SESSION, [{"type": "Note", "name": "after"}])
    assert store.read(lambda tx: tx.head_id_by_name("after")) is not None
