"""Run as a child process whose files may not grow past a size (RLIMIT_FSIZE), which is
how a full disk looks to a writer (EFBIG instead of ENOSPC) without mounting one.

``store DIR LIMIT``: write notes into an embedded store until one fails, then try once
more, read, and report as JSON on stdout. ``index DIR LIMIT``: the same for the text
index alone; after its first failure the limit is lifted (the disk has room again) and
the index is asked to save and search once more.

Each ends with os._exit: the engine aborts the process when it closes a database whose
log it could not write (an engine fault noted in release-notes), and what is tested here
is everything before that.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys
import time
from pathlib import Path
from typing import Any

NOTE = "x" * 2_000


def _limit(size: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past it fails, not the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, resource.RLIM_INFINITY))


def _lift() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def _error(exc: BaseException) -> dict[str, str]:
    return {"type": type(exc).__name__, "message": str(exc)}


def store(data_dir: Path, size: int) -> dict[str, Any]:
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    opened = EmbeddedStore.open(data_dir)
    memory = Memory(opened)
    memory.advance_encounter("filler", "fill the disk")
    _limit(size)
    acked: list[str] = []
    report: dict[str, Any] = {}
    try:
        for i in range(100_000):
            name = f"note {i}"
            memory.create_entities(
                "filler", [{"type": "Note", "name": name, "description": f"{NOTE} {i}"}]
            )
            acked.append(name)
    except Exception as exc:
        report["failed"] = _error(exc)
    report["acked"] = acked
    _lift()  # room again: the engine still cannot commit in this process
    started = time.monotonic()
    try:
        memory.create_entities("filler", [{"type": "Note", "name": "after", "description": "y"}])
        report["next_write"] = {"type": "none", "message": ""}
    except Exception as exc:
        report["next_write"] = _error(exc)
    report["next_write_s"] = time.monotonic() - started
    report["read"] = memory.find_by_name(acked[0]).node.name if acked else None
    try:
        opened.read_cypher("RETURN 1 AS one", row_cap=5, char_cap=1_000, timeout_s=10)
        report["cypher"] = {"type": "none", "message": ""}
    except Exception as exc:
        report["cypher"] = _error(exc)
    return report


def index(directory: Path, size: int) -> dict[str, Any]:
    from kenning_encounter.store.embedded.textindex import IndexDoc, TextIndex

    def docs(start: int, count: int) -> list[IndexDoc]:
        return [
            IndexDoc(
                f"not_{i:012x}",
                "Note",
                True,
                f"note {i}",
                " ".join(f"w{i}x{j}" for j in range(200)),
            )
            for i in range(start, start + count)
        ]

    text = TextIndex(directory, flush_delay=3600)
    text.apply(docs(0, 50), [], 1)
    text.flush()  # a saved index with documents in it
    report: dict[str, Any] = {"saved": text.synced_tick()}
    _limit(size)
    text.apply(docs(50, 5_000), [], 2)  # one segment larger than a file may grow
    try:
        text.flush()
    except Exception as exc:
        report["failed"] = _error(exc)
    _lift()
    text.apply([IndexDoc("not_ffffffffffff", "Note", True, "later", "later words")], [], 3)
    report["queued_after_fault"] = len(text._queue)  # pyright: ignore[reportPrivateUsage]
    try:
        text.flush()
        report["flush_after_room"] = {"type": "none", "message": ""}
    except Exception as exc:
        report["flush_after_room"] = _error(exc)
    try:
        hits = text.search("note", types=None, heads_only=True, limit=5)
        report["search_after_room"] = {"type": "none", "message": str(len(hits))}
    except Exception as exc:
        report["search_after_room"] = _error(exc)
    report["synced_tick"] = text.synced_tick()
    return report


if __name__ == "__main__":
    kind, where, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    done = (store if kind == "store" else index)(where, limit)
    sys.stdout.write(json.dumps(done) + "\n")
    sys.stdout.flush()
    os._exit(0)
