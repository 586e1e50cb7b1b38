"""Undoing within the open encounter: exactly the named relation goes, and the status the
remaining evidence gives comes back. Every refusal names its field (both backends)."""

from __future__ import annotations

from functools import partial

import pytest

from kenning_encounter.errors import InvalidInput, NotFound, NotYourEncounter
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from tests.support.store_reads import clock_now, edges_touching, id_by_name, node_by_id, refused

S = "undo-session"
OTHER = "undo-other"


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
            {"type": "Concept", "name": "c2", "description": "another idea"},
            {"type": "Note", "name": "n", "description": "a remark"},
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


def test_an_unlinking_gives_back_the_status_given_at_creation(held: Memory) -> None:
    """Found by hunting: an unlinking re-derived the status from the default, so a status
    given at creation (a question recorded resolved, a hypothesis recorded supported) was
    lost to the undo of a relation that had moved nothing, or had moved it from there. The
    status comes back to what the node was given, moved by the evidence that remains."""
    held.create_entities(
        S,
        [
            {"type": "Question", "name": "known", "description": "x", "status": "resolved"},
            {"type": "Hypothesis", "name": "backed", "description": "x", "status": "supported"},
        ],
    )
    held.create_relations(S, [_link("o1", "RESOLVES", "known"), _link("o1", "SUPPORTS", "backed")])
    held.create_relations(S, [_link("o2", "CHALLENGES", "backed")])
    assert _status(held, "known") == "resolved" and _status(held, "backed") == "challenged"
    held.delete_relations(
        S, [_link("o1", "RESOLVES", "known"), _link("o2", "CHALLENGES", "backed")]
    )
    assert _status(held, "known") == "resolved" and _status(held, "backed") == "supported"
    held.delete_relations(S, [_link("o1", "SUPPORTS", "backed")])
    assert _status(held, "backed") == "supported"
    # An undone node's relations go the same way.
    held.create_relations(S, [_link("o2", "CHALLENGES", "backed")])
    held.delete_entities(S, ["o2"])
    assert _status(held, "backed") == "supported"


# --- delete_entities ---------------------------------------------------------------


def test_what_a_deletion_answers(held: Memory, store: GraphStore) -> None:
    ids = [id_by_name(held, n) for n in ("n", "c2")]
    deleted = held.delete_entities(S, ["n", ids[1]])
    assert deleted.deleted == ids
    assert deleted.tick == clock_now(store)
    assert deleted.encounter == held.find_by_name("o1").node.encounter
    assert all(store.read(lambda tx, i=i: tx.get_node(i)) is None for i in ids)


def test_a_deletion_batch_goes_whole_or_not_at_all(held: Memory, store: GraphStore) -> None:
    held.advance_encounter(OTHER, "elsewhere")
    held.create_entities(OTHER, [{"type": "Note", "name": "theirs"}])
    theirs = held.find_by_name("theirs").node
    mine = held.find_by_name("n").node
    err = refused(store, partial(held.delete_entities, S, ["n", "c2", "theirs"]), NotYourEncounter)
    assert str(err) == (
        f"refs[2]: 'theirs' was recorded in {theirs.encounter!r}, not in your open encounter "
        f"{mine.encounter!r}; older knowledge is revised (supersedes) or retired, never "
        "deleted by an agent"
    )
    err = refused(store, partial(held.delete_entities, S, ["n", ""]), InvalidInput)
    assert isinstance(err, InvalidInput) and err.field == "refs[1]"
    err = refused(store, partial(held.delete_entities, S, ["n", "ghost"]), NotFound)
    assert str(err) == "no node 'ghost'; refs[1] must name or id an existing node; try search"


def test_a_node_linked_from_other_work_stays(held: Memory, store: GraphStore) -> None:
    held.advance_encounter(OTHER, "elsewhere")
    held.create_entities(OTHER, [{"type": "Concept", "name": "theirs"}])
    held.create_relations(OTHER, [_link("o1", "GROUNDS", "theirs")])
    encounter = held.find_by_name("theirs").node.encounter
    # A link from the node's own encounter does not stop its deletion; one from another does.
    held.create_relations(S, [_link("o2", "GROUNDS", "c")])
    err = refused(store, partial(held.delete_entities, S, ["o2", "o1"]), NotYourEncounter)
    assert str(err) == (
        f"refs[1]: 'o1' is linked by GROUNDS from encounter {encounter!r}; it is part of other "
        "work now and cannot be deleted"
    )
    o2 = id_by_name(held, "o2")
    assert held.delete_entities(S, ["o2"]).deleted == [o2]


def test_a_node_another_encounter_confirmed_pinned_or_claimed_stays(
    held: Memory, store: GraphStore
) -> None:
    # Each of those is the other encounter's work on the node (DESIGN §3 invariant 7).
    other = held.advance_encounter(OTHER, "elsewhere").encounter.name
    held.confirm_entities(OTHER, ["n"], why="still so")
    held.pin_entities(OTHER, ["o1"])
    held.claim_referents(OTHER, [{"source": "c", "target": "c2", "resolution": "proposed"}])
    held.find_by_name("o2", session_id=OTHER)  # a read builds nothing on it
    for ref, what in (
        ("n", "was confirmed"),
        ("o1", "was pinned (or unpinned)"),
        ("c", "is named in a referent claim made"),
        ("c2", "is named in a referent claim made"),
    ):
        err = refused(store, partial(held.delete_entities, S, ["h", ref]), NotYourEncounter)
        assert str(err) == (
            f"refs[1]: {ref!r} {what} in encounter {other!r}; it is part of other work now "
            "and cannot be deleted: revise it (supersedes) or retire it instead"
        )
    o2 = id_by_name(held, "o2")
    assert held.delete_entities(S, ["o2"]).deleted == [o2]
    # Its own encounter's confirmation and pin go with it.
    held.confirm_entities(S, ["h2"], why="mine")
    held.pin_entities(S, ["h2"])
    h2 = id_by_name(held, "h2")
    assert held.delete_entities(S, ["h2"]).deleted == [h2]


def test_an_undone_node_takes_back_the_statuses_its_relations_moved(
    held: Memory, store: GraphStore
) -> None:
    """Found by hunting: undoing a node (delete_entities) took its relations with it but left
    the statuses they had moved, so a question read resolved with nothing resolving it. An
    undo now gives each surviving end the status its remaining evidence gives, as
    delete_relations does; what held before the undo still reads so as of then."""
    held.advance_encounter(S, "evidence drafted and undone", close_summary="seeded")
    held.create_entities(
        S,
        [
            {"type": "Observation", "name": "for", "description": "evidence"},
            {"type": "Observation", "name": "against", "description": "counter evidence"},
            {"type": "Observation", "name": "stays", "description": "kept evidence"},
        ],
    )
    linked = held.create_relations(
        S,
        [
            _link("for", "RESOLVES", "q"),
            _link("for", "SUPPORTS", "h"),
            _link("against", "CHALLENGES", "h"),
            _link("stays", "SUPPORTS", "h2"),
            _link("against", "CHALLENGES", "h2"),
        ],
    )
    assert [_status(held, n) for n in ("q", "h", "h2")] == ["resolved", "challenged", "challenged"]
    held.delete_entities(S, ["against"])
    assert [_status(held, n) for n in ("q", "h", "h2")] == ["resolved", "supported", "supported"]
    undone = held.delete_entities(S, ["for"])
    assert [_status(held, n) for n in ("q", "h", "h2")] == ["open", "untested", "supported"]
    assert node_by_id(store, id_by_name(held, "q")).status == "open"
    # A read of the past shows each status as it stood.
    assert held.find_by_name("q", as_of=linked.tick).node.status == "resolved"
    assert held.find_by_name("h", as_of=linked.tick).node.status == "challenged"
    assert held.find_by_name("q", as_of=undone.tick).node.status == "open"
    # A status set by hand stays whatever is undone.
    held.create_entities(S, [{"type": "Observation", "name": "aside", "description": "x"}])
    held.create_relations(S, [_link("aside", "CHALLENGES", "put aside")])
    held.delete_entities(S, ["aside"])
    assert _status(held, "put aside") == "retired"


# --- delete_relations --------------------------------------------------------------


def test_what_an_unlinking_answers(held: Memory, store: GraphStore) -> None:
    o1, c, c2 = (id_by_name(held, n) for n in ("o1", "c", "c2"))
    held.create_relations(
        S, [_link("o1", "GROUNDS", "c"), _link("c", "INFORMS", "c2"), _link("c2", "INFORMS", "c")]
    )
    deleted = held.delete_relations(S, [_link("o1", "GROUNDS", "c"), _link("c", "INFORMS", "c2")])
    assert deleted.deleted == [f"{o1} -GROUNDS-> {c}", f"{c} -INFORMS-> {c2}"]
    assert deleted.tick == clock_now(store)
    assert deleted.encounter == held.find_by_name("c").node.encounter
    # The reverse link, sharing both ends, stays.
    assert {(e.source, e.type, e.target) for e in edges_touching(store, c)} == {(c2, "INFORMS", c)}
    err = refused(store, partial(held.delete_relations, S, [_link("c", "INFORMS", "c2")]), NotFound)
    assert str(err) == "no relation 'c -INFORMS-> c2'"


def test_another_encounters_relation_stays(held: Memory, store: GraphStore) -> None:
    held.create_relations(S, [_link("o1", "GROUNDS", "c")])
    first = held.find_by_name("c").node.encounter
    later = held.advance_encounter(S, "later", close_summary="done")
    err = refused(
        store,
        partial(held.delete_relations, S, [_link("o1", "GROUNDS", "c")]),
        NotYourEncounter,
    )
    assert str(err) == (
        f"relations[0]: that relation was recorded in {first!r}, not in your open encounter "
        f"{later.encounter.name!r}; only your own fresh mistakes can be deleted"
    )


def test_an_unlinking_in_a_batch_is_whole(held: Memory, store: GraphStore) -> None:
    held.create_relations(S, [_link("o1", "SUPPORTS", "h")])
    err = refused(
        store,
        partial(
            held.delete_relations,
            S,
            [
                _link("o1", "SUPPORTS", "h"),
                {**_link("o1", "SUPERSEDES", "o2"), "revision_why": "undo"},
            ],
        ),
        InvalidInput,
    )
    assert isinstance(err, InvalidInput) and err.field == "relations[1].type"
    assert node_by_id(store, id_by_name(held, "h")).status == "supported"


def test_the_latest_evidence_kind_sets_the_status(held: Memory, store: GraphStore) -> None:
    held.create_relations(
        S,
        [
            _link("o1", "SUPPORTS", "h"),
            _link("o2", "CHALLENGES", "h"),
            _link("o1", "GROUNDS", "h"),
        ],
    )
    held.delete_relations(S, [_link("o1", "GROUNDS", "h")])
    assert node_by_id(store, id_by_name(held, "h")).status == "challenged"


def test_only_incoming_evidence_counts(held: Memory, store: GraphStore) -> None:
    held.create_relations(S, [_link("o1", "SUPPORTS", "h2"), _link("h2", "CHALLENGES", "h")])
    held.delete_relations(S, [_link("o1", "SUPPORTS", "h2")])
    assert node_by_id(store, id_by_name(held, "h2")).status == "untested"
    assert node_by_id(store, id_by_name(held, "h")).status == "challenged"


def test_an_unlinking_leaves_other_types_statuses_alone(held: Memory, store: GraphStore) -> None:
    # A question has no "supported" to fall back from, a concept no status at all.
    held.create_relations(S, [_link("c", "RESOLVES", "q"), _link("o1", "SUPPORTS", "c")])
    held.create_relations(S, [_link("o1", "INFORMS", "q")])
    held.delete_relations(S, [_link("o1", "INFORMS", "q"), _link("o1", "SUPPORTS", "c")])
    assert node_by_id(store, id_by_name(held, "q")).status == "resolved"
    assert node_by_id(store, id_by_name(held, "c")).status is None


def test_a_version_inside_a_chain_goes_only_after_the_newer_ones(
    memory: Memory, store: GraphStore
) -> None:
    """Found by hypothesis: deleting the middle of a chain left its predecessor a second
    live head under the chain's name (DESIGN §3: one live head per name)."""
    memory.advance_encounter(S, "a chain drafted and undone")
    first = memory.create_entities(S, [{"type": "Note", "name": "plan", "description": "v1"}])
    ids = [first.created[0].id]
    for n in (2, 3):
        made = memory.create_entities(
            S,
            [
                {
                    "type": "Note",
                    "name": "plan",
                    "description": f"v{n}",
                    "supersedes": ids[-1],
                    "revision_why": "redrafted",
                }
            ],
        )
        ids.append(made.created[0].id)
    error = refused(store, partial(memory.delete_entities, S, [ids[1]]), InvalidInput)
    assert (
        error.field == "refs[0]" and ids[2] in str(error) and "newest version first" in str(error)
    )
    memory.delete_entities(S, [ids[1], ids[2]])  # both at once, in either order
    assert memory.find_by_name("plan").node.id == ids[0]
    assert node_by_id(store, ids[0]).superseded_by is None
