"""One test per invariant of DESIGN.md §3: each tries to break it and shows nothing was written."""

from __future__ import annotations

import time
from datetime import datetime
from functools import partial
from typing import Any

import pytest

from kenning_encounter.errors import (
    EncounterSealed,
    EndpointRule,
    InvalidInput,
    KenningError,
    NameTaken,
    NoOpenEncounter,
    NotFound,
    NotYourEncounter,
    ProcessTypeForbidden,
    ReadOnlyViolation,
    SupersessionRule,
    UnknownField,
    UnknownType,
)
from kenning_encounter.memory import spine
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import PROCESS_NODE_TYPES, PROCESS_RELATION_TYPES
from tests.support.snapshot import snapshot

A, B, C = "locus-a", "locus-b", "locus-c"


def _seed(memory: Memory) -> None:
    memory.advance_encounter(A, "seed")
    memory.create_entities(
        A,
        [
            {"type": "Observation", "name": "obs one", "description": "first noticing"},
            {"type": "Concept", "name": "idea", "description": "a synthesis"},
            {"type": "Hypothesis", "name": "guess", "description": "a guess"},
            {"type": "Question", "name": "ask", "description": "a question"},
        ],
    )
    memory.create_relations(A, [{"source": "obs one", "type": "GROUNDS", "target": "idea"}])


def _refused(
    store: GraphStore, call: Any, error: type[KenningError], match: str | None = None
) -> KenningError:
    before = snapshot(store)
    with pytest.raises(error, match=match) as info:
        call()
    assert snapshot(store) == before, "a refused call changed the store"
    return info.value


# 1. No tool writes a process node or edge except advance/close.
@pytest.mark.parametrize("process_type", PROCESS_NODE_TYPES)
def test_1_process_nodes_cannot_be_created(
    memory: Memory, store: GraphStore, process_type: str
) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(A, [{"type": process_type, "name": "fake"}]),
        ProcessTypeForbidden,
    )
    assert "entities[0].type" in str(err)


@pytest.mark.parametrize("process_rel", PROCESS_RELATION_TYPES)
def test_1_process_edges_cannot_be_created(
    memory: Memory, store: GraphStore, process_rel: str
) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.create_relations(
            A, [{"source": "obs one", "type": process_rel, "target": "idea"}]
        ),
        ProcessTypeForbidden,
    )


def test_1_process_edges_cannot_be_deleted(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.delete_relations(
            A, [{"source": "obs one", "type": "RECORDED", "target": "idea"}]
        ),
        ProcessTypeForbidden,
    )


def test_1_encounters_cannot_be_deleted(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    encounter = memory.find_by_name("idea").node.encounter
    assert encounter is not None
    # The spine is out of a write tool's reach: no encounter or locus name, and no id of
    # their shape, resolves to a node a tool could delete.
    for ref in (encounter, "enc_0123456789ab", A, "loc_0123456789ab"):
        err = _refused(store, partial(memory.delete_entities, A, [ref]), NotFound)
        assert str(err) == f"no node {ref!r}; refs[0] must name or id an existing node; try search"
    # A node carrying an encounter's name is what that name reaches; the governance of
    # deletion then refuses it to a session that did not record it, and the spine stays.
    memory.advance_encounter(B, "names a note after an encounter")
    memory.create_entities(B, [{"type": "Note", "name": encounter}])
    theirs = memory.find_by_name(encounter).node.encounter
    err = _refused(store, partial(memory.delete_entities, A, [encounter]), NotYourEncounter)
    assert str(err).startswith(
        f"refs[0]: {encounter!r} was recorded in {theirs!r}, not in your open encounter "
        f"{encounter!r}; older knowledge is revised"
    )


# 2. Nothing is created outside an open encounter of the caller's locus.
def test_2_no_write_before_advance(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(B, [{"type": "Note", "name": "stray"}]),
        NoOpenEncounter,
    )
    assert "advance_encounter" in str(err)
    _refused(
        store,
        lambda: memory.create_relations(
            B, [{"source": "obs one", "type": "GROUNDS", "target": "guess"}]
        ),
        NoOpenEncounter,
    )


def test_2_no_write_after_close(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.close_encounter(A, "done")
    _refused(
        store,
        lambda: memory.create_entities(A, [{"type": "Note", "name": "late"}]),
        EncounterSealed,
    )


# 3. Unknown fields, unknown types, wrong endpoint types: refused, named, nothing written.
def test_3_unknown_type(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(
            A, [{"type": "Note", "name": "ok"}, {"type": "Idea", "name": "x"}]
        ),
        UnknownType,
    )
    assert "entities[1].type" in str(err) and "Observation" in str(err)


def test_3_unknown_field(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(A, [{"type": "Observation", "name": "x", "colour": "red"}]),
        UnknownField,
    )
    assert "entities[0].colour" in str(err) and "t_observed" in str(err)


def test_3_status_on_a_type_without_statuses(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.create_entities(A, [{"type": "Concept", "name": "x", "status": "open"}]),
        UnknownField,
    )


def test_3_bad_status_value(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(A, [{"type": "Question", "name": "x", "status": "maybe"}]),
        InvalidInput,
    )
    assert "open, resolved, retired" in str(err)


def test_3_unknown_relation_type(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.create_relations(
            A, [{"source": "obs one", "type": "LIKES", "target": "idea"}]
        ),
        UnknownType,
    )


def test_3_wrong_endpoint_types(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_relations(
            A, [{"source": "ask", "type": "GROUNDS", "target": "idea"}]
        ),
        EndpointRule,
    )
    assert "relations[0].source" in str(err) and "Observation" in str(err)


def test_3_two_components_are_never_linked(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.create_entities(
        A,
        [
            {
                "type": "Component",
                "name": "a.py",
                "source_kind": "file",
                "source_label": "r",
                "source_key": "a.py",
            },
            {
                "type": "Component",
                "name": "b.py",
                "source_kind": "file",
                "source_label": "r",
                "source_key": "b.py",
            },
        ],
    )
    _refused(
        store,
        lambda: memory.create_relations(A, [{"source": "a.py", "type": "ABOUT", "target": "b.py"}]),
        EndpointRule,
    )


def test_3_component_source_triple_is_unique(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.create_entities(
        A,
        [
            {
                "type": "Component",
                "name": "a.py",
                "source_kind": "file",
                "source_label": "r",
                "source_key": "a.py",
            }
        ],
    )
    _refused(
        store,
        lambda: memory.create_entities(
            A,
            [
                {
                    "type": "Component",
                    "name": "again",
                    "source_kind": "file",
                    "source_label": "r",
                    "source_key": "a.py",
                }
            ],
        ),
        InvalidInput,
    )


def test_3_name_collision(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store, lambda: memory.create_entities(A, [{"type": "Note", "name": "idea"}]), NameTaken
    )


def test_3_batch_is_all_or_nothing(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    good = [{"type": "Note", "name": f"note {i}"} for i in range(20)]
    _refused(
        store,
        lambda: memory.create_entities(A, [*good, {"type": "Note", "name": "idea"}]),
        NameTaken,
    )


def test_3_missing_session_id(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store, lambda: memory.create_entities("", [{"type": "Note", "name": "x"}]), InvalidInput
    )
    assert "session_id" in str(err)


def test_3_bad_time(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    err = _refused(
        store,
        lambda: memory.create_entities(
            A, [{"type": "Observation", "name": "x", "t_observed": "last tuesday"}]
        ),
        InvalidInput,
    )
    assert "entities[0].t_observed" in str(err) and "ISO-8601" in str(err)


# 4. A revision never overwrites; the chain stays a line.
def test_4_supersedes_needs_a_reason(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.create_entities(
            A, [{"type": "Concept", "name": "idea2", "supersedes": "idea"}]
        ),
        InvalidInput,
        "revision_why",
    )
    _refused(
        store,
        lambda: memory.create_relations(
            A, [{"source": "idea", "type": "SUPERSEDES", "target": "guess"}]
        ),
        InvalidInput,
        "revision_why",
    )


def test_4_revision_keeps_type(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _refused(
        store,
        lambda: memory.create_entities(
            A, [{"type": "Note", "name": "n", "supersedes": "idea", "revision_why": "x"}]
        ),
        SupersessionRule,
    )


def test_4_one_successor_only(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.create_entities(
        A, [{"type": "Concept", "name": "idea v2", "supersedes": "idea", "revision_why": "better"}]
    )
    old_id = (
        memory.find_by_name("idea").history[0].id
        if memory.find_by_name("idea").history
        else memory.find_by_name("idea").resolved_from
    )
    assert old_id is not None
    _refused(
        store,
        lambda: memory.create_entities(
            A, [{"type": "Concept", "name": "fork", "supersedes": old_id, "revision_why": "fork"}]
        ),
        SupersessionRule,
    )


def test_4_no_cycles(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.create_entities(
        A, [{"type": "Concept", "name": "idea v2", "supersedes": "idea", "revision_why": "better"}]
    )
    tail = memory.find_by_name("idea").node  # the name resolves along the chain to its head
    original = memory.find_by_name("idea v2").history[0]
    assert tail.name == "idea v2"
    _refused(
        store,
        lambda: memory.create_relations(
            A,
            [
                {
                    "source": original.id,
                    "type": "SUPERSEDES",
                    "target": tail.id,
                    "revision_why": "loop",
                }
            ],
        ),
        SupersessionRule,
    )


def test_4_the_old_node_is_untouched(memory: Memory) -> None:
    _seed(memory)
    before = memory.find_by_name("idea").node
    memory.create_entities(
        A,
        [
            {
                "type": "Concept",
                "name": "idea",
                "description": "new text",
                "supersedes": "idea",
                "revision_why": "clearer",
            }
        ],
    )
    history = memory.find_by_name("idea").history
    assert history[0].id == before.id and history[0].description == before.description


# 5. Sealed only by its own locus; a sealed encounter takes no writes.
def test_5_another_locus_cannot_seal(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    encounter = memory.find_by_name("idea").node.encounter
    assert encounter is not None
    memory.advance_encounter(B, "other")
    _refused(
        store, lambda: memory.close_encounter(B, "hijack", encounter=encounter), NotYourEncounter
    )


def test_5_a_sealed_encounter_cannot_be_sealed_again(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    closed = memory.close_encounter(A, "done")
    _refused(
        store,
        lambda: memory.close_encounter(A, "again", encounter=closed.encounter.name),
        EncounterSealed,
    )


# 6. Session state is durable: a restart ends no encounter; an idle one is dissolved mechanically.
def test_6_a_restart_ends_no_encounter(store: GraphStore) -> None:
    first = Memory(store)
    opened = first.advance_encounter(A, "work in progress")
    first.create_entities(A, [{"type": "Note", "name": "before the restart"}])
    restarted = Memory(store)
    # A new process sweeps at start; the encounter was active just now, so it stays open.
    assert restarted.sweep_idle(86_400) == []
    created = restarted.create_entities(A, [{"type": "Note", "name": "after the restart"}])
    assert created.encounter == opened.encounter.name
    reentry = restarted.advance_encounter(B, "look around")
    [left] = [u for u in reentry.unsealed if u.name == opened.encounter.name]
    assert left.state == "open"


def test_6_an_idle_encounter_is_dissolved_without_inventing_a_summary(store: GraphStore) -> None:
    memory = Memory(store)
    opened = memory.advance_encounter(A, "work in progress")
    time.sleep(1.2)  # stamps may be whole seconds: the two openings must differ
    busy = memory.advance_encounter(C, "busy elsewhere")
    quiet_since = datetime.fromisoformat(opened.encounter.opened_at)
    active_since = datetime.fromisoformat(busy.encounter.opened_at)
    assert quiet_since < active_since
    # Sweep as of C's last activity with a horizon of half the gap: only A fell quiet.
    horizon = (active_since - quiet_since).total_seconds() / 2
    assert spine.dissolve_idle(store, horizon, now=active_since) == [opened.encounter.name]
    # Twice is the same as once: a second sweeper finds nothing left to do.
    assert spine.dissolve_idle(store, horizon, now=active_since) == []
    memory.create_entities(C, [{"type": "Note", "name": "still busy"}])
    reentry = memory.advance_encounter(B, "look around")
    left = next(u for u in reentry.unsealed if u.name == opened.encounter.name)
    assert left.state == "dissolved" and left.dissolved_at is not None and left.summary is None
    assert any(u.name == busy.encounter.name and u.state == "open" for u in reentry.unsealed)
    with pytest.raises(NoOpenEncounter, match="dissolved"):
        memory.create_entities(A, [{"type": "Note", "name": "late"}])
    sealed = memory.close_encounter(A, "wrapped after the sweep", encounter=opened.encounter.name)
    assert sealed.encounter.summary == "wrapped after the sweep"


# 7. Deletion is governed: only what the open encounter recorded.
def test_7_cannot_delete_older_knowledge(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.advance_encounter(A, "later", close_summary="seeded")
    err = _refused(store, lambda: memory.delete_entities(A, ["idea"]), NotYourEncounter)
    assert "supersedes" in str(err)
    _refused(
        store,
        lambda: memory.delete_relations(
            A, [{"source": "obs one", "type": "GROUNDS", "target": "idea"}]
        ),
        NotYourEncounter,
    )


def test_7_cannot_delete_another_locus_work(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    memory.advance_encounter(B, "other")
    _refused(store, lambda: memory.delete_entities(B, ["obs one"]), NotYourEncounter)


def test_7_cannot_delete_a_node_others_link_to(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(A, "one")
    memory.create_entities(A, [{"type": "Observation", "name": "fresh", "description": "x"}])
    memory.advance_encounter(B, "two")
    memory.create_entities(B, [{"type": "Concept", "name": "theirs"}])
    memory.create_relations(B, [{"source": "fresh", "type": "GROUNDS", "target": "theirs"}])
    _refused(store, lambda: memory.delete_entities(A, ["fresh"]), NotYourEncounter)


# 8. read_cypher can never write, call a writing or file-reading procedure, or load files.
@pytest.mark.parametrize(
    "query",
    [
        "CREATE (n:Note {id: 'not_000000000000', name: 'x'})",
        "MATCH (n:Concept) SET n.name = 'pwned'",
        "MATCH (n) DETACH DELETE n",
        "COPY (MATCH (n) RETURN n) TO '/tmp/kenning-leak.csv'",
        "LOAD FROM '/etc/passwd' RETURN *",
    ],
)
def test_8_read_cypher_cannot_write(memory: Memory, store: GraphStore, query: str) -> None:
    _seed(memory)
    _refused(store, lambda: memory.read_cypher(query), ReadOnlyViolation)
