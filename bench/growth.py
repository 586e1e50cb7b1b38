"""How a figure grows with the memory, and how it stands against the last release's.

Two readings of a bench's rows (each row one size, ``nodes``):

- ``growth``: for every time-like figure measured at three sizes or more, the power
  ``k`` of ``cost ~ n**k`` fitted by least squares on log-log, and the term that says
  (constant, logarithmic, n**k, linear, n log n, quadratic). A throughput
  (``*_per_s``) is read as its cost per item.
- ``against``: each figure beside the one a release recorded for the same bench and
  size (``bench/recorded/<version>.json``), with the ratio, and a flag when the
  change is beyond that figure's noise band. A flag is a note for a person, never a
  failure: these machines are shared and one run can be twice another.

``python -m bench.growth RESULTS.json [...]`` reads saved runs (``bench/results``),
merging their rows by bench and size, and prints both readings.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

RECORDED: Final = Path(__file__).with_name("recorded")
PREVIOUS: Final = "0.1.0"  # the release the figures are read against
# How far one run may stray from another on these machines before it is worth a look,
# as a factor either way; a figure not named here takes the default.
DEFAULT_BAND: Final = 1.6
_TIME_SUFFIXES: Final = ("_ms", "_s")


def is_throughput(column: str) -> bool:
    return column.endswith("per_s")


def is_cost(column: str) -> bool:
    named = column.endswith(_TIME_SUFFIXES) or column == "seconds"
    return named and not column.startswith("goal")


def cost_of(column: str, value: float) -> float:
    """A figure as a cost (larger is slower): a throughput becomes seconds per item."""
    return 1.0 / value if is_throughput(column) else value


def fit_power(points: Sequence[tuple[float, float]]) -> float:
    """``k`` in ``y ~ x**k``: least squares on log-log over positive points."""
    logs = [(math.log(x), math.log(y)) for x, y in points if x > 0 and y > 0]
    if len(logs) < 2:
        raise ValueError("a fit needs two positive points or more")
    mx = sum(x for x, _ in logs) / len(logs)
    my = sum(y for _, y in logs) / len(logs)
    sxx = sum((x - mx) ** 2 for x, _ in logs)
    if sxx == 0:
        raise ValueError("a fit needs two sizes or more")
    return sum((x - mx) * (y - my) for x, y in logs) / sxx


def term(k: float) -> str:
    """The term a power says dominates."""
    if k < 0.07:  # log n alone, from 1k to 1M, fits as 0.10
        return "constant"
    if k < 0.35:
        return "logarithmic or a small power"
    if k < 0.85:
        return f"n^{k:.2f}"
    if k < 1.15:
        return "linear"
    if k < 1.4:
        return "n log n"
    return "quadratic or worse" if k >= 1.8 else f"n^{k:.2f}"


def growth(rows: Iterable[Mapping[str, Any]], *, least: int = 3) -> list[dict[str, Any]]:
    """One line per cost figure measured at ``least`` sizes or more."""
    by_size: dict[int, Mapping[str, Any]] = {}
    for row in rows:
        if isinstance(row.get("nodes"), int):
            by_size[row["nodes"]] = row
    sizes = sorted(by_size)
    columns = dict.fromkeys(c for n in sizes for c in by_size[n] if is_cost(c))
    lines: list[dict[str, Any]] = []
    for column in columns:
        points = [
            (float(n), cost_of(column, float(by_size[n][column])))
            for n in sizes
            if isinstance(by_size[n].get(column), int | float) and by_size[n][column] > 0
        ]
        if len(points) < least:
            continue
        k = fit_power(points)
        lines.append(
            {
                "figure": column,
                "sizes": f"{int(points[0][0]):,}-{int(points[-1][0]):,}",
                "power": round(k, 2),
                "dominant": term(k),
            }
        )
    return lines


def recorded(version: str = PREVIOUS, folder: Path = RECORDED) -> dict[str, Any]:
    """A release's recorded figures: {"benches": {bench: {nodes: {figure: value}}}, "bands"}."""
    path = folder / f"{version}.json"
    if not path.is_file():
        return {"benches": {}, "bands": {}}
    return json.loads(path.read_text(encoding="utf-8"))


def against(
    bench: str, rows: Iterable[Mapping[str, Any]], record: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Each figure of ``rows`` that ``record`` also holds, with the ratio and its flag."""
    was_of: Mapping[str, Mapping[str, float]] = record.get("benches", {}).get(bench, {})
    bands: Mapping[str, float] = record.get("bands", {})
    lines: list[dict[str, Any]] = []
    for row in rows:
        size = row.get("nodes")
        was_row = was_of.get(str(size), {})
        for column, was in was_row.items():
            now = row.get(column)
            if not isinstance(now, int | float) or not was:
                continue
            ratio = now / was
            band = float(bands.get(column, DEFAULT_BAND))
            # a throughput that fell, or a time that rose, is the worse way
            worse = ratio < 1 if is_throughput(column) else ratio > 1
            beyond = ratio > band or ratio < 1 / band
            flag = ("slower" if worse else "faster") if beyond else ""
            lines.append(
                {
                    "figure": f"{column} @ {size:,}" if isinstance(size, int) else column,
                    "was": was,
                    "now": now,
                    "ratio": round(ratio, 2),
                    "band": f"x{band:g}",
                    "flag": flag,
                }
            )
    return lines


def readings(bench: str, result: Any, record: Mapping[str, Any]) -> dict[str, list[Any]]:
    rows = result.get("rows") if isinstance(result, dict) else None
    if not isinstance(rows, list):
        return {"growth": [], "against": []}
    return {"growth": growth(rows), "against": against(bench, rows, record)}


def _merged(paths: Sequence[Path]) -> dict[str, list[dict[str, Any]]]:
    benches: dict[str, dict[Any, dict[str, Any]]] = {}
    for path in paths:
        saved = json.loads(path.read_text(encoding="utf-8"))
        for name, result in saved.get("benches", {}).items():
            for row in result.get("rows", []) if isinstance(result, dict) else []:
                benches.setdefault(name, {}).setdefault(row.get("nodes"), {}).update(row)
    return {name: list(rows.values()) for name, rows in benches.items()}


def main(argv: Sequence[str]) -> int:
    if not argv:
        print("usage: python -m bench.growth RESULTS.json [...]", file=sys.stderr)
        return 2
    record = recorded()
    for name, rows in _merged([Path(a) for a in argv]).items():
        read = readings(name, {"rows": rows}, record)
        for title, lines in read.items():
            if lines:
                print(f"\n== {name}: {title}")
                for line in lines:
                    print("  ".join(f"{k}={v}" for k, v in line.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
