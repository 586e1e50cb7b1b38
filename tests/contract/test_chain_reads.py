"""Long revision chains on every backend: find_by_name gives the exact head and the newest
revisions with the count of the rest, chain_history pages through every version in order,
as_of stays exact, and no chain read sends more statements for a longer chain."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kenning_encounter.memory import asof, history
from kenning_encounter.memory.asof import stamp
from kenning_encounter.memory.history import MAX_VERSIONS
from kenning_encounter.memory.reads import HISTORY_LIMIT
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import MAX_CHAIN, GraphStore, ReadTx
from tests.support.counted import Counter

S = "chain-reads"
NAME = "pump hum"
_STANDING = ("tier", "last_used_at", "pinned")


def grow(memory: Memory, ids: list[str], upto: int) -> None:
    """Revise one Observation until its chain holds ``upto`` versions (by id: no lookup)."""
    if not ids:
        memory.advance_encounter(S, "one observation, revised and revised")
        made = memory.create_entities(S, [{"type": "Observation", "name": NAME}])
        ids.append(made.created[0].id)
    while len(ids) < upto:
        revision = {
            "type": "Observation",
            "name": NAME,
            "description": f"version {len(ids)}",
            "supersedes": ids[-1],
            "revision_why": f"step {len(ids)}",
        }
        ids.append(memory.create_entities(S, [revision]).created[0].id)


@pytest.fixture
def long_chain(memory: Memory) -> list[str]:
    ids: list[str] = []
    grow(memory, ids, 200)
    return ids


def test_a_long_chain_gives_the_head_and_the_newest_revisions_with_the_count_left(
    memory: Memory, long_chain: list[str]
) -> None:
    for ref in (NAME, long_chain[0], long_chain[120]):
        found = memory.find_by_name(ref)
        assert found.node.id == long_chain[-1], ref  # the head, exact, from any version
        assert [h.id for h in found.history] == long_chain[-2 : -2 - HISTORY_LIMIT : -1]
        assert found.history_left_out == 200 - 1 - HISTORY_LIMIT
        assert found.history_next is not None and found.history[-1].id in found.history_next
    short = memory.find_by_name(long_chain[5])
    assert short.resolved_from == long_chain[5]


def test_chain_history_pages_through_every_version_in_order_with_its_reason(
    memory: Memory, long_chain: list[str]
) -> None:
    seen: list[tuple[str, str | None]] = []
    page = history.chain_history(memory.store, long_chain[-1], direction="older")
    pages = 1
    assert page.versions == [] or page.versions[-1].id == long_chain[-2]
    head = history.chain_history(memory.store, NAME)
    assert head.versions[-1].id == long_chain[-1] and head.newer_left == 0
    assert head.older_left == 200 - len(head.versions)
    while True:
        seen[:0] = [(v.id, v.revision_why) for v in page.versions]
        if not page.older_left:
            break
        assert page.cut is not None and "direction='older'" in page.cut
        page = history.chain_history(memory.store, page.versions[0].id, direction="older")
        pages += 1
    assert pages == -(-199 // MAX_VERSIONS)
    assert [i for i, _ in seen] == long_chain[:-1]
    assert [why for _, why in seen] == [None, *(f"step {k}" for k in range(1, 199))]
    # And forward from the first version, to the head.
    forward: list[str] = []
    page = history.chain_history(memory.store, long_chain[0], direction="newer")
    while True:
        forward += [v.id for v in page.versions]
        if not page.newer_left:
            break
        page = history.chain_history(memory.store, page.versions[-1].id, direction="newer")
    assert forward == long_chain[1:]
    assert page.head == long_chain[-1]


def test_a_bad_direction_names_its_field(memory: Memory) -> None:
    from kenning_encounter.errors import InvalidInput

    grow(memory, [], 2)  # the refusal comes before any read: a short chain is chain enough
    with pytest.raises(InvalidInput) as bad:
        history.chain_history(memory.store, NAME, direction="sideways")
    assert bad.value.field == "direction" and "'older'" in str(bad.value)


def _lookup(memory: Memory, ref: str, as_of: int | None = None) -> Any:
    found = memory.find_by_name(ref, as_of=as_of)
    node = {k: v for k, v in found.node.model_dump().items() if k not in _STANDING}
    return node, [h.id for h in found.history], found.history_left_out


def test_as_of_on_a_long_chain_is_the_lookup_taken_then(memory: Memory) -> None:
    ids: list[str] = []
    grow(memory, ids, 150)
    tick = memory.store.read(lambda tx: tx.clock())
    then = _lookup(memory, NAME), _lookup(memory, ids[3])
    grow(memory, ids, 190)
    memory.delete_entities(S, [ids[-1]])  # an undo since: the line of then is read back
    assert (_lookup(memory, NAME, tick), _lookup(memory, ids[3], tick)) == then
    assert then[0][2] == 150 - 1 - HISTORY_LIMIT


# --- statements per read, counted on the store's one execute path (conftest.py) -----------


def test_no_chain_read_sends_more_statements_for_a_longer_chain(
    counted: tuple[GraphStore, Counter],
) -> None:
    store, counter = counted
    memory = Memory(store)
    ids: list[str] = []

    def statements() -> dict[str, int]:
        middle = store.read(lambda tx: tx.clock()) - len(ids) // 2
        reads = {
            "find_by_name": lambda: memory.find_by_name(NAME),
            "find_by_name from the first": lambda: memory.find_by_name(ids[0]),
            "find_by_name as_of": lambda: memory.find_by_name(NAME, as_of=middle),
            "trace_provenance": lambda: memory.trace_provenance(ids[-1]),
            "chain_history": lambda: history.chain_history(store, ids[-1]),
        }
        return {name: counter.sent_by(read)[1] for name, read in reads.items()}

    grow(memory, ids, 2 * HISTORY_LIMIT + 5)
    short = statements()
    grow(memory, ids, 4 * MAX_VERSIONS)
    long = statements()
    # A read may take one statement more once a window is full (to count what lies
    # beyond it), never one per version: 160 more versions would be hundreds.
    assert all(long[k] <= short[k] + 1 for k in short), (short, long)


def test_a_lookup_walks_a_chain_only_where_it_has_one(
    counted: tuple[GraphStore, Counter],
) -> None:
    # Most nodes were never revised: one look a link each way says so, and no walk is
    # sent. Counting what lies beyond the newest revisions walks the whole chain (the one
    # walk bounded by MAX_CHAIN): a chain shorter than the window has nothing beyond.
    store, counter = counted
    memory = Memory(store)
    ids: list[str] = []

    def walks(name: str) -> tuple[bool, bool]:
        """(any walk sent, the whole chain counted) for a lookup of ``name``."""
        before = len(counter.texts)
        memory.find_by_name(name)
        sent = counter.texts[before:]
        return (
            any("SUPERSEDES*" in text for text in sent),
            any(f"1..{MAX_CHAIN}]" in text for text in sent),
        )

    grow(memory, ids, 3)
    memory.create_entities(S, [{"type": "Observation", "name": "never revised"}])
    assert walks("never revised") == (False, False)
    assert walks(NAME) == (True, False)
    grow(memory, ids, HISTORY_LIMIT + 3)
    assert walks(NAME) == (True, True)
    found = memory.find_by_name(NAME)
    assert (len(found.history), found.history_left_out) == (HISTORY_LIMIT, 2)
    assert [v.id for v in found.history] == ids[-2 : -2 - HISTORY_LIMIT : -1]
    alone = memory.find_by_name("never revised")
    assert (alone.history, alone.history_left_out) == ([], 0)
    short = memory.find_by_name(ids[0])  # the oldest version's name leads to the head
    assert short.node.id == ids[-1]


def sender(store: GraphStore, counter: Counter) -> Callable[[Callable[[ReadTx], Any]], Any]:
    """A read of ``store``, answered with what it read and the statements it sent."""
    return lambda read: counter.sent_by(lambda: store.read(read))


def test_a_moment_a_past_name_and_what_ended_are_each_one_statement_on_neo4j(
    counted: tuple[GraphStore, Counter],
) -> None:
    # The first two ask every authored type (as_of by time; a name no node holds now), the
    # third two kinds of record. A statement to Neo4j is a round trip, so each is one
    # there; the embedded store asks its tables in process, a statement a type or kind.
    store, counter = counted
    memory = Memory(store)
    ids: list[str] = []
    grow(memory, ids, 3)
    memory.create_entities(S, [{"type": "Note", "name": "aside", "description": "a note"}])
    clock = store.read(lambda tx: tx.clock())
    sent = sender(store, counter)

    latest, moment = sent(lambda tx: tx.tick_at(stamp(datetime(9999, 1, 1, tzinfo=UTC))))
    first, early = sent(lambda tx: tx.tick_at(stamp(datetime(2001, 1, 1, tzinfo=UTC))))
    named, versions = sent(lambda tx: tx.nodes_named(NAME))
    aside, other = sent(lambda tx: tx.nodes_named("aside"))
    assert (latest, first) == (clock, 0)
    assert sorted(n.id for n in named) == sorted(ids)
    assert {n.type for n in named} == {"Observation"}
    assert [(n.type, n.name) for n in aside] == [("Note", "aside")]
    # What was deleted since a tick, nodes and relations together.
    memory.delete_entities(S, [ids[-1]])
    (nodes, edges), ended = sent(lambda tx: tx.ended_at(clock))
    assert [n.id for n in nodes] == [ids[-1]]
    assert [(e.source, e.type, e.target) for e in edges] == [(ids[-1], "SUPERSEDES", ids[-2])]
    apart = store.read(lambda tx: (tx.ended_nodes_at(clock), tx.ended_edges_at(clock)))
    assert (nodes, edges) == apart
    before = nodes[0].tick - 1  # the version was not made yet: nothing of it stood
    assert store.read(lambda tx: tx.ended_at(before)) == ([], [])
    if store.backend == "neo4j":
        assert (moment, early, versions, other, ended) == (1, 1, 1, 1, 1)


def test_a_moment_asks_nothing_its_read_does_not_ask_anyway(
    counted: tuple[GraphStore, Counter],
) -> None:
    # as_of by time is the tick_at read alone (the clock bounds only a tick); by tick, on
    # Neo4j, the clock is the one the read's first node read brought with it.
    store, counter = counted
    memory = Memory(store)
    ids: list[str] = []
    grow(memory, ids, 2)
    clock = store.read(lambda tx: tx.clock())
    when = stamp(datetime.now(UTC))  # after every write so far
    sent = sender(store, counter)

    by_time, moment = sent(lambda tx: asof.moment(tx, when))
    _, tick_at = sent(lambda tx: tx.tick_at(when))
    assert (by_time.tick, moment) == (clock, tick_at)
    store.read(lambda tx: tx.get_node(ids[0]))  # a node cache holds it from here on
    (node, by_tick), with_moment = sent(lambda tx: (tx.get_node(ids[0]), asof.moment(tx, clock)))
    _, alone = sent(lambda tx: tx.get_node(ids[0]))
    assert by_tick.tick == clock and node is not None and node.id == ids[0]
    if store.backend == "neo4j":
        assert with_moment == alone


def test_a_past_read_asks_about_each_node_once(
    counted: tuple[GraphStore, Counter],
) -> None:
    # A read as of a tick gives each node the status and successor it had then, from the
    # status moves and revisions made since; a node read twice in one read (a lookup, then
    # its chain) is asked about once.
    store, counter = counted
    memory = Memory(store)
    memory.advance_encounter(S, "a hypothesis, challenged and revised after the tick")
    made = memory.create_entities(
        S,
        [
            {"type": "Hypothesis", "name": "pump wear", "description": "the pump wears"},
            {"type": "Observation", "name": "no wear", "description": "no wear seen"},
        ],
    )
    hypothesis, evidence = (c.id for c in made.created)
    memory.create_relations(S, [{"source": evidence, "type": "CHALLENGES", "target": hypothesis}])
    revision = {
        "type": "Hypothesis",
        "name": "pump wear",
        "description": "the pump wears only when dry",
        "supersedes": hypothesis,
        "revision_why": "no wear seen when wet",
    }
    newer = memory.create_entities(S, [revision]).created[0].id

    def twice(tx: ReadTx) -> list[tuple[str | None, str | None, int]]:
        past, seen = asof.view(tx, made.tick), []
        for _ in range(2):
            before = counter.sent
            node = past.get_node(hypothesis)
            assert node is not None
            seen.append((node.status, node.superseded_by, counter.sent - before))
        return seen

    first, second = store.read(twice)
    assert first[:2] == second[:2] == ("untested", None)
    assert first[2] >= 1 and second[2] == 0
    now = store.read(lambda tx: tx.get_node(hypothesis))
    assert now is not None and now.superseded_by == newer and now.status != "untested"
