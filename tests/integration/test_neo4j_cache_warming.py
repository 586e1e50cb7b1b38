"""A Neo4j server reads the memory's newest nodes into its node cache once the memory is
open (``Neo4jStore.warm_cache``, started by the server's runtime), so its first prompts
need not fetch each node. The warmed nodes are held on the cache's usual terms: a change
another server writes afterwards is heard by the next read, as for any cached node."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kenning_encounter.memory.service import Memory
from tests.support.backends import neo4j_target

pytestmark = pytest.mark.neo4j

S = "warming"


class _Statements:
    """A tracer counting the statements sent, and those that read nodes by id."""

    def __init__(self) -> None:
        self.sent = 0
        self.node_reads = 0

    def __call__(self, statement: str, params: Any, seconds: float) -> None:
        self.sent += 1
        if "properties(n), e.id" in statement:
            self.node_reads += 1


def _open(cache_nodes: int, tracer: Callable[[str, Any, float], None] | None = None) -> Any:
    from kenning_encounter.store.neo4j import Neo4jStore

    t = neo4j_target()
    return Neo4jStore.open(
        t.uri, t.username, t.password, t.database, cache_nodes=cache_nodes, tracer=tracer
    )


def _notes(memory: Memory, count: int) -> list[str]:
    """``count`` notes written one write each, oldest first: their ids."""
    memory.advance_encounter(S, "notes to warm")
    ids: list[str] = []
    for i in range(count):
        batch = [{"type": "Note", "name": f"note {i}", "description": f"the {i}th"}]
        ids += [n.id for n in memory.create_entities(S, batch).created]
    return ids


@pytest.fixture
def written(neo4j_store: Any) -> Iterator[tuple[Memory, list[str]]]:
    memory = Memory(neo4j_store)
    yield memory, _notes(memory, 7)


def test_warming_reads_the_newest_nodes_the_cache_keeps(
    written: tuple[Memory, list[str]],
) -> None:
    _, ids = written
    seen = _Statements()
    store = _open(cache_nodes=4, tracer=seen)
    try:
        assert store.warm_cache() == 4
        before = seen.node_reads
        newest = store.read(lambda tx: tx.get_nodes(ids[-4:]))
        assert set(newest) == set(ids[-4:])
        assert seen.node_reads == before  # all four from the cache
        store.read(lambda tx: tx.get_nodes(ids[:1]))
        assert seen.node_reads == before + 1  # an older one was not read in
    finally:
        store.close()


def test_a_warmed_node_another_server_changes_is_read_afresh(
    written: tuple[Memory, list[str]],
) -> None:
    memory, ids = written
    store = _open(cache_nodes=100)
    try:
        assert store.warm_cache() == len(ids)
        revised = memory.create_entities(
            S, [{"type": "Note", "name": "note 6", "supersedes": "note 6", "revision_why": "v2"}]
        ).created[0]
        node = store.read(lambda tx: tx.get_nodes([ids[-1]]))[ids[-1]]
        assert node.superseded_by == revised.id
    finally:
        store.close()


def test_no_cache_no_warming(written: tuple[Memory, list[str]]) -> None:
    seen = _Statements()
    store = _open(cache_nodes=0, tracer=seen)
    try:
        before = seen.sent
        assert store.warm_cache() == 0
        store.start_warming()
        assert seen.sent == before  # not even the newest ids were asked for
    finally:
        store.close()


def test_the_server_warms_its_cache_once_the_memory_is_open(
    written: tuple[Memory, list[str]],
) -> None:
    """The runtime a transport serves starts the warming; closing stops it."""
    import anyio

    from kenning_encounter.config import Settings
    from kenning_encounter.server.context import Runtime

    _, ids = written
    t = neo4j_target()
    seen = _Statements()
    opened: list[Any] = []

    def factory(settings: Settings) -> Any:
        opened.append(_open(cache_nodes=settings.neo4j_cache_nodes, tracer=seen))
        return opened[0]

    settings = Settings(
        store="neo4j",
        neo4j_uri=t.uri,
        neo4j_username=t.username,
        neo4j_password=t.password,
        neo4j_database=t.database,
        director="tester",
    )  # pyright: ignore[reportCallIssue]
    runtime = Runtime(settings, store_factory=factory)

    async def serve() -> None:
        async with runtime.session():
            store = opened[0]
            warming: threading.Thread | None = store._warming  # pyright: ignore[reportPrivateUsage]
            assert warming is not None, "the runtime did not start the warming"
            await anyio.to_thread.run_sync(lambda: warming.join(30))
            before = seen.node_reads
            assert set(store.read(lambda tx: tx.get_nodes(ids))) == set(ids)
            assert seen.node_reads == before  # every node from the warmed cache
        assert not warming.is_alive()

    anyio.run(serve)
