"""Checkpoints when writes go quiet (store/embedded/checkpoints.py), on a real embedded
store: the write-ahead log is folded into the main file once enough writes wait and
none came for a moment, never in the middle of a burst, and reads and writes that meet
one go on."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import LiteralString

import pytest

from kenning_encounter.errors import EngineError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.tx import EmbeddedTx
from kenning_encounter.store.port import ReadTx


def _wal(data_dir: Path) -> int:
    wal = data_dir / "graph.lbdb.wal"
    return wal.stat().st_size if wal.exists() else 0


def _sessions(memory: Memory, first: int, count: int) -> None:
    for i in range(first, first + count):
        memory.advance_encounter(f"s{i}", "kiln glaze notes")
        note = {"type": "Note", "name": f"note {i}", "description": "glaze crackle"}
        memory.create_entities(f"s{i}", [note])
        memory.close_encounter(f"s{i}", "done")


def _until(check: object, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if callable(check) and check():
            return True
        time.sleep(0.05)
    return False


def test_the_log_is_folded_once_enough_writes_went_quiet(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        points = store.checkpoints
        points.quiet_s, points.after_writes, points.idle_s = 0.3, 30, 3_600.0
        memory = Memory(store)
        _sessions(memory, 0, 5)  # 15 writes: fewer than are due one
        time.sleep(1.0)
        assert points.taken == 0 and _wal(store.data_dir) > 0
        _sessions(memory, 5, 10)  # 45 in all, then quiet
        assert _until(lambda: points.taken == 1, 10.0), "no checkpoint after quiet"
        assert _wal(store.data_dir) == 0
        # Reads and writes meeting checkpoints go on and see everything.
        stop = threading.Event()
        found: list[int] = []
        failed: list[BaseException] = []

        def read() -> None:
            try:
                while not stop.is_set():
                    found.append(len(memory.search("glaze crackle", limit=100).hits))
            except BaseException as exc:  # said below, not lost with the thread
                failed.append(exc)

        reader = threading.Thread(target=read)
        reader.start()
        points.quiet_s, points.after_writes = 0.0, 1
        _sessions(memory, 15, 20)
        stop.set()
        reader.join()
        # The reader's error whole: an engine's assertion text is the one clue to its cause.
        assert not failed, "\n".join(f"{type(e).__name__}: {e}" for e in failed)
        assert points.taken > 1 and found and max(found) <= 35
        assert len(memory.search("glaze crackle", limit=100).hits) == 35
    finally:
        store.close()
    reopened = EmbeddedStore.open(tmp_path / "m")
    try:
        assert len(Memory(reopened).search("glaze crackle", limit=100).hits) == 35
    finally:
        reopened.close()


def test_a_burst_is_not_held_up_by_a_checkpoint(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        points = store.checkpoints
        points.quiet_s, points.after_writes, points.idle_s = 0.5, 5, 3_600.0
        memory = Memory(store)
        # Writes never 0.5 s apart: however many wait, none is taken until they stop.
        for i in range(12):
            _sessions(memory, i, 1)
            time.sleep(0.1)
        assert points.taken == 0
        assert _until(lambda: points.taken == 1, 10.0)
    finally:
        store.close()


def _failing_once(
    memory: Memory, *, beside: bool, statement: LiteralString
) -> Callable[[ReadTx], int]:
    """A read whose first try fails in the engine (``statement``), after a write landed
    beside it when ``beside``; its later tries read the clock."""
    tries: list[int] = []
    first = 100 + len(memory.search("glaze crackle", limit=100).hits)  # a name not yet used

    def work(tx: ReadTx) -> int:
        tries.append(1)
        if len(tries) == 1:
            if beside:  # a whole write, committed while this read is open
                writer = threading.Thread(target=_sessions, args=(memory, first, 1))
                writer.start()
                writer.join()
            assert isinstance(tx, EmbeddedTx)
            tx.rows(statement)
        return len(tries)

    return work


def test_a_read_the_engine_failed_beside_a_commit_is_read_once_more(tmp_path: Path) -> None:
    """The engine folds its log while reads go on, and a read has failed in it beside a
    fold (an assertion inside the engine, once under load): such a read is tried again
    after the change, once. A failure with nothing written beside it is not retried, nor
    a refusal the statement earns by its shape."""
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        memory = Memory(store)
        assert store.read(_failing_once(memory, beside=True, statement="RETURN 1/0")) == 2
        with pytest.raises(EngineError, match="Divide by zero"):
            store.read(_failing_once(memory, beside=False, statement="RETURN 1/0"))
        with pytest.raises(EngineError) as refused:
            store.read(_failing_once(memory, beside=True, statement="MATCH (n:Nowhere) RETURN n"))
        assert refused.value.code == "Binder"
    finally:
        store.close()
