"""A small memory is read whole into the node cache by the first read that misses it.

A cold infusion at 10k nodes sought about seven nodes' relations one statement each
(about a millisecond apiece). A memory of at most ``warm_limit`` authored nodes is
instead read whole, once, by the first read that needs a node the cache lacks; after
that its nodes, relation lists and confirmations come from the cache until a commit
changes them. These tests hold what the whole read gives to the engine's own answer,
count the statements either way, and drive the cache's warming states directly.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.nodecache import NodeCache
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES
from tests.support.embedded_store import read_uncached

S = "warm-locus"
AUTHORED = list(AUTHORED_RELATION_TYPES)
# What the per-node seek and the whole read's node pages say after their node label.
SEEK = q.render(q.EDGES_OF_ONE, label="Note").split("Note", 1)[1]
WHOLE = q.render(q.NODES_PAGE, label="Note").split("Note", 1)[1][:40]


def _key(e: EdgeRecord) -> tuple[Any, ...]:
    return (e.source, e.type, e.target, e.tick, e.encounter, e.revision_why)


def _seed(store: EmbeddedStore) -> list[str]:
    """Nodes of several types, relations both ways, a revision and two confirmations."""
    memory = Memory(store)
    memory.advance_encounter(S, "seed a small memory")
    first = memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1", "description": "the retry storm"},
            {"type": "Observation", "name": "o2", "description": "the queue backs up"},
            {"type": "Question", "name": "q1", "description": "why the storm?"},
            {"type": "Hypothesis", "name": "h1", "description": "a tight backoff"},
            {"type": "Concept", "name": "c1", "description": "backoff"},
            {"type": "Note", "name": "lonely", "description": "linked to nothing"},
        ],
    )
    memory.create_relations(
        S,
        [
            {"source": "o1", "type": "ABOUT", "target": "c1"},
            {"source": "o1", "type": "SUPPORTS", "target": "h1"},
            {"source": "o2", "type": "CHALLENGES", "target": "h1"},
            {"source": "h1", "type": "INFORMS", "target": "q1"},
        ],
    )
    revised = memory.create_entities(
        S,
        [
            {
                "type": "Concept",
                "name": "c2",
                "description": "backoff with jitter",
                "supersedes": "c1",
                "revision_why": "sharper",
            }
        ],
    )
    memory.confirm_entities(S, ["o1", "h1"])
    memory.confirm_entities(S, ["o1"], why="seen again")
    by_name = {n.name: n.id for n in [*first.created, *revised.created]}
    return [by_name[n] for n in ("o1", "o2", "q1", "h1", "c1", "c2", "lonely")]


def _view(tx: ReadTx, ids: list[str]) -> tuple[Any, ...]:
    nodes: dict[str, NodeRecord] = tx.get_nodes(ids)
    hood = tx.neighbourhood(ids, AUTHORED)
    edges_of = {i: sorted(map(_key, tx.edges_of(i))) for i in ids}
    return nodes, sorted(set(map(_key, hood.edges))), edges_of, tx.confirmations_of(ids)


def _open(path: Path, statements: list[str], **kwargs: Any) -> EmbeddedStore:
    return EmbeddedStore.open(path, tracer=lambda s, _p, _t: statements.append(s), **kwargs)


def _reopened(path: Path, statements: list[str], **kwargs: Any) -> tuple[EmbeddedStore, list[str]]:
    """The seeded memory opened again (a fresh cache, as a server starts), its ids, and
    the statement list emptied."""
    store = _open(path, statements, **kwargs)
    try:
        ids = _seed(store)
    finally:
        store.close()
    store = _open(path, statements, **kwargs)
    statements.clear()
    return store, ids


def test_a_small_memory_is_read_whole_once_then_served_without_a_statement(
    tmp_path: Path,
) -> None:
    statements: list[str] = []
    store, ids = _reopened(tmp_path / "m", statements)
    try:
        first = store.read(lambda tx: _view(tx, ids))
        sent = list(statements)
        assert any(WHOLE in s for s in sent), "the first read reads the memory whole"
        assert not any(SEEK in s for s in sent), "and seeks no node's relations"
        statements.clear()
        again = store.read(lambda tx: _view(tx, ids))
        assert statements == [], "the next read is answered by the cache alone"
        engine = read_uncached(store, lambda tx: _view(tx, ids))
        assert first == engine
        assert again == engine
        assert first[3], "the confirmations came with the whole read"
    finally:
        store.close()


def test_a_memory_past_the_limit_is_sought_node_by_node(tmp_path: Path) -> None:
    statements: list[str] = []
    store, ids = _reopened(tmp_path / "m", statements, warm_limit=3)
    try:
        seen = store.read(lambda tx: _view(tx, ids))
        assert not any(WHOLE in s for s in statements), "seven nodes are past a limit of 3"
        assert any(SEEK in s for s in statements)
        assert seen == read_uncached(store, lambda tx: _view(tx, ids))
    finally:
        store.close()


def test_a_write_after_the_whole_read_is_seen_by_the_next_read(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        ids = _seed(store)
        store.read(lambda tx: _view(tx, ids))  # warms
        memory = Memory(store)
        memory.create_relations(S, [{"source": "o2", "type": "ABOUT", "target": "c2"}])
        memory.confirm_entities(S, ["q1"])
        seen = store.read(lambda tx: _view(tx, ids))
        assert seen == read_uncached(store, lambda tx: _view(tx, ids))
        assert ids[2] in seen[3], "q1's new confirmation"
    finally:
        store.close()


def _whole(node: NodeRecord) -> tuple[list[NodeRecord], dict[str, Any], dict[str, Any]]:
    return [node], {node.id: ((), ())}, {node.id: None}


def _node(node_id: str) -> NodeRecord:
    return NodeRecord(node_id, "Note", node_id, "", 1, "2026-12-03T00:00:00Z")


def test_one_reader_warms_at_a_time_and_a_commit_meanwhile_leaves_it_cold() -> None:
    cache = NodeCache()
    g = cache.generation
    assert cache.take_warming(g)
    assert not cache.take_warming(g), "a second reader does not read the memory again"
    cache.begin_commit()
    cache.end_commit([], [])
    cache.end_warming(g, _whole(_node("not-1")))
    assert cache.get(cache.generation, ["not-1"]) == {}, "what an older state read is refused"
    assert cache.take_warming(cache.generation), "still cold: a later reader warms it"
    cache.end_warming(cache.generation, _whole(_node("not-2")))
    assert set(cache.get(cache.generation, ["not-2"])) == {"not-2"}
    assert cache.get_edges(cache.generation, ["not-2"]) == {"not-2": ((), ())}
    assert not cache.take_warming(cache.generation), "warm: nobody reads it whole again"


def test_a_failed_or_skipped_whole_read_and_an_emptied_cache() -> None:
    cache = NodeCache()
    assert cache.take_warming(cache.generation)
    cache.end_warming(-1, None)  # the reader failed
    assert cache.take_warming(cache.generation), "a failure leaves it cold"
    cache.end_warming(cache.generation, None)  # too large: nothing read, and not again
    assert not cache.take_warming(cache.generation)
    cache.begin_commit()
    cache.end_commit(None)  # an operator's change: anything may have moved
    assert cache.take_warming(cache.generation), "an emptied cache is cold again"


def test_a_listening_server_reads_the_memory_whole_before_the_first_prompt(
    tmp_path: Path,
) -> None:
    """``warm`` is what an HTTP server calls once it listens (server/context.py)."""
    statements: list[str] = []
    store, ids = _reopened(tmp_path / "m", statements)
    try:
        assert store.warm(), "a fresh cache is read whole"
        assert not store.warm(), "once"
        statements.clear()
        store.read(lambda tx: _view(tx, ids))
        assert statements == []
    finally:
        store.close()
