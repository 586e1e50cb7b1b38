"""Chain reads against the length of the chain: find_by_name, trace_provenance, chain_history.

One Observation is revised again and again (every version keeps the name, so the name
leads to the head) until the chain holds 10, 100 and 1,000 versions; at each length the
reads below run interleaved, and each is timed and its statements counted (a counting
tracer on the store's one execute path):

- find_by_name by the name (the head), and by the first version's id (it walks to the head);
- find_by_name as of the tick half way up the chain (the head of then, and its history);
- trace_provenance of the head (its revisions are the chain);
- chain_history of the head (one page).

Statements per read are the figure that does not move with the machine's load: a read
whose count grows with the chain pays a round trip per version on Neo4j. Embedded always
runs; Neo4j runs on the test server KENNING_ENCOUNTER_TEST_NEO4J_URI names (EMPTIED first).
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bench.stats import pct
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore

SESSION = "chain-bench"
NAME = "the pump's hum"


class Counter:
    """A tracer that counts the statements sent."""

    def __init__(self) -> None:
        self.sent = 0

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        self.sent += 1


def _grow(memory: Memory, ids: list[str], upto: int) -> None:
    """Revise the chain until it holds ``upto`` versions."""
    if not ids:
        first = memory.create_entities(
            SESSION, [{"type": "Observation", "name": NAME, "description": "version 0"}]
        )
        ids.append(first.created[0].id)
    while len(ids) < upto:
        made = memory.create_entities(
            SESSION,
            [
                {
                    "type": "Observation",
                    "name": NAME,
                    "description": f"version {len(ids)}",
                    "supersedes": ids[-1],
                    "revision_why": f"measured again, round {len(ids)}",
                }
            ],
        )
        ids.append(made.created[0].id)


def _reads(memory: Memory, ids: list[str], middle: int) -> dict[str, Callable[[], object]]:
    return {
        "find_by_name": lambda: memory.find_by_name(NAME),
        "find_by_name_from_first": lambda: memory.find_by_name(ids[0]),
        "find_by_name_as_of_middle": lambda: memory.find_by_name(NAME, as_of=middle),
        "trace_provenance": lambda: memory.trace_provenance(ids[-1]),
        "chain_history": lambda: memory.chain_history(ids[-1]),
    }


def _measure(memory: Memory, counter: Counter, ids: list[str], reps: int) -> dict[str, Any]:
    clock = memory.store.read(lambda tx: tx.clock())
    middle = clock - len(ids) // 2
    reads = _reads(memory, ids, middle)
    times: dict[str, list[float]] = {name: [] for name in reads}
    statements: dict[str, int] = {}
    for _ in range(reps):
        for name, read in reads.items():
            before = counter.sent
            started = time.perf_counter()
            read()
            times[name].append((time.perf_counter() - started) * 1000)
            statements[name] = counter.sent - before
    row: dict[str, Any] = {"backend": memory.store.backend, "versions": len(ids)}
    for name, values in times.items():
        row[f"{name}_p50_ms"] = round(pct(values, 0.5), 2)
        row[f"{name}_p95_ms"] = round(pct(values, 0.95), 2)
        row[f"{name}_statements"] = statements[name]
    return row


def _run_on(
    store: GraphStore, counter: Counter, lengths: list[int], reps: int
) -> list[dict[str, Any]]:
    memory = Memory(store)
    memory.advance_encounter(SESSION, "one observation, revised and revised")
    ids: list[str] = []
    rows: list[dict[str, Any]] = []
    for length in lengths:
        _grow(memory, ids, length)
        rows.append(_measure(memory, counter, ids, reps))
    return rows


def run_embedded(lengths: list[int], reps: int) -> list[dict[str, Any]]:
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    work = Path(tempfile.mkdtemp(prefix="kenning-chain-bench-"))
    counter = Counter()
    try:
        store = EmbeddedStore.open(work / "memory", tracer=counter)
        try:
            return _run_on(store, counter, lengths, reps)
        finally:
            store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run_neo4j(lengths: list[int], reps: int) -> list[dict[str, Any]]:
    """The same on the test Neo4j (emptied first), when one is named."""
    from tests.support.neo4j_target import configured, empty_marked

    from kenning_encounter.store.neo4j import Neo4jStore

    target = configured()
    if target is None:
        return []
    empty_marked(target)
    counter = Counter()
    store = Neo4jStore.open(
        target.uri, target.username, target.password, target.database, tracer=counter
    )
    try:
        return _run_on(store, counter, lengths, reps)
    finally:
        store.close()


def run(quick: bool = False) -> dict[str, Any]:
    lengths = [10, 100] if quick else [10, 100, 1_000]
    reps = 5 if quick else 15
    rows = run_embedded(lengths, reps) + run_neo4j(lengths, reps)
    return {"note": "one chain grown to each length; reads interleaved", "rows": rows}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
