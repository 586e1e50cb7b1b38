"""A large memory on one machine: the embedded store, bulk-loaded through ``import``.

    python -m bench local-scale --nodes N      (or python -m bench.local_scale_bench N)

With ``KENNING_BENCH_KEEP=DIR`` the loaded store stays in DIR, and a later run with the
same DIR measures it again without loading it anew (a load at 1M takes about an hour).

A synthetic dump of N nodes (bench.synth_dump with three rounds of relations: about
three authored edges per node, shaped like an agent's memory) is written and imported by the real command into a
fresh data directory, in a subprocess whose wall time is the load time. Then:

- ``index_build_s``: the first open, which builds the text index the import left to
  be made (derived data is never in a dump);
- ``reopen_s``: the median of a few opens of the loaded store, as a restarted server
  opens it;
- ``index_rebuild_s``: an open after the text index folder was removed, as after a
  crash that lost it: the index is read again from the graph;
- in a fresh child process, opened as a server opens it: search p50/p95, lookup
  (find_by_name) p50/p95, lexical infusion p50/p95 behind the read gate, one orient (the authored graph read, then
  the panel on igraph; betweenness is sampled past ``analytics.engine``'s exact
  bound, and the row says so), and that process's peak RSS (``ru_maxrss``);
- ``data_dir_mib``: the data directory's size on disk.
"""

from __future__ import annotations

import json
import logging
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.scale_bench import (  # pyright: ignore[reportPrivateUsage]
    _queries,
    measure_infuse,
    measure_lookup,
    measure_search,
    timed_import,
)
from bench.stats import rss_mib
from bench.synth_dump import write_dump

SEARCHES = 200
PROMPTS = 200
REOPENS = 3
DENSITY = 3  # rounds of relations per node: about three authored edges each
GOALS = (
    "1M nodes: reopen <= 5 s, search p95 <= 10 ms, orient <= 30 s, serving RSS <= 2 GiB "
    "(issue #19 item 4)"
)


def import_embedded(path: Path, data_dir: Path) -> float:
    """Seconds the real ``import`` command took into ``data_dir`` (check, writes, exit)."""
    settings = {"KENNING_ENCOUNTER_STORE": "embedded", "KENNING_ENCOUNTER_DATA_DIR": str(data_dir)}
    return timed_import(path, settings)


def timed_open(data_dir: Path) -> float:
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    started = time.perf_counter()
    store = EmbeddedStore.open(data_dir)
    took = time.perf_counter() - started
    store.close()
    return took


def folder_mib(folder: Path) -> float:
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    return round(size / 2**20, 1)


class _WorkerPeak(logging.Handler):
    """The communities worker's own peak memory, as its answer's log line says it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.mib: int | None = None

    def emit(self, record: logging.LogRecord) -> None:
        found = re.search(r"peak (\d+) MiB", record.getMessage())
        if found:
            self.mib = int(found.group(1))


def measure_orient(store: Any) -> dict[str, Any]:
    from kenning_encounter.analytics.orient import build_panel

    worker = _WorkerPeak()
    aside_log = logging.getLogger("kenning_encounter.analytics.aside")
    aside_log.addHandler(worker)
    aside_log.setLevel(logging.DEBUG)
    started = time.perf_counter()
    graph = store.read(lambda tx: tx.authored_outline())
    read = time.perf_counter() - started
    started = time.perf_counter()
    panel = build_panel(graph.nodes, graph.relations)
    built = time.perf_counter() - started
    return {
        "orient_read_graph_s": round(read, 2),
        "orient_panel_s": round(built, 2),
        "orient_total_s": round(read + built, 2),
        "orient_betweenness": ("none" if panel.betweenness is None else panel.betweenness.detail),
        # The communities' worker process, when the graph is large enough (analytics/aside.py).
        "orient_worker_peak_rss_mib": worker.mib,
    }


def serve(data_dir: Path, nodes: int, searches: int, prompts: int) -> dict[str, Any]:
    """In this (child) process: the loaded store served as a server would serve it."""
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    store = EmbeddedStore.open(data_dir)
    try:
        queries = _queries(max(searches, prompts), seed=nodes)
        row = measure_search(store, queries[:searches])
        row |= measure_lookup(store)
        row |= measure_infuse(store, queries[:prompts])
        row["serving_rss_before_orient_mib"] = rss_mib()
        row |= measure_orient(store)
    finally:
        store.close()
    row["serving_peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
    return row


def load_into(folder: Path, nodes: int) -> dict[str, Any]:
    """Write the dump and import it into ``folder / "data"``; the load's figures."""
    row: dict[str, Any] = {}
    dump, data_dir = folder / "memory.jsonl", folder / "data"
    started = time.perf_counter()
    counts = write_dump(dump, nodes, seed=nodes, density=DENSITY)
    row["dump_written_s"] = round(time.perf_counter() - started, 1)
    records = sum(counts.values())
    row |= {"records": records, "relations": counts["relation"]}
    took = import_embedded(dump, data_dir)
    dump.unlink()
    row["import_s"] = round(took, 1)
    row["import_records_per_s"] = round(records / took)
    row["index_build_s"] = round(timed_open(data_dir), 2)
    return row


def run_size(
    nodes: int, *, searches: int = SEARCHES, prompts: int = PROMPTS, keep: Path | None = None
) -> dict[str, Any]:
    """``keep``: a folder the loaded store stays in; a store loaded there before (its load
    figures in ``load.json``) is measured again without a new load."""
    row: dict[str, Any] = {"nodes": nodes}
    with tempfile.TemporaryDirectory(prefix="kenning-local-scale-") as tmp:
        folder = keep or Path(tmp)
        data_dir = folder / "data"
        kept = folder / "load.json"
        if keep is not None and kept.exists() and data_dir.exists():
            row |= json.loads(kept.read_text()) | {"load_reused": True}
        else:
            folder.mkdir(parents=True, exist_ok=True)
            loaded = load_into(folder, nodes)
            if keep is not None:
                kept.write_text(json.dumps(loaded))
            row |= loaded
        row["reopen_s"] = round(statistics.median(timed_open(data_dir) for _ in range(REOPENS)), 2)
        shutil.rmtree(data_dir / "textindex")
        row["index_rebuild_s"] = round(timed_open(data_dir), 2)
        worker = [sys.executable, "-m", "bench.local_scale_bench", "--serve", str(data_dir)]
        child = subprocess.run(
            [*worker, str(nodes), str(searches), str(prompts)],
            capture_output=True,
            text=True,
            check=False,
        )
        if child.returncode != 0:
            raise RuntimeError(f"serving child failed: {child.stderr[-2000:]}")
        row |= json.loads(child.stdout.strip().splitlines()[-1])
        row["data_dir_mib"] = folder_mib(data_dir)
    return row


def run(quick: bool = False, nodes: int | None = None) -> dict[str, Any]:
    """``python -m bench local-scale [--nodes N]``: 100k nodes by default, 2k when quick."""
    size = nodes or (2_000 if quick else 100_000)
    small = quick or size <= 5_000
    keep = os.environ.get("KENNING_BENCH_KEEP")
    row = run_size(
        size,
        searches=50 if small else SEARCHES,
        prompts=50 if small else PROMPTS,
        keep=Path(keep) if keep else None,
    )
    return {"goals": GOALS, "rows": [row]}


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv and argv[0] == "--serve":
        folder, n, s, p = Path(argv[1]), int(argv[2]), int(argv[3]), int(argv[4])
        print(json.dumps(serve(folder, n, s, p)))
    else:
        sizes = [a for a in argv if not a.startswith("--")]
        result = run(quick="--quick" in argv, nodes=int(sizes[0]) if sizes else None)
        print(json.dumps(result, indent=2))
