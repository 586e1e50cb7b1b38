"""SIGKILL while the text index is derived again from the graph, at the store's opening.

The index is rebuilt when its saved tick lags the graph's clock (or its files fail their
checks). A kill at any moment of that rebuild leaves either the old commit or the new
one, with a tick saved only after the commit: the next opening rebuilds again, and search
finds every node once. Nothing needed mending here (tried: kills across the rebuild of
20,000 documents through ``serve``); the test keeps it so.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.textindex import TICK_FILE
from kenning_encounter.textproc import tokenize

ROOT = Path(__file__).resolve().parents[2]
NODES = 6_000
ROUNDS = 4
OPEN = (
    "import sys\n"
    "from pathlib import Path\n"
    "from kenning_encounter.store.embedded.backend import EmbeddedStore\n"
    "print('opening', flush=True)\n"
    "EmbeddedStore.open(Path(sys.argv[1])).close()\n"
    "print('opened', flush=True)\n"
)


def _memory(data_dir: Path) -> None:
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "seed")
        for start in range(0, NODES, 1_000):
            memory.create_entities(
                "s",
                [
                    {"type": "Observation", "name": f"n{i}", "description": f"gnu{i} shared"}
                    for i in range(start, start + 1_000)
                ],
            )
    finally:
        store.close()


def _open_and_kill(data_dir: Path, after_s: float) -> str:
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    with subprocess.Popen(
        [sys.executable, "-c", OPEN, str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "opening"
        time.sleep(after_s)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        return child.stdout.read()


def test_a_kill_during_the_rebuild_loses_and_doubles_nothing(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    _memory(data_dir)
    rng = random.Random(20261205)
    index = data_dir / "textindex"
    for round_no in range(ROUNDS):
        if round_no % 2:
            (index / TICK_FILE).unlink(missing_ok=True)  # lagging: rebuilt over the old one
        else:
            shutil.rmtree(index)  # gone: rebuilt from nothing
        _open_and_kill(data_dir, rng.uniform(0.05, 0.6))
        store = EmbeddedStore.open(data_dir)
        try:
            (shared,) = tokenize("shared")
            stats = store.fulltext_stats([shared])
            assert (stats.n_docs, stats.doc_freqs) == (NODES, {shared: NODES})
            for i in (0, NODES // 2, NODES - 1):
                assert len(store.fulltext(f"gnu{i}", limit=5)) == 1
        finally:
            store.close()
