"""SIGKILL at random moments: every acknowledged batch survives, no batch is half there."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.crash_writer import BATCH

ROUNDS = 20
ROOT = Path(__file__).resolve().parents[2]


def _run_and_kill(data_dir: Path, round_no: int, rng: random.Random) -> int:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    with subprocess.Popen(
        [sys.executable, "-m", "tests.support.crash_writer", str(data_dir), str(round_no)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
    ) as child:
        return _drive(child, rng)


def _drive(child: subprocess.Popen[str], rng: random.Random) -> int:
    assert child.stdout is not None
    acked = -1
    wanted = rng.randint(0, 6)
    deadline = time.monotonic() + 60
    while acked < wanted and time.monotonic() < deadline:
        line = child.stdout.readline()
        if not line:
            break
        acked = int(line.split()[1])
    time.sleep(rng.random() * 0.05)  # land the kill at a random point of the next batch
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    # anything acknowledged between our last read and the kill counts too
    for line in child.stdout.read().splitlines():
        if line.startswith("ack "):
            acked = int(line.split()[1])
    if acked < 0:
        pytest.fail(
            f"the writer never acknowledged a batch: {child.stderr.read() if child.stderr else ''}"
        )
    return acked


@pytest.mark.slow
def test_sigkill_loses_no_acknowledged_batch(tmp_path: Path) -> None:
    rng = random.Random(20261129)
    data_dir = tmp_path / "memory"
    for round_no in range(ROUNDS):
        acked = _run_and_kill(data_dir, round_no, rng)
        store = EmbeddedStore.open(data_dir)
        try:
            nodes = store.read(lambda tx: tx.authored_graph().nodes)
            batches = Counter(
                n.name.split("-")[1] for n in nodes if n.name.startswith(f"r{round_no}-")
            )
            assert all(count == BATCH for count in batches.values()), f"a half batch: {batches}"
            for b in range(acked + 1):
                assert batches.get(f"b{b}") == BATCH, (
                    f"round {round_no}: acknowledged batch {b} lost"
                )
            # the derived text index caught up with the graph
            hits = store.fulltext(f"batch{round_no}x{acked}", limit=50)
            assert len(hits) == BATCH
        finally:
            store.close()


def test_a_torn_log_tail_is_cut_back(tmp_path: Path) -> None:
    """A kill while a transaction's log record was half written: the earlier ones stay."""
    data_dir = tmp_path / "memory"
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from kenning_encounter.memory.service import Memory\n"
        "from kenning_encounter.store.embedded.backend import EmbeddedStore\n"
        "store = EmbeddedStore.open(Path(sys.argv[1]))\n"
        "wal = Path(sys.argv[1]) / 'graph.lbdb.wal'\n"
        "m = Memory(store); m.advance_encounter('s', 'p')\n"
        "m.create_entities('s', [{'type': 'Note', 'name': f'kept {i}'} for i in range(10)])\n"
        "print(wal.stat().st_size, flush=True)\n"
        "m.create_entities('s', [{'type': 'Note', 'name': f'torn {i}'} for i in range(10)])\n"
        "print(wal.stat().st_size, flush=True)\n"
        "os._exit(0)\n"  # no close: the log is not checkpointed
    )
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    done = subprocess.run(
        [sys.executable, "-c", script, str(data_dir)],
        env=env,
        check=True,
        timeout=120,
        capture_output=True,
        text=True,
    )
    before, after = (int(x) for x in done.stdout.split())
    wal = data_dir / "graph.lbdb.wal"
    os.truncate(wal, before + (after - before) // 2)  # the second write, half on disk
    store = EmbeddedStore.open(data_dir)
    try:
        names = {n.name for n in store.read(lambda tx: tx.authored_graph().nodes)}
        assert {f"kept {i}" for i in range(10)} <= names
        assert not any(n.startswith("torn") for n in names)
        assert list(data_dir.glob("graph.lbdb.wal.damaged-*")), "the damaged log was not kept"
    finally:
        store.close()
