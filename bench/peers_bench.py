"""Peers side by side: the same workload through the same MCP stdio client.

Servers, each started as a subprocess and driven by ``mcp.Client``:

- ours, ``kenning-encounter serve --transport stdio`` on the embedded store;
- the reference MCP memory server (npm @modelcontextprotocol/server-memory);
- when a Neo4j can be had: ours on Neo4j, and the Neo4j memory server from
  PyPI (mcp-neo4j-memory), one after the other on the same, freshly emptied
  database.

Ours and the reference server run side by side, taking turns call by call, so
machine load falls on both alike (bench.peers.measure). Beside them runs the floor
(bench.peers.floor_server): ours with no memory behind it, asked the same calls,
so the table says what a batch costs before the memory does anything and how
much a write goal leaves the memory above that.

Workload: N entities, each with one observation text, recorded in batches of
50 (N = 10k; 1k with --quick), then the relations among them linked by name in
batches of 50, then M searches (200; 100 with --quick), the same texts, links and
queries for every server (bench.peers.workload), then as many recorded names opened
one call each (ours find_by_name, the peers their open-by-name tools). Reported per
server: write throughput (entities/s over all write calls), links/s, search p50/p95
and open p50/p95, then ratios to ours, as "times faster than the peer" (above 1:
ours is faster).
Our server runs from the ``src`` of the package this process imported: to
measure another tree, put its ``src`` first on ``PYTHONPATH``.
Peers are installed outside the package (``--install``); one that is missing or
fails is reported as skipped or failed with the reason, never silently left out.

    PYTHONPATH=src python -m bench.peers_bench [--quick] [--json OUT]
    PYTHONPATH=src python -m bench.peers_bench --sizes 10000,100000   # one table, a row per size
    PYTHONPATH=src python -m bench.peers_bench --neo4j-only --sizes 100000 --budget-minutes 20
        # the Neo4j pair alone; a server stops after 20 minutes of its own calls
    PYTHONPATH=src python -m bench.peers_bench --install   # the pinned peers, into bench/.peers

Goals: our search at least 5x faster than the reference server at 10k entities
(issue 8); our writes at least 2x its throughput at 10k and 5x at 100k (issue 19:
it rewrites its whole file at every call, so it slows as the file grows).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import anyio

from bench.peers import neo4j_instance
from bench.peers.measure import measure
from bench.peers.servers import (
    DEFAULT_PEERS_DIR,
    FLOOR_LABEL,
    NEO4J_MEMORY_LABEL,
    OURS_LABEL,
    OURS_NEO4J_LABEL,
    REFERENCE_LABEL,
    Neo4jTarget,
    Recipe,
    Unavailable,
    floor,
    neo4j_memory,
    neo4j_memory_install,
    neo4j_memory_missing,
    ours,
    reference,
    reference_install,
)
from bench.peers.workload import BATCH, Workload, build

log = logging.getLogger(__name__)

GOAL_SEARCH_X = 5.0
GOAL_AT_ENTITIES = 10_000
# Entities -> how many times the reference server's write throughput ours must reach.
GOAL_WRITES_X = {10_000: 2.0, 100_000: 5.0}
OURS = frozenset({"ours", "ours_neo4j"})
MEASURED = frozenset({"ok", "partial"})  # "partial": stopped by the time budget
PARTIAL_WHY = "a server was stopped by the time budget (--budget-minutes)"
ORDER = ("ours", "reference", "floor", "ours_neo4j", "neo4j_memory")
COMPARISONS = (("reference", "ours"), ("neo4j_memory", "ours"), ("neo4j_memory", "ours_neo4j"))


def _measure(
    recipes: list[Recipe], workload: Workload, work: Path, budget_s: float | None = None
) -> dict[str, dict[str, Any]]:
    """Measure ``recipes`` together; a Neo4j they use is emptied first and held until the
    end, so nothing else that empties it (a test, another run) can wipe it mid-run."""
    with contextlib.ExitStack() as stack:
        held: set[str] = set()
        for recipe in recipes:
            target = recipe.neo4j
            if target is None:
                continue
            if target.uri not in held:  # held once: a second hold would wait on the first
                stack.enter_context(neo4j_instance.holding(target))
                held.add(target.uri)
            recipe.versions["neo4j server"] = neo4j_instance.empty(target)
        log.info("measuring %s", ", ".join(r.label for r in recipes))
        return anyio.run(measure, recipes, workload, work, OURS, budget_s)


def _skipped(missing: Unavailable) -> dict[str, Any]:
    return {"status": "skipped", "label": missing.label, "reason": missing.reason}


def _neo4j_target(
    work: Path, neo4j_uri: str | None
) -> tuple[Neo4jTarget | str, neo4j_instance.PrivateNeo4j | None]:
    """The server both Neo4j runs use (or why there is none), and the private one to stop."""
    if neo4j_uri is None:
        private = neo4j_instance.PrivateNeo4j(work / "neo4j")
        return private.start(), private
    target = neo4j_instance.given(neo4j_uri)
    return neo4j_instance.reachable(target) or target, None


def _neo4j_pair(
    workload: Workload,
    work: Path,
    peers_dir: Path,
    neo4j_uri: str | None,
    use_neo4j: bool,
    budget_s: float | None = None,
) -> dict[str, dict[str, Any]]:
    """Ours on Neo4j and the Neo4j peer, on one emptied server, or both skipped with why."""
    missing = neo4j_memory_missing(peers_dir)
    reason = "turned off (--no-neo4j)" if not use_neo4j else missing.reason if missing else None
    target, private = (reason, None) if reason else _neo4j_target(work, neo4j_uri)
    try:
        if isinstance(target, str):
            ours_why = f"measured only beside the Neo4j peer, which did not run: {target}"
            return {
                "ours_neo4j": _skipped(Unavailable("ours_neo4j", OURS_NEO4J_LABEL, ours_why)),
                "neo4j_memory": _skipped(Unavailable("neo4j_memory", NEO4J_MEMORY_LABEL, target)),
            }
        # Each needs the database to itself (the peer's entity types become labels,
        # ours among them), so these two take turns, not rounds. Ours goes first,
        # on the colder JVM: any warm-up favours the peer.
        pair = _measure([ours(work / "ours-neo4j", target)], workload, work, budget_s)
        peer = neo4j_memory(peers_dir, target)
        if isinstance(peer, Unavailable):
            return pair | {peer.key: _skipped(peer)}
        return pair | _measure([peer], workload, work, budget_s)
    finally:
        if private is not None:
            private.stop()


def _compare(peer: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    """Ratios of what both measured; ``partial`` when either was stopped by the budget
    (its rates then cover only the part of the workload it reached)."""
    found: dict[str, Any] = {}
    if "write" in peer and "write" in base:
        rate = base["write"]["entities_per_s"] / peer["write"]["entities_per_s"]
        found["write_throughput_x"] = round(rate, 2)
    if "link" in peer and "link" in base:
        rate = base["link"]["relations_per_s"] / peer["link"]["relations_per_s"]
        found["link_throughput_x"] = round(rate, 2)
    for phase in ("search", "open"):  # single calls: times faster at p50 and p95
        if phase in peer and phase in base:
            for p in ("p50", "p95"):
                ratio = peer[phase][f"{p}_ms"] / base[phase][f"{p}_ms"]
                found[f"{phase}_{p}_x"] = round(ratio, 2)
    if "partial" in (peer["status"], base["status"]):
        found["partial"] = True
    return found


def _goal(result: dict[str, Any]) -> dict[str, Any]:
    goal: dict[str, Any] = {
        "statement": f"our search at least {GOAL_SEARCH_X:g}x faster than the reference server "
        f"at {GOAL_AT_ENTITIES:,} entities (p50 and p95)",
        "met": None,
    }
    ratio = result["ratios"].get("reference vs ours")
    if ratio is None:
        goal["why_not_judged"] = "the reference server did not run"
    elif ratio.get("partial"):
        goal["why_not_judged"] = PARTIAL_WHY
    elif result["entities"] != GOAL_AT_ENTITIES:
        goal["why_not_judged"] = (
            f"judged at {GOAL_AT_ENTITIES:,} entities; this run had {result['entities']:,}"
        )
    else:
        goal["met"] = min(ratio["search_p50_x"], ratio["search_p95_x"]) >= GOAL_SEARCH_X
    return goal


def _write_goal(result: dict[str, Any]) -> dict[str, Any] | None:
    """The write goal for this run's size, judged against the reference server; None when
    no goal is set at this size."""
    size = result["entities"]
    want = GOAL_WRITES_X.get(size)
    if want is None:
        return None
    goal: dict[str, Any] = {
        "statement": f"our writes at least {want:g}x the reference server's throughput "
        f"at {size:,} entities",
        "met": None,
    }
    ratio = result["ratios"].get("reference vs ours")
    if ratio is None:
        goal["why_not_judged"] = "the reference server did not run"
    elif ratio.get("partial"):
        goal["why_not_judged"] = PARTIAL_WHY
    else:
        goal["met"] = ratio["write_throughput_x"] >= want
    return goal


def _batch_ms(server: dict[str, Any]) -> float | None:
    """Mean milliseconds a batch of writes took, from the write throughput (encounter
    calls included, as the throughput counts them); None when not measured."""
    write = server.get("write")
    if server.get("status") != "ok" or not write:
        return None
    return BATCH * 1000 / write["entities_per_s"]


def _write_floor(result: dict[str, Any]) -> dict[str, Any] | None:
    """Where a batch's time stands against the floor (ours with no memory, asked the same
    way): what ours spends above it, and what the write goal at this size leaves above it
    for the memory's own work. None unless ours, the reference and the floor all ran."""
    servers = result["servers"]
    ours_ms, reference_ms, floor_ms = (
        _batch_ms(servers.get(key, {})) for key in ("ours", "reference", "floor")
    )
    if ours_ms is None or reference_ms is None or floor_ms is None:
        return None
    found: dict[str, Any] = {
        "floor_batch_ms": round(floor_ms, 2),
        "ours_batch_ms": round(ours_ms, 2),
        "reference_batch_ms": round(reference_ms, 2),
        "ours_above_floor_ms": round(ours_ms - floor_ms, 2),
    }
    want = GOAL_WRITES_X.get(result["entities"])
    if want is not None:
        found["goal_x"] = want
        found["goal_leaves_above_floor_ms"] = round(reference_ms / want - floor_ms, 2)
    return found


def _floor_line(result: dict[str, Any]) -> str | None:
    f = result.get("write_floor")
    if not f:
        return None
    line = (
        f"{result['entities']:,}: a batch of writes takes the floor {f['floor_batch_ms']:.2f} ms; "
        f"ours {f['ours_batch_ms']:.2f} ms ({f['ours_above_floor_ms']:.2f} above it), "
        f"the reference {f['reference_batch_ms']:.2f} ms"
    )
    if "goal_x" in f:
        line += (
            f"; {f['goal_x']:g}x the reference leaves the memory "
            f"{f['goal_leaves_above_floor_ms']:.2f} ms above the floor"
        )
    return line


def run(
    quick: bool = False,
    *,
    entities: int | None = None,
    searches: int | None = None,
    peers_dir: Path = DEFAULT_PEERS_DIR,
    neo4j_uri: str | None = None,
    use_neo4j: bool = True,
    embedded: bool = True,
    budget_s: float | None = None,
) -> dict[str, Any]:
    """Measure every server on one workload; ``neo4j_uri`` names a server it may empty.
    ``embedded=False`` leaves out ours on the embedded store and the reference server
    (the Neo4j pair alone, say at a size whose embedded pair was measured already).
    ``budget_s`` stops a server once its own calls have taken that long (measure.py)."""
    size = entities or (1_000 if quick else 10_000)
    workload = build(size, searches or (100 if quick else 200))
    load_start = os.getloadavg()[0]
    work = Path(tempfile.mkdtemp(prefix="kenning-peers-bench-"))
    servers: dict[str, dict[str, Any]] = {}
    try:
        if embedded:
            (work / "reference").mkdir()
            found = reference(peers_dir, work / "reference")
            group = [ours(work / "ours"), floor()]
            if isinstance(found, Unavailable):
                servers[found.key] = _skipped(found)
            else:
                group.append(found)
            servers |= _measure(group, workload, work, budget_s)
        else:
            why = "left out (--neo4j-only)"
            servers["ours"] = _skipped(Unavailable("ours", OURS_LABEL, why))
            servers["reference"] = _skipped(Unavailable("reference", REFERENCE_LABEL, why))
            servers["floor"] = _skipped(Unavailable("floor", FLOOR_LABEL, why))
        servers |= _neo4j_pair(workload, work, peers_dir, neo4j_uri, use_neo4j, budget_s)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ratios = {
        f"{peer} vs {base}": _compare(servers[peer], servers[base])
        for peer, base in COMPARISONS
        if {servers[peer]["status"], servers[base]["status"]} <= MEASURED
    }
    result: dict[str, Any] = {
        "entities": size,
        "batch": BATCH,
        "searches": len(workload.queries),
        "seed": workload.seed,
        "cpus": os.cpu_count(),
        "load_average_1m": [round(load_start, 2), round(os.getloadavg()[0], 2)],
        "servers": {key: servers[key] for key in ORDER},
        "ratios": ratios,
    }
    result["goal"] = _goal(result)
    result["write_floor"] = _write_floor(result)
    write_goal = _write_goal(result)
    result["goals"] = [result["goal"], *([write_goal] if write_goal else [])]
    return result


def _verdict(goal: dict[str, Any]) -> str:
    verdict = {True: "met", False: "NOT met", None: "not judged"}[goal["met"]]
    why = f" ({goal['why_not_judged']})" if "why_not_judged" in goal else ""
    return f"goal: {goal['statement']}: {verdict}{why}"


def _links(server: dict[str, Any]) -> str:
    """The links/s and link p50 columns (blank for a run without a link phase)."""
    k = server.get("link")
    return f"{k['relations_per_s']:>9.1f}{k['batch_p50_ms']:>9.1f}" if k else f"{'':>18}"


def _cells(server: dict[str, Any]) -> str:
    """Write e/s, batch p50 and p95, the link columns, search p50 and p95, open p50 and
    p95; blank where a server stopped by the budget never reached that phase."""
    w, s = server.get("write"), server.get("search")
    write = (
        f"{w['entities_per_s']:>11.1f}{w['batch_p50_ms']:>10.1f}{w['batch_p95_ms']:>10.1f}"
        if w
        else f"{'':>31}"
    )
    search = f"{s['p50_ms']:>11.2f}{s['p95_ms']:>11.2f}" if s else f"{'':>22}"
    o = server.get("open")
    opened = f"{o['p50_ms']:>9.2f}{o['p95_ms']:>9.2f}" if o else f"{'':>18}"
    return write + _links(server) + search + opened


def _ratio_cells(ratio: dict[str, Any]) -> str:
    def cell(key: str, width: int) -> str:
        x = ratio.get(key)
        return f"{x:>{width}.2f}" if x is not None else f"{'':>{width}}"

    partial = "  (partial)" if ratio.get("partial") else ""
    return (
        cell("write_throughput_x", 9)
        + cell("link_throughput_x", 9)
        + cell("search_p50_x", 11)
        + cell("search_p95_x", 11)
        + cell("open_p50_x", 9)
        + cell("open_p95_x", 9)
        + partial
    )


def _aside(server: dict[str, Any]) -> str | None:
    """The line a server that was not measured whole gets under the table, or None."""
    if server["status"] == "ok":
        return None
    return f"{server['status']}: {server['label']}: {server['reason']}"


def format_sizes(results: list[dict[str, Any]]) -> str:
    """Several runs (one per entity count) in one table: a row per size and server."""
    lines = [
        f"Peers side by side: entities in batches of {results[0]['batch']}, "
        f"{results[0]['searches']} searches per size, on {results[0]['cpus']} CPUs",
        f"{'entities':>9}  {'server':<42}{'write e/s':>11}{'batch p50':>10}{'batch p95':>10}"
        f"{'links/s':>9}{'link p50':>9}{'search p50':>11}{'search p95':>11}"
        f"{'open p50':>9}{'open p95':>9}{'load':>12}",
    ]
    notes: list[str] = []
    for result in results:
        start, end = result["load_average_1m"]
        for server in result["servers"].values():
            aside = _aside(server)
            if aside is not None:
                notes.append(f"{result['entities']:,}: {aside}")
            if server["status"] not in MEASURED:
                continue
            lines.append(
                f"{result['entities']:>9,}  {server['label']:<42}{_cells(server)}"
                f"{f'{start}->{end}':>12}"
            )
    lines += notes
    lines.append("times faster than the peer (above 1: ours is faster)")
    lines.append(
        f"{'entities':>9}  {'peer vs ours':<42}{'writes':>9}{'links':>9}{'search p50':>11}"
        f"{'search p95':>11}{'open p50':>9}{'open p95':>9}"
    )
    for result in results:
        for pair, r in result["ratios"].items():
            lines.append(f"{result['entities']:>9,}  {pair:<42}{_ratio_cells(r)}")
    lines += [line for result in results if (line := _floor_line(result))]
    lines += [_verdict(goal) for result in results for goal in result["goals"]]
    return "\n".join(lines)


def format_table(result: dict[str, Any]) -> str:
    start, end = result["load_average_1m"]
    lines = [
        f"Peers side by side: {result['entities']:,} entities in batches of {result['batch']}, "
        f"{result['searches']} searches; load {start} -> {end} on {result['cpus']} CPUs",
        f"{'server':<42}{'start ms':>9}{'write e/s':>11}{'batch p50':>10}{'batch p95':>10}"
        f"{'links/s':>9}{'link p50':>9}{'search p50':>11}{'search p95':>11}"
        f"{'open p50':>9}{'open p95':>9}{'hits':>8}{'chars':>9}",
    ]
    asides: list[str] = []
    for server in result["servers"].values():
        aside = _aside(server)
        if aside is not None:
            asides.append(aside)
        if server["status"] not in MEASURED:
            continue
        s = server.get("search")
        found = f"{s['mean_hits']:>8.1f}{s['mean_chars']:>9.0f}" if s else ""
        lines.append(f"{server['label']:<42}{server['start_ms']:>9.0f}{_cells(server)}{found}")
    lines += asides
    if result["ratios"]:
        lines.append("times faster than the peer (above 1: ours is faster)")
        lines.append(
            f"{'peer vs ours':<42}{'writes':>9}{'links':>9}{'search p50':>11}{'search p95':>11}"
            f"{'open p50':>9}{'open p95':>9}"
        )
        for pair, r in result["ratios"].items():
            lines.append(f"{pair:<42}{_ratio_cells(r)}")
    floor_line = _floor_line(result)
    if floor_line:
        lines.append(floor_line)
    lines += [_verdict(goal) for goal in result["goals"]]
    return "\n".join(lines)


def install(peers_dir: Path) -> None:
    """Install the pinned peers into ``peers_dir`` (kept out of git and out of our venv)."""
    peers_dir.mkdir(parents=True, exist_ok=True)
    for command in [reference_install(peers_dir), *neo4j_memory_install(peers_dir)]:
        print("+", " ".join(command), flush=True)
        subprocess.run(command, check=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.peers_bench",
        description=(__doc__ or "").split("\n\n")[0],
    )
    parser.add_argument("--quick", action="store_true", help="1k entities, 100 searches")
    parser.add_argument("--entities", type=int, default=None, help="override the entity count")
    parser.add_argument("--searches", type=int, default=None, help="override the search count")
    parser.add_argument(
        "--sizes",
        default=None,
        help="entity counts to run one after the other, shown in one table (e.g. 10000,100000)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument(
        "--peers-dir", type=Path, default=DEFAULT_PEERS_DIR, help="where the peers are installed"
    )
    parser.add_argument(
        "--neo4j-uri",
        default=None,
        help="a disposable Neo4j to use (it is EMPTIED, so it must carry the test marker: "
        "scripts/neo4j-test-server mark; credentials from KENNING_ENCOUNTER_TEST_NEO4J_USERNAME "
        "and KENNING_ENCOUNTER_TEST_NEO4J_PASSWORD); "
        "default: start a private one with scripts/neo4j-test-server",
    )
    parser.add_argument("--no-neo4j", action="store_true", help="skip the Neo4j-backed servers")
    parser.add_argument(
        "--neo4j-only",
        action="store_true",
        help="only the Neo4j-backed servers (ours on Neo4j and the Neo4j peer)",
    )
    parser.add_argument(
        "--budget-minutes",
        type=float,
        default=None,
        help="stop a server once its own calls have taken this long; its figures then cover "
        "the part of the workload it reached (status partial, goals not judged)",
    )
    parser.add_argument("--install", action="store_true", help="install the peers, then exit")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(name)s: %(message)s")
    if args.install:
        install(args.peers_dir)
        return 0
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else [args.entities]
    results = [
        run(
            args.quick,
            entities=size,
            searches=args.searches,
            peers_dir=args.peers_dir,
            neo4j_uri=args.neo4j_uri,
            use_neo4j=not args.no_neo4j,
            embedded=not args.neo4j_only,
            budget_s=None if args.budget_minutes is None else args.budget_minutes * 60,
        )
        for size in sizes
    ]
    print(format_table(results[0]) if len(results) == 1 else format_sizes(results))
    if args.json is not None:
        figures: Any = results[0] if len(results) == 1 else {"runs": results}
        args.json.write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
