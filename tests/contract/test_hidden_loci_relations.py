"""Relations a hidden session wrote, as a reader face hiding it sees them, on every backend
(memory/gates.py ``HidingReads``).

A reader hiding a session already saw none of its nodes. A relation it wrote between two
nodes the reader sees (an observation it found SUPPORTS a hypothesis, a concept it named
RESOLVES a question, a plain GROUNDS) told of it still: in trace_provenance, in the
outline orient, conflicts and the gds tools read, and in the status it moved. The reader
now sees every one of them as before the hidden write, now and as of any tick; a reader
hiding nothing sees the relations and what they moved.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.memory import conflicts as contest
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, HeadsAsk, ReadTx
from kenning_encounter.store.records import EdgeRecord
from kenning_encounter.vocabulary import CLASSIFICATIONS

OPEN, SECRET = "open-session", "secret-session"
HIDDEN = frozenset({SECRET})
ALL = tuple(CLASSIFICATIONS)
NODES = ("cache flush", "which region", "deploy storms")


def _entity(type_: str, name: str) -> dict[str, Any]:
    return {"type": type_, "name": name, "description": name}


def _link(source: str, type_: str, target: str) -> dict[str, str]:
    return {"source": source, "type": type_, "target": target}


def _planted(store: GraphStore) -> Memory:
    """Nodes the open session made, with one relation of its own: a question left open, a
    hypothesis untested, a concept grounded by one observation."""
    writer = Memory(store)
    writer.advance_encounter(OPEN, "storms")
    writer.create_entities(
        OPEN,
        [
            _entity("Observation", "cpu spike"),
            _entity("Observation", "cache metrics"),
            _entity("Observation", "quiet night"),
            _entity("Hypothesis", "cache flush"),
            _entity("Question", "which region"),
            _entity("Concept", "region east"),
            _entity("Concept", "deploy storms"),
        ],
    )
    writer.create_relations(OPEN, [_link("cpu spike", "GROUNDS", "deploy storms")])
    writer.close_encounter(OPEN, "noted")
    return writer


def _hidden_writes(writer: Memory) -> None:
    """The hidden session links the open session's nodes: moving two statuses, contesting
    the hypothesis, grounding the concept once more."""
    writer.advance_encounter(SECRET, "private")
    writer.create_relations(
        SECRET,
        [
            _link("cpu spike", "SUPPORTS", "cache flush"),
            _link("cache metrics", "CHALLENGES", "cache flush"),
            _link("region east", "RESOLVES", "which region"),
            _link("quiet night", "GROUNDS", "deploy storms"),
        ],
    )
    writer.close_encounter(SECRET, "done")


def _names(tx: ReadTx, ids: set[str]) -> dict[str, str]:
    return {i: n.name or i for i, n in tx.get_nodes(sorted(ids)).items()}


def _seen(store: GraphStore, hidden: frozenset[str], granted: tuple[str, ...] = ()) -> Any:
    """Every read that shows a relation between the open session's nodes, or a status one
    moved, as one map: now, and as of the memory's present tick."""
    memory = Memory(store, granted=granted, hidden_loci=hidden)
    out: dict[str, Any] = {}
    tick = memory.store.read(lambda tx: tx.clock())
    for when, as_of in (("now", None), ("as_of", tick)):
        for name in NODES:
            traced = memory.trace_provenance(name, as_of=as_of)
            out[name, when, "trace"] = (
                traced.node.status,
                sorted(n.name for n in traced.grounding),
                sorted((e.source, e.type, e.target) for e in traced.edges),
            )
            out[name, when, "find"] = memory.find_by_name(name, as_of=as_of).node.status

    def outline(tx: ReadTx) -> Any:
        whole = tx.authored_outline().without_loci(hidden)
        edges = whole.edge_records()
        names = _names(tx, {x for e in edges for x in (e.source, e.target)})
        return (
            sorted((names[e.source], e.type, names[e.target]) for e in edges),
            sorted((n.id, n.status) for n in whole.nodes),
        )

    def graph(tx: ReadTx) -> Any:
        whole = tx.authored_graph()
        names = _names(tx, {n.id for n in whole.nodes})
        return (
            sorted((names[e.source], e.type, names[e.target]) for e in whole.edges),
            sorted((n.name, n.status) for n in whole.nodes),
        )

    def lists(tx: ReadTx) -> Any:
        hypo = tx.get_nodes([memory.find_by_name("cache flush").node.id])
        many = tx.heads_many([HeadsAsk("Question", 10, ("open",)), HeadsAsk("Concept", 10)])
        return (
            sorted(n.name or "" for n in tx.heads_by_status("Question", ["open"], 10)),
            sorted(n.name or "" for n in tx.heads_by_status("Hypothesis", ["untested"], 10)),
            [n.status for n in hypo.values()],
            [sorted(n.name or "" for n in heads) for heads in many],
        )

    def around(tx: ReadTx) -> Any:
        # What infusion's tension and neighbourhood read, and a relation's own reads.
        ids = {n: memory.find_by_name(n).node.id for n in ("cache flush", "deploy storms")}
        hood = tx.neighbourhood(list(ids.values()), ["SUPPORTS", "GROUNDS", "CHALLENGES"])
        challenges, _ = tx.tension_of([ids["cache flush"]])
        names = _names(tx, {n.id for n in hood.nodes} | {n.id for n in challenges.nodes})

        def named(edges: list[EdgeRecord]) -> list[tuple[str, str, str]]:
            return sorted((names[e.source], e.type, names[e.target]) for e in edges)

        spike = memory.find_by_name("cpu spike").node.id
        return (
            sorted(names[n.id] for n in hood.nodes),
            named(hood.edges),
            sorted(names[n.id] for n in challenges.nodes),
            named(challenges.edges),
            len(tx.edges_of(ids["deploy storms"])),
            tx.edge_exists(spike, ids["cache flush"], "SUPPORTS"),
        )

    out["around"] = memory.store.read(around)
    out["outline"] = memory.store.read(outline)
    out["graph"] = memory.store.read(graph)
    out["lists"] = memory.store.read(lists)
    found = contest.conflicts(memory.store, hidden_loci=hidden, limit=50).conflicts
    out["conflicts"] = sorted((c.name, tuple(c.kinds)) for c in found)
    return out


@pytest.mark.parametrize("granted", [(), ALL], ids=["gated", "granted"])
def test_a_hidden_session_s_relations_are_not_seen_by_a_reader_hiding_it(
    store: GraphStore, granted: tuple[str, ...]
) -> None:
    writer = _planted(store)
    before = _seen(store, HIDDEN, granted)
    concepts = ["deploy storms", "region east"]
    assert before["lists"] == (
        ["which region"],
        ["cache flush"],
        ["untested"],
        [["which region"], concepts],
    )
    assert before["conflicts"] == []
    plain_before = _seen(store, frozenset(), granted)
    assert plain_before == before
    _hidden_writes(writer)
    # The reader hiding the session: every read exactly as before the hidden write.
    after = _seen(store, HIDDEN, granted)
    assert after == before
    # A reader hiding nothing sees the relations and what they moved.
    plain = _seen(store, frozenset(), granted)
    for as_of in ("now", "as_of"):
        assert plain["cache flush", as_of, "find"] == "challenged"
        assert plain["which region", as_of, "find"] == "resolved"
        _, grounding, edges = plain["deploy storms", as_of, "trace"]
        assert grounding == ["cpu spike", "quiet night"]
        assert len(edges) == 2
        assert plain["cache flush", as_of, "trace"][1] == ["cache metrics", "cpu spike"]
    assert plain["lists"] == ([], [], ["challenged"], [[], concepts])
    assert ("cache flush", ("challenges", "supported and challenged")) in plain["conflicts"]
    relations = plain["graph"][0]
    assert ("region east", "RESOLVES", "which region") in relations
    assert ("quiet night", "GROUNDS", "deploy storms") in relations
    assert ("region east", "RESOLVES", "which region") in plain["outline"][0]
    hood, hood_edges, tense, tense_edges, around_storms, supported = plain["around"]
    assert "quiet night" in hood and ("cpu spike", "SUPPORTS", "cache flush") in hood_edges
    assert tense == ["cache flush", "cache metrics"] and len(tense_edges) == 1
    assert (around_storms, supported) == (2, True)
    assert after["around"][2:] == ([], [], 1, False)
    assert ("region east", "RESOLVES", "which region") not in after["outline"][0]


def test_a_relation_the_shown_sessions_wrote_stands_beside_a_hidden_one(
    store: GraphStore,
) -> None:
    """The hidden session's relations go, the open session's stay: a status moved by both
    reads as the open session's evidence alone moves it, now and as of before the open
    session's relation was made."""
    writer = _planted(store)
    _hidden_writes(writer)
    then = store.read(lambda tx: tx.clock())
    writer.advance_encounter(OPEN, "again")
    writer.create_relations(OPEN, [_link("quiet night", "SUPPORTS", "cache flush")])
    writer.close_encounter(OPEN, "supported")
    hiding = Memory(store, hidden_loci=HIDDEN)
    traced = hiding.trace_provenance("cache flush")
    assert traced.node.status == "supported"
    assert sorted(n.name for n in traced.grounding) == ["quiet night"]
    assert Memory(store).trace_provenance("cache flush").node.status == "challenged"
    found = contest.conflicts(hiding.store, hidden_loci=HIDDEN).conflicts
    assert found == []
    # Before the open session's SUPPORTS, only the hidden session's relations had moved it.
    past = hiding.trace_provenance("cache flush", as_of=then)
    assert (past.node.status, past.grounding) == ("untested", [])
    assert hiding.find_by_name("which region", as_of=then).node.status == "open"
    plain = Memory(store).find_by_name("cache flush", as_of=then).node
    assert plain.status == "challenged"


def test_a_reader_kept_open_does_not_see_a_hidden_relation_written_after_it_read(
    store: GraphStore,
) -> None:
    """What the hiding reader worked out is kept until the memory's clock moves: the same
    reader, read again after the hidden session wrote, leaves the new relation out too."""
    writer = _planted(store)
    hiding = Memory(store, hidden_loci=HIDDEN)
    _hidden_writes(writer)

    def outline(tx: ReadTx) -> list[tuple[str, str, str]]:
        edges = tx.authored_outline().edge_records()
        names = _names(tx, {x for e in edges for x in (e.source, e.target)})
        return sorted((names[e.source], e.type, names[e.target]) for e in edges)

    before = hiding.store.read(outline)
    assert before == [("cpu spike", "GROUNDS", "deploy storms")]
    writer.advance_encounter(SECRET, "more")
    writer.create_relations(SECRET, [_link("cache metrics", "GROUNDS", "deploy storms")])
    writer.close_encounter(SECRET, "done")
    assert hiding.store.read(outline) == before
    assert hiding.trace_provenance("deploy storms").grounding[0].name == "cpu spike"
    assert len(hiding.trace_provenance("deploy storms").grounding) == 1
