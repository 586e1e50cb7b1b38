"""The whole authored graph read at once (embedded store), and the pause it takes.

A read of a million nodes and three million relations made four million records, and
two costs grew with it beyond the rows: the cyclic collector walking the records made
so far again and again, and the same strings held once per record (a node id per
relation end, an encounter name per record it wrote). ``authored_graph`` now holds
each such string once and reads with the collector paused (store/bulk.py). These
tests hold the read to an independent one and the pause to its contract.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.store.bulk import collector_paused
from kenning_encounter.store.embedded import tx as embedded_tx
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.ops.graph import RelationOps
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.port import ReadTx, Subgraph
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES
from tests.support.dumps import seed


@pytest.fixture(params=["by type", "by pair"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[EmbeddedStore]:
    """Both ways the relations are read: by type with their ends' ids (a small memory),
    and by pair of node types with their ends' row offsets (from PAIRS_FROM nodes), in
    pages of a few rows so that a read takes several."""
    if request.param == "by pair":
        monkeypatch.setattr(embedded_tx, "PAIRS_FROM", 0)
        monkeypatch.setattr(embedded_tx, "PAGE_ROWS", 3)
    opened = EmbeddedStore.open(tmp_path / "memory")
    try:
        seed(opened)
        yield opened
    finally:
        opened.close()


def _relations_by_cypher(store: EmbeddedStore) -> list[tuple[object, ...]]:
    kinds = "|".join(AUTHORED_RELATION_TYPES)
    result = store.read_cypher(
        f"MATCH (a)-[r:{kinds}]->(b) "
        "RETURN a.id, b.id, label(r), r.tick, r.encounter, r.revision_why",
        row_cap=100_000,
        char_cap=10_000_000,
        timeout_s=60,
    )
    assert not result.truncated
    return sorted(tuple(r) for r in result.rows)


def test_the_graph_holds_every_relation_as_an_independent_read_finds_it(
    store: EmbeddedStore,
) -> None:
    graph: Subgraph = store.read(lambda tx: tx.authored_graph())
    found = sorted(
        (e.source, e.target, e.type, e.tick, e.encounter, e.revision_why) for e in graph.edges
    )
    assert found == _relations_by_cypher(store)
    assert any(e.revision_why for e in graph.edges)  # the seed revises with reasons
    ids = [n.id for n in graph.nodes]
    assert sorted(store.read(lambda tx: tx.get_nodes(ids)).values(), key=lambda n: n.id) == sorted(
        graph.nodes, key=lambda n: n.id
    )


def test_the_outline_holds_the_same_relations(store: EmbeddedStore) -> None:
    """By pair, the outline's relations are read as columns a page at a time (three
    lists a page), never as records: each relation's ends, type and tick must still
    line up with the one an independent read finds."""

    def both(tx: ReadTx) -> tuple[Subgraph, Outline]:
        return tx.authored_graph(), tx.authored_outline()

    whole, outline = store.read(both)
    found = sorted((e.source, e.target, e.type, e.tick) for e in outline.edge_records())
    assert found == sorted((e.source, e.target, e.type, e.tick) for e in whole.edges)
    assert found == sorted(r[:4] for r in _relations_by_cypher(store))  # type: ignore[misc]
    assert [n.outline() for n in whole.nodes] == outline.nodes


def test_the_shared_read_on_the_embedded_texts_gives_the_same_graph(store: EmbeddedStore) -> None:
    """The embedded store pages its own read, so the shared one (``RelationOps``, on the
    embedded texts ``EDGES_ALL`` and ``NODES_ALL``) is not run there otherwise; a text
    that drifted from the protocol would go unseen."""

    def both(tx: ReadTx) -> tuple[Subgraph, Subgraph]:
        assert isinstance(tx, RelationOps)
        return tx.authored_graph(), RelationOps.authored_graph(tx)

    paged, shared = store.read(both)

    def key(graph: Subgraph) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        return sorted(graph.nodes, key=lambda n: n.id), sorted(
            graph.edges, key=lambda e: (e.source, e.target, e.type)
        )

    assert key(paged) == key(shared)


def test_a_relation_s_ends_are_its_nodes_own_id_strings(store: EmbeddedStore) -> None:
    graph: Subgraph = store.read(lambda tx: tx.authored_graph())
    held = {n.id: n.id for n in graph.nodes}
    assert graph.edges
    for e in graph.edges:
        assert e.source is held[e.source] and e.target is held[e.target]
    by_encounter: dict[str, str] = {}
    for record in [*graph.edges, *graph.nodes]:
        if record.encounter is not None:
            assert by_encounter.setdefault(record.encounter, record.encounter) is record.encounter


def test_the_collector_is_off_inside_and_back_after_even_on_failure() -> None:
    assert gc.isenabled()
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the read failed")
    assert gc.isenabled()


def test_overlapping_holders_share_one_pause() -> None:
    inside, leave_first, first_left, leave_second = (threading.Event() for _ in range(4))
    seen: list[bool] = []

    def first() -> None:
        with collector_paused():
            inside.set()
            leave_first.wait(5)
        first_left.set()

    def second() -> None:
        inside.wait(5)
        with collector_paused():
            leave_first.set()
            first_left.wait(5)
            seen.append(gc.isenabled())  # the first has left; this one still holds it
            leave_second.wait(5)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    first_left.wait(5)
    leave_second.set()
    for t in threads:
        t.join(5)
    assert seen == [False]
    assert gc.isenabled()


def test_a_collector_turned_off_before_stays_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()
