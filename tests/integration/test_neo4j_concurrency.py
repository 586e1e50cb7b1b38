"""Writers on separate connections (as separate processes would be) against one Neo4j.

Each writer here has its own store: its own driver and its own in-process lock,
so the only thing ordering them is the clock node's lock on the server.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kenning_encounter.errors import NameTaken
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.port import ReadTx
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri

pytestmark = pytest.mark.neo4j

WRITERS = 8


@pytest.fixture
def stores(neo4j_store: Neo4jStore) -> Iterator[list[Neo4jStore]]:
    opened = [Neo4jStore.open(neo4j_uri(), *credentials()) for _ in range(WRITERS)]
    try:
        yield opened
    finally:
        for s in opened:
            s.close()


def _together(work: Callable[[int], Any], n: int = WRITERS) -> list[Any]:
    """Run ``work(i)`` on n threads released at the same instant; results or exceptions."""
    start = threading.Barrier(n)
    out: list[Any] = [None] * n

    def run(i: int) -> None:
        start.wait()
        try:
            out[i] = work(i)
        except BaseException as exc:  # returned to the test, which asserts on it
            out[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    return out


def test_ticks_stay_unique_and_gapless_across_separate_stores(stores: list[Neo4jStore]) -> None:
    batches = 6

    def writer(i: int) -> None:
        memory = Memory(stores[i])
        locus = f"proc-{i}"
        memory.advance_encounter(locus, "work")
        for b in range(batches):
            memory.create_entities(
                locus, [{"type": "Note", "name": f"{locus}-{b}-{k}"} for k in range(3)]
            )
        memory.close_encounter(locus, "done")

    assert [r for r in _together(writer) if r is not None] == []

    def collect(tx: ReadTx) -> tuple[int, list[Any], list[Any]]:
        return tx.clock(), tx.encounters(limit=1_000), tx.authored_graph().nodes

    clock, encounters, nodes = stores[0].read(collect)
    opened = [e.opened_tick for e in encounters]
    sealed = [e.sealed_tick for e in encounters]
    batch_ticks = sorted({n.tick for n in nodes})
    everything = sorted([*opened, *sealed, *batch_ticks])
    assert len(nodes) == WRITERS * batches * 3
    assert len(batch_ticks) == WRITERS * batches
    assert everything == list(range(1, clock + 1)), "ticks must be unique and gapless"


def test_a_contested_name_goes_to_exactly_one_writer(stores: list[Neo4jStore]) -> None:
    memories = [Memory(s) for s in stores]
    for i, memory in enumerate(memories):
        memory.advance_encounter(f"proc-{i}", "race")

    def claim(i: int) -> str:
        created = memories[i].create_entities(f"proc-{i}", [{"type": "Note", "name": "contested"}])
        return created.created[0].id

    results = _together(claim)
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1, results
    assert all(isinstance(r, NameTaken) for r in results if not isinstance(r, str))

    def state(tx: ReadTx) -> tuple[str | None, int]:
        notes = [n for n in tx.authored_graph().nodes if n.name == "contested"]
        return tx.head_id_by_name("contested"), len(notes)

    assert stores[0].read(state) == (winners[0], 1)


def test_a_writer_waits_for_the_clock_lock_held_elsewhere(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    outcome: dict[str, Any] = {}
    with raw_driver.session() as session:
        foreign = session.begin_transaction()
        held = foreign.run(
            "MATCH (c:Meta {key: 'clock'}) SET c.ival = c.ival + 1 RETURN c.ival"
        ).single()[0]

        def write() -> None:
            outcome["tick"] = neo4j_store.write(lambda tx: tx.tick)

        waiter = threading.Thread(target=write)
        waiter.start()
        time.sleep(0.5)
        assert waiter.is_alive(), "the write did not wait for the clock lock"
        foreign.commit()
        waiter.join(timeout=30)
    assert outcome["tick"] == held + 1
    assert neo4j_store.read(lambda tx: tx.clock()) == held + 1


def test_a_write_that_takes_no_tick_leaves_the_clock_alone(neo4j_store: Neo4jStore) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("s", "work")
    before = neo4j_store.read(lambda tx: tx.clock())
    assert memory.session_end("someone-else") is None  # a write unit that finds nothing to do
    assert neo4j_store.write(lambda tx: tx.clock()) == before
    assert neo4j_store.read(lambda tx: tx.clock()) == before
    memory.close_encounter("s", "done")
    assert neo4j_store.read(lambda tx: tx.clock()) == before + 1
