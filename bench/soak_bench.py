"""A store that serves for hours: memory and time as sessions go by (``python -m bench soak``).

Each variant runs in a fresh process (its resident memory is its own): sessions that
each open an encounter, record five observations and seal it, through the memory
service on an embedded store, one after another with no pause. Printed per window of
sessions: the process's resident memory and the window's time. The variants are the
store as it ships (quiet checkpoints, store/embedded/checkpoints.py) and the same store
with them turned off, which is how the engine behaves alone: it checkpoints by log size,
and small updates barely grow the log while what they keep in memory grows.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.stats import rss_mib

ROOT = Path(__file__).resolve().parents[1]
WORDS = [
    "kiln",
    "glaze",
    "crackle",
    "cooling",
    "rate",
    "recipe",
    "firing",
    "cone",
    "oxide",
    "silica",
    "clay",
    "body",
    "slip",
    "bisque",
    "tenmoku",
    "celadon",
]


def child(sessions: int, window: int, checkpoints: bool) -> None:
    """One variant, in this process; prints one JSON line per window."""
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    folder = Path(tempfile.mkdtemp(prefix="kenning-soak-"))
    store = EmbeddedStore.open(folder / "memory")
    if not checkpoints:
        store.checkpoints.after_writes = store.checkpoints.force_after = 10**12
    memory = Memory(store)
    rng = random.Random(7)
    try:
        print(json.dumps({"sessions": 0, "rss_mib": rss_mib(), "seconds": 0.0}), flush=True)
        started = time.perf_counter()
        for i in range(sessions):
            sid = f"soak-{i:06d}"
            memory.advance_encounter(sid, "soak " + " ".join(rng.sample(WORDS, 3)))
            notes = [
                {
                    "type": "Observation",
                    "name": f"obs {i} {k}",
                    "description": " ".join(rng.sample(WORDS, 6)),
                }
                for k in range(5)
            ]
            memory.create_entities(sid, notes)
            memory.close_encounter(sid, "done")
            if (i + 1) % window == 0:
                row = {
                    "sessions": i + 1,
                    "rss_mib": rss_mib(),
                    "seconds": time.perf_counter() - started,
                }
                print(json.dumps(row), flush=True)
                started = time.perf_counter()
    finally:
        store.close()
        shutil.rmtree(folder, ignore_errors=True)


def _variant(sessions: int, window: int, checkpoints: bool) -> list[dict[str, Any]]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.soak_bench",
            str(sessions),
            str(window),
            str(int(checkpoints)),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def run(quick: bool = False) -> dict[str, Any]:
    sessions, window = (200, 100) if quick else (2_000, 250)
    rows: list[dict[str, Any]] = []
    for checkpoints in (True, False):
        points = _variant(sessions, window, checkpoints)
        name = "quiet checkpoints" if checkpoints else "engine alone"
        rows += [
            {
                "variant": name,
                "sessions": p["sessions"],
                "rss_mib": p["rss_mib"],
                "window_s": round(p["seconds"], 1),
            }
            for p in points
        ]
    return {
        "note": "sessions of open, five observations, seal; no pause between them",
        "rows": rows,
    }


if __name__ == "__main__":
    child(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1")
