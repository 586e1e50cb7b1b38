"""Tool-call fuzzing at length: every served tool, valid and malformed calls interleaved.

The same engine as tests/e2e/test_fuzz.py (tests/support/fuzz.py), run for
many more calls: each hypothesis example is a fresh in-process server taking a
run of drawn calls, and ends with the store checked against DESIGN.md §3.

    python -m bench fuzz [--quick]

Goals (issue 13): 0 unhandled errors, 0 writes by failed calls, 0 invariant breaks.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import anyio
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from tests.support.fuzz import Tally, fuzz_session

CALLS_PER_RUN = 60
LONG_RUNS = 90  # 5,400 calls
QUICK_RUNS = 3


def run(quick: bool = False) -> dict[str, Any]:
    logging.getLogger("mcp").setLevel(logging.WARNING)  # every refusal is logged at INFO
    logging.getLogger("kenning_encounter").setLevel(logging.WARNING)
    runs = QUICK_RUNS if quick else LONG_RUNS
    tally = Tally()
    broken: list[str] = []

    @settings(
        max_examples=runs,
        deadline=None,
        database=None,
        phases=(Phase.generate,),
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(st.data())
    def one_run(data: st.DataObject) -> None:
        try:
            anyio.run(fuzz_session, data.draw, CALLS_PER_RUN, tally)
        except AssertionError as exc:  # an invariant broke: count it, keep fuzzing
            broken.append(str(exc)[:500])

    started = time.perf_counter()
    one_run()
    seconds = round(time.perf_counter() - started, 1)
    tools = sorted(set(tally.ok) | set(tally.refused))
    return {
        "rows": [{"tool": t, "ok": tally.ok[t], "refused": tally.refused[t]} for t in tools],
        "runs": runs,
        "calls": tally.calls,
        "unhandled_errors": len(tally.unhandled),
        "off_style_refusals": len(tally.off_style),
        "writes_by_failed_calls": len(tally.failed_writes),
        "malformed_accepted": len(tally.accepted_malformed),
        "transport_errors": len(tally.transport),
        "invariant_breaks": len(broken),
        "refusals_by_tool": dict(tally.refused),
        "calls_by_kind": dict(tally.kinds),
        "top_refusals": dict(tally.reasons.most_common(40)),
        "findings": [*tally.findings[:20], *broken[:5]],
        "seconds": seconds,
        "goals": "unhandled_errors, writes_by_failed_calls, invariant_breaks all 0",
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(quick=True), indent=1))
