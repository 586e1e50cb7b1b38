"""read_cypher on the embedded store runs in a sandbox process over a snapshot.

Each of the sandbox's layers is tried on its own: the memory cap (a list
doubled past it), the kill at the deadline (a deadline nothing can meet), a
crash of the sandbox process, and the snapshot (fresh after every write, and
never the live store).
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
from pathlib import Path

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import sandbox
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.skipif(not sandbox.supported(), reason="the sandbox needs Linux")

CAPS = {"row_cap": 50, "char_cap": 20_000, "timeout_s": 10.0}
# 8 values doubled 24 times: 134 million, far past the sandbox's memory. The engine
# neither checks its timeout nor answers an interrupt while it builds the list.
DOUBLING = "WITH [1, 2, 3, 4, 5, 6, 7, 8] AS a " + "WITH a + a AS a " * 24 + "RETURN size(a)"


def _peak_mb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def _workers() -> list[int]:
    """Pids of this process's sandbox workers."""
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as stat:
                ppid = int(stat.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{entry}/cmdline", "rb") as cmd:
                line = cmd.read()
        except OSError:
            continue
        if ppid == os.getpid() and b"sandbox_worker" in line:
            found.append(int(entry))
    return found


def test_a_query_past_the_memory_cap_fails_in_the_sandbox(embedded: EmbeddedStore) -> None:
    before, peak = snapshot(embedded), _peak_mb()
    # A deadline far past the cap: on a loaded machine the list took 13.5 s to outgrow it,
    # and the timeout, not the cap, ended it.
    with pytest.raises(ReadOnlyViolation) as refused:
        embedded.read_cypher(DOUBLING, None, **{**CAPS, "timeout_s": 120.0})
    assert refused.value.layer == "memory" and "MB a read_cypher query may use" in str(
        refused.value
    )
    # The server's own process never held the list.
    assert _peak_mb() - peak < 256
    assert snapshot(embedded) == before
    # The next query gets a fresh sandbox and answers.
    assert embedded.read_cypher("RETURN 1 AS one", None, **CAPS).rows == [[1]]


def test_a_query_past_its_deadline_ends_with_its_process(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        assert store._sandbox is not None
        # A deadline no answer can meet: the sandbox process is killed, not waited for.
        store._sandbox._grace_s = 0.0
        with pytest.raises(ReadOnlyViolation) as refused:
            store.read_cypher("RETURN 1", None, row_cap=5, char_cap=5_000, timeout_s=0.001)
        assert refused.value.layer == "timeout" and "its process was stopped" in str(refused.value)
        assert _workers() == []
        store._sandbox._grace_s = sandbox.GRACE_S
        assert store.read_cypher("RETURN 2 AS two", None, **CAPS).rows == [[2]]
    finally:
        store.close()
    assert _workers() == []  # closing the store ends its sandboxes


def test_a_sandbox_that_dies_mid_query_is_reported_and_replaced(embedded: EmbeddedStore) -> None:
    assert embedded._sandbox is not None
    embedded.read_cypher("RETURN 0", None, **CAPS)  # one warm sandbox
    [worker] = _workers()
    # A roomier cap, so the doubling is still running when its process is killed.
    embedded._sandbox._memory = 4 << 30
    killer = threading.Timer(0.3, lambda: os.kill(worker, signal.SIGKILL))
    killer.start()
    try:
        with pytest.raises(ReadOnlyViolation) as refused:
            embedded.read_cypher(DOUBLING, None, **CAPS)
    finally:
        killer.cancel()
    assert refused.value.layer == "engine" and "ended the process it ran in" in str(refused.value)
    assert embedded.read_cypher("RETURN 3 AS three", None, **CAPS).rows == [[3]]


def test_the_snapshot_holds_every_acknowledged_write(embedded: EmbeddedStore) -> None:
    memory = Memory(embedded)
    memory.advance_encounter("sandbox-session", "fresh reads")
    count = "MATCH (n:Note) RETURN count(n)"
    for i in range(3):
        assert embedded.read_cypher(count, None, **CAPS).rows == [[i]]
        memory.create_entities("sandbox-session", [{"type": "Note", "name": f"n{i}"}])
    assert embedded.read_cypher(count, None, **CAPS).rows == [[3]]


def test_the_sandbox_reads_a_copy_never_the_live_store(embedded: EmbeddedStore) -> None:
    embedded.read_cypher("RETURN 1", None, **CAPS)
    [worker] = _workers()
    live = (embedded.data_dir / "graph.lbdb").resolve()
    opened = {
        os.path.realpath(f"/proc/{worker}/fd/{fd}") for fd in os.listdir(f"/proc/{worker}/fd")
    }
    assert str(live) not in opened
    copies = [p for p in opened if sandbox.SNAPSHOT_DIR in p]
    assert copies, opened


def test_slow_sandboxes_leave_other_reads_answering(embedded: EmbeddedStore) -> None:
    """Two runaway queries hold both sandboxes; the rest of the store still reads."""
    errors: list[BaseException] = []

    def runaway() -> None:
        try:
            embedded.read_cypher(DOUBLING, None, **CAPS)
        except ReadOnlyViolation as exc:
            errors.append(exc)

    threads = [threading.Thread(target=runaway) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    # A read outside read_cypher is not queued behind them.
    assert embedded.read(lambda tx: tx.clock()) >= 0
    for t in threads:
        t.join(60)
    assert len(errors) == 2 and all(e.layer == "memory" for e in errors)  # type: ignore[attr-defined]
