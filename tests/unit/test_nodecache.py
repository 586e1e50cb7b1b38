"""The embedded store's node cache: never a node older than the reader's snapshot.

Every test runs on a real embedded store; the writes that move a node's state
are ordinary memory calls (a RESOLVES relation resolves a Question).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kenning_encounter.errors import KenningError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.nodecache import NodeCache
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import NodeRecord

S = "cache-locus"


def _memory(store: EmbeddedStore) -> Memory:
    memory = Memory(store)
    memory.start()
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


def test_a_bump_empties_the_cache_and_refuses_older_offers() -> None:
    cache = NodeCache()
    old = cache.generation
    cache.offer(old, {"a": _node("a")})
    cache.bump()
    assert cache.get(old, ["a"]) == {} and len(cache) == 0
    cache.offer(old, {"b": _node("b")})  # read before the commit: refused
    assert len(cache) == 0
    cache.bump()
    cache.offer(cache.generation, {"c": _node("c")})
    assert set(cache.get(cache.generation, ["c"])) == {"c"}


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
