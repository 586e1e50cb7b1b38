"""Benchmark of orient: build_panel end to end on synthetic memories.

    python -m bench.orient_bench [--quick] [--json OUT]

The synthetic memory is shaped like a real one: observations ground concepts
and are made at components, questions are raised and resolved, hypotheses are
supported and challenged, citations back concepts, notes hang off concepts, and
a few nodes are revised (SUPERSEDES). Links favour nodes of the same era (so
regions form) and, less often, old nodes (so hubs form), with about three
authored relations per node. Everything is drawn from a seeded generator, so a
size always gives the same graph.

Each size runs in a fresh process, so its peak RSS (resource.getrusage) is its
own: records, projection and panel together. Goals: under 1 s at 10k nodes and
under 10 s at 100k, end to end on the in-process engine.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from kenning_encounter.analytics.baseline import BaselineStore
from kenning_encounter.analytics.orient import SectionTimer, build_panel, orient_panel
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import NODE_TYPES, RELATION_TYPES

SIZES = (1_000, 10_000, 100_000)
EDGES_PER_NODE = 3.0
SEED = 20240601
GOALS_SECONDS = {10_000: 1.0, 100_000: 10.0}

TYPE_SHARES = {
    "Observation": 0.40,
    "Concept": 0.12,
    "Question": 0.12,
    "Hypothesis": 0.10,
    "Note": 0.06,
    "Component": 0.12,
    "Citation": 0.08,
}
STATUS_SHARES = {
    "Question": {"open": 0.4, "resolved": 0.5, "retired": 0.1},
    "Hypothesis": {
        "untested": 0.3,
        "supported": 0.35,
        "challenged": 0.2,
        "falsified": 0.1,
        "retired": 0.05,
    },
}
# (source type, relation, target type, relative rate per source node)
TEMPLATES = (
    ("Observation", "GROUNDS", "Concept", 0.8),
    ("Observation", "OBSERVED_AT", "Component", 0.7),
    ("Observation", "SUPPORTS", "Hypothesis", 0.35),
    ("Observation", "CHALLENGES", "Hypothesis", 0.15),
    ("Observation", "RAISES", "Question", 0.3),
    ("Observation", "RESOLVES", "Question", 0.2),
    ("Observation", "ABOUT", "Concept", 0.3),
    ("Observation", "INFORMS", "Note", 0.1),
    ("Concept", "COMPOSES", "Concept", 0.5),
    ("Concept", "ABOUT", "Component", 0.5),
    ("Concept", "INFORMS", "Hypothesis", 0.4),
    ("Question", "ABOUT", "Concept", 0.8),
    ("Question", "RAISES", "Question", 0.2),
    ("Hypothesis", "ABOUT", "Concept", 0.7),
    ("Hypothesis", "RAISES", "Question", 0.3),
    ("Note", "ABOUT", "Concept", 1.0),
    ("Note", "INFORMS", "Question", 0.3),
    ("Citation", "SUPPORTS", "Concept", 0.6),
    ("Citation", "GROUNDS", "Hypothesis", 0.4),
    ("Citation", "ABOUT", "Component", 0.3),
)
REVISED_SHARE = 0.03
LOCAL_SHARE = 0.75
NODES_PER_ENCOUNTER = 50


@dataclass(frozen=True)
class Memory:
    nodes: list[NodeRecord]
    edges: list[EdgeRecord]


def synthetic_memory(size: int, *, seed: int = SEED) -> Memory:
    """A memory of ``size`` nodes and about ``EDGES_PER_NODE * size`` authored relations."""
    for src, rel, dst, _ in TEMPLATES:
        assert RELATION_TYPES[rel].allows(src, dst), (src, rel, dst)
    rng = np.random.default_rng(seed)
    names = list(TYPE_SHARES)
    kinds = rng.choice(len(names), size=size, p=np.asarray(list(TYPE_SHARES.values())))
    ids = [f"{NODE_TYPES[names[k]].id_prefix}_{i:07d}" for i, k in enumerate(kinds.tolist())]
    by_type = {name: np.flatnonzero(kinds == j) for j, name in enumerate(names)}

    successor: dict[int, int] = {}
    for members in by_type.values():
        chosen = rng.choice(members, size=2 * int(len(members) * REVISED_SHARE), replace=False)
        pairs = np.sort(chosen.reshape(-1, 2), axis=1)
        successor.update((int(old), int(new)) for old, new in pairs)

    nodes: list[NodeRecord] = []
    for i, k in enumerate(kinds.tolist()):
        kind = names[k]
        shares = STATUS_SHARES.get(kind)
        status = None
        if shares is not None:
            status = str(rng.choice(list(shares), p=np.asarray(list(shares.values()))))
        props: dict[str, Any] = {}
        if kind == "Component":
            props = {"source_kind": "file", "source_label": "repo", "source_key": f"src/{i}.py"}
        nodes.append(
            NodeRecord(
                id=ids[i],
                type=kind,
                name=f"{kind.lower()} {i}",
                description=f"synthetic {kind.lower()} number {i}",
                tick=i + 1,
                created_at="2025-01-01T00:00:00+00:00",
                status=status,
                props=props,
                encounter=f"enc-{i // NODES_PER_ENCOUNTER:05d}",
                superseded_by=ids[successor[i]] if i in successor else None,
            )
        )

    expected = sum(rate * TYPE_SHARES[src] for src, _, _, rate in TEMPLATES)
    scale = (EDGES_PER_NODE - REVISED_SHARE) / expected
    edges: list[EdgeRecord] = []
    for src, rel, dst, rate in TEMPLATES:
        sources, targets = by_type[src], by_type[dst]
        count = round(rate * scale * len(sources))
        if count == 0 or len(targets) == 0:
            continue
        s = rng.choice(sources, size=count)
        t = targets[_pick(rng, s, targets)]
        edges.extend(
            EdgeRecord(ids[a], ids[b], rel, size + j + 1)
            for j, (a, b) in enumerate(zip(s.tolist(), t.tolist(), strict=True))
        )
    edges.extend(
        EdgeRecord(ids[new], ids[old], "SUPERSEDES", new + 1, revision_why="revised")
        for old, new in successor.items()
    )
    return Memory(nodes, edges)


def _pick(rng: np.random.Generator, sources: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Positions in ``targets``: mostly near the source's era, sometimes an old hub."""
    count = sources.shape[0]
    near = np.searchsorted(targets, sources)
    local = near - rng.geometric(0.08, size=count) + 4
    hub = np.floor(len(targets) * rng.random(count) ** 3).astype(np.int64)
    chosen = np.where(rng.random(count) < LOCAL_SHARE, local, hub)
    return np.clip(chosen, 0, len(targets) - 1)


def measure(size: int, repeats: int) -> dict[str, Any]:
    """Time build_panel on a memory of ``size`` nodes, with a baseline for drift."""
    memory = synthetic_memory(size)
    with tempfile.TemporaryDirectory() as directory:
        store = BaselineStore(Path(directory))
        orient_panel(memory.nodes, memory.edges, baselines=store, encounter="bench-before")
        reading = store.previous("bench-now")
    runs: list[tuple[float, float, SectionTimer, int]] = []
    for _ in range(repeats):
        timer = SectionTimer()
        wall, cpu = time.perf_counter(), time.process_time()
        panel = build_panel(memory.nodes, memory.edges, baseline=reading, timer=timer)
        runs.append((time.perf_counter() - wall, time.process_time() - cpu, timer, len(panel.text)))
    seconds = [r[0] for r in runs]
    median = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return {
        "nodes": size,
        "authored_edges": len(memory.edges),
        "seconds": round(statistics.median(seconds), 4),
        "seconds_all": [round(s, 4) for s in seconds],
        "cpu_seconds": round(statistics.median(r[1] for r in runs), 4),
        "steps": {k: round(v, 4) for k, v in median[2].seconds.items()},
        "cpu_steps": {k: round(v, 4) for k, v in median[2].cpu_seconds.items()},
        "peak_rss_mb": round(peak_mb, 1),
        "panel_chars": median[3],
        "goal_seconds": GOALS_SECONDS.get(size),
    }


def run(quick: bool) -> dict[str, Any]:
    """Measure every size (1k only when ``quick``), each in a fresh process."""
    sizes = SIZES[:1] if quick else SIZES
    context = multiprocessing.get_context("spawn")
    results: list[dict[str, Any]] = []
    for size in sizes:
        repeats = 3 if size <= 10_000 else 1
        with context.Pool(1) as pool:
            results.append(pool.apply(measure, (size, repeats)))
    return {
        "benchmark": "orient build_panel, in-process engine (igraph + scipy)",
        "edges_per_node": EDGES_PER_NODE,
        "seed": SEED,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {multiprocessing.cpu_count()} CPUs",
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "results": results,
    }


def format_table(report: dict[str, Any]) -> str:
    """One row per size: wall and CPU seconds, peak RSS, then CPU seconds per step."""
    results: list[dict[str, Any]] = report["results"]
    last: dict[str, float] = results[-1]["cpu_steps"]
    steps = sorted({k for r in results for k in r["cpu_steps"]}, key=lambda k: -last.get(k, 0.0))
    head = ["nodes", "edges", "wall s", "cpu s", "goal", "peak MB", *steps]
    rows = [
        [
            f"{r['nodes']:,}",
            f"{r['authored_edges']:,}",
            f"{r['seconds']:.3f}",
            f"{r['cpu_seconds']:.3f}",
            "-" if r["goal_seconds"] is None else f"<{r['goal_seconds']:g}",
            f"{r['peak_rss_mb']:.0f}",
            *(f"{r['cpu_steps'].get(k, 0.0):.3f}" for k in steps),
        ]
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(head)]
    load = ", ".join(str(x) for x in report["load_average"])
    lines = [
        f"{report['benchmark']} · {report['machine']} · Python {report['python']} "
        f"· load average {load}",
        "  ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
        *("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)) for row in rows),
        "(step columns: CPU seconds of the median run)",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.orient_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="1k nodes only")
    parser.add_argument("--json", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    report = run(args.quick)
    print(format_table(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
