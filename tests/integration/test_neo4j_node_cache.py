"""A server's node cache on Neo4j stays true while another process writes.

Each Neo4j store keeps the nodes its reads fetched (store/neo4j/nodecache.py) and asks,
once per read that would use them, which nodes changed since it last asked. Here a
reader store holds every node in its cache, a writer store (another server, to the
database) changes them in every way the tools can, and after each change the reader's
answer must equal that of a store opened afresh (no cache): status moves, links
renewing use, revisions, confirmations, pins, consultations, an unlinking, an undo,
an erasure and an operator's deletion."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kenning_encounter.memory import activation, erasure, operator
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.backends import neo4j_target

pytestmark = pytest.mark.neo4j

S = "cache-writer"


def _open(tracer: Callable[[str, Any, float], None] | None = None) -> Any:
    from kenning_encounter.store.neo4j import Neo4jStore

    t = neo4j_target()
    if tracer is None:
        return Neo4jStore.open(t.uri, t.username, t.password, t.database)
    return Neo4jStore.open(t.uri, t.username, t.password, t.database, tracer=tracer)


@pytest.fixture
def reader(neo4j_store: Any) -> Iterator[Any]:
    store = _open()
    try:
        yield store
    finally:
        store.close()


def _nodes(store: Any, ids: list[str]) -> dict[str, NodeRecord]:
    return store.read(lambda tx: tx.get_nodes(ids))


def _truth(ids: list[str]) -> dict[str, NodeRecord]:
    fresh = _open()
    try:
        return _nodes(fresh, ids)
    finally:
        fresh.close()


def _written(memory: Memory) -> dict[str, str]:
    memory.advance_encounter(S, "lanterns")
    made = memory.create_entities(
        S,
        [
            {"type": "Question", "name": "which lantern", "description": "which one lights"},
            {"type": "Observation", "name": "brass lantern", "description": "the brass one lit"},
            {"type": "Hypothesis", "name": "oil matters", "description": "oil makes it light"},
            {"type": "Note", "name": "lantern note", "description": "kept for the record"},
            {"type": "Note", "name": "zqxgone lamp", "description": "to be erased"},
            {"type": "Note", "name": "forgotten lamp", "description": "to be forgotten"},
        ],
    ).created
    return {m.name: m.id for m in made}


def test_a_reader_s_cache_follows_every_change_another_store_writes(
    neo4j_store: Any, reader: Any
) -> None:
    memory = Memory(neo4j_store)
    ids = _written(memory)
    every = sorted(ids.values())

    def step(change: Callable[[], object]) -> None:
        _nodes(reader, every)  # held in the reader's cache before the change
        change()
        assert _nodes(reader, every) == _truth(every)

    relate = memory.create_relations
    step(
        lambda: relate(
            S, [{"source": "brass lantern", "type": "RESOLVES", "target": "which lantern"}]
        )
    )
    step(
        lambda: relate(
            S, [{"source": "brass lantern", "type": "SUPPORTS", "target": "oil matters"}]
        )
    )
    step(lambda: memory.confirm_entities(S, ["lantern note"], why="seen again"))
    step(lambda: memory.pin_entities(S, ["lantern note"]))
    step(lambda: memory.pin_entities(S, ["lantern note"], pinned=False))
    step(lambda: activation.consult(neo4j_store, S, [ids["oil matters"]]))
    revised: dict[str, str] = {}

    def revise() -> None:
        entity = {"type": "Note", "name": "lantern note", "description": "the record, revised"}
        made = memory.create_entities(
            S, [{**entity, "supersedes": ids["lantern note"], "revision_why": "said better"}]
        ).created
        revised["id"] = made[0].id
        every.append(made[0].id)  # the reader holds the revision too, until it is undone

    step(revise)
    step(
        lambda: memory.delete_relations(
            S, [{"source": "brass lantern", "type": "SUPPORTS", "target": "oil matters"}]
        )
    )
    step(lambda: memory.delete_entities(S, [revised["id"]]))  # an undo: a head again
    assert revised["id"] not in _nodes(reader, every)
    assert _nodes(reader, [ids["lantern note"]])[ids["lantern note"]].superseded_by is None
    step(lambda: erasure.erase(neo4j_store, erasure.plan(neo4j_store, ["zqxgone lamp"])))
    assert ids["zqxgone lamp"] not in _nodes(reader, every)
    step(lambda: operator.forget(neo4j_store, ["forgotten lamp"]))
    assert ids["forgotten lamp"] not in _nodes(reader, every)


def test_a_read_with_nothing_changed_takes_its_nodes_from_the_cache(neo4j_store: Any) -> None:
    memory = Memory(neo4j_store)
    ids = sorted(_written(memory).values())
    statements: list[str] = []
    store = _open(lambda text, params, seconds: statements.append(text))
    try:
        first = _nodes(store, ids)
        statements.clear()
        assert _nodes(store, ids) == first
        # only the synchronisation: no node was read again
        assert len(statements) == 1 and "_touched > $since" in statements[0]
        memory.create_relations(
            S, [{"source": "brass lantern", "type": "RESOLVES", "target": "which lantern"}]
        )
        statements.clear()
        again = _nodes(store, ids)
        assert again == _truth(ids)
        assert len(statements) == 2  # the synchronisation, and the two changed nodes read
    finally:
        store.close()


def test_a_search_synchronises_the_cache_in_its_own_statement(neo4j_store: Any) -> None:
    """The search statement (text.py, infusion's first) asks for the nodes changed since
    the cache's last synchronisation before its hits: a read that begins with a search
    sends no synchronisation of its own, and still reads a node another store changed."""
    from kenning_encounter.store.neo4j.text import search_remembered

    memory = Memory(neo4j_store)
    ids = _written(memory)
    statements: list[str] = []
    store = _open(lambda text, params, seconds: statements.append(text))
    try:
        _nodes(store, sorted(ids.values()))  # cached, and the cache synchronised once
        memory.create_relations(
            S, [{"source": "brass lantern", "type": "RESOLVES", "target": "which lantern"}]
        )
        statements.clear()
        question = ids["which lantern"]

        def searched(tx: Any) -> NodeRecord:
            search_remembered(tx, "oil", limit=5)
            return tx.get_nodes([question])[question]

        assert store.read(searched) == _truth([question])[question]
        assert store.read(searched).status == "resolved"
        assert not any(
            text.startswith("MATCH (c:Meta") and "hits" not in text for text in statements
        )
    finally:
        store.close()


def test_a_synchronisation_asks_for_at_most_one_id_past_the_drop_limit(
    neo4j_store: Any, reader: Any
) -> None:
    memory = Memory(neo4j_store)
    ids = sorted(_written(memory).values())
    reader._node_cache.drop_limit = 1  # pyright: ignore[reportPrivateUsage]
    first = _nodes(reader, ids)
    memory.create_relations(
        S, [{"source": "brass lantern", "type": "RESOLVES", "target": "which lantern"}]
    )  # two nodes touched: past the limit, the reader's cache starts again
    assert _nodes(reader, ids) == _truth(ids) != first


def test_a_write_marks_what_it_changed_with_its_tick(neo4j_store: Any, raw_driver: Any) -> None:
    memory = Memory(neo4j_store)
    ids = _written(memory)
    before = neo4j_store.read(lambda tx: tx.clock())
    memory.create_relations(
        S, [{"source": "brass lantern", "type": "RESOLVES", "target": "which lantern"}]
    )
    with raw_driver.session() as s:
        rows = s.run("MATCH (n) WHERE n._touched > $t RETURN n.id, n._touched", t=before).values()
    after = neo4j_store.read(lambda tx: tx.clock())
    assert {r[0] for r in rows} == {ids["brass lantern"], ids["which lantern"]}
    assert {r[1] for r in rows} == {after}


def test_a_reader_s_withheld_totals_follow_another_store_s_writes(
    neo4j_store: Any, reader: Any
) -> None:
    """The documents a gate withholds are counted once per clock (store/neo4j/text.py):
    a classified note another store writes moves the clock, and the count with it."""
    writer = Memory(neo4j_store, granted=tuple(CLASSIFICATIONS))
    writer.advance_encounter(S, "words")
    note = {"type": "Note", "description": "a lantern"}
    writer.create_entities(S, [{**note, "name": "lamp a", "classification": ["phi"]}])
    hide = frozenset(CLASSIFICATIONS)

    def docs(store: Any) -> tuple[int, float]:
        got = store.fulltext_stats(["lantern"], withheld=hide)
        return got.n_docs, got.avg_len

    assert docs(reader) == docs(reader) == (0, 0.0)
    writer.create_entities(
        S,
        [
            {**note, "name": "lamp b", "classification": ["phi"]},
            {**note, "name": "lamp c"},  # shown
        ],
    )
    fresh = _open()
    try:
        assert docs(reader) == docs(fresh) == (1, 3.0)
    finally:
        fresh.close()


# --- a write read half-applied ------------------------------------------------------------
# Neo4j shows a committed write record by record, its index entries last, and a read
# takes no lock: a read can find the clock at a write's tick, miss the nodes it touched,
# and fetch one as it was before. Here that read's offer is made by hand (the race itself
# is a matter of microseconds); the synchronisations after it must not keep it.


def _kept_as_if_read_half_applied(store: Any, old: NodeRecord) -> None:
    cache = store._node_cache  # pyright: ignore[reportPrivateUsage]
    cache.offer(cache.generation, {old.id: old})
    assert cache.get([old.id]) == {old.id: old}


def test_a_node_read_before_the_write_at_the_clock_read_is_asked_for_again(
    neo4j_store: Any, reader: Any
) -> None:
    memory = Memory(neo4j_store)
    ids = _written(memory)
    note = ids["lantern note"]
    before = _truth([note])[note]
    memory.pin_entities(S, [note])
    assert _nodes(reader, [note])[note].pinned  # synchronised at the pin's tick
    _kept_as_if_read_half_applied(reader, before)
    assert _nodes(reader, [note]) == _truth([note]), "a node read half-applied was kept"


def test_a_node_read_before_a_deletion_at_the_clock_read_is_not_kept(
    neo4j_store: Any, reader: Any
) -> None:
    memory = Memory(neo4j_store)
    ids = _written(memory)
    gone = ids["forgotten lamp"]
    before = _truth([gone])[gone]
    operator.forget(neo4j_store, ["forgotten lamp"])
    assert gone not in _nodes(reader, [gone])  # synchronised at the deletion's tick
    _kept_as_if_read_half_applied(reader, before)
    assert gone not in _nodes(reader, [gone]), "a deleted node read half-applied was kept"
    memory.pin_entities(S, ["lantern note"])  # the clock moves past the deletion
    assert gone not in _nodes(reader, [gone])


@pytest.mark.parametrize("cache_nodes", [1_000, 0])
def test_a_memory_emptied_and_made_again_under_a_reader_is_said_so_not_served_stale(
    neo4j_store: Any, raw_driver: Any, tmp_path: Any, cache_nodes: int
) -> None:
    # A restore from an export taken earlier: the memory made again shows a clock and
    # counts the reader's caches already passed, so they would never hear a change.
    from kenning_encounter.errors import StoreError
    from kenning_encounter.memory import dump, load
    from kenning_encounter.store.neo4j import Neo4jStore
    from tests.integration.conftest import credentials

    t = neo4j_target()
    user, password = credentials()
    reader = Neo4jStore.open(t.uri, user, password, t.database, cache_nodes=cache_nodes)
    try:
        writer = Memory(neo4j_store)
        writer.advance_encounter(S, "lanterns")
        writer.create_entities(S, [{"type": "Note", "name": "lantern", "description": "lit"}])
        path = tmp_path / "earlier.jsonl"
        with path.open("wb") as out:
            dump.export(neo4j_store, out, app_version="test")
        for i in range(6):
            writer.create_entities(S, [{"type": "Note", "name": f"later {i}"}])
        seen = Memory(reader)
        assert not seen.find_by_name("lantern").node.pinned
        assert seen.search("lantern")
        raw_driver.execute_query("MATCH (n) WHERE n._memory = 'default' DETACH DELETE n")
        restored = Neo4jStore.open(t.uri, user, password, t.database)
        try:
            load.load(restored, load.verify(path))
            again = Memory(restored)
            again.advance_encounter("restorer", "after the restore")
            again.pin_entities("restorer", ["lantern"], why="kept in view")
        finally:
            restored.close()
        reads: list[Callable[[], object]] = [
            lambda: seen.find_by_name("lantern"),
            lambda: seen.search("lantern"),
            lambda: reader.read(lambda tx: tx.erasures()),
            lambda: reader.read(lambda tx: tx.clock_and_erasures()),
        ]
        for read in reads:
            with pytest.raises(StoreError, match=r"made again .* restart the server"):
                read()
    finally:
        reader.close()
    fresh = Memory(_open())  # the restart: the memory as it now is
    try:
        assert fresh.find_by_name("lantern").node.pinned
    finally:
        fresh.store.close()
