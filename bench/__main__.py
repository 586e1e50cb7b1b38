"""Run every benchmark, or the named ones: ``python -m bench [--quick] [--json OUT] [NAME ...]``.

Each benchmark module offers ``run(quick: bool) -> dict``. Results print as a
table and are written as JSON (default ``bench/results/<UTC time>.json``) with
the machine facts, so a figure in the release notes can be traced to its run.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import platform
import sys
import time
import traceback
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench import growth

BENCHES: dict[str, str] = {
    "store": "bench.store_bench",
    "infuse": "bench.infuse_bench",
    "activation": "bench.activation_bench",
    "orient": "bench.orient_bench",
    "server": "bench.server_bench",
    "meaning": "bench.meaning_bench",
    "hook": "bench.hook_bench",
    "locomo": "bench.locomo.bench",
    "neo4j": "bench.neo4j_bench",
    "gds": "bench.gds_bench",
    "peers": "bench.peers_bench",
    "fuzz": "bench.fuzz_bench",
    "dump": "bench.dump_bench",
    "scale": "bench.scale_bench",
    "local-scale": "bench.local_scale_bench",
    "startup": "bench.startup_bench",
    "ui": "bench.ui_bench",
    "asof": "bench.asof_bench",
    "chain": "bench.chain_bench",
    "prompt": "bench.prompt_bench",
    "soak": "bench.soak_bench",
}
# Only these take --nodes (their one size); the others measure their own sizes.
SIZED = frozenset({"scale", "local-scale", "ui"})


def machine() -> dict[str, Any]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0.0, 0.0, 0.0)
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in load],
    }


def _rows(result: Any) -> list[dict[str, Any]]:
    if isinstance(result, dict):
        rows = result.get("rows")
        if isinstance(rows, list) and all(isinstance(r, dict) for r in rows):
            return rows  # type: ignore[return-value]
        flat = {k: v for k, v in result.items() if not isinstance(v, dict | list)}
        return [flat] if flat else []
    return []


def print_table(name: str, result: Any) -> None:
    print(f"\n== {name}")
    if isinstance(result, dict) and result.get("skipped"):
        print(f"   skipped: {result['skipped']}")
        return
    rows = _rows(result)
    if not rows:
        print(json.dumps(result, indent=1, default=str)[:4_000])
        return
    columns = list(dict.fromkeys(k for r in rows for k in r))
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))
    if isinstance(result, dict) and result.get("goals"):
        print(f"   goals: {result['goals']}")


def print_readings(result: Any) -> None:
    """How the bench's figures grow with size, and where they moved since the last release."""
    readings = result.get("readings") if isinstance(result, dict) else None
    if not readings:
        return
    for line in readings["growth"]:
        print(
            f"   grows: {line['figure']} ~ n^{line['power']} ({line['dominant']}, {line['sizes']})"
        )
    for line in readings["against"]:
        flag = f"  <- {line['flag']}, beyond {line['band']}" if line["flag"] else ""
        print(
            f"   vs {growth.PREVIOUS}: {line['figure']} was {line['was']}, now {line['now']} "
            f"(x{line['ratio']}){flag}"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "names", nargs="*", help=f"benchmarks to run (default all): {', '.join(BENCHES)}"
    )
    parser.add_argument("--quick", action="store_true", help="smallest sizes only (CI smoke run)")
    parser.add_argument("--json", type=Path, help="where to write the results")
    parser.add_argument("--nodes", type=int, help=f"the size to measure ({', '.join(SIZED)} only)")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in BENCHES]
    if unknown:
        parser.error(
            f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(BENCHES)}"
        )
    names = args.names or list(BENCHES)
    results: dict[str, Any] = {"machine": machine(), "quick": args.quick, "benches": {}}
    record = growth.recorded()
    failed: list[str] = []
    for name in names:
        started = time.perf_counter()
        try:
            module = importlib.import_module(BENCHES[name])
            sized = {"nodes": args.nodes} if args.nodes and name in SIZED else {}
            result = module.run(quick=args.quick, **sized)
        except Exception as exc:
            traceback.print_exc()
            result = {"error": f"{type(exc).__name__}: {exc}"}
            failed.append(name)
        elapsed = round(time.perf_counter() - started, 1)
        if isinstance(result, dict):
            result.setdefault("seconds", elapsed)
            result["readings"] = growth.readings(name, result, record)
        results["benches"][name] = result
        print_table(f"{name} ({elapsed}s)", result)
        print_readings(result)
    out = args.json or Path("bench/results") / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, default=str))
    print(f"\nresults: {out}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
