"""Reading a long prompt's words and times: how the cost grows with its length.

    python -m bench prompt [--quick]

A prompt (or a description) up to the 20,000-character limit, written to be dense in
what the time reader looks at: ranges ("between May 1 and ..."), operators ("since
last ..."), relative weeks, dates and event phrases. Each is read at several lengths
by ``extract_terms`` (the infusion's reading of a prompt: times, events, words) and
``find_times``, best of three; ``growth`` is the time at the longest length over the
time at a quarter of it: about 4 when the cost grows with the length, about 16 when
it grows with its square (session 26 found it at 13 for ranges, now about 3-4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kenning_encounter.infusion.lexical import extract_terms
from kenning_encounter.textproc_time import find_times

NOW = datetime(2026, 12, 5, tzinfo=UTC)
UNITS = {
    "ranges": "between May 1 and ",
    "operators": "since last since last ",
    "weeks": "the week before the week after ",
    "dates": "2023-05-01 ",
    "events": "before the launch of ",
}


def _best_ms(read: Callable[[], object], rounds: int = 3) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        read()
        best = min(best, (time.perf_counter() - started) * 1000)
    return round(best, 2)


def run(quick: bool = False) -> dict[str, Any]:
    lengths = [5_000, 20_000] if quick else [2_500, 5_000, 10_000, 20_000]
    rows: list[dict[str, Any]] = []
    for name, unit in UNITS.items():
        text = unit * (max(lengths) // len(unit) + 1)
        terms = {n: _best_ms(lambda n=n, t=text: extract_terms(t[:n], now=NOW)) for n in lengths}
        times = {n: _best_ms(lambda n=n, t=text: find_times(t[:n], now=NOW)) for n in lengths}
        top, quarter = max(lengths), max(lengths) // 4
        rows.append(
            {
                "text": name,
                **{f"terms_ms_{n}": terms[n] for n in lengths},
                "find_times_ms_max": times[top],
                "growth": round(terms[top] / max(terms[quarter], 0.01), 1),
            }
        )
    return {"goal": "growth about 4 (linear in the prompt's length), never 16", "rows": rows}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
