"""A large memory on Neo4j: bulk-loaded through ``kenning-encounter import``, then served.

    python -m bench scale --nodes N        (or python -m bench.scale_bench N [--quick])

A synthetic dump of N nodes (bench.synth_dump) is written, the test Neo4j
(KENNING_ENCOUNTER_TEST_NEO4J_URI, with the test credentials; it must carry the
test marker, and it is EMPTIED) is emptied, and the dump is imported by the real
command in a subprocess: the load time is the import's wall time, its check
included. Then, in this process, on the loaded store:

- search: Memory.search over the synthetic topics, p50/p95;
- lookup: Memory.find_by_name on the newest live nodes of each type, p50/p95;
- infuse: the lexical infusion pipeline, a fresh session per prompt with the ledger
  in the store (as bench.infuse_bench measures it), p50/p95 of its own total: first
  the prompts right after the load, then as many others on the same infuser (warm:
  its caches filled by serving, as a server's are after a while);
- orient: the authored graph read from the store, then the whole panel on GDS
  (build_panel with the GDS engine), each timed, ``ORIENTS`` runs after one warm-up.

Without a named Neo4j, nothing answering there, or no GDS (orient only), the
result says so (``skipped``); any other failure raises.
"""

from __future__ import annotations

import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.stats import pct
from bench.synth import _PLACES, _TOPICS, _VERBS  # pyright: ignore[reportPrivateUsage]
from bench.synth_dump import _at, write_dump  # pyright: ignore[reportPrivateUsage]

SEARCHES = 200
PROMPTS = 200
ORIENTS = 3
HUGE = 500_000
INFUSE_GOAL_MS = 60.0  # issue #15 item 6, at 100k nodes


def _queries(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [
        f"{rng.choice(_TOPICS)} {rng.choice(_VERBS)} {rng.choice(_PLACES)}" for _ in range(count)
    ]


def _ms(seconds: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(seconds) * 1000, 2),
        "p95_ms": round(pct(seconds, 0.95) * 1000, 2),
    }


def import_through_cli(path: Path, uri: str, username: str, password: str) -> float:
    """Seconds the real ``import`` command took (its check, its writes, its exit)."""
    return timed_import(
        path,
        {
            "KENNING_ENCOUNTER_STORE": "neo4j",
            "NEO4J_URI": uri,
            "NEO4J_USERNAME": username,
            "NEO4J_PASSWORD": password,
            "NEO4J_DATABASE": "neo4j",
        },
    )


def timed_import(path: Path, settings: dict[str, str]) -> float:
    """Seconds ``kenning-encounter import PATH`` took with ``settings`` in its environment."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "import", str(path)],
        env={**os.environ, **settings},
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"import failed ({done.returncode}): {done.stderr[-2000:]}")
    return took


def memory_now(store: Any) -> datetime:
    """The synthetic memory's present: the time of its last record. Its records are dated
    from 2025 (the same arguments give the same file), and standing (memory/activation.py)
    fades by time since a use, so the reads are put at the memory's own present, as to a
    memory in use, rather than a year and more after its last work."""
    tick = store.read(lambda tx: tx.clock())
    return datetime.fromisoformat(_at(tick).replace("Z", "+00:00"))


def measure_search(store: Any, queries: list[str]) -> dict[str, float]:
    from kenning_encounter.memory.service import Memory

    memory = Memory(store)
    now = memory_now(store)
    memory.search(queries[0], limit=10, now=now)
    times: list[float] = []
    for query in queries:
        started = time.perf_counter()
        memory.search(query, limit=10, now=now)
        times.append(time.perf_counter() - started)
    return {f"search_{k}": v for k, v in _ms(times).items()}


LOOKUPS_PER_TYPE = 20


def measure_lookup(store: Any) -> dict[str, float]:
    """find_by_name, p50/p95, on the newest live nodes of each authored type (most never
    revised): a lookup's cost must not grow with the memory (a chain walk once did, 4 ms
    at 100k nodes)."""
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

    def newest(tx: Any) -> list[str]:
        return [n.name for t in AUTHORED_NODE_TYPES for n in tx.recent_heads(t, LOOKUPS_PER_TYPE)]

    memory = Memory(store)
    names = store.read(newest)
    if not names:
        return {}
    memory.find_by_name(names[0])
    times: list[float] = []
    for name in names:
        started = time.perf_counter()
        memory.find_by_name(name)
        times.append(time.perf_counter() - started)
    return {f"lookup_{k}": v for k, v in _ms(times).items()}


def measure_infuse(
    store: Any, queries: list[str], warm_queries: list[str] | None = None
) -> dict[str, Any]:
    """The first prompts after the load (the process's caches empty: its node cache,
    term counts and member lists fill as they go), then, when ``warm_queries`` are given,
    as many other prompts on the same infuser: a server that has been serving a while."""
    from kenning_encounter.infusion.config import InfusionConfig
    from kenning_encounter.infusion.ledger_store import StoreLedger
    from kenning_encounter.infusion.pipeline import Infuser
    from kenning_encounter.memory.gates import Gate, GatedStore

    # Behind the read gate with nothing granted, as a server serves it by default.
    gated = GatedStore(store, Gate(()))
    infuser = Infuser(gated, InfusionConfig(), ledger=StoreLedger(store.ledgers))
    now = memory_now(store)
    infuser.infuse("scale-warm-up", queries[0], now=now)
    totals: list[float] = []
    stages: dict[str, list[float]] = {"select": [], "rank": [], "format": [], "ledger": []}
    silent = 0
    for i, prompt in enumerate(queries):
        result = infuser.infuse(f"scale-{i}", f"what do we know about the {prompt}?", now=now)
        timings = result["meta"]["timings_ms"]
        totals.append(timings["total"] / 1000)
        for stage, values in stages.items():
            values.append(timings[stage])
        silent += result["payload"] == ""
    warm: dict[str, Any] = {}
    if warm_queries:
        again: list[float] = []
        for i, prompt in enumerate(warm_queries):
            result = infuser.infuse(f"warm-{i}", f"what do we know about the {prompt}?", now=now)
            again.append(result["meta"]["timings_ms"]["total"] / 1000)
        warm = {f"infuse_warm_{k}": v for k, v in _ms(again).items()}
    return {
        **{f"infuse_{k}": v for k, v in _ms(totals).items()},
        **{f"infuse_{s}_p95_ms": round(pct(v, 0.95), 2) for s, v in stages.items()},
        "infuse_silent": silent,
        **warm,
    }


def measure_orient(store: Any, runs: int, *, warm: bool = True) -> dict[str, Any]:
    from kenning_encounter.analytics.gds import GdsEngine
    from kenning_encounter.analytics.orient import build_panel

    executor = store.analytics_executor()
    if executor is None:
        return {"orient": "skipped: this Neo4j has no GDS"}
    engine = GdsEngine(executor)
    reads: list[float] = []
    panels: list[float] = []
    chars = 0
    for attempt in range(runs + warm):  # a first run warms GDS's code paths up
        started = time.perf_counter()
        graph = store.read(lambda tx: tx.authored_outline())
        read = time.perf_counter() - started
        started = time.perf_counter()
        panel = build_panel(graph.nodes, graph.relations, engine=engine)
        built = time.perf_counter() - started
        chars = len(panel.text)
        if attempt or not warm:
            reads.append(read)
            panels.append(built)
    return {
        "orient_read_graph_s": round(statistics.median(reads), 2),
        "orient_panel_gds_s": round(statistics.median(panels), 2),
        "orient_total_s": round(
            statistics.median(r + p for r, p in zip(reads, panels, strict=True)), 2
        ),
        "orient_panel_chars": chars,
    }


EMPTY_BATCH = 2_000


def _empty_large(target: Any) -> None:
    """Delete a marked database's nodes in small transactions first: a large memory's
    in the tests' emptying batches overruns a server's transaction memory (256 MiB on
    the test server). An unmarked database is left alone (open_emptied refuses it)."""
    import neo4j
    from tests.support.neo4j_target import MARKER_LABEL, is_marked

    with (
        neo4j.GraphDatabase.driver(target.uri, auth=target.auth) as driver,
        driver.session(database=target.database) as session,
    ):
        if not is_marked(session):
            return
        # One short transaction a batch, relations first: a single statement deleting
        # in transactions still held every matched node in the outer one, and ran the
        # server's memory pool out on a 100k memory (1 GiB heap).
        for statement in (
            f"MATCH ()-[r]->() WITH r LIMIT {EMPTY_BATCH} DELETE r RETURN count(*)",
            f"MATCH (n) WHERE NOT n:{MARKER_LABEL} WITH n LIMIT {EMPTY_BATCH} "
            "DETACH DELETE n RETURN count(*)",
        ):
            while True:
                row = session.run(statement).single()
                if row is None or int(row[0]) == 0:
                    break


def run_size(
    nodes: int, *, searches: int = SEARCHES, prompts: int = PROMPTS, orients: int = ORIENTS
) -> dict[str, Any]:
    import neo4j
    from neo4j.exceptions import ServiceUnavailable
    from tests.support.neo4j_store import open_emptied
    from tests.support.neo4j_target import URI_VAR, configured

    target = configured()
    if target is None:
        return {"skipped": f"no Neo4j named: set {URI_VAR}"}
    try:
        with neo4j.GraphDatabase.driver(target.uri, auth=target.auth, connection_timeout=5.0) as d:
            d.verify_connectivity()
    except ServiceUnavailable as exc:
        return {"skipped": f"no Neo4j answered at {target.uri}: {exc}"}
    row: dict[str, Any] = {"nodes": nodes}
    with tempfile.TemporaryDirectory(prefix="kenning-scale-") as tmp:
        path = Path(tmp) / "memory.jsonl"
        started = time.perf_counter()
        counts = write_dump(path, nodes, seed=nodes)
        row["dump_written_s"] = round(time.perf_counter() - started, 1)
        records = sum(counts.values())
        row |= {
            "records": records,
            "relations": counts["relation"],
            "encounters": counts["encounter"],
        }
        _empty_large(target)
        open_emptied(target.uri).close()
        took = import_through_cli(path, target.uri, target.username, target.password)
    row["import_s"] = round(took, 1)
    row["import_records_per_s"] = round(records / took)
    store = open_emptied_not(target)
    try:
        queries = _queries(max(searches, 2 * prompts), seed=nodes)
        row |= measure_search(store, queries[:searches])
        row |= measure_lookup(store)
        row |= measure_infuse(store, queries[:prompts], queries[prompts : 2 * prompts])
        row["infuse_goal_p95_ms"] = INFUSE_GOAL_MS
        # at a million nodes one panel takes minutes: measured once, unwarmed
        row |= measure_orient(store, orients, warm=nodes < HUGE)
    finally:
        store.close()
    return row


def open_emptied_not(target: Any) -> Any:
    """The loaded store, opened as a server would open it (nothing emptied), its node
    cache warming on a thread meanwhile as a server's does (server/context.py)."""
    from kenning_encounter.store.neo4j import Neo4jStore

    store = Neo4jStore.open(target.uri, target.username, target.password, target.database)
    store.start_warming()
    return store


def run(quick: bool = False, nodes: int | None = None) -> dict[str, Any]:
    """``python -m bench scale [--nodes N]``: 100k nodes by default, 2k when quick."""
    size = nodes or (2_000 if quick else 100_000)
    small = quick or size <= 5_000
    row = run_size(
        size,
        searches=50 if small else SEARCHES,
        prompts=50 if small else PROMPTS,
        orients=1 if small or size >= HUGE else ORIENTS,
    )
    if "skipped" in row:
        return row
    return {"goals": f"infuse p95 <= {INFUSE_GOAL_MS:g} ms at 100k nodes on Neo4j", "rows": [row]}


if __name__ == "__main__":
    import json

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(
        json.dumps(run(quick="--quick" in sys.argv, nodes=int(args[0]) if args else None), indent=2)
    )
