"""The embedded store keeps each read node's relations and confirmation beside it.

A neighbourhood read is a pair of engine statements per node type, and infusion
makes several per prompt; the node cache (nodecache.py) keeps each node's authored
relations, both ways, and its latest confirmation, and every write that makes or
removes one reports the nodes it touched. These tests hold the cache to the
engine through every kind of write, on a real embedded store.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import KenningError
from kenning_encounter.memory import operator
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import queries
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.persons import Confirmation
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES, PROVENANCE_RELATION_TYPES
from tests.support.embedded_store import read_uncached

S = "relations-locus"
AUTHORED = list(AUTHORED_RELATION_TYPES)
COHERENT = frozenset({"ABOUT", "RESOLVES", "CHALLENGES"})
PROVENANCE = frozenset(PROVENANCE_RELATION_TYPES)


def _key(e: EdgeRecord) -> tuple[Any, ...]:
    return (e.source, e.type, e.target, e.tick, e.encounter, e.revision_why)


def _view(tx: ReadTx, ids: list[str]) -> dict[str, Any]:
    """What the cache serves: neighbourhoods, provenance, one node's edges, confirmations."""
    hood = tx.neighbourhood(ids, AUTHORED)
    coherent = tx.neighbourhood(ids, list(COHERENT))
    return {
        "edges": sorted(set(map(_key, hood.edges))),
        "nodes": sorted(n.id for n in hood.nodes),
        "coherent": sorted(set(map(_key, coherent.edges))),
        "provenance": {
            i: sorted(set(map(_key, tx.provenance(i, PROVENANCE_RELATION_TYPES, 3).edges)))
            for i in ids
        },
        "edges_of": {i: sorted(set(map(_key, tx.edges_of(i)))) for i in ids},
        "confirmed": tx.confirmations_of(ids),
    }


def _engine_view(store: EmbeddedStore, ids: list[str]) -> dict[str, Any]:
    """The same, worked out here from every relation the engine holds (an oracle apart
    from the store's own reads)."""
    with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
        rows = conn.execute(
            "MATCH (a)-[r]->(b) WHERE label(r) IN $rels "
            "RETURN a.id, b.id, label(r), r.tick, r.encounter, r.revision_why",
            {"rels": AUTHORED},
        ).get_all()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
        marks = conn.execute(
            "MATCH (e:Encounter)-[r:CONFIRMED]->(n) RETURN n.id, e.id, r.tick, r.created_at"
        ).get_all()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
    edges = [EdgeRecord(*row) for row in rows]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    live = set(store.read(lambda tx: tx.get_nodes(ids)))

    def touching(of: set[str], kinds: frozenset[str]) -> list[EdgeRecord]:
        return [e for e in edges if e.type in kinds and (e.source in of or e.target in of)]

    def provenance(node_id: str) -> list[EdgeRecord]:
        seen, frontier, found = {node_id}, [node_id], []
        for _ in range(3):
            incoming = [e for e in edges if e.type in PROVENANCE and e.target in frontier]
            found += incoming
            frontier = [e.source for e in incoming if e.source not in seen]
            seen.update(frontier)
        return found

    hood = touching(set(ids), frozenset(AUTHORED))
    latest: dict[str, Confirmation] = {}
    for node, encounter, tick, at in marks:  # pyright: ignore[reportUnknownVariableType]
        if node in ids and (node not in latest or tick > latest[node].tick):
            latest[str(node)] = Confirmation(str(node), str(encounter), int(tick), str(at or ""))  # pyright: ignore[reportUnknownArgumentType]
    ends = {e.source for e in hood} | {e.target for e in hood}
    return {
        "edges": sorted(set(map(_key, hood))),
        "nodes": sorted(i for i in ends if store.read(lambda tx, i=i: tx.get_node(i))),
        "coherent": sorted(set(map(_key, touching(set(ids), COHERENT)))),
        "provenance": {i: sorted(set(map(_key, provenance(i)))) for i in ids},
        "edges_of": {i: sorted(set(map(_key, touching({i}, frozenset(AUTHORED))))) for i in ids},
        "confirmed": {i: c for i, c in latest.items() if i in live},
    }


@pytest.fixture
def memory(embedded: EmbeddedStore) -> Memory:
    memory = Memory(embedded)
    memory.advance_encounter(S, "watch the relations")
    return memory


@pytest.mark.parametrize("whole", [True, False], ids=["read-whole", "sought"])
def test_relations_agree_with_the_engine_through_every_kind_of_write(
    embedded: EmbeddedStore, memory: Memory, whole: bool
) -> None:
    """Both ways the cache is filled: the small memory read whole by the first read
    (test_cache_warm.py), or each node's relations sought on a miss."""
    if not whole:
        embedded._nodes.warm_limit = 0  # pyright: ignore[reportPrivateUsage]
    seen: set[str] = set()

    def agree(step: str) -> None:
        ids = sorted(seen)
        first = embedded.read(lambda tx: _view(tx, ids))
        again = embedded.read(lambda tx: _view(tx, ids))  # now surely from the cache
        engine = _engine_view(embedded, ids)
        uncached = read_uncached(embedded, lambda tx: _view(tx, ids))
        assert first == engine, step
        assert again == engine, step
        assert uncached == engine, step

    created = memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1", "description": "the retry storm"},
            {"type": "Observation", "name": "o2", "description": "the queue backs up"},
            {"type": "Question", "name": "q1", "description": "why the storm?"},
            {"type": "Hypothesis", "name": "h1", "description": "a tight backoff"},
            {"type": "Concept", "name": "c1", "description": "backoff"},
        ],
    )
    seen.update(n.id for n in created.created)
    agree("created with no relation: each starts with an empty list")
    memory.create_relations(
        S,
        [
            {"source": "o1", "type": "ABOUT", "target": "c1"},
            {"source": "o1", "type": "SUPPORTS", "target": "h1"},
            {"source": "o2", "type": "CHALLENGES", "target": "h1"},
            {"source": "o1", "type": "RESOLVES", "target": "q1"},
            {"source": "h1", "type": "INFORMS", "target": "q1"},  # q1's provenance: two hops
        ],
    )
    agree("relations made")
    memory.confirm_entities(S, ["o1", "h1"])
    agree("confirmed")
    revised = memory.create_entities(
        S,
        [
            {
                "type": "Concept",
                "name": "c2",
                "description": "backoff with jitter",
                "supersedes": "c1",
                "revision_why": "sharper",
            },
            {"type": "Note", "name": "n1", "description": "jitter first"},
        ],
    )
    seen.update(n.id for n in revised.created)
    memory.create_relations(S, [{"source": "n1", "type": "ABOUT", "target": "c2"}])
    agree("a revision supersedes, and a new node is linked")
    memory.confirm_entities(S, ["o1"], why="seen again")
    agree("confirmed again: the latest counts")
    memory.delete_relations(S, [{"source": "o1", "type": "RESOLVES", "target": "q1"}])
    agree("a relation undone")
    memory.delete_entities(S, ["c2"])
    agree("a revision undone: its relations go at both ends")
    operator.forget(embedded, ["o2"])
    agree("a node forgotten")
    assert embedded.read(lambda tx: tx.confirmations_of(sorted(seen))), "confirmations kept"


@pytest.mark.parametrize("warm_limit", [0, 100], ids=["sought", "read-whole"])
def test_a_neighbourhood_read_again_runs_no_statement(tmp_path: Path, warm_limit: int) -> None:
    """The cache is what serves the second read: it fails if the lists are not kept."""
    statements: list[str] = []
    store = EmbeddedStore.open(
        tmp_path / "m", tracer=lambda q, _p, _s: statements.append(q), warm_limit=warm_limit
    )
    try:
        memory = Memory(store)
        memory.advance_encounter(S, "count statements")
        memory.create_entities(
            S,
            [
                {"type": "Observation", "name": "o1", "description": "seen"},
                {"type": "Concept", "name": "c1", "description": "idea"},
            ],
        )
        memory.create_relations(S, [{"source": "o1", "type": "ABOUT", "target": "c1"}])
        memory.confirm_entities(S, ["o1"])
        ids = [memory.find_by_name(n).node.id for n in ("o1", "c1")]

        def read() -> list[str]:
            statements.clear()
            store.read(lambda tx: (tx.neighbourhood(ids, AUTHORED), tx.confirmations_of(ids)))
            return list(statements)

        first = read()
        # Read whole, the memory went into the cache with the lookups above; sought, the
        # first neighbourhood read asks the engine.
        if not warm_limit:
            assert any("-[r]" in q or "CONFIRMED" in q for q in first), "the first read asks"
        assert read() == [], "the second is served whole from the cache"
    finally:
        store.close()


def test_every_statement_that_makes_or_removes_a_relation_reports_it() -> None:
    """The cache learns of relation changes from the write methods that report them
    (ops ``_on_edges``; confirmations through ``_on_changed``). A new statement that
    makes or removes authored relations or confirmations must report too: then add it."""
    kinds = "|".join([*AUTHORED_RELATION_TYPES, "CONFIRMED"])
    making = re.compile(
        rf"(CREATE|MERGE) \(\w+\)-\[\w*:(\{{rel\}}|({kinds})\b)|DELETE r\b|DETACH DELETE"
    )
    texts = {name: value for name, value in vars(queries).items() if isinstance(value, str)}
    found = {name for name, value in texts.items() if making.search(value)}
    assert found == {
        "EDGES_CREATE",  # ops/graph.py create_edges: both ends of each (_on_linked)
        "EDGE_CREATE_SUPERSEDES",  # ops/graph.py create_edge: both ends (_on_edges)
        "REVISIONS_CREATE",  # embedded tx.py _create_revisions: both ends of each
        "EDGE_DELETE",  # ops/graph.py delete_edge: both ends
        "NODES_DELETE",  # ops/graph.py delete_nodes: any (every other end)
        "CONFIRM",  # ops/identity.py confirm_nodes: each node changed
        "LOAD_EDGES",  # ops/load.py load_relations: any
        "LOAD_SUPERSEDES",  # the same
        "LOAD_CONFIRMATIONS",  # ops/load.py load_confirmations: any
        "CLEAR_NODES",  # ops/load.py clear_some: any
    }


@pytest.mark.parametrize("warm_limit", [0, 100], ids=["sought", "read-whole"])
def test_a_write_links_from_the_cache_and_keeps_the_lists(tmp_path: Path, warm_limit: int) -> None:
    """create_relations checks its sources' relations (no duplicate) on the lists the cache
    holds, or seeks each list once; the commit then puts the new relations on the lists the
    cache holds, so the next write and a read find them there, as the engine has them."""
    statements: list[str] = []
    path = tmp_path / "m"
    store = EmbeddedStore.open(path, warm_limit=warm_limit)
    made = Memory(store)
    made.advance_encounter(S, "link from the cache")
    made.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1", "description": "the retry storm"},
            {"type": "Observation", "name": "o2", "description": "the queue backs up"},
            {"type": "Question", "name": "q1", "description": "why the storm?"},
            {"type": "Hypothesis", "name": "h1", "description": "a tight backoff"},
            {"type": "Concept", "name": "c1", "description": "backoff"},
        ],
    )
    ids = {n: made.find_by_name(n).node.id for n in ("o1", "o2", "q1", "h1", "c1")}
    store.close()
    # Reopened, the cache is empty: read whole first, or each list sought by the write.
    store = EmbeddedStore.open(
        path, tracer=lambda q, _p, _s: statements.append(q), warm_limit=warm_limit
    )
    try:
        memory = Memory(store)
        if warm_limit:
            assert store.warm()

        def seeks() -> list[str]:
            return [q for q in statements if "-[r]-" in q]

        statements.clear()
        memory.create_relations(
            S,
            [
                {"source": "o1", "type": "ABOUT", "target": "c1"},
                {"source": "o1", "type": "SUPPORTS", "target": "h1"},  # h1's status moves
                {"source": "o2", "type": "ABOUT", "target": "c1"},
            ],
        )
        assert len(seeks()) == (0 if warm_limit else 2), seeks()
        if warm_limit:  # every end's node was held too: none read from the engine
            assert not [q for q in statements if q.startswith("UNWIND $ids AS i MATCH (n:")]
        statements.clear()
        memory.create_relations(
            S,
            [
                {"source": "o1", "type": "RESOLVES", "target": "q1"},
                {"source": "o2", "type": "CHALLENGES", "target": "h1"},
            ],
        )
        assert seeks() == [], "the sources' lists were kept through the commit"
        with pytest.raises(KenningError, match="exists already"):
            memory.create_relations(S, [{"source": "o2", "type": "ABOUT", "target": "c1"}])
        statements.clear()
        sources = [ids["o1"], ids["o2"]]
        store.read(lambda tx: tx.neighbourhood(sources, AUTHORED))
        assert seeks() == [], "a read finds them too"
        every = sorted(ids.values())
        engine = _engine_view(store, every)
        assert store.read(lambda tx: _view(tx, every)) == engine
        assert read_uncached(store, lambda tx: _view(tx, every)) == engine
    finally:
        store.close()


def test_a_node_a_write_changed_is_read_from_the_engine_not_the_cache(tmp_path: Path) -> None:
    """Two status moves of one node in one write: the second must start from the first's
    status, which only the engine holds until the commit (the cache holds the last one)."""
    store = EmbeddedStore.open(tmp_path / "m", warm_limit=100)
    try:
        memory = Memory(store)
        memory.advance_encounter(S, "two moves in one write")
        memory.create_entities(
            S,
            [
                {"type": "Observation", "name": "o1", "description": "fast retries"},
                {"type": "Observation", "name": "o2", "description": "slow retries"},
                {"type": "Hypothesis", "name": "h1", "description": "a tight backoff"},
            ],
        )
        h1 = memory.find_by_name("h1").node.id
        assert store.warm()
        memory.create_relations(
            S,
            [
                {"source": "o1", "type": "SUPPORTS", "target": "h1"},
                {"source": "o2", "type": "CHALLENGES", "target": "h1"},
            ],
        )
        with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
            moves = conn.execute(
                "MATCH (p:Past) WHERE p.kind = 'status' AND p.node = $id "
                "RETURN p.moved_from, p.moved_to ORDER BY p.seq",
                {"id": h1},
            ).get_all()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
        assert [tuple(m) for m in moves] == [("untested", "supported"), ("supported", "challenged")]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    finally:
        store.close()
