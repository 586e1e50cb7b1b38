"""chain_history and conflicts on every backend: a chain read whole from any of its versions,
and what the memory contests, ranked by what leans on it. Bad input names its field and
writes nothing; a hidden locus shows in neither."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput, NotFound, UnknownType
from kenning_encounter.memory import conflicts as contest
from kenning_encounter.memory import history, operator
from kenning_encounter.memory.history import MAX_VERSIONS
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.records import HIDDEN_SUCCESSOR
from tests.support.store_reads import refused

S = "history-session"
OTHER = "history-other"


def _entity(type_: str, name: str, description: str = "", **more: Any) -> dict[str, Any]:
    return {"type": type_, "name": name, "description": description or name, **more}


def _link(source: str, type_: str, target: str) -> dict[str, str]:
    return {"source": source, "type": type_, "target": target}


def _revise(memory: Memory, session: str, name: str, description: str, why: str) -> str:
    node = memory.find_by_name(name).node
    created = memory.create_entities(
        session,
        [
            {
                "type": node.type,
                "name": name,
                "description": description,
                "supersedes": node.id,
                "revision_why": why,
            }
        ],
    )
    return created.created[0].id


@pytest.fixture
def chain(memory: Memory) -> list[str]:
    """Three versions of one hypothesis: two written by S, the last by OTHER."""
    memory.advance_encounter(S, "first look")
    first = memory.create_entities(S, [_entity("Hypothesis", "cache flush", "v1")]).created[0].id
    second = _revise(memory, S, "cache flush", "v2", "the flush is per region")
    memory.advance_encounter(OTHER, "second look")
    third = _revise(memory, OTHER, "cache flush", "v3", "regions flush in lockstep")
    return [first, second, third]


def test_the_whole_chain_oldest_first_from_any_version(memory: Memory, chain: list[str]) -> None:
    for ref in [*chain, "cache flush"]:
        h = history.chain_history(memory.store, ref)
        assert [v.id for v in h.versions] == chain, ref
        assert h.head == chain[-1] and h.type == "Hypothesis"
        assert [v.head for v in h.versions] == [False, False, True]
        assert h.asked == (ref if ref in chain[:2] else None)
    h = history.chain_history(memory.store, chain[0])
    assert [v.description for v in h.versions] == ["v1", "v2", "v3"]
    assert [v.revision_why for v in h.versions] == [
        None,
        "the flush is per region",
        "regions flush in lockstep",
    ]
    ticks = [v.tick for v in h.versions]
    assert ticks == sorted(ticks) and len(set(ticks)) == 3
    first, second, third = h.versions
    assert first.encounter == second.encounter != third.encounter
    assert first.session is not None and third.session is not None
    assert first.session != third.session
    assert S not in first.session  # another session's id is never shown whole
    assert all(v.created_at for v in h.versions)
    assert h.cut is None and h.tombstones == []


def test_a_node_never_revised_is_a_one_version_history(memory: Memory) -> None:
    memory.advance_encounter(S, "single")
    memory.create_entities(S, [_entity("Note", "lone note", "only one")])
    h = history.chain_history(memory.store, "lone note")
    assert [(v.name, v.head, v.revision_why) for v in h.versions] == [("lone note", True, None)]
    assert h.head == h.versions[0].id and h.asked is None


def test_a_revision_linked_later_carries_the_tick_of_its_link(memory: Memory) -> None:
    memory.advance_encounter(S, "late link")
    memory.create_entities(S, [_entity("Concept", "old idea"), _entity("Concept", "new idea")])
    memory.create_relations(
        S, [{**_link("new idea", "SUPERSEDES", "old idea"), "revision_why": "x"}]
    )
    h = history.chain_history(memory.store, "new idea")
    assert [v.name for v in h.versions] == ["old idea", "new idea"]
    newer = h.versions[1]
    assert newer.revision_why == "x"
    assert newer.revised_at_tick is not None and newer.revised_at_tick > newer.tick


def test_a_long_chain_is_cut_and_says_where_to_ask_again(memory: Memory) -> None:
    memory.advance_encounter(S, "long")
    head = memory.create_entities(S, [_entity("Note", "long note", "0")]).created[0].id
    total = MAX_VERSIONS + 5
    for i in range(1, total):
        # Each revision names the head it revises by id: a lookup by name per step would
        # walk the chain grown so far (find_by_name returns the whole history), quadratic.
        revision = {**_entity("Note", "long note", str(i)), "supersedes": head}
        revision["revision_why"] = f"step {i}"
        head = memory.create_entities(S, [revision]).created[0].id
    h = history.chain_history(memory.store, "long note")
    assert len(h.versions) == MAX_VERSIONS
    assert h.versions[-1].head and h.versions[0].description == "5"
    assert h.cut is not None and "older versions left out" in h.cut
    assert h.versions[0].id in h.cut and "newer" not in h.cut
    older = history.chain_history(memory.store, h.versions[0].id)
    assert older.versions[0].description == "0"  # asking from the cut edge reaches the start
    assert older.cut is not None and "newer versions left out" in older.cut


def test_deleted_versions_leave_their_encounters_tombstones(
    memory: Memory, chain: list[str]
) -> None:
    # OTHER undoes its own revision: the previous version is the head again.
    memory.delete_entities(OTHER, [chain[2]])
    h = history.chain_history(memory.store, "cache flush")
    assert [v.id for v in h.versions] == chain[:2] and h.head == chain[1]
    assert h.tombstones == []  # an agent's undo leaves no tombstone
    operator.forget(memory.store, [chain[1]])
    h = history.chain_history(memory.store, chain[0])
    assert [v.id for v in h.versions] == chain[:1] and h.head == chain[0]
    assert [(t.encounter, t.removed) for t in h.tombstones] == [(h.versions[0].encounter, 1)]


def test_a_hidden_locus_never_shows_in_a_chain(memory: Memory, chain: list[str]) -> None:
    hidden = frozenset({OTHER})
    h = history.chain_history(memory.store, chain[0], hidden_loci=hidden)
    assert [v.id for v in h.versions] == chain[:2]
    assert h.head is None  # the head is OTHER's: it is not named either
    assert "lockstep" not in h.model_dump_json() and chain[2] not in h.model_dump_json()
    with pytest.raises(NotFound):
        history.chain_history(memory.store, chain[2], hidden_loci=hidden)
    hide_s = history.chain_history(memory.store, chain[2], hidden_loci=frozenset({S}))
    assert [v.id for v in hide_s.versions] == [chain[2]]
    # The reason on the edge into a hidden version is about that version: not shown.
    assert hide_s.versions[0].revision_why is None


def test_a_hidden_version_inside_a_chain_is_walked_through_by_every_read(
    memory: Memory,
) -> None:
    """Found by hunting: chain_history walked past a hidden locus's version, but
    find_by_name's history named it as the successor of the version before it, and
    trace_provenance gave that version the reason the hidden one was written with; a
    grounding node revised by a hidden locus named its hidden revision too."""
    memory.advance_encounter(S, "first")
    memory.create_entities(
        S,
        [
            _entity("Hypothesis", "plan", "v1"),
            _entity("Observation", "seen", "the plan failed once"),
        ],
    )
    memory.create_relations(S, [_link("seen", "SUPPORTS", "plan")])
    memory.advance_encounter(OTHER, "hidden")
    hidden = _revise(memory, OTHER, "plan", "v2 hushed", "hushed reason")
    hidden_seen = _revise(memory, OTHER, "seen", "seen again", "hushed too")
    memory.advance_encounter(S, "again", close_summary="first done")
    third = _revise(memory, S, "plan", "v3", "out loud")
    first = history.chain_history(memory.store, third).versions[0].id
    walked = Memory(memory.store, hidden_loci=frozenset({OTHER}))
    found = walked.find_by_name("plan")
    assert [(v.id, v.superseded_by) for v in found.history] == [(first, third)]
    traced = walked.trace_provenance("plan")
    assert [(r.id, r.revision_why) for r in traced.revisions] == [(first, "")]
    # Revised only by the hidden session: revised still, by what is not said (no head).
    assert [(g.name, g.superseded_by) for g in traced.grounding] == [("seen", HIDDEN_SUCCESSOR)]
    for answer in (found, traced):
        text = answer.model_dump_json()
        assert hidden not in text and hidden_seen not in text and "hushed" not in text


def test_bad_history_requests_name_their_field_and_write_nothing(memory: Memory) -> None:
    memory.advance_encounter(S, "bad")
    for ref in ("", "   ", "x" * 201):
        bad = refused(memory.store, partial(history.chain_history, memory.store, ref), InvalidInput)
        assert isinstance(bad, InvalidInput) and bad.field == "node"
    missing = refused(
        memory.store, lambda: history.chain_history(memory.store, "no such node"), NotFound
    )
    assert "node must name or id" in str(missing)


# --- conflicts -----------------------------------------------------------------
@pytest.fixture
def contested(memory: Memory) -> Memory:
    """A load-bearing hypothesis (a concept and a question lean on it) supported and
    challenged; a peripheral challenged concept and a challenged, unsupported hypothesis; a
    question with two answers and one with one; a revision that lost its predecessor's
    support; a falsified hypothesis (settled, not contested)."""
    memory.advance_encounter(S, "contest")
    memory.create_entities(
        S,
        [
            _entity("Observation", "cpu spike"),
            _entity("Observation", "cache metrics"),
            _entity("Observation", "quiet night"),
            _entity("Hypothesis", "cache flush"),
            _entity("Concept", "deploy storms"),
            _entity("Question", "why storms"),
            _entity("Concept", "side idea"),
            _entity("Hypothesis", "dead guess", status="falsified"),
            _entity("Question", "which region"),
            _entity("Concept", "region east"),
            _entity("Concept", "region west"),
            _entity("Concept", "retry budget", "v1"),
            _entity("Hypothesis", "lone guess"),
        ],
    )
    memory.create_relations(
        S,
        [
            _link("cpu spike", "SUPPORTS", "cache flush"),
            _link("cache metrics", "CHALLENGES", "cache flush"),
            _link("cache flush", "INFORMS", "deploy storms"),
            _link("deploy storms", "INFORMS", "why storms"),
            _link("quiet night", "CHALLENGES", "side idea"),
            _link("cache metrics", "CHALLENGES", "dead guess"),
            _link("region east", "RESOLVES", "which region"),
            _link("region west", "RESOLVES", "which region"),
            _link("quiet night", "GROUNDS", "retry budget"),
            _link("quiet night", "CHALLENGES", "lone guess"),
            # One answer is no competition; a question raised is not leaning.
            _link("cpu spike", "RESOLVES", "why storms"),
            _link("side idea", "RAISES", "why storms"),
        ],
    )
    _revise(memory, S, "retry budget", "v2", "budget is per client")
    return memory


def _by_name(result: contest.ConflictsResult) -> dict[str, contest.Contested]:
    return {c.name: c for c in result.conflicts}


def test_every_kind_of_conflict_is_found(contested: Memory) -> None:
    found = _by_name(contest.conflicts(contested.store))
    assert set(found) == {"cache flush", "side idea", "which region", "retry budget", "lone guess"}
    assert found["lone guess"].kinds == ["challenges"]
    flush = found["cache flush"]
    assert flush.kinds == ["challenges", "supported and challenged"]
    assert [p.name for p in flush.challengers] == ["cache metrics"]
    assert [p.name for p in flush.supporters] == ["cpu spike"]
    assert found["side idea"].kinds == ["challenges"] and found["side idea"].supporters == []
    region = found["which region"]
    assert region.kinds == ["competing answers"]
    assert sorted(p.name for p in region.answers) == ["region east", "region west"]
    budget = found["retry budget"]
    assert budget.kinds == ["revision lost support"]
    assert [p.name for p in budget.lost_support] == ["quiet night"]
    assert budget.revises is not None and budget.revises != budget.id
    # Each entry shows its node's own words (the head's, for a revision).
    assert {n: c.description for n, c in found.items()} == {
        "cache flush": "cache flush",
        "side idea": "side idea",
        "which region": "which region",
        "retry budget": "v2",
        "lone guess": "lone guess",
    }


def test_a_contested_nodes_words_are_cut_on_one_line(contested: Memory) -> None:
    words = "the flush\nstarts " + "x" * 400
    contested.create_entities(S, [_entity("Hypothesis", "long guess", words)])
    contested.create_relations(S, [_link("quiet night", "CHALLENGES", "long guess")])
    shown = _by_name(contest.conflicts(contested.store, limit=100))["long guess"].description
    assert shown.startswith("the flush starts xxx") and shown.endswith("…")
    assert len(shown) == 300


def test_load_bearing_first_by_what_leans_on_it_then_newest(contested: Memory) -> None:
    ranked = contest.conflicts(contested.store).conflicts
    assert ranked[0].name == "cache flush"
    assert (ranked[0].leaning, ranked[0].load_bearing) == (2, True)
    rest = ranked[1:]
    assert all(not c.load_bearing and c.leaning == 0 for c in rest)
    ticks = [c.latest_tick for c in rest]
    assert ticks == sorted(ticks, reverse=True)
    assert rest[0].name == "retry budget"  # its revision is the newest evidence


def test_a_challenged_revision_is_a_contested_revision(contested: Memory) -> None:
    contested.create_relations(S, [_link("cpu spike", "CHALLENGES", "retry budget")])
    budget = _by_name(contest.conflicts(contested.store))["retry budget"]
    assert budget.kinds == ["contested revision", "revision lost support"]
    assert budget.revises is not None
    assert history.chain_history(contested.store, budget.revises).head == budget.id
    newest = contest.conflicts(contested.store).conflicts[1]
    assert newest.name == "retry budget"  # the newest challenge moved it up


def test_more_leaning_ranks_higher(contested: Memory) -> None:
    contested.create_entities(S, [_entity("Concept", f"built on side {i}") for i in range(3)])
    contested.create_relations(
        S, [_link("side idea", "INFORMS", f"built on side {i}") for i in range(3)]
    )
    ranked = contest.conflicts(contested.store).conflicts
    assert [c.name for c in ranked[:2]] == ["side idea", "cache flush"]
    assert ranked[0].leaning == 3


def test_filters_by_kind_type_and_node(contested: Memory) -> None:
    only = contest.conflicts(contested.store, kinds=["competing answers"]).conflicts
    assert [c.name for c in only] == ["which region"]
    concepts = contest.conflicts(contested.store, types=["Concept"]).conflicts
    assert {c.name for c in concepts} == {"side idea", "retry budget"}
    about = contest.conflicts(contested.store, about="cache metrics").conflicts
    assert [c.name for c in about] == ["cache flush"]  # dead guess is settled
    assert [c.name for c in contest.conflicts(contested.store, about="region west").conflicts] == [
        "which region"
    ]
    cut = contest.conflicts(contested.store, limit=1)
    assert len(cut.conflicts) == 1 and cut.total == 5
    none = contest.conflicts(contested.store, about="cpu spike", kinds=["competing answers"])
    assert none.conflicts == [] and none.note


def test_a_settled_or_superseded_node_is_not_contested(contested: Memory) -> None:
    contested.create_relations(S, [_link("cache metrics", "CHALLENGES", "region east")])
    names = set(_by_name(contest.conflicts(contested.store)))
    assert "dead guess" not in names and "region east" in names
    _revise(contested, S, "region east", "moved", "east was renamed")
    assert "region east" not in _by_name(contest.conflicts(contested.store))


def test_conflicts_of_a_hidden_locus_never_show(contested: Memory) -> None:
    contested.advance_encounter(OTHER, "hidden")
    contested.create_entities(OTHER, [_entity("Observation", "secret counter")])
    contested.create_relations(OTHER, [_link("secret counter", "CHALLENGES", "side idea")])
    shown = contest.conflicts(contested.store)
    assert "secret counter" in shown.model_dump_json()
    hidden = contest.conflicts(contested.store, hidden_loci=frozenset({OTHER}))
    assert "secret counter" not in hidden.model_dump_json()
    assert [p.name for p in _by_name(hidden)["side idea"].challengers] == ["quiet night"]
    with pytest.raises(NotFound):
        contest.conflicts(contested.store, about="secret counter", hidden_loci=frozenset({OTHER}))
    everything = contest.conflicts(contested.store, hidden_loci=frozenset({S}))
    assert everything.conflicts == [] and everything.note


def test_an_empty_memory_contests_nothing(memory: Memory) -> None:
    result = contest.conflicts(memory.store)
    assert result.conflicts == [] and "nothing is contested" in result.note


def test_bad_conflict_requests_name_their_field_and_write_nothing(contested: Memory) -> None:
    store = contested.store
    kind = refused(
        store, lambda: contest.conflicts(store, kinds=["challenges", "rival"]), UnknownType
    )
    assert isinstance(kind, UnknownType) and kind.field == "kinds[1]"
    assert "competing answers" in str(kind)
    type_ = refused(store, lambda: contest.conflicts(store, types=["Idea"]), UnknownType)
    assert isinstance(type_, UnknownType) and type_.field == "types[0]"
    for limit in (0, 101):
        lim = refused(store, partial(contest.conflicts, store, limit=limit), InvalidInput)
        assert isinstance(lim, InvalidInput) and lim.field == "limit"
    long = refused(store, lambda: contest.conflicts(store, about="x" * 201), InvalidInput)
    assert isinstance(long, InvalidInput) and long.field == "about"
    missing = refused(store, lambda: contest.conflicts(store, about="no such node"), NotFound)
    assert "about must name or id" in str(missing)
