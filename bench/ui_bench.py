"""Inspector page render time (issue #18): ``python -m bench ui [--quick] [--nodes N]``.

A synthetic memory is put into an embedded store: recorded call by call
(bench/synth.py) up to 20k nodes, imported from a synthetic dump by the real
``kenning-encounter import`` beyond (bench/synth_dump.py; replaying 100k calls would
take hours). An infusion log is written for a few sessions through the real
recorder, and each page of the inspector is asked for many times through its ASGI
app in this process, so the figure is the server's time to read and render a page
(no network, no browser).

The orient page reads the whole panel once per state of the memory: its first
render (``orient_first_ms``) is what the orient tool costs, the rest are renders
of the kept reading.

    python -m bench.ui_bench NODES [DATA_DIR]   (DATA_DIR: a store already imported)
"""

from __future__ import annotations

import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from bench import synth
from bench.synth_dump import write_dump
from kenning_encounter.infusion.log import InfusionRecorder
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.infusion_log import session_tag
from kenning_encounter.ui.app import build_ui


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]


def _measure(client: TestClient, paths: list[str]) -> dict[str, float]:
    times: list[float] = []
    for path in paths:
        started = time.perf_counter()
        reply = client.get(path)
        times.append((time.perf_counter() - started) * 1000)
        if reply.status_code != 200:
            raise AssertionError(f"{path}: {reply.status_code}")
    return {
        "p50_ms": round(statistics.median(times), 2),
        "p95_ms": round(_p95(times), 2),
        "requests": len(times),
    }


RECORD_UP_TO = 20_000


def _imported(size: int, work: Path) -> Path:
    dump, data = work / "synth.jsonl", str(work / "data")
    write_dump(dump, size)
    subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "import", str(dump), "--data-dir", data],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return work / "data"


def run(
    quick: bool = False, *, nodes: int | None = None, data_dir: Path | None = None
) -> dict[str, Any]:
    size = nodes or (1_000 if quick else 10_000)
    rounds = 10 if quick else 40
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="kenning-ui-bench-"))
    queries: list[str] = list(synth.generate(min(size, 2_000)).queries)
    started = time.perf_counter()
    if data_dir is None and size > RECORD_UP_TO:
        data_dir = _imported(size, work)
    store = EmbeddedStore.open(data_dir or work / "data")
    try:
        if data_dir is None:
            made = synth.generate(size)
            queries = list(made.queries)
            memory = synth.record(store, made)
        else:
            memory = Memory(store)
        record_s = round(time.perf_counter() - started, 1)
        ids = [n.id for n in store.read(lambda tx: tx.authored_graph().nodes)]
        recorder = InfusionRecorder(store.infusion_log, keep_per_session=500, retention_s=1e9)
        sessions = [f"bench-session-{i}" for i in range(20)]
        for turn in range(200):
            session = sessions[turn % len(sessions)]
            recorder.record(
                session,
                turn=turn,
                at=time.time(),
                prompt=f"prompt {turn}",
                channel="lexical",
                degraded=False,
                reason="matcher off",
                bodies=rng.sample(ids, 5),
                standing=rng.sample(ids, 3),
                cut=rng.sample(ids, 2),
                silent=False,
            )
        client = TestClient(build_ui(lambda: memory), base_url="http://127.0.0.1")
        client.get("/")  # templates compiled, caches warm
        orient_started = time.perf_counter()
        if client.get("/orient").status_code != 200:
            raise AssertionError("/orient did not render")
        orient_first_ms = round((time.perf_counter() - orient_started) * 1000, 1)
        queries = (queries * rounds)[:rounds]
        pages = {
            "spine": ["/"] * rounds,
            "spine_page_10": ["/?page=10"] * rounds,
            "node": [f"/node/{i}" for i in rng.sample(ids, rounds)],
            "search": [f"/search?q={q}" for q in queries],
            "search_history": [f"/search?q={q}&history=1" for q in queries],
            "log": ["/log"] * rounds,
            "log_session": [f"/log/{session_tag(sessions[i % 20])}" for i in range(rounds)],
            "orient_kept": ["/orient"] * rounds,
        }
        return {
            "nodes": len(ids),
            "record_seconds": record_s,
            "orient_first_ms": orient_first_ms,
            **{name: _measure(client, paths) for name, paths in pages.items()},
        }
    finally:
        store.close()


if __name__ == "__main__":
    given = Path(sys.argv[2]) if len(sys.argv) > 2 else None
    print(json.dumps(run(nodes=int(sys.argv[1]), data_dir=given), indent=2))
