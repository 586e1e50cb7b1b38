"""export / import rates: a synthetic memory dumped from the embedded store, loaded into a
fresh embedded store and into Neo4j, and dumped again from Neo4j.

    python -m bench.dump_bench [NODES]     (or python -m bench [--quick] dump)

Neo4j is the test server (KENNING_ENCOUNTER_TEST_NEO4J_URI); without it only the
embedded figures are measured. Every round trip is checked by its record counts.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.synth import generate, record
from kenning_encounter.memory import dump, load
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore


def _export(store: GraphStore, path: Path) -> tuple[float, dump.Exported]:
    started = time.perf_counter()
    with path.open("wb") as out:
        done = dump.export(store, out, app_version="bench")
    return time.perf_counter() - started, done


def _import(store: GraphStore, path: Path) -> tuple[float, float]:
    started = time.perf_counter()
    verified = load.verify(path)
    checked = time.perf_counter() - started
    load.load(store, verified)
    return checked, time.perf_counter() - started


def run_size(nodes: int) -> dict[str, Any]:
    out: dict[str, Any] = {"nodes": nodes}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        source = EmbeddedStore.open(folder / "source")
        try:
            record(source, generate(nodes, seed=nodes))
            took, exported = _export(source, folder / "a.jsonl")
        finally:
            source.close()
        records = sum(exported.counts.values())
        out |= {"records": records, "counts": exported.counts}
        out["embedded_export_records_per_s"] = round(records / took)
        copy = EmbeddedStore.open(folder / "copy")
        try:
            checked, took = _import(copy, folder / "a.jsonl")
        finally:
            copy.close()
        out["verify_records_per_s"] = round(records / checked)
        out["embedded_import_records_per_s"] = round(records / took)
        try:
            from tests.support.backends import open_neo4j_store

            neo = open_neo4j_store()
        except Exception as exc:  # the bench still reports the embedded half
            neo = f"{exc}"
        if isinstance(neo, str):
            out["neo4j"] = f"not measured: {neo}"
            return out
        try:
            _, took = _import(neo, folder / "a.jsonl")
            out["neo4j_import_records_per_s"] = round(records / took)
            took, again = _export(neo, folder / "b.jsonl")
            out["neo4j_export_records_per_s"] = round(records / took)
            assert again.counts == exported.counts and again.clock == exported.clock
        finally:
            neo.close()
    return out


def run(quick: bool = False) -> dict[str, Any]:
    """``python -m bench dump``: 1k nodes quick, 10k otherwise."""
    return run_size(1_000 if quick else 10_000)


if __name__ == "__main__":
    print(json.dumps(run_size(int(sys.argv[1]) if len(sys.argv) > 1 else 10_000), indent=2))
