"""The whole encounter, through the memory services, on every backend."""

from __future__ import annotations

import pytest

from kenning_encounter.errors import InvalidInput, NotFound
from kenning_encounter.memory import asof
from kenning_encounter.memory.models import EncounterOut, shown_session
from kenning_encounter.memory.service import Memory
from kenning_encounter.memory.spine import REENTRY_LIMIT
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, HeadsAsk, ReadTx, WriteTx
from kenning_encounter.store.records import NodeRecord
from tests.support.counted import Counter
from tests.support.invariants import assert_store_invariants

S1 = "session-one"


def _record_basics(memory: Memory) -> None:
    memory.advance_encounter(S1, "find out why deploys fail")
    memory.create_entities(
        S1,
        [
            {
                "type": "Observation",
                "name": "retry storm",
                "description": "Deploys at nine set off a retry storm against auth.",
                "t_observed": "2026-11-02T09:00:00Z",
            },
            {
                "type": "Concept",
                "name": "backoff",
                "description": "Clients without jittered backoff retry in lockstep.",
            },
            {
                "type": "Question",
                "name": "why nine",
                "description": "Why do the storms start at nine?",
            },
            {
                "type": "Hypothesis",
                "name": "cron overlap",
                "description": "A cron job overlaps the deploy window.",
            },
            {
                "type": "Component",
                "name": "retry.py",
                "source_kind": "file",
                "source_label": "auth-service",
                "source_key": "src/retry.py",
            },
        ],
    )
    memory.create_relations(
        S1,
        [
            {"source": "retry storm", "type": "GROUNDS", "target": "backoff"},
            {"source": "retry storm", "type": "SUPPORTS", "target": "cron overlap"},
            {"source": "retry storm", "type": "RAISES", "target": "why nine"},
            {"source": "retry storm", "type": "OBSERVED_AT", "target": "retry.py"},
        ],
    )


def test_advance_opens_a_chained_encounter(memory: Memory) -> None:
    first = memory.advance_encounter(S1, "start")
    assert first.encounter.state == "open"
    assert first.previous is None and first.anchored_after is None
    memory.close_encounter(S1, "done")
    second = memory.advance_encounter(S1, "continue")
    assert second.previous == first.encounter.name
    assert second.encounter.opened_tick > first.encounter.opened_tick


def test_first_encounter_of_a_new_locus_is_anchored_to_the_latest(memory: Memory) -> None:
    a = memory.advance_encounter("locus-a", "a")
    b = memory.advance_encounter("locus-b", "b")
    assert b.anchored_after == a.encounter.name
    assert [u.name for u in b.unsealed] == [a.encounter.name]
    assert b.unsealed[0].last_activity_at is not None


def test_advance_with_open_encounter_needs_a_summary(memory: Memory) -> None:
    first = memory.advance_encounter(S1, "start")
    with pytest.raises(InvalidInput) as refused:
        memory.advance_encounter(S1, "again")
    assert refused.value.field == "close_summary"
    assert f"encounter {first.encounter.name!r} is still open for this session" in str(
        refused.value
    )
    nxt = memory.advance_encounter(S1, "again", close_summary="wrapped up")
    assert nxt.closed_previous == first.encounter.name
    assert nxt.recent_sessions[0].summary == "wrapped up"


def test_record_relate_and_status_effects(memory: Memory) -> None:
    _record_basics(memory)
    hyp = memory.find_by_name("cron overlap").node
    assert hyp.status == "supported"
    result = memory.create_relations(
        S1, [{"source": "retry storm", "type": "RESOLVES", "target": "why nine"}]
    )
    assert result.status_changes == [
        {
            "node": memory.find_by_name("why nine").node.id,
            "name": "why nine",
            "from": "open",
            "to": "resolved",
        }
    ]
    reentry = memory.advance_encounter(S1, "next", close_summary="found it")
    assert [q.name for q in reentry.open_questions] == []
    assert [h.name for h in reentry.live_hypotheses] == ["cron overlap"]
    assert [c.name for c in reentry.recent_concepts] == ["backoff"]


def test_unlinking_restores_the_status_the_evidence_gives(memory: Memory) -> None:
    _record_basics(memory)
    memory.delete_relations(
        S1, [{"source": "retry storm", "type": "SUPPORTS", "target": "cron overlap"}]
    )
    assert memory.find_by_name("cron overlap").node.status == "untested"


def test_supersession_keeps_history_and_reuses_the_name(memory: Memory) -> None:
    _record_basics(memory)
    old = memory.find_by_name("backoff").node
    memory.create_entities(
        S1,
        [
            {
                "type": "Concept",
                "name": "backoff",
                "description": "Exponential backoff with full jitter is required.",
                "supersedes": "backoff",
                "revision_why": "jitter alone was not enough",
            }
        ],
    )
    lookup = memory.find_by_name("backoff")
    assert lookup.node.description.startswith("Exponential")
    assert [h.id for h in lookup.history] == [old.id]
    hits = memory.search("backoff jitter")
    assert [h.id for h in hits.hits] == [lookup.node.id]
    with_history = memory.search("backoff jitter", include_superseded=True)
    assert {h.id for h in with_history.hits} == {lookup.node.id, old.id}
    trace = memory.trace_provenance("backoff")
    assert [r.revision_why for r in trace.revisions] == ["jitter alone was not enough"]
    assert "retry storm" in [g.name for g in trace.grounding]
    # A read names the session that recorded a node without handing out its id whole.
    assert trace.recorded_in is not None and trace.recorded_in.session_id == shown_session(S1, None)
    assert trace.recorded_in.session_id != S1


def test_supersedes_relation_between_existing_nodes(memory: Memory) -> None:
    _record_basics(memory)
    memory.create_entities(
        S1, [{"type": "Hypothesis", "name": "deploy lock", "description": "Deploys hold a lock."}]
    )
    memory.create_relations(
        S1,
        [
            {
                "source": "deploy lock",
                "type": "SUPERSEDES",
                "target": "cron overlap",
                "revision_why": "the cron was ruled out",
            }
        ],
    )
    assert memory.find_by_name("cron overlap").node.name == "deploy lock"
    assert memory.find_by_name("cron overlap").resolved_from is not None


def test_search_filters_and_scores(memory: Memory) -> None:
    _record_basics(memory)
    hits = memory.search("storm", types=["Observation"])
    assert [h.name for h in hits.hits] == ["retry storm"]
    assert hits.hits[0].score > 0
    assert memory.search("storm", types=["Concept"]).hits == []
    assert memory.search("zebra quantum").note


def test_find_by_name_suggests_on_miss(memory: Memory) -> None:
    _record_basics(memory)
    with pytest.raises(NotFound, match="retry storm"):
        memory.find_by_name("retry")


def test_close_seals_and_reports(memory: Memory) -> None:
    _record_basics(memory)
    closed = memory.close_encounter(S1, "storm explained")
    assert closed.encounter.state == "sealed"
    assert closed.encounter.summary == "storm explained"


def test_delete_own_fresh_mistake(memory: Memory) -> None:
    _record_basics(memory)
    created = memory.create_entities(S1, [{"type": "Note", "name": "typo note"}])
    deleted = memory.delete_entities(S1, ["typo note"])
    assert deleted.deleted == [created.created[0].id]
    with pytest.raises(NotFound):
        memory.find_by_name("typo note")
    assert memory.search("typo").hits == []


def test_deleting_a_revision_restores_the_revised_node(memory: Memory) -> None:
    _record_basics(memory)
    memory.create_entities(
        S1,
        [
            {
                "type": "Concept",
                "name": "backoff",
                "description": "v2",
                "supersedes": "backoff",
                "revision_why": "oops",
            }
        ],
    )
    v2 = memory.find_by_name("backoff").node
    memory.delete_entities(S1, [v2.id])
    back = memory.find_by_name("backoff").node
    assert back.superseded_by is None and back.description.startswith("Clients")
    assert [h.name for h in memory.search("lockstep").hits] == ["backoff"]


def test_read_cypher_reads(memory: Memory) -> None:
    _record_basics(memory)
    result = memory.read_cypher("MATCH (n:Concept) RETURN n.name AS name")
    assert result.columns == ["name"]
    assert result.rows == [["backoff"]]
    assert not result.truncated


def test_hidden_loci_are_hidden_from_reads(store) -> None:  # type: ignore[no-untyped-def]
    writer = Memory(store)
    writer.advance_encounter("secret", "private work")
    writer.create_entities(
        "secret",
        [{"type": "Observation", "name": "salary data", "description": "private salary data"}],
    )
    writer.advance_encounter("open", "public work")
    writer.create_entities(
        "open",
        [{"type": "Observation", "name": "public data", "description": "public salary bands"}],
    )
    reader = Memory(store, hidden_loci=frozenset({"secret"}))
    assert [h.name for h in reader.search("salary").hits] == ["public data"]
    with pytest.raises(NotFound):
        reader.find_by_name("salary data")
    with pytest.raises(InvalidInput) as refused:
        reader.read_cypher("MATCH (n) RETURN n")
    assert refused.value.field == "query"
    assert "read_cypher is not served while loci are hidden" in str(refused.value)


def test_a_component_revision_keeps_its_source(memory: Memory) -> None:
    memory.advance_encounter(S1, "bookmarks")
    source = {"source_kind": "file", "source_label": "repo", "source_key": "src/retry.py"}
    memory.create_entities(
        S1, [{"type": "Component", "name": "retry.py", "description": "v1", **source}]
    )
    old = memory.find_by_name("retry.py").node
    memory.create_entities(
        S1,
        [
            {
                "type": "Component",
                "name": "retry.py",
                "description": "the retry loop, moved",
                **source,
                "supersedes": "retry.py",
                "revision_why": "file reorganised",
            }
        ],
    )
    new = memory.find_by_name("retry.py").node
    assert new.id != old.id and new.properties["source_key"] == "src/retry.py"
    with pytest.raises(InvalidInput) as twice:
        memory.create_entities(S1, [{"type": "Component", "name": "again", **source}])
    assert twice.value.field == "entities[0].source_key"
    assert f"file/repo/src/retry.py exists already ({new.id})" in str(twice.value)
    memory.delete_entities(
        S1, [new.id]
    )  # undo the revision: the old bookmark holds the source again
    with pytest.raises(InvalidInput) as again:
        memory.create_entities(S1, [{"type": "Component", "name": "again", **source}])
    assert again.value.field == "entities[0].source_key"
    assert f"file/repo/src/retry.py exists already ({old.id})" in str(again.value)


def test_the_answer_to_a_write_is_what_the_next_call_needs(memory: Memory) -> None:
    _record_basics(memory)
    old = memory.find_by_name("cron overlap").node
    created = memory.create_entities(
        S1,
        [
            {"type": "Question", "name": "which cron", "description": "Which job is it?"},
            {
                "type": "Hypothesis",
                "name": "cron overlap, narrowed",
                "description": "The nightly backup cron overlaps the deploy window.",
                "supersedes": "cron overlap",
                "revision_why": "the backup job is the one",
            },
        ],
    )
    question, revision = created.created
    assert (question.type, question.name, question.status, question.revises) == (
        "Question", "which cron", "open", ""
    )  # fmt: skip
    assert (revision.status, revision.revises) == ("untested", old.id)
    # find_by_name takes an id too; an older revision's id leads to the head.
    assert memory.find_by_name(revision.id).node.name == "cron overlap, narrowed"
    by_old_id = memory.find_by_name(old.id)
    assert (by_old_id.node.id, by_old_id.resolved_from) == (revision.id, old.id)
    # The text sent is not sent back: one time for the batch, ids, names, statuses.
    assert set(created.model_dump()) == {"encounter", "tick", "created_at", "created"}
    assert set(created.created[0].model_dump()) == {"id", "type", "name", "status", "revises"}
    assert created.created_at == memory.find_by_name("which cron").node.created_at


def test_reentry_shows_the_newest_of_one_write_in_its_order(memory: Memory) -> None:
    """One write makes more than the payload shows, all at one tick: the payload keeps the
    last ones made, newest first, and reads the same as that moment's as_of payload."""
    memory.advance_encounter(S1, "many at once")
    made = REENTRY_LIMIT + 3
    entities = [
        {"type": kind, "name": f"{kind.lower()} {i}", "description": f"{kind} number {i}"}
        for i in range(made)
        for kind in ("Concept", "Question", "Hypothesis")
    ]
    memory.create_entities(S1, entities)
    entry = memory.advance_encounter(S1, "look back", close_summary="made them")
    newest = [str(i) for i in reversed(range(made))][:REENTRY_LIMIT]
    lists = {
        "Concept": entry.recent_concepts,
        "Question": entry.open_questions,
        "Hypothesis": entry.live_hypotheses,
    }
    for kind, shown in lists.items():
        assert [n.name for n in shown] == [f"{kind.lower()} {i}" for i in newest], kind
    then = asof.reentry_then(
        memory.store, entry, S1, asof.Moment(entry.encounter.opened_tick, "now")
    )
    assert [
        [n.id for n in ns]
        for ns in (then.recent_concepts, then.open_questions, then.live_hypotheses)
    ] == [[n.id for n in ns] for ns in lists.values()]


def test_an_encounters_newest_nodes_are_the_last_of_its_writes(memory: Memory) -> None:
    """A write's nodes share one tick; the newest are the last it made (the infusion's
    window candidates are read this way)."""
    opened = memory.advance_encounter(S1, "one write of many").encounter.name
    created = memory.create_entities(
        S1, [{"type": "Observation", "name": f"seen {i}"} for i in range(12)]
    ).created
    made = [c.id for c in created]
    newest = memory.store.read(lambda tx: tx.encounter_nodes([opened], 5))
    assert newest == made[::-1][:5]


# --- what a re-entry asks the store (each statement a round trip on Neo4j) ---------------

# Statements of a re-entry, counted on the store's one execute path: a new session's, and
# the same session's next. The embedded counts include its BEGIN and COMMIT.
REENTRY_STATEMENTS = {"embedded": (18, 16), "neo4j": (8, 8)}


def test_a_reentry_asks_each_thing_once_and_reads_its_heads_whole(
    counted: tuple[GraphStore, Counter],
) -> None:
    # Asked once each: a new locus's earlier encounter (none: it was made by this call),
    # the new encounter (written, so known), on Neo4j the heads' nodes (read with the heads,
    # there being no node cache in a write) and the new encounter's link (made with it).
    store, counter = counted
    memory = Memory(store)
    memory.advance_encounter(S1, "seed")
    memory.create_entities(
        S1,
        [
            {"type": "Question", "name": "why nine"},
            {"type": "Hypothesis", "name": "cron overlap"},
            {"type": "Concept", "name": "backoff"},
        ],
    )
    first, new = counter.sent_by(lambda: memory.advance_encounter("s-two", "work"))
    again, next_ = counter.sent_by(
        lambda: memory.advance_encounter("s-two", "more", close_summary="done")
    )
    backend = "embedded" if isinstance(store, EmbeddedStore) else "neo4j"
    assert (new, next_) == REENTRY_STATEMENTS[backend]
    # What was not asked is still right: the links, the encounter, the heads whole.
    assert (first.previous, first.anchored_after) == (None, "E1")
    assert (again.previous, again.anchored_after) == (first.encounter.name, None)
    read = store.read(lambda tx: tx.get_encounter(again.encounter.name))
    assert read is not None  # the same as read back, but for the director filled in
    assert again.encounter.model_copy(update={"director": None}) == EncounterOut.of(read, "s-two")
    nodes = store.read(lambda tx: tx.get_nodes([n.id for n in again.open_questions]))
    assert [(n.name, n.encounter, n.locus) for n in nodes.values()] == [
        (q.name, q.encounter, q.locus) for q in again.open_questions
    ]
    assert [n.name for n in again.live_hypotheses + again.recent_concepts] == [
        "cron overlap",
        "backoff",
    ]
    assert_store_invariants(store)


def test_a_reentry_lists_the_newest_sessions_and_the_open_ones_elsewhere(
    memory: Memory,
) -> None:
    opened = [
        memory.advance_encounter(f"locus-{i}", f"task {i}").encounter.name
        for i in range(REENTRY_LIMIT + 3)
    ]
    memory.close_encounter("locus-1", "done")
    entry = memory.advance_encounter("locus-0", "again", close_summary="first done")
    newest_first = opened[::-1]
    assert [e.name for e in entry.recent_sessions] == newest_first[:REENTRY_LIMIT]
    assert [e.name for e in entry.unsealed] == newest_first[:-2]  # not locus-0's nor -1's


def test_heads_read_in_a_write_are_the_nodes_a_node_read_gives(memory: Memory) -> None:
    memory.advance_encounter(S1, "heads")
    made = memory.create_entities(
        S1,
        [
            {"type": "Question", "name": "open one"},
            {"type": "Question", "name": "open two"},
            {"type": "Question", "name": "to revise"},
            {"type": "Concept", "name": "first idea"},
            {"type": "Concept", "name": "second idea"},
        ],
    ).created
    memory.create_entities(
        S1,
        [
            {"type": "Question", "name": "revised", "supersedes": made[2].id,
             "revision_why": "asked better"},
        ],
    )  # fmt: skip

    def heads(tx: WriteTx) -> tuple[list[NodeRecord], list[NodeRecord], dict[str, NodeRecord]]:
        questions = tx.heads_by_status("Question", ("open",), 10)
        concepts = tx.recent_heads("Concept", 1)
        return questions, concepts, tx.get_nodes([n.id for n in questions + concepts])

    questions, concepts, read = memory.store.write(heads)
    assert [n.name for n in questions] == ["revised", "open two", "open one"]
    assert [n.name for n in concepts] == ["second idea"]
    assert questions + concepts == [read[n.id] for n in questions + concepts]

    # Several lists asked at once (one statement on Neo4j in a write) are the lists asked
    # one by one, in a write and in a read, a type asked twice included.
    asks = [
        HeadsAsk("Question", 2, ("open",)),
        HeadsAsk("Concept", 5),
        HeadsAsk("Question", 10),
        HeadsAsk("Hypothesis", 3, ("proposed",)),
    ]

    def apart(tx: ReadTx) -> list[list[NodeRecord]]:
        return [
            tx.recent_heads(a.type, a.limit)
            if a.statuses is None
            else tx.heads_by_status(a.type, a.statuses, a.limit)
            for a in asks
        ]

    together = memory.store.write(lambda tx: (tx.heads_many(asks), apart(tx)))
    assert together[0] == together[1]
    assert [[n.name for n in got] for got in together[0]] == [
        ["revised", "open two"],
        ["second idea", "first idea"],
        ["revised", "open two", "open one"],
        [],
    ]
    assert memory.store.read(lambda tx: tx.heads_many(asks)) == together[0]


def test_a_close_answers_with_the_encounter_as_sealed_and_reads_nothing_back(
    counted: tuple[GraphStore, Counter],
) -> None:
    store, counter = counted
    memory = Memory(store)
    memory.advance_encounter(S1, "work")
    closed, sent = counter.sent_by(lambda: memory.close_encounter(S1, "done"))
    read = store.read(lambda tx: tx.get_encounter(closed.encounter.name))
    assert read is not None and read.summary == "done" and read.sealed_tick is not None
    assert closed.encounter == EncounterOut.of(read, S1)
    # The open encounter found with the tick, then the seal (the embedded store's own
    # BEGIN, tick and COMMIT beside them).
    backend = "embedded" if isinstance(store, EmbeddedStore) else "neo4j"
    assert sent == {"embedded": 5, "neo4j": 2}[backend]
