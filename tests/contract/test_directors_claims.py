"""Directors, referent claims and confirmations (#17 items 1-3), on every backend."""

from __future__ import annotations

import dataclasses
import getpass
from collections.abc import Callable

import pytest

from kenning_encounter.errors import InvalidInput, NoOpenEncounter, NotFound
from kenning_encounter.memory import asof, history
from kenning_encounter.memory.directors import Director, DirectorPolicy
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.persons import UNDIRECTED
from kenning_encounter.store.port import GraphStore, ReadTx
from tests.support.counted import Counter

ADA = {"director": "Ada", "director_key": "ada@example.org"}


def _concepts(memory: Memory, session: str, *names: str) -> None:
    memory.create_entities(
        session,
        [{"type": "Concept", "name": n, "description": f"{n}: Alice Example"} for n in names],
    )


def _every_locus_directed(store: GraphStore) -> None:
    def check(tx: ReadTx) -> None:
        loci = tx.loci()
        held = tx.directors_of(loci)
        assert sorted(held) == sorted(loci)

    store.read(check)


# --- directors -----------------------------------------------------------------------
def test_the_default_director_is_the_os_user_and_reads_return_it(memory: Memory) -> None:
    opened = memory.advance_encounter("s1", "work")
    assert opened.encounter.director is not None
    assert opened.encounter.director.name == getpass.getuser()
    assert opened.encounter.director.key and opened.encounter.director.key.startswith("os-user:")
    _concepts(memory, "s1", "c1")
    assert memory.trace_provenance("c1").node.director == opened.encounter.director
    assert memory.find_by_name("c1").node.director == opened.encounter.director
    again = memory.advance_encounter("s2", "more")
    # One user, two sessions: one Person, met by its key.
    assert again.encounter.director == opened.encounter.director
    assert [e.director for e in again.recent_sessions] == [opened.encounter.director]


def test_one_key_is_one_person_and_a_bare_name_is_one_session(memory: Memory) -> None:
    a = memory.advance_encounter("s1", "w", **ADA).encounter.director
    b = memory.advance_encounter(
        "s2", "w", director="Ada Lovelace", director_key=ADA["director_key"]
    )
    assert a is not None and b.encounter.director is not None
    assert b.encounter.director.id == a.id  # the key decides, not the name
    c = memory.advance_encounter("s3", "w", director="Ada").encounter.director
    d = memory.advance_encounter("s4", "w", director="Ada").encounter.director
    assert c is not None and d is not None
    assert c.id != d.id != a.id  # the same name in two sessions: two acts of reference
    assert c.key is None


def test_a_session_keeps_its_first_director(memory: Memory) -> None:
    memory.advance_encounter("s1", "w", **ADA)
    with pytest.raises(InvalidInput) as refused:
        memory.advance_encounter("s1", "next", close_summary="done", director="Bob")
    assert refused.value.field == "director"

    def still(tx: ReadTx) -> tuple[str | None, bool]:
        director = tx.director_of("s1")
        current = tx.open_encounter_of("s1")
        return (director.name if director else None, current is not None)

    assert memory.store.read(still) == ("Ada", True)  # nothing written, nothing sealed
    # Naming the same director again, or no one, is fine.
    memory.advance_encounter("s1", "next", close_summary="done", **ADA)
    memory.advance_encounter("s1", "then", close_summary="done")


def test_require_director_refuses_a_locus_without_one(store: GraphStore) -> None:
    strict = Memory(store, directors=DirectorPolicy(None, required=True))
    with pytest.raises(InvalidInput) as refused:
        strict.advance_encounter("s1", "w")
    assert refused.value.field == "director"
    assert "KENNING_ENCOUNTER_DIRECTOR" in str(refused.value)
    assert store.read(lambda tx: tx.loci()) == []  # no locus was made
    strict.advance_encounter("s1", "w", director="Grace", director_key="grace@example.org")
    lax = Memory(store, directors=DirectorPolicy(None, required=False))
    opened = lax.advance_encounter("s2", "w")
    assert opened.encounter.director is not None
    assert opened.encounter.director.id == UNDIRECTED.id  # said, never left empty
    _every_locus_directed(store)


def test_a_key_without_a_name_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInput) as refused:
        memory.advance_encounter("s1", "w", director_key="k")
    assert refused.value.field == "director"
    assert memory.store.read(lambda tx: tx.loci()) == []


@pytest.mark.parametrize(
    ("key", "said"),
    [
        ("ada@example.org\u200b", "U+200B"),  # looks like Ada's key, is another person's
        ("jose\u0301@example.org", "composed form (NFC)"),
        ("ada@example.org\x1b[2J", "U+001B"),
        ("ada@\nexample.org", "U+000A"),
        ("k" * 501, "the limit is 500"),
    ],
)
def test_a_key_with_a_hidden_or_second_spelling_is_refused(
    memory: Memory, key: str, said: str
) -> None:
    """A key is what meets one person again: one spelling, nothing a reader cannot see.
    Before, a key was any text, so "ada@example.org" with a zero-width space after it
    was a second Ada no reader could tell apart."""
    with pytest.raises(InvalidInput) as refused:
        memory.advance_encounter("s1", "w", director="Ada", director_key=key)
    assert refused.value.field == "director_key"
    assert said in str(refused.value)
    assert memory.store.read(lambda tx: tx.loci()) == []


def test_the_configured_director_directs_and_chain_history_names_it(store: GraphStore) -> None:
    memory = Memory(store, directors=DirectorPolicy(Director("Team", "team@example.org")))
    memory.advance_encounter("s1", "w")
    _concepts(memory, "s1", "c1")
    memory.advance_encounter("s2", "w", **ADA)
    memory.create_entities(
        "s2",
        [
            {
                "type": "Concept",
                "name": "c1",
                "description": "c1 revised",
                "supersedes": "c1",
                "revision_why": "a better reading",
            }
        ],
    )
    versions = history.chain_history(store, "c1").versions
    assert [v.director.name if v.director else None for v in versions] == ["Team", "Ada"]


# --- referent claims -----------------------------------------------------------------
def test_seventeen_nodes_with_one_name_stay_seventeen(memory: Memory) -> None:
    memory.advance_encounter("s1", "w")
    _concepts(memory, "s1", *(f"alice {i}" for i in range(17)))
    plain = memory.search("Alice Example", limit=50)
    joined = memory.search("Alice Example", limit=50, same_as=True)
    assert len(plain.hits) == len(joined.hits) == 17


def test_claims_follow_only_when_confirmed_and_the_latest_rules(memory: Memory) -> None:
    memory.advance_encounter("s1", "w", **ADA)
    memory.create_entities(
        "s1",
        [
            {"type": "Concept", "name": "billing alice", "description": "pays invoices"},
            {"type": "Concept", "name": "infra alice", "description": "runs the cluster"},
        ],
    )
    ids = {n: memory.find_by_name(n).node.id for n in ("billing alice", "infra alice")}

    def reached() -> list[str]:
        hits = memory.search("invoices", same_as=True).hits
        return [h.name for h in hits]

    assert reached() == ["billing alice"]
    made = memory.claim_referents(
        "s1", [{"source": "billing alice", "target": "infra alice", "resolution": "proposed"}]
    )
    assert made.claims[0].revises is None
    assert reached() == ["billing alice"]  # proposed is not followed
    memory.claim_referents(
        "s1", [{"source": "infra alice", "target": "billing alice", "resolution": "confirmed"}]
    )
    assert reached() == ["billing alice", "infra alice"]
    found = memory.search("invoices", same_as=True)
    assert found.same_as == {ids["infra alice"]: ids["billing alice"]}
    traced = memory.trace_provenance("billing alice", same_as=True)
    assert [n.name for n in traced.same_as] == ["infra alice"]
    assert memory.trace_provenance("billing alice").same_as == []  # explicit, default off
    later = memory.claim_referents(
        "s1",
        [
            {
                "source": "billing alice",
                "target": "infra alice",
                "resolution": "distinct",
                "why": "two employee ids",
            }
        ],
    )
    assert later.claims[0].revises == "confirmed"
    assert reached() == ["billing alice"]
    claims = memory.store.read(lambda tx: tx.claims_of([ids["billing alice"]]))
    # Nothing is erased: each claim keeps its encounter, and through it its author.
    assert [c.resolution for c in claims] == ["proposed", "confirmed", "distinct"]
    assert {c.encounter for c in claims} == {made.encounter}


@pytest.mark.parametrize(
    ("claim", "field"),
    [
        ({"source": "obs", "target": "obs2", "resolution": "confirmed"}, "claims[0].source"),
        ({"source": "con", "target": "cmp", "resolution": "confirmed"}, "claims[0].target"),
        ({"source": "con", "target": "con", "resolution": "confirmed"}, "claims[0].target"),
        ({"source": "con", "target": "con2", "resolution": "same"}, "claims[0].resolution"),
        ({"source": "con", "target": "con2", "resolution": "confirmed", "x": 1}, "claims[0].x"),
        ({"source": "con", "target": "nothing", "resolution": "confirmed"}, None),
    ],
)
def test_a_claim_between_wrong_types_is_refused_with_nothing_written(
    memory: Memory, claim: dict[str, object], field: str | None
) -> None:
    memory.advance_encounter("s1", "w")
    memory.create_entities(
        "s1",
        [
            {"type": "Observation", "name": "obs", "description": "seen"},
            {"type": "Observation", "name": "obs2", "description": "seen too"},
            {"type": "Concept", "name": "con", "description": "an idea"},
            {"type": "Concept", "name": "con2", "description": "another"},
            {
                "type": "Component",
                "name": "cmp",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": "a.py",
            },
        ],
    )
    good = {"source": "con", "target": "con2", "resolution": "confirmed"}
    with pytest.raises((InvalidInput, NotFound)) as refused:
        memory.claim_referents("s1", [good, claim])  # the good one goes down with it
    if field is not None:
        assert isinstance(refused.value, InvalidInput)
        assert refused.value.field == field.replace("claims[0]", "claims[1]")
    con = memory.find_by_name("con").node.id
    assert memory.store.read(lambda tx: tx.claims_of([con])) == []


def test_claims_need_an_open_encounter(memory: Memory) -> None:
    memory.advance_encounter("s1", "w")
    _concepts(memory, "s1", "a", "b")
    memory.close_encounter("s1", "done")
    with pytest.raises(Exception) as refused:
        memory.claim_referents("s1", [{"source": "a", "target": "b", "resolution": "confirmed"}])
    assert "sealed" in str(refused.value) or isinstance(refused.value, NoOpenEncounter)


# --- confirmations -------------------------------------------------------------------
def _stored_concepts(store: GraphStore) -> list[list[object]]:
    """Concepts as the engine holds them (read_cypher never reads a cache)."""
    query = (
        "MATCH (n:Concept) RETURN n.id, n.tick, n.name, n.description, n.valid_from, "
        "n.created_at ORDER BY n.id"
    )
    return store.read_cypher(query, row_cap=1_000, char_cap=1_000_000, timeout_s=30).rows


def test_confirm_changes_no_node_and_is_recorded_from_the_encounter(memory: Memory) -> None:
    memory.advance_encounter("s1", "w")
    _concepts(memory, "s1", "c1")
    node_id = memory.find_by_name("c1").node.id
    before = memory.store.read(lambda tx: tx.get_node(node_id))
    stored = _stored_concepts(memory.store)
    memory.close_encounter("s1", "first pass")
    opened = memory.advance_encounter("s1", "review")
    done = memory.confirm_entities("s1", ["c1", node_id], why="re-read the source")
    assert done.confirmed == [{"id": node_id, "name": "c1"}]  # one node, named twice
    after = memory.store.read(lambda tx: tx.get_node(node_id))
    # No property, status, successor or tick moved; only its standing is renewed (the
    # used_at mirror of the CONFIRMED edge, memory/activation.py).
    assert after is not None and after.used_at is not None
    assert dataclasses.replace(after, used_at=None) == before
    assert _stored_concepts(memory.store) == stored  # in the engine, past any cache
    latest = memory.store.read(lambda tx: tx.confirmations_of([node_id]))
    assert latest[node_id].encounter == opened.encounter.name
    assert latest[node_id].tick == done.tick


def test_confirm_refuses_unknown_refs_and_writes_nothing(memory: Memory) -> None:
    memory.advance_encounter("s1", "w")
    _concepts(memory, "s1", "c1")
    node_id = memory.find_by_name("c1").node.id
    with pytest.raises(NotFound):
        memory.confirm_entities("s1", ["c1", "no such node"])
    assert memory.store.read(lambda tx: tx.confirmations_of([node_id])) == {}
    with pytest.raises(InvalidInput) as refused:
        memory.confirm_entities("s1", [])
    assert refused.value.field == "refs"


def test_a_confirmation_renews_the_standing_infusion_sees(memory: Memory) -> None:
    from kenning_encounter.infusion.config import InfusionConfig
    from kenning_encounter.infusion.pipeline import Infuser

    memory.advance_encounter("writer", "w")
    memory.create_entities(
        "writer",
        [{"type": "Observation", "name": "retry storm", "description": "Deploys set off retries."}],
    )
    node_id = memory.find_by_name("retry storm").node.id
    infuser = Infuser(memory.store, InfusionConfig())
    prompt = "why did the deploy set off retries"
    assert infuser.infuse("reader", prompt)["meta"]["renewal"][node_id] == "first sight"
    assert node_id in infuser.infuse("reader", prompt)["meta"]["standing"]  # a handle now
    memory.confirm_entities("writer", ["retry storm"], why="checked again")
    renewed = infuser.infuse("reader", prompt)
    assert renewed["meta"]["renewal"][node_id] == "fact-state changed"
    assert node_id in infuser.infuse("reader", prompt)["meta"]["standing"]  # once only


def test_confirmations_of_nodes_of_several_types_are_each_node_s_latest(
    counted: tuple[GraphStore, Counter],
) -> None:
    store, counter = counted
    memory = Memory(store)
    memory.advance_encounter("s1", "w")
    made = memory.create_entities(
        "s1",
        [
            {"type": "Concept", "name": "c1", "description": "a concept"},
            {"type": "Observation", "name": "o1", "description": "an observation"},
            {"type": "Note", "name": "n1", "description": "a note, never confirmed"},
        ],
    ).created
    ids = {m.name: m.id for m in made}
    memory.close_encounter("s1", "first pass")
    memory.advance_encounter("s1", "review")
    first = memory.confirm_entities("s1", ["c1", "o1"], why="re-read")
    second = memory.confirm_entities("s1", ["o1"], why="read again")
    wanted = [ids["c1"], ids["o1"], ids["n1"]]
    before = counter.sent
    latest = store.read(lambda tx: tx.confirmations_of(wanted))
    assert {i: c.tick for i, c in latest.items()} == {
        ids["c1"]: first.tick,
        ids["o1"]: second.tick,
    }
    if store.backend == "neo4j":  # three types, one statement (the embedded cache may serve)
        assert counter.sent - before == 1


def test_a_read_names_every_director_it_shows_in_one_lookup(
    counted: tuple[GraphStore, Counter],
) -> None:
    # A trace shows its nodes' directors and its session's; a re-entry its sessions', its
    # nodes' and its own; as of a tick likewise. Each asks the directors once, and on
    # Neo4j a read asks only for loci no read of its process found (a tie never changes,
    # and a round trip there costs what a statement in process does not).
    store, counter = counted
    kept = not isinstance(store, EmbeddedStore)
    memory = Memory(store)
    memory.advance_encounter("s1", "w", **ADA)
    memory.create_entities("s1", [{"type": "Concept", "name": "c1", "description": "a concept"}])
    memory.close_encounter("s1", "first pass")

    def lookups(call: Callable[[], object]) -> int:
        before = len(counter.texts)
        call()
        asked = counter.texts[before:]
        return sum(t.startswith("UNWIND $loci AS i MATCH (l:Locus") for t in asked)

    clock = store.read(lambda tx: tx.clock())
    traced = memory.trace_provenance("c1")
    assert traced.node.director is not None and traced.node.director.name == "Ada"
    assert traced.recorded_in is not None and traced.recorded_in.director is not None
    assert lookups(lambda: memory.trace_provenance("c1")) == (0 if kept else 1)
    assert lookups(lambda: memory.trace_provenance("c1", as_of=clock)) == (0 if kept else 1)
    # A new session's advance has no director to look up before it ties one, so it asks
    # once, for the payload (a write asks afresh); the session's next advance checks the
    # director it holds first.
    assert lookups(lambda: memory.advance_encounter("s2", "again", **ADA)) == 1
    close = {"close_summary": "again done"}
    assert lookups(lambda: memory.advance_encounter("s2", "more", **close, **ADA)) == 2
    entry = memory.advance_encounter("s3", "and again", **ADA)
    then = store.read(lambda tx: asof.moment(tx, clock))
    # As of that tick, only s1 was directed: kept on Neo4j.
    assert lookups(lambda: asof.reentry_then(memory.store, entry, "s3", then)) == (0 if kept else 1)
    # A locus directed after the others were kept is asked for, and found.
    memory.advance_encounter("s4", "hers", director="Grace", director_key="grace@example.org")
    memory.create_entities("s4", [{"type": "Concept", "name": "c4", "description": "hers"}])
    assert lookups(lambda: memory.trace_provenance("c4")) == 1
    traced = memory.trace_provenance("c4")
    assert traced.node.director is not None and traced.node.director.name == "Grace"
    assert lookups(lambda: memory.trace_provenance("c4")) == (0 if kept else 1)
