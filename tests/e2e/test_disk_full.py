"""A full disk, as a writer meets it (a file that may not grow), on the embedded store.

Before: the write that met it failed with the engine's words ("Cannot write to file
... Error: Success") and called itself a fault of the store; every later write waited
forever in COMMIT, even once there was room; search failed with a bare ValueError; and
once there was room, the text index saved itself with no documents and marked itself
current, so search found nothing even after a restart.

Now: the failing write says what happened and what to do; later writes are refused at
once; reads go on; the text index refuses to save again in that process and drops its
tick, so the next opening derives it whole; and reopening the store keeps every write
that was acknowledged.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.textindex import TextIndex
from tests.support.cli import ROOT


def _child(kind: str, where: Path, limit: int) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.disk_full", kind, str(where), str(limit)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.splitlines()[-1])


def test_a_full_disk_refuses_writes_clearly_and_loses_nothing_acknowledged(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "memory"
    report = _child("store", data_dir, 3_000_000)
    acked: list[str] = report["acked"]
    assert len(acked) > 100  # the limit was met by a write, not by the opening
    failed = report["failed"]
    assert "could not write its files" in failed["message"]
    assert "Is the disk full or read-only?" in failed["message"]
    assert "fault of the store" not in failed["message"]
    # The next write is refused at once, naming the first failure (it waited forever).
    assert report["next_write"]["type"] == "StoreError"
    assert "takes no writes since one failed" in report["next_write"]["message"]
    assert report["next_write_s"] < 5
    assert report["read"] == acked[0]  # reads go on
    # read_cypher reads a copy, which needs a checkpoint: refused, saying so.
    assert report["cypher"]["type"] == "StoreError"
    assert "the other read tools still answer" in report["cypher"]["message"]

    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        held = store.read(lambda tx: {n.name for n in tx.authored_outline().nodes})
        assert set(acked) <= held
        assert "after" not in held
        for name in (acked[0], acked[len(acked) // 2], acked[-1]):
            assert name in [h.name for h in memory.search(name, limit=5).hits]
    finally:
        store.close()


def test_a_text_index_that_could_not_save_never_saves_an_empty_index(tmp_path: Path) -> None:
    directory = tmp_path / "textindex"
    report = _child("index", directory, 2_000_000)
    assert report["saved"] == 1
    assert report["failed"]["type"] == "StoreError"
    assert "could not save its changes" in report["failed"]["message"]
    # Room again: still refused in this process, and the tick is gone, so the next
    # opening derives the index whole instead of trusting what was saved.
    assert report["queued_after_fault"] == 0  # nothing held that no save can take
    assert report["flush_after_room"]["type"] == "StoreError"
    assert report["search_after_room"]["type"] == "StoreError"
    assert report["synced_tick"] is None
    reopened = TextIndex(directory)
    try:
        assert reopened.synced_tick() is None
    finally:
        reopened.close()
