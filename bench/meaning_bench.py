"""Meaning sidecar and matcher prompt assembly at 1k, 10k and 100k entries.

For each size, a sidecar of synthetic one-sentence meanings is written and
reopened, then the matcher's prompt is assembled (no model call):

- full listing: every meaning in the prompt (budget set above their total);
  "cold" is the first assembly after the sidecar changed (render + handle
  map), "warm" reuses the cached listing;
- window: the default 60,000-char budget, candidates from a synthetic
  CandidateSource (lexical, neighbourhood, recent), filled up with the newest.

Also reported: bulk load, reopen time, log size and the latency of one
durable put (append + fsync) at that size.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kenning_encounter.meaning.matcher import Matcher, MatcherOptions
from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider
from kenning_encounter.meaning.sidecar import SidecarStore

WORDS = [
    "harbour",
    "tide",
    "release",
    "signing",
    "key",
    "export",
    "refund",
    "order",
    "timezone",
    "midnight",
    "warehouse",
    "shelf",
    "lighthouse",
    "fog",
    "dawn",
    "invoice",
    "ledger",
    "audit",
    "schema",
    "migration",
    "cache",
    "latency",
    "queue",
    "worker",
    "proposal",
    "meeting",
    "budget",
    "forecast",
    "vendor",
    "contract",
    "sensor",
    "calibration",
    "drift",
    "anomaly",
    "deploy",
    "rollback",
    "incident",
    "outage",
    "customer",
    "ticket",
    "backlog",
    "sprint",
    "estimate",
    "review",
]
FILLER = [
    "the",
    "a",
    "of",
    "in",
    "on",
    "for",
    "with",
    "after",
    "before",
    "when",
    "because",
    "about",
]

PROMPT = "Why did the refund export double-count orders after the midnight timezone change?"
TRAJECTORY = [
    "we shipped the ledger fix yesterday",
    "can you check whether the nightly export still runs before the audit?",
    "also the vendor contract renewal is next week",
]
DEFAULT_BUDGET = MatcherOptions().prompt_budget_chars


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS if i % 2 == 0 else FILLER) for i in range(rng.randint(12, 20))]
    return " ".join(words).capitalize() + "."


class SyntheticCandidates:
    """Stands in for the lexical index and the graph: fixed-cost lookups over known ids."""

    def __init__(self, ids: list[str], rng: random.Random) -> None:
        self._ids = ids
        self._rng = rng

    def lexical_hits(self, text: str, limit: int) -> list[str]:
        return self._rng.sample(self._ids, min(limit, 300, len(self._ids)))

    def recent(self, limit: int) -> list[str]:
        return self._ids[-min(limit, 100) :][::-1]

    def neighbourhood(self, limit: int) -> list[str]:
        return self._rng.sample(self._ids, min(limit, 150, len(self._ids)))


def timed(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def stats(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "max_ms": round(ordered[-1], 3),
    }


def run_size(n: int, runs: int, folder: Path) -> dict[str, Any]:
    rng = random.Random(n)
    ids = [f"obs_{i:012x}" for i in range(n)]
    items = [(node_id, sentence(rng), "0" * 24, i + 1) for i, node_id in enumerate(ids)]
    directory = folder / f"sidecar-{n}"

    with SidecarStore(directory) as store:
        build_ms = timed(lambda: store.put_many(items))
    log_bytes = (directory / "meanings.log").stat().st_size
    reopen_ms = [timed(lambda: SidecarStore(directory).close()) for _ in range(min(runs, 5))]

    store = SidecarStore(directory)
    try:
        puts = [
            timed(lambda k=k: store.put(f"new_{k:012x}", sentence(rng), "1" * 24, order=n + k + 1))
            for k in range(runs)
        ]
        provider = OpenAICompatProvider(base_url="http://127.0.0.1:9/v1", model="bench")
        full = Matcher(store, provider, MatcherOptions(prompt_budget_chars=10**9))
        windowed = Matcher(store, provider, MatcherOptions(prompt_budget_chars=DEFAULT_BUDGET))
        source = SyntheticCandidates(ids, rng)

        cold: list[float] = []
        for k in range(runs):
            store.put(f"bump_{k:012x}", sentence(rng), "2" * 24, order=10 * n + k)
            cold.append(timed(lambda: full.assemble(PROMPT, TRAJECTORY)))
        warm = [timed(lambda: full.assemble(PROMPT, TRAJECTORY)) for _ in range(runs)]
        system, user, info = full.assemble(PROMPT, TRAJECTORY)
        full_chars = len(system) + len(user)

        win = [
            timed(lambda: windowed.assemble(PROMPT, TRAJECTORY, candidates=source))
            for _ in range(runs)
        ]
        wsystem, wuser, winfo = windowed.assemble(PROMPT, TRAJECTORY, candidates=source)
        win_chars = len(wsystem) + len(wuser)
    finally:
        store.close()
    return {
        "entries": n,
        "bulk_load_ms": round(build_ms, 1),
        "reopen": stats(reopen_ms),
        "log_mb": round(log_bytes / 1e6, 2),
        "durable_put": stats(puts),
        "full": {
            "cold": stats(cold),
            "warm": stats(warm),
            "prompt_chars": full_chars,
            "approx_tokens": full_chars // 4,
            "listed": info.size,
        },
        "window": {
            "assemble": stats(win),
            "prompt_chars": win_chars,
            "approx_tokens": win_chars // 4,
            "listed": winfo.size,
            "used": winfo.used,
            "by_source": dict(winfo.by_source),
        },
    }


def run(quick: bool) -> dict[str, Any]:
    sizes = [1_000] if quick else [1_000, 10_000, 100_000]
    runs = 5 if quick else 20
    with tempfile.TemporaryDirectory(prefix="meaning-bench-") as folder:
        results = [run_size(n, runs, Path(folder)) for n in sizes]
    return {"runs": runs, "budget_chars": DEFAULT_BUDGET, "sizes": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1k entries only")
    result = run(parser.parse_args().quick)
    print(f"{result['runs']} runs per figure; window budget {result['budget_chars']} chars")
    header = (
        f"{'entries':>8} {'load ms':>8} {'reopen':>8} {'log MB':>7} {'put p50':>8} "
        f"{'full cold':>10} {'full warm':>10} {'full chars':>11} "
        f"{'win p50':>8} {'win chars':>10} {'win size':>9}"
    )
    print(header)
    for r in result["sizes"]:
        print(
            f"{r['entries']:>8} {r['bulk_load_ms']:>8} {r['reopen']['p50_ms']:>8} "
            f"{r['log_mb']:>7} {r['durable_put']['p50_ms']:>8} "
            f"{r['full']['cold']['p50_ms']:>10} {r['full']['warm']['p50_ms']:>10} "
            f"{r['full']['prompt_chars']:>11} {r['window']['assemble']['p50_ms']:>8} "
            f"{r['window']['prompt_chars']:>10} {r['window']['listed']:>9}"
        )
    print("times in ms (p50); chars are the whole prompt (system + user); ~4 chars per token")


if __name__ == "__main__":
    main()
