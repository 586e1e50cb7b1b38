"""The embedded store's node cache: never a node older than the reader's snapshot.

Every test runs on a real embedded store; the writes that move a node's state
are ordinary memory calls (a RESOLVES relation resolves a Question).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import KenningError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.nodecache import NodeCache
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from tests.support.embedded_store import read_uncached

S = "cache-locus"


def _memory(store: EmbeddedStore) -> Memory:
    memory = Memory(store)
    memory.advance_encounter(S, "watch the cache")
    return memory


def _ids(memory: Memory, *names: str) -> list[str]:
    return [memory.find_by_name(n).node.id for n in names]


def _status(store: EmbeddedStore, node_id: str) -> str | None:
    return store.read(lambda tx: tx.get_nodes([node_id]))[node_id].status


def _record(memory: Memory, *questions: str) -> None:
    memory.create_entities(
        S,
        [{"type": "Question", "name": q, "description": f"open matter {q}"} for q in questions]
        + [
            {"type": "Observation", "name": f"answer to {q}", "description": f"settles {q}"}
            for q in questions
        ],
    )


def _resolve(memory: Memory, question: str) -> None:
    memory.create_relations(
        S, [{"source": f"answer to {question}", "type": "RESOLVES", "target": question}]
    )


def test_a_committed_write_is_seen_by_the_next_read(embedded: EmbeddedStore) -> None:
    memory = _memory(embedded)
    _record(memory, "q1")
    (q1,) = _ids(memory, "q1")
    assert _status(embedded, q1) == "open"
    assert _status(embedded, q1) == "open"  # now served from the cache
    _resolve(memory, "q1")
    assert _status(embedded, q1) == "resolved"
    hit = memory.search("open matter q1").hits[0]
    assert (hit.id, hit.status) == (q1, "resolved")


def test_a_refused_write_leaves_the_cache_serving(embedded: EmbeddedStore) -> None:
    memory = _memory(embedded)
    _record(memory, "q1")
    (q1,) = _ids(memory, "q1")
    assert _status(embedded, q1) == "open"
    before = embedded._nodes.generation  # pyright: ignore[reportPrivateUsage]
    with pytest.raises(KenningError, match="nope"):
        memory.create_relations(
            S, [{"source": "answer to q1", "type": "RESOLVES", "target": "nope"}]
        )
    assert embedded._nodes.generation == before  # pyright: ignore[reportPrivateUsage]
    assert _status(embedded, q1) == "open"


def test_a_commit_between_cached_nodes_and_the_snapshot_reruns_the_read(
    embedded: EmbeddedStore,
) -> None:
    """The read takes q1 from the cache, a write resolves q1, then the read needs the
    engine: its snapshot is newer than the cached q1, so it must run again, uncached."""
    memory = _memory(embedded)
    _record(memory, "q1", "q2")
    q1, q2 = _ids(memory, "q1", "q2")
    embedded.read(lambda tx: tx.get_nodes([q1]))  # q1 cached, q2 not
    runs: list[tuple[str | None, str | None]] = []

    def work(tx: ReadTx) -> tuple[str | None, str | None]:
        first = tx.get_nodes([q1])[q1].status
        if not runs:  # only the first run lets the write in between
            runs.append((first, None))
            writer = threading.Thread(target=_resolve, args=(memory, "q1"))
            writer.start()
            writer.join(timeout=30)
        seen = tx.get_nodes([q1, q2])
        return first, seen[q1].status

    first, again = embedded.read(work)
    assert runs == [("open", None)], "the first run took q1 from the cache"
    # One state throughout: the rerun saw the resolution both times.
    assert (first, again) == ("resolved", "resolved")


def test_readers_racing_a_writer_never_go_back_in_time(embedded: EmbeddedStore) -> None:
    memory = _memory(embedded)
    names = [f"q{i}" for i in range(30)]
    _record(memory, *names)
    ids = _ids(memory, *names)
    stop = threading.Event()
    failures: list[str] = []

    def reader() -> None:
        # Resolutions only ever add up: a later read may never see fewer of them.
        seen = 0
        while not stop.is_set():
            nodes = embedded.read(lambda tx: tx.get_nodes(ids))
            resolved = sum(1 for i in ids if nodes[i].status == "resolved")
            if resolved < seen:
                failures.append(f"saw {resolved} resolved after {seen}")
            seen = resolved

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        for name in names:
            _resolve(memory, name)
            # The writer's own next read is after the commit: it must see it.
            node_id = ids[names.index(name)]
            if _status(embedded, node_id) != "resolved":
                failures.append(f"{name} read back unresolved after its commit")
    finally:
        stop.set()
        for t in readers:
            t.join(timeout=30)
    assert not failures, failures[:5]
    assert all(_status(embedded, i) == "resolved" for i in ids)


def _node(node_id: str) -> NodeRecord:
    return NodeRecord(node_id, "Note", node_id, "", 1, "2026-11-29T00:00:00Z")


def test_the_cache_keeps_the_newest_up_to_its_capacity() -> None:
    cache = NodeCache(capacity=3)
    generation = cache.generation
    cache.offer(generation, {i: _node(i) for i in ("a", "b", "c")})
    cache.offer(generation, {i: _node(i) for i in ("d", "e")})
    assert len(cache) == 3
    assert set(cache.get(generation, ["a", "b", "c", "d", "e"])) == {"c", "d", "e"}


def test_a_commit_adds_what_a_write_linked_to_the_lists_it_knows() -> None:
    """``linked`` go on the end of their ends' lists where the cache holds them (or the
    write read them: ``sought``); a list it lacks stays unread, and ``edges_changed`` wins
    over a list the write read before it moved it."""
    cache = NodeCache()
    old = EdgeRecord("a", "b", "ABOUT", 1, "E1")
    cache.offer_edges(cache.generation, {"a": ((old,), ()), "c": ((), ())})
    new = EdgeRecord("a", "c", "INFORMS", 2, "E2")
    from_d = EdgeRecord("d", "a", "GROUNDS", 2, "E2")
    into_e = EdgeRecord("c", "e", "RAISES", 2, "E2")
    cache.begin_commit()
    cache.end_commit(
        set(),
        [],
        {"f"},
        {},
        sought={"d": ((), ()), "f": ((old,), ())},
        linked=[new, from_d, into_e],
    )
    lists = cache.get_edges(cache.generation, ["a", "b", "c", "d", "e", "f"])
    assert lists == {
        "a": ((old, new), (from_d,)),
        "c": ((into_e,), (new,)),
        "d": ((from_d,), ()),
    }


def test_a_commit_drops_what_it_changed_and_refuses_older_offers() -> None:
    cache = NodeCache()
    old = cache.generation
    cache.offer(old, {"a": _node("a"), "b": _node("b")})
    cache.begin_commit()
    assert cache.get(cache.generation, ["a"]) == {}, "no reads from the cache mid-commit"
    cache.offer(cache.generation, {"x": _node("x")})  # read mid-commit: refused
    cache.end_commit({"a"}, [_node("c")])
    now = cache.generation
    assert now % 2 == 0 and now != old
    assert set(cache.get(now, ["a", "b", "c", "x"])) == {"b", "c"}
    assert cache.get(old, ["b"]) == {}, "a reader of the older state is served by the engine"
    cache.offer(old, {"d": _node("d")})  # read before the commit: refused
    assert "d" not in cache.get(now, ["d"])


def test_a_failed_commit_empties_the_cache() -> None:
    cache = NodeCache()
    cache.offer(cache.generation, {"a": _node("a")})
    cache.begin_commit()
    cache.end_commit(None)
    assert len(cache) == 0 and cache.generation % 2 == 0


def test_a_store_opened_again_starts_with_an_empty_cache(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        memory = _memory(store)
        _record(memory, "q1")
        (q1,) = _ids(memory, "q1")
        _resolve(memory, "q1")
        assert _status(store, q1) == "resolved"
    finally:
        store.close()
    again = EmbeddedStore.open(tmp_path / "m")
    try:
        assert len(again._nodes) == 0  # pyright: ignore[reportPrivateUsage]
        assert _status(again, q1) == "resolved"
    finally:
        again.close()


@pytest.mark.parametrize("whole", [True, False], ids=["read-whole", "fetched"])
def test_the_cache_agrees_with_the_engine_through_every_kind_of_write(
    embedded: EmbeddedStore, whole: bool
) -> None:
    """After each write, every node read through the cache equals the engine's copy:
    created nodes of every type with every property, statuses moved and restored,
    revisions made and undone, nodes forgotten. Filled either way: the small memory read
    whole by its first read, or each missing node fetched."""
    from kenning_encounter.memory import operator

    if not whole:
        embedded._nodes.warm_limit = 0  # pyright: ignore[reportPrivateUsage]

    memory = _memory(embedded)
    seen: set[str] = set()

    def agree(step: str) -> None:
        ids = sorted(seen)
        cached = embedded.read(lambda tx: tx.get_nodes(ids))
        again = embedded.read(lambda tx: tx.get_nodes(ids))  # now surely from the cache
        engine = read_uncached(embedded, lambda tx: tx.get_nodes(ids))
        assert cached == engine, step
        assert again == engine, step

    created = memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "o1", "description": "seen",
             "t_observed": "2026-11-02T09:00:00Z"},
            {"type": "Question", "name": "q1", "description": "why"},
            {"type": "Hypothesis", "name": "h1", "description": "because",
             "status": "untested"},
            {"type": "Concept", "name": "c1", "description": "an idea"},
            {"type": "Note", "name": "n1"},
            {"type": "Component", "name": "retry.py", "source_kind": "file",
             "source_label": "auth", "source_key": "src/retry.py"},
            {"type": "Citation", "name": "rfc", "kind": "url", "uri": "https://example.org/rfc",
             "snapshot": "2026-11-01T00:00:00Z"},
        ],
    )  # fmt: skip
    seen.update(n.id for n in created.created)
    agree("created, never read: the cache holds them as written")
    memory.create_relations(
        S,
        [
            {"source": "o1", "type": "RESOLVES", "target": "q1"},
            {"source": "o1", "type": "CHALLENGES", "target": "h1"},
        ],
    )
    agree("statuses moved by relations")
    granted = Memory(embedded, granted=("pii",))
    marked = granted.create_entities(
        S, [{"type": "Observation", "name": "o9", "classification": "pii"}]
    )
    seen.update(n.id for n in marked.created)
    granted.create_relations(S, [{"source": "o9", "type": "GROUNDS", "target": "c1"}])
    agree("a classified node's use marked on the node it links")
    revised = memory.create_entities(
        S,
        [{"type": "Concept", "name": "c2", "description": "a better idea",
          "supersedes": "c1", "revision_why": "sharper"}],
    )  # fmt: skip
    seen.update(n.id for n in revised.created)
    agree("a revision supersedes")
    memory.delete_relations(S, [{"source": "o1", "type": "RESOLVES", "target": "q1"}])
    agree("a relation undone restores a status")
    memory.delete_entities(S, ["c2"])
    agree("a revision undone makes the old node a head again")
    operator.forget(embedded, ["n1"])
    agree("a node forgotten")
    assert len(embedded.read(lambda tx: tx.get_nodes(sorted(seen)))) == len(seen) - 2


def test_every_statement_that_changes_a_node_reports_it() -> None:
    """The cache learns of node changes from EmbeddedTx's write methods. A new statement
    that changes authored nodes must report them too: then add it here."""
    import re

    from kenning_encounter.store.embedded import queries

    # a node made, set or deleted, or its standing mirrors renewed by an edge's statement
    changing = re.compile(r"CREATE \(n:|SET n\.|DELETE n\b|\b\w+\.(used_at|pinned)\s*=")
    texts = {name: value for name, value in vars(queries).items() if isinstance(value, str)}
    texts["nodes_create"] = queries.nodes_create("Note")
    found = {name for name, value in texts.items() if changing.search(value)}
    assert found == {
        "nodes_create",
        "NODE_SET_SUCCESSOR",
        "SUCCESSORS_SET",  # tx.py _create_revisions: the revised nodes
        "NODES_SET_STATUS",  # ops/graph.py set_statuses: each node
        "NODES_DELETE",
        "LOAD_SUPERSEDES",  # an import's revisions: EmbeddedTx._on_load_changed
        "CLEAR_NODES",  # an import --restart empties: EmbeddedTx._on_load_changed
        # standing (memory/activation.py): each reports the nodes whose used_at it renews
        "EDGES_CREATE",  # ops/graph.py create_edges: both ends of each
        "CONFIRM",  # ops/identity.py confirm_nodes
        "CONSULT",  # ops/activation.py consult_nodes
        "PIN",  # ops/activation.py pin_nodes
        "MARK_USES",  # ops/activation.py mark_uses: each node (store/uses.py)
    }


def test_the_cache_is_bounded_by_size_too() -> None:
    cache = NodeCache(capacity=1_000, max_bytes=10_500)
    big = [
        NodeRecord(f"n{i}", "Note", f"n{i}", "x" * 3_000, 1, "2026-11-29T00:00:00Z")
        for i in range(5)
    ]
    cache.offer(cache.generation, {n.id: n for n in big})
    assert 0 < cache.weight <= 10_500
    assert set(cache.get(cache.generation, [n.id for n in big])) == {"n2", "n3", "n4"}
    cache.begin_commit()
    cache.end_commit({"n3"})
    assert set(cache.get(cache.generation, ["n2", "n3", "n4"])) == {"n2", "n4"}
    assert cache.weight == 2 * (400 + 3_000)


def test_a_read_the_engine_ended_raises_its_own_failure(embedded: EmbeddedStore) -> None:
    """A statement can end the read's transaction as it fails (the buffer pool ran out at
    a million nodes): the failure is what the caller sees, not the ROLLBACK's refusal."""

    class Ended(Exception):
        pass

    def work(tx: Any) -> None:
        tx.rows("RETURN 1")  # the snapshot opens
        tx.rows("ROLLBACK")  # as the engine does when a statement fails that way
        raise Ended

    with pytest.raises(Ended):
        embedded.read(work)
    assert embedded.read(lambda tx: tx.clock()) >= 0, "the connection serves again"
