"""Benchmark of orient on Neo4j GDS against the in-process engine, in one run.

    python -m bench.gds_bench [--quick] [bolt://127.0.0.1:7687]

Both engines build the whole panel (build_panel) from the same synthetic memory
(bench.orient_bench's generator, about three authored relations per node) at
1k and 10k nodes (1k only when quick). For each engine one untimed run warms
up (the JVM compiles GDS's code paths on first use), then ``REPEATS`` timed
runs; the median is reported with the steps of the median run. The GDS figure
includes sending the projection to the server, every algorithm call and the
drop. The panels' mass and frontier lists are compared as a check.

The server is the URI given, or KENNING_ENCOUNTER_TEST_NEO4J_URI, with the test
credentials (never NEO4J_URI and its siblings, a real memory's settings). Nothing
is written to its database. With none named, nothing answering there, or no GDS
the result is ``{"skipped": reason}``; a refused login raises.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from typing import TYPE_CHECKING, Any

from tests.support.neo4j_target import URI_VAR, at, configured

from bench.orient_bench import synthetic_memory
from kenning_encounter.analytics import InProcessEngine, SectionTimer, build_panel
from kenning_encounter.analytics.engine import Engine
from kenning_encounter.analytics.gds import GdsEngine
from kenning_encounter.analytics.panel import Panel
from kenning_encounter.store.neo4j.gds import open_gds

if TYPE_CHECKING:
    from neo4j import Driver

SIZES = (1_000, 10_000)
REPEATS = 3
STEPS = ("load", "mass", "frontier_mass", "betweenness", "communities", "fragility")


def _time(
    engine: Engine, memory: Any, repeats: int
) -> tuple[float, float, dict[str, float], Panel]:
    """(cold seconds, median seconds, steps of the median run, last panel)."""
    started = time.perf_counter()
    panel = build_panel(memory.nodes, memory.edges, engine=engine)
    cold = time.perf_counter() - started
    runs: list[tuple[float, SectionTimer]] = []
    for _ in range(repeats):
        timer = SectionTimer()
        started = time.perf_counter()
        panel = build_panel(memory.nodes, memory.edges, engine=engine, timer=timer)
        runs.append((time.perf_counter() - started, timer))
    median = sorted(runs, key=lambda r: r[0])[len(runs) // 2]
    seconds = statistics.median(r[0] for r in runs)
    return cold, seconds, median[1].seconds, panel


def _top_ids(panel: Panel) -> list[list[str]]:
    lists: list[list[str]] = []
    for section in (panel.mass, panel.frontier_mass):
        if section is not None:
            lists.append([r.node.id for r in section.top.items])
    return lists


def measure(engine: GdsEngine, size: int, repeats: int = REPEATS) -> dict[str, Any]:
    memory = synthetic_memory(size)
    local_cold, local_s, local_steps, local_panel = _time(InProcessEngine(), memory, repeats)
    gds_cold, gds_s, gds_steps, gds_panel = _time(engine, memory, repeats)
    row: dict[str, Any] = {
        "nodes": size,
        "authored_edges": len(memory.edges),
        "in_process_s": round(local_s, 3),
        "gds_s": round(gds_s, 3),
        "gds_over_in_process": round(gds_s / local_s, 1),
        "in_process_cold_s": round(local_cold, 3),
        "gds_cold_s": round(gds_cold, 3),
    }
    row.update({f"gds_{k}_s": round(gds_steps.get(k, 0.0), 3) for k in STEPS})
    row.update({f"in_process_{k}_s": round(local_steps.get(k, 0.0), 3) for k in STEPS})
    row["same_mass_and_frontier_lists"] = _top_ids(gds_panel) == _top_ids(local_panel)
    row["gds_engines"] = sorted(set(gds_panel.summary.engines.values()))
    return row


def _driver(uri: str) -> Driver:
    import neo4j

    return neo4j.GraphDatabase.driver(uri, auth=at(uri).auth, notifications_min_severity="OFF")


def run(quick: bool = False, uri: str | None = None) -> dict[str, Any]:
    from neo4j.exceptions import ServiceUnavailable

    named = at(uri) if uri else configured()
    if named is None:
        return {"skipped": f"no Neo4j named: pass a bolt URI or set {URI_VAR}"}
    target = named.uri
    try:
        driver = _driver(target)
    except Exception as exc:  # the neo4j package missing or a malformed URI
        return {"skipped": f"no Neo4j driver for {target}: {exc}"}
    try:
        try:
            driver.verify_connectivity()
        except ServiceUnavailable as exc:  # only a silent server is a skip
            return {"skipped": f"no Neo4j answered at {target}: {exc}"}
        executor = open_gds(driver, uri=target)
        if executor is None:
            return {"skipped": f"the Neo4j at {target} has no Graph Data Science plugin"}
        engine = GdsEngine(executor)
        sizes = SIZES[:1] if quick else SIZES
        return {
            "benchmark": "orient build_panel: GDS engine vs in-process engine, same run",
            "uri": target,
            "engine": engine.name,
            "repeats": REPEATS,
            "rows": [measure(engine, size) for size in sizes],
        }
    finally:
        driver.close()


if __name__ == "__main__":
    arguments = [a for a in sys.argv[1:] if not a.startswith("--")]
    report = run(quick="--quick" in sys.argv, uri=arguments[0] if arguments else None)
    print(json.dumps(report, indent=2))
