"""A read its caller gave up on stops (kenning_encounter.abandon), on both backends, and
each layer of that on its own: the step it would take next, the statement running for
it (embedded: the engine's interrupt), the reader it waited for, the analytics step.
A write is never given up: one that outlives its caller may still commit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import LiteralString

import pytest

from kenning_encounter.abandon import Abandoned, Call, run_as
from kenning_encounter.analytics.orient import build_panel
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx
from tests.support.snapshot import snapshot


def _notes(memory: Memory, count: int, session: str = "s-abandon") -> None:
    memory.advance_encounter(session, purpose="notes to read")
    for start in range(0, count, 500):
        memory.create_entities(
            session,
            [
                {"type": "Note", "name": f"note {i}", "description": f"note number {i}"}
                for i in range(start, min(count, start + 500))
            ],
        )


def test_a_read_given_up_takes_no_next_statement(store: GraphStore, memory: Memory) -> None:
    _notes(memory, 3)
    between = threading.Event()
    resume = threading.Event()
    sent: list[str] = []

    def work(tx: ReadTx) -> None:
        tx.head_ids_by_names(["note 0"])
        between.set()
        resume.wait(10)
        tx.head_ids_by_names(["note 1"])  # never sent: the call was given up meanwhile
        sent.append("second")

    call = Call()
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            run_as(call, lambda: store.read(work))
            outcome.append(None)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=run)
    worker.start()
    assert between.wait(10)
    call.abandon()
    resume.set()
    worker.join(10)
    assert isinstance(outcome[0], Abandoned), outcome
    assert "second" not in sent
    # The store reads on for everyone else.
    assert store.read(lambda tx: tx.head_ids_by_names(["note 1"]))


def test_a_read_given_up_while_it_waited_takes_no_reader(store: GraphStore) -> None:
    call = Call()
    call.abandon()
    ran: list[bool] = []
    with pytest.raises(Abandoned):
        run_as(call, lambda: store.read(lambda tx: ran.append(True)))
    assert not ran  # refused before it was given a reader (a session on Neo4j)


def test_a_write_is_never_given_up(store: GraphStore, memory: Memory) -> None:
    # Only reads run under a call; a write under one given up still commits whole.
    call = Call()
    call.abandon()
    memory.advance_encounter("s-write", purpose="a write")
    run_as(
        call,
        lambda: memory.create_entities(
            "s-write", [{"type": "Note", "name": "kept", "description": "written anyway"}]
        ),
    )
    assert store.read(lambda tx: tx.head_ids_by_names(["kept"]))


# A statement long enough to interrupt: three Note tables crossed, 1.6e10 rows at 2,500
# notes (about 40 s embedded; 125e6 rows took 0.33 s). On Neo4j, far longer.
_HEAVY: LiteralString = (
    "MATCH (a:Note), (b:Note), (c:Note) WHERE a.tick + b.tick + c.tick = -1 RETURN count(*)"
)


def _given_up(work: Callable[[], object], *, after_s: float) -> tuple[object, float]:
    """What ``work``, run as a call given up after ``after_s``, ended with (its result or
    the exception it raised), and in how many seconds."""
    call = Call()
    outcome: list[tuple[object, float]] = []

    def run() -> None:
        started = time.monotonic()
        try:
            outcome.append((run_as(call, work), time.monotonic() - started))
        except BaseException as exc:
            outcome.append((exc, time.monotonic() - started))

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    time.sleep(after_s)
    call.abandon()
    worker.join(120)
    return outcome[0]


def test_a_statement_running_for_a_read_given_up_is_interrupted(
    store: GraphStore, memory: Memory
) -> None:
    # Embedded: the engine's interrupt. Neo4j: the connection it waits on is cut.
    _notes(memory, 2_500)
    before = snapshot(store)
    result, took = _given_up(lambda: store.read(lambda tx: tx.rows(_HEAVY)), after_s=0.5)
    assert isinstance(result, Abandoned), result
    assert took < 5, took  # uninterrupted: about 40 s embedded, far longer on Neo4j
    assert snapshot(store) == before
    assert store.read(lambda tx: tx.head_ids_by_names(["note 7"]))


def test_an_orient_given_up_takes_no_next_step(store: GraphStore, memory: Memory) -> None:
    _notes(memory, 20)
    graph = store.read(lambda tx: tx.authored_graph())
    nodes, edges = graph.nodes, graph.edges
    call = Call()
    call.abandon()
    with pytest.raises(Abandoned):
        run_as(call, lambda: build_panel(nodes, edges))
    assert build_panel(nodes, edges).summary.nodes == 20  # outside the call: a reading


def test_the_inspectors_orient_page_waits_for_the_whole_reading_under_way(
    memory: Memory,
) -> None:
    from kenning_encounter.ui.orient_page import OrientReadings

    _notes(memory, 3)
    readings = OrientReadings(lambda: None)
    seen: list[int] = []
    with memory.whole_reading():  # an orient tool's reading under way
        page = threading.Thread(target=lambda: seen.append(readings.view(memory).clock))
        page.start()
        time.sleep(0.5)
        assert seen == []  # its turn has not come
    page.join(10)
    assert seen and seen[0] > 0


def test_an_orient_page_waiting_for_another_page_s_reading_is_given_up(
    memory: Memory,
) -> None:
    from kenning_encounter.ui.orient_page import OrientReadings

    _notes(memory, 3)
    readings = OrientReadings(lambda: None)
    held = readings._lock  # pyright: ignore[reportPrivateUsage]
    held.acquire()  # another page's reading under way, for 8 s
    other = threading.Timer(8.0, held.release)
    other.daemon = True
    other.start()
    result, took = _given_up(lambda: readings.view(memory), after_s=0.3)
    assert isinstance(result, Abandoned), result
    assert took < 5, took  # unabandonable: as long as the other reading takes


def test_a_read_cypher_given_up_is_stopped_where_it_runs(store: GraphStore, memory: Memory) -> None:
    # Embedded: its sandbox process is ended. Neo4j: its connection is cut, as a unit's.
    _notes(memory, 2_500)
    result, took = _given_up(
        lambda: store.read_cypher(_HEAVY, None, row_cap=10, char_cap=1_000, timeout_s=60.0),
        after_s=1.0,
    )
    assert isinstance(result, Abandoned), result
    assert took < 10, took  # uninterrupted: its own 60 s timeout, or longer
    assert store.read_cypher("RETURN 1", None, row_cap=1, char_cap=100, timeout_s=5.0).rows == [[1]]
