"""What hiding a session costs the reads that show standing: ``Memory.search`` and
``find_by_name`` p50/p95 on a synthetic memory (``bench.synth``, 12 sessions), hiding
none of them against hiding one, interleaved call by call over the same store.

The hidden session also consults 500 nodes of the others and pins 20 after the memory is
recorded, so the hiding reader has standing to read again (memory/gates.py
``HidingReads``); find_by_name asks for nodes of the sessions shown.

    python -m bench.hidden_standing_bench build --backend embedded --path DIR
    python -m bench.hidden_standing_bench measure --backend embedded --path DIR [--cold]

``--backend neo4j`` uses the test server KENNING_ENCOUNTER_TEST_NEO4J_URI names (build
empties it; measure reads what build left). Run measure with another tree's ``src``
first on PYTHONPATH to compare code over the same memory.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path
from typing import Any

from bench.stats import pct
from bench.synth import generate, replay

HIDDEN = "locus-3"
SEED = 10_001


def _open(backend: str, path: Path, *, empty: bool) -> Any:
    if backend == "embedded":
        from kenning_encounter.store.embedded.backend import EmbeddedStore

        return EmbeddedStore.open(path)
    uri = os.environ["KENNING_ENCOUNTER_TEST_NEO4J_URI"]
    if empty:
        from tests.support.neo4j_store import open_emptied

        return open_emptied(uri)
    from kenning_encounter.store.neo4j import Neo4jStore

    return Neo4jStore.open(uri, "neo4j", os.environ["KENNING_ENCOUNTER_TEST_NEO4J_PASSWORD"])


def build(backend: str, path: Path, nodes: int) -> None:
    from kenning_encounter.memory.service import Memory

    synth = generate(nodes, seed=SEED)
    store = _open(backend, path, empty=True)
    try:
        memory = Memory(store)
        for _ in replay(memory, synth):
            pass
        if hasattr(store, "flush_index"):
            store.flush_index()
        theirs = {
            e["name"]
            for step in synth.steps
            if step.kind == "entities" and step.session == HIDDEN
            for e in step.payload
        }
        shown = [n for n in synth.names if n not in theirs]
        rng = random.Random(SEED)
        names = rng.sample(shown, 520)
        memory.advance_encounter(HIDDEN, "consulting")
        for name in names[:500]:
            memory.find_by_name(name, session_id=HIDDEN)
        memory.pin_entities(HIDDEN, names[500:])
        memory.close_encounter(HIDDEN, "done")
        (path.parent / "queries.json").write_text(json.dumps([synth.queries, shown]))
    finally:
        store.close()


def _forget(reader: Any) -> None:
    """The hiding reader's standing kept between reads dropped, as a write anywhere drops
    it: each call then pays what the first read after a write pays."""
    from kenning_encounter.memory.gates import HiddenStanding

    reader.store._standing = HiddenStanding()


def measure(backend: str, path: Path, calls: int, cold: bool = False) -> dict[str, Any]:
    from kenning_encounter.memory.service import Memory

    queries, names = json.loads((path.parent / "queries.json").read_text())
    store = _open(backend, path, empty=False)
    try:
        readers = {
            "none": Memory(store),
            "one": Memory(store, hidden_loci=frozenset({HIDDEN})),
        }
        rng = random.Random(SEED + 1)
        asked = [rng.choice(names) for _ in range(calls)]
        took: dict[str, list[float]] = {f"{k} {m}": [] for m in readers for k in ("search", "find")}
        for i in range(calls + 20):
            query, name = queries[i % len(queries)], asked[i % calls]
            for mode, reader in readers.items():
                if cold and mode == "one":
                    _forget(reader)
                started = time.perf_counter()
                reader.search(query, limit=10)
                searched = time.perf_counter() - started
                if cold and mode == "one":
                    _forget(reader)
                started = time.perf_counter()
                reader.find_by_name(name)
                found = time.perf_counter() - started
                if i >= 20:  # warm-up
                    took[f"search {mode}"].append(searched * 1000)
                    took[f"find {mode}"].append(found * 1000)
        return {
            k: {"p50": round(statistics.median(v), 2), "p95": round(pct(v, 0.95), 2)}
            for k, v in took.items()
        }
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("step", choices=("build", "measure"))
    parser.add_argument("--backend", choices=("embedded", "neo4j"), default="embedded")
    parser.add_argument("--path", type=Path, required=True, help="the memory's directory")
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument(
        "--cold", action="store_true", help="drop what the hiding reader kept before each call"
    )
    args = parser.parse_args()
    if args.step == "build":
        build(args.backend, args.path, args.nodes)
    else:
        print(json.dumps(measure(args.backend, args.path, args.calls, args.cold), indent=1))


if __name__ == "__main__":
    main()
