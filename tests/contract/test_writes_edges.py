"""The governed write service at its edges: each refusal of memory/writes.py pinned at its
class, field and the words the model reads, with nothing written; each success pinned at
what it stores and what it answers (both backends).

A mutation run of writes.py left these paths alive: a refusal that fired under a looser
condition, a message that lost its name, an answer that dropped the revised id.
"""

from __future__ import annotations

import itertools
import re
from functools import partial

import pytest

from kenning_encounter.errors import (
    EndpointRule,
    InvalidInput,
    NameTaken,
    NotFound,
    SupersessionRule,
)
from kenning_encounter.memory import writes
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from tests.support.store_reads import clock_now, edges_touching, id_by_name, node_by_id, refused

S = "edges-session"
OTHER = "edges-other"


def _link(source: str, type_: str, target: str, why: str | None = None) -> dict[str, str]:
    link = {"source": source, "type": type_, "target": target}
    if why is not None:
        link["revision_why"] = why
    return link


def _component(name: str, key: str, **extra: str) -> dict[str, str]:
    return {
        "type": "Component",
        "name": name,
        "source_kind": "file",
        "source_label": "repo",
        "source_key": key,
        **extra,
    }


# --- create_entities ---------------------------------------------------------------


def test_what_a_batch_stores_and_answers(memory: Memory, store: GraphStore) -> None:
    opened = memory.advance_encounter(S, "record")
    created = memory.create_entities(
        S,
        [
            {"type": "Note", "name": "n", "description": "a remark"},
            {"type": "Question", "name": "q"},
            {"type": "Hypothesis", "name": "h", "status": "supported"},
            _component("c", "a.py"),
        ],
    )
    assert created.encounter == opened.encounter.name
    assert created.tick == clock_now(store)
    answer = [(r.type, r.name, r.status, r.revises) for r in created.created]
    assert answer == [
        ("Note", "n", "", ""),
        ("Question", "q", "open", ""),
        ("Hypothesis", "h", "supported", ""),
        ("Component", "c", "", ""),
    ]
    prefixes = [r.id.split("_")[0] for r in created.created]
    assert prefixes == ["not", "que", "hyp", "cmp"]
    assert all(re.fullmatch(r"[a-z]{3}_[0-9a-f]{12}", r.id) for r in created.created)
    stored = [node_by_id(store, r.id) for r in created.created]
    assert [n.ord for n in stored] == [0, 1, 2, 3]
    assert {(n.tick, n.created_at, n.encounter, n.locus) for n in stored} == {
        (created.tick, created.created_at, opened.encounter.name, S)
    }
    assert (stored[0].description, stored[0].status) == ("a remark", None)
    assert stored[3].props == {"source_kind": "file", "source_label": "repo", "source_key": "a.py"}
    # Every node is reachable by its id as well as by its name.
    memory.create_relations(S, [_link(created.created[0].id, "RAISES", created.created[1].id)])


@pytest.mark.parametrize(
    ("call", "field"), [("create_entities", "entities"), ("create_relations", "relations")]
)
def test_an_empty_batch_names_its_field(
    memory: Memory, store: GraphStore, call: str, field: str
) -> None:
    memory.advance_encounter(S, "record")
    err = refused(store, partial(getattr(memory, call), S, []), InvalidInput)
    assert isinstance(err, InvalidInput) and err.field == field


def test_a_name_twice_in_one_batch_names_both_places(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [
                {"type": "Note", "name": "first"},
                {"type": "Note", "name": "twice"},
                {"type": "Concept", "name": "twice"},
            ],
        ),
        InvalidInput,
    )
    assert isinstance(err, InvalidInput) and err.field == "entities[2].name"
    assert str(err) == "entities[2].name: 'twice' appears twice in this batch (entities[1])"


def test_a_taken_name_is_refused_with_its_holder(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [{"type": "Note", "name": "held"}, {"type": "Note", "name": "x"}])
    holder = id_by_name(memory, "held")
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [{"type": "Note", "name": "free"}, {"type": "Concept", "name": "held"}],
        ),
        NameTaken,
    )
    assert isinstance(err, NameTaken)
    assert (err.field, err.name, err.existing_id) == ("entities[1].name", "held", holder)
    # Revising another node does not free a name its holder still has.
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [{"type": "Note", "name": "held", "supersedes": "x", "revision_why": "rename"}],
        ),
        NameTaken,
    )
    assert isinstance(err, NameTaken) and err.existing_id == holder


def test_a_revision_may_keep_the_name_it_revises(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [{"type": "Concept", "name": "idea", "description": "v1"}])
    old = id_by_name(memory, "idea")
    created = memory.create_entities(
        S,
        [
            {"type": "Note", "name": "aside"},
            {
                "type": "Concept",
                "name": "idea",
                "description": "v2",
                "supersedes": "idea",
                "revision_why": "sharper",
            },
        ],
    )
    aside, revision = created.created
    assert (aside.revises, revision.revises) == ("", old)
    assert id_by_name(memory, "idea") == revision.id
    [edge] = [e for e in edges_touching(store, revision.id) if e.type == "SUPERSEDES"]
    assert edge == EdgeRecord(
        revision.id, old, "SUPERSEDES", created.tick, created.encounter, "sharper"
    )
    assert node_by_id(store, old).superseded_by == revision.id


def test_a_revision_keeps_its_type_in_words(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [{"type": "Concept", "name": "idea"}])
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [{"type": "Note", "name": "n", "supersedes": "idea", "revision_why": "x"}],
        ),
        SupersessionRule,
    )
    assert str(err) == (
        "entities[0].supersedes: a Note cannot supersede a Concept; revisions keep their type"
    )


def test_a_revised_node_takes_no_second_revision(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [{"type": "Concept", "name": "idea"}])
    old = id_by_name(memory, "idea")
    memory.create_entities(
        S, [{"type": "Concept", "name": "idea 2", "supersedes": "idea", "revision_why": "v2"}]
    )
    head = id_by_name(memory, "idea 2")
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [{"type": "Concept", "name": "fork", "supersedes": old, "revision_why": "fork"}],
        ),
        SupersessionRule,
    )
    assert str(err) == (
        f"entities[0].supersedes: 'idea' is already superseded by {head}; revise the head of "
        "its chain instead"
    )


def test_one_node_is_revised_once_per_batch(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(
        S, [{"type": "Concept", "name": "idea"}, {"type": "Concept", "name": "b"}]
    )
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [
                {"type": "Concept", "name": "b 2", "supersedes": "b", "revision_why": "one"},
                {"type": "Concept", "name": "v2", "supersedes": "idea", "revision_why": "one"},
                {"type": "Concept", "name": "v3", "supersedes": "idea", "revision_why": "two"},
            ],
        ),
        SupersessionRule,
    )
    assert str(err) == "entities[2].supersedes: 'idea' is revised twice in this batch"


def test_a_revision_of_nothing_names_its_field(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [{"type": "Note", "name": "n", "supersedes": "ghost", "revision_why": "x"}],
        ),
        NotFound,
    )
    assert str(err) == (
        "no node 'ghost'; entities[0].supersedes must name or id an existing node; try search"
    )


def test_a_source_is_bookmarked_once(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [_component("a", "a.py"), _component("b", "b.py")])
    first = id_by_name(memory, "a")
    err = refused(
        store, partial(memory.create_entities, S, [_component("again", "a.py")]), InvalidInput
    )
    assert isinstance(err, InvalidInput) and err.field == "entities[0].source_key"
    assert str(err) == (
        f"entities[0].source_key: a Component for file/repo/a.py exists already ({first}); "
        "link to it instead of bookmarking the source twice"
    )
    err = refused(
        store,
        partial(memory.create_entities, S, [_component("c1", "c.py"), _component("c2", "c.py")]),
        InvalidInput,
    )
    assert str(err) == (
        "entities[1].source_key: a Component for file/repo/c.py exists already in this batch; "
        "link to it instead of bookmarking the source twice"
    )
    # Only the whole triple is unique: another label or kind is another source.
    memory.create_entities(
        S,
        [
            {**_component("other label", "a.py"), "source_label": "fork"},
            {**_component("other kind", "a.py"), "source_kind": "url"},
        ],
    )


def test_a_revised_bookmark_keeps_its_source(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "record")
    memory.create_entities(S, [_component("a", "a.py"), _component("b", "b.py")])
    old = id_by_name(memory, "a")
    created = memory.create_entities(
        S, [_component("a v2", "a.py", supersedes="a", revision_why="renamed")]
    )
    assert created.created[0].revises == old
    # Revising b does not license taking a's source.
    err = refused(
        store,
        partial(
            memory.create_entities,
            S,
            [_component("b v2", "a.py", supersedes="b", revision_why="moved")],
        ),
        InvalidInput,
    )
    assert str(err).startswith(
        f"entities[0].source_key: a Component for file/repo/a.py exists already ({created.created[0].id})"
    )


# --- create_relations --------------------------------------------------------------


@pytest.fixture
def evidence(memory: Memory) -> Memory:
    memory.advance_encounter(S, "evidence")
    memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1"},
            {"type": "Observation", "name": "o2"},
            {"type": "Hypothesis", "name": "h"},
            {"type": "Hypothesis", "name": "h2"},
            {"type": "Hypothesis", "name": "dead", "status": "falsified"},
            {"type": "Question", "name": "q"},
            {"type": "Question", "name": "q done", "status": "retired"},
            {"type": "Concept", "name": "c"},
            {"type": "Concept", "name": "c2"},
            {"type": "Note", "name": "n"},
            _component("a.py", "a.py"),
            _component("b.py", "b.py"),
        ],
    )
    return memory


def test_what_a_relation_batch_stores_and_answers(evidence: Memory, store: GraphStore) -> None:
    o1, h, q, c = (id_by_name(evidence, n) for n in ("o1", "h", "q", "c"))
    related = evidence.create_relations(
        S,
        [
            _link("o1", "SUPPORTS", "h"),
            _link("o2", "CHALLENGES", "h"),
            _link("c", "RESOLVES", "q"),
            _link("o1", "GROUNDS", "c"),
            _link("o1", "CHALLENGES", "dead"),
            _link("o1", "SUPPORTS", "c"),
        ],
    )
    assert related.tick == clock_now(store)
    assert [(e.source, e.type, e.target) for e in related.created[:2]] == [
        (o1, "SUPPORTS", h),
        (id_by_name(evidence, "o2"), "CHALLENGES", h),
    ]
    assert {(e.tick, e.encounter, e.revision_why) for e in related.created} == {
        (related.tick, related.encounter, None)
    }
    # Each change starts from the status the batch's earlier links left; falsified stays.
    assert related.status_changes == [
        {"node": h, "name": "h", "from": "untested", "to": "supported"},
        {"node": h, "name": "h", "from": "supported", "to": "challenged"},
        {"node": q, "name": "q", "from": "open", "to": "resolved"},
    ]
    assert [node_by_id(store, i).status for i in (h, q, id_by_name(evidence, "dead"))] == [
        "challenged",
        "resolved",
        "falsified",
    ]
    stored = {(e.source, e.type, e.target) for e in edges_touching(store, c)}
    assert stored == {(o1, "GROUNDS", c), (c, "RESOLVES", q), (o1, "SUPPORTS", c)}


def test_a_challenge_moves_a_supported_hypothesis(evidence: Memory, store: GraphStore) -> None:
    evidence.create_relations(S, [_link("o1", "SUPPORTS", "h")])
    related = evidence.create_relations(S, [_link("o2", "CHALLENGES", "h")])
    assert related.status_changes == [
        {"node": id_by_name(evidence, "h"), "name": "h", "from": "supported", "to": "challenged"}
    ]
    # Support after a challenge moves nothing: only an untested hypothesis becomes supported.
    assert evidence.create_relations(S, [_link("o2", "SUPPORTS", "h")]).status_changes == []
    assert node_by_id(store, id_by_name(evidence, "h")).status == "challenged"
    assert evidence.create_relations(S, [_link("o1", "RESOLVES", "q done")]).status_changes == []


def test_a_node_is_not_linked_to_itself(evidence: Memory, store: GraphStore) -> None:
    err = refused(
        store, partial(evidence.create_relations, S, [_link("c", "INFORMS", "c")]), InvalidInput
    )
    assert str(err) == "relations[0].target: a node cannot be linked to itself"
    by_id = id_by_name(evidence, "c")
    err = refused(
        store, partial(evidence.create_relations, S, [_link("c", "INFORMS", by_id)]), InvalidInput
    )
    assert isinstance(err, InvalidInput) and err.field == "relations[0].target"


def test_a_source_type_the_rules_forbid_names_the_source(
    evidence: Memory, store: GraphStore
) -> None:
    err = refused(
        store,
        partial(
            evidence.create_relations, S, [_link("o1", "GROUNDS", "c"), _link("q", "GROUNDS", "c")]
        ),
        EndpointRule,
    )
    assert isinstance(err, EndpointRule)
    assert (err.field, err.relation, err.value, err.allowed) == (
        "relations[1].source",
        "GROUNDS",
        "Question",
        ("Citation", "Observation"),
    )
    assert str(err) == (
        "relations[1].source: GROUNDS cannot have a Question at its source end; "
        "allowed: Citation, Observation"
    )
    err = refused(
        store, partial(evidence.create_relations, S, [_link("a.py", "ABOUT", "b.py")]), EndpointRule
    )
    assert isinstance(err, EndpointRule) and err.field == "relations[0].source"


def test_a_target_type_the_rules_forbid_names_the_relation(
    evidence: Memory, store: GraphStore
) -> None:
    err = refused(
        store, partial(evidence.create_relations, S, [_link("o1", "RAISES", "c")]), EndpointRule
    )
    assert isinstance(err, EndpointRule) and err.relation == "RAISES"
    assert str(err) == (
        "relations[0].target: RAISES cannot have a Concept at its target end; allowed: Question"
    )


def test_a_bookmark_may_supersede_a_bookmark(evidence: Memory, store: GraphStore) -> None:
    related = evidence.create_relations(S, [_link("b.py", "SUPERSEDES", "a.py", "merged")])
    assert [(e.type, e.revision_why) for e in related.created] == [("SUPERSEDES", "merged")]
    assert node_by_id(store, id_by_name(evidence, "b.py")).superseded_by is None


def test_a_relation_revision_keeps_its_type_in_words(evidence: Memory, store: GraphStore) -> None:
    err = refused(
        store,
        partial(evidence.create_relations, S, [_link("c", "SUPERSEDES", "n", "why")]),
        SupersessionRule,
    )
    assert str(err) == (
        "relations[0].target: a Concept cannot supersede a Note; revisions keep their type"
    )


def test_a_relation_is_made_once(evidence: Memory, store: GraphStore) -> None:
    evidence.create_relations(S, [_link("o1", "GROUNDS", "c")])
    err = refused(
        store,
        partial(
            evidence.create_relations, S, [_link("o2", "GROUNDS", "c"), _link("o1", "GROUNDS", "c")]
        ),
        InvalidInput,
    )
    assert isinstance(err, InvalidInput) and err.field == "relations[1]"
    assert str(err) == "relations[1]: 'o1' -GROUNDS-> 'c' exists already"
    err = refused(
        store,
        partial(
            evidence.create_relations,
            S,
            [
                _link("o2", "INFORMS", "c"),
                _link("o2", "INFORMS", "c2"),
                _link("o2", "INFORMS", "c"),
            ],
        ),
        InvalidInput,
    )
    assert str(err) == "relations[2]: 'o2' -INFORMS-> 'c' exists already"
    # The same pair under another type, or the other way round, is another relation.
    evidence.create_relations(
        S, [_link("o1", "INFORMS", "c"), _link("c", "INFORMS", "c2"), _link("c2", "INFORMS", "c")]
    )


def _chain(memory: Memory, names: list[str]) -> list[str]:
    """A line of revisions, oldest first; returns their ids."""
    memory.create_entities(S, [{"type": "Concept", "name": names[0]}])
    for older, newer in itertools.pairwise(names):
        memory.create_entities(
            S, [{"type": "Concept", "name": newer, "supersedes": older, "revision_why": "on"}]
        )
    ids = [h.id for h in reversed(memory.find_by_name(names[-1]).history)]
    return [*ids, id_by_name(memory, names[-1])]


def test_a_cycle_is_found_however_far_back(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "chains")
    ids = _chain(memory, ["v1", "v2", "v3", "v4"])
    assert len(ids) == 4
    err = refused(
        store,
        partial(memory.create_relations, S, [_link(ids[0], "SUPERSEDES", ids[3], "loop")]),
        SupersessionRule,
    )
    assert str(err) == "relations[0].target: that revision would close a cycle in the chain"
    # A root of another line may revise the head: that joins two lines into one.
    memory.create_entities(S, [{"type": "Concept", "name": "elsewhere"}])
    related = memory.create_relations(S, [_link("elsewhere", "SUPERSEDES", ids[3], "joined")])
    assert [(e.source, e.target) for e in related.created] == [
        (id_by_name(memory, "elsewhere"), ids[3])
    ]
    assert node_by_id(store, ids[3]).superseded_by == id_by_name(memory, "elsewhere")


def test_a_relation_revision_of_a_revised_node_names_its_successor(
    memory: Memory, store: GraphStore
) -> None:
    memory.advance_encounter(S, "chains")
    ids = _chain(memory, ["v1", "v2"])
    memory.create_entities(S, [{"type": "Concept", "name": "rival"}])
    err = refused(
        store,
        partial(memory.create_relations, S, [_link("rival", "SUPERSEDES", ids[0], "fork")]),
        SupersessionRule,
    )
    assert str(err) == (
        f"relations[0].target: 'v1' is already superseded by {ids[1]}; revise the head of "
        "its chain instead"
    )


def test_a_node_revised_earlier_in_the_same_relation_batch_takes_no_second_revision(
    memory: Memory, store: GraphStore
) -> None:
    """The batch resolves its ends once, up front: a successor it makes is seen by the
    links after it all the same."""
    memory.advance_encounter(S, "one batch")
    memory.create_entities(S, [{"type": "Concept", "name": n} for n in ("old", "new", "rival")])
    old = id_by_name(memory, "old")
    err = refused(
        store,
        partial(
            memory.create_relations,
            S,
            [
                _link("new", "SUPERSEDES", "old", "sharper"),
                _link("rival", "SUPERSEDES", "old", "x"),
            ],
        ),
        SupersessionRule,
    )
    assert str(err) == (
        f"relations[1].target: 'old' is already superseded by {id_by_name(memory, 'new')}; "
        "revise the head of its chain instead"
    )
    assert node_by_id(store, old).superseded_by is None  # nothing of the call was written


def test_a_relation_to_nothing_names_its_end(evidence: Memory, store: GraphStore) -> None:
    err = refused(
        store,
        partial(
            evidence.create_relations,
            S,
            [_link("o1", "GROUNDS", "c"), _link("o1", "GROUNDS", "ghost")],
        ),
        NotFound,
    )
    assert str(err) == (
        "no node 'ghost'; relations[1].target must name or id an existing node; try search"
    )
    err = refused(
        store,
        partial(evidence.create_relations, S, [_link("con_0123456789ab", "GROUNDS", "c")]),
        NotFound,
    )
    assert str(err) == (
        "no node 'con_0123456789ab'; relations[0].source must name or id an existing node; "
        "try search"
    )


# --- the chain-link rule on its own ------------------------------------------------
# Today's callers check the type and the self-link before they reach it; the rule still
# holds them, so a caller added later cannot make a chain fork, loop or change type.


def test_the_chain_link_rule_holds_without_its_callers(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter(S, "chains")
    memory.create_entities(S, [{"type": "Concept", "name": "c"}, {"type": "Note", "name": "n"}])
    concept, note = (node_by_id(store, id_by_name(memory, name)) for name in ("c", "n"))

    def rule(new: NodeRecord, old: NodeRecord) -> SupersessionRule:
        with pytest.raises(SupersessionRule) as info:
            store.read(lambda tx: writes._check_chain_link(tx, new, old, "link.target"))
        return info.value

    err = rule(note, concept)
    assert (err.field, str(err)) == (
        "link.target",
        "link.target: a Note cannot supersede a Concept; revisions keep their type",
    )
    err = rule(concept, concept)
    assert (err.field, str(err)) == ("link.target", "link.target: a node cannot supersede itself")
