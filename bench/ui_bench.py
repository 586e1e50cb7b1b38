"""Inspector page render time (issue #18): ``python -m bench ui [--quick]``.

A synthetic memory (bench/synth.py) is recorded into an embedded store, an infusion
log is written for a few sessions through the real recorder, and each page of the
inspector is asked for many times through its ASGI app in this process, so the
figure is the server's time to read and render a page (no network, no browser).
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from bench import synth
from kenning_encounter.infusion.log import InfusionRecorder
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


def run(quick: bool = False, *, nodes: int | None = None) -> dict[str, Any]:
    size = nodes or (1_000 if quick else 10_000)
    rounds = 10 if quick else 40
    rng = random.Random(3)
    work = Path(tempfile.mkdtemp(prefix="kenning-ui-bench-"))
    store = EmbeddedStore.open(work / "data")
    try:
        made = synth.generate(size)
        started = time.perf_counter()
        memory = synth.record(store, made)
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
        queries = (made.queries * rounds)[:rounds]
        pages = {
            "spine": ["/"] * rounds,
            "spine_page_10": ["/?page=10"] * rounds,
            "node": [f"/node/{i}" for i in rng.sample(ids, rounds)],
            "search": [f"/search?q={q}" for q in queries],
            "search_history": [f"/search?q={q}&history=1" for q in queries],
            "log": ["/log"] * rounds,
            "log_session": [f"/log/{session_tag(sessions[i % 20])}" for i in range(rounds)],
        }
        return {
            "nodes": len(ids),
            "record_seconds": record_s,
            **{name: _measure(client, paths) for name, paths in pages.items()},
        }
    finally:
        store.close()
