"""The summary figures every benchmark reports the same way."""

from __future__ import annotations

import statistics
from pathlib import Path


def rss_mib() -> int:
    """This process's resident memory now, in MiB (Linux: /proc/self/status)."""
    status = Path("/proc/self/status").read_text(encoding="ascii")
    return int(status.split("VmRSS:")[1].split()[0]) // 1024


def pct(values: list[float], q: float) -> float:
    """The value at fraction ``q`` (0..1) of the sorted values, nearest rank; 0.0 if none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def search_versus_raw(ours_ms: list[float], raw_ms: list[float]) -> dict[str, float]:
    """Our search times beside the bare engine's: p50, p95 and the p95 ratio."""
    return {
        "search_p50_ms": round(statistics.median(ours_ms), 3),
        "search_p95_ms": round(pct(ours_ms, 0.95), 3),
        "raw_search_p50_ms": round(statistics.median(raw_ms), 3),
        "raw_search_p95_ms": round(pct(raw_ms, 0.95), 3),
        "search_overhead_ratio_p95": round(pct(ours_ms, 0.95) / max(pct(raw_ms, 0.95), 1e-6), 1),
    }
