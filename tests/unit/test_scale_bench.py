"""The synthetic dump the scale benchmark loads (bench.synth_dump); the bench's own run
on the test Neo4j is tests/integration/test_scale_bench_neo4j.py.

The dump must be one an import accepts (every check of memory/load.py) and shaped like
a worked memory: several loci, encounters chained per locus, revisions, tombstones,
dissolved and still-open encounters, statuses. The same arguments give the same bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from bench.synth_dump import write_dump

from kenning_encounter.memory import load


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_the_synthetic_dump_passes_every_check_of_an_import(tmp_path: Path) -> None:
    counts = write_dump(tmp_path / "a.jsonl", 3_000, seed=5)
    verified = load.verify(tmp_path / "a.jsonl")
    assert verified.counts == counts
    assert counts["node"] == 3_000 and counts["relation"] > 2_000
    lines = _lines(tmp_path / "a.jsonl")
    kinds = [line["kind"] for line in lines]
    assert kinds[0] == "header" and kinds[-1] == "end"
    assert lines[0]["clock"] == verified.clock


def test_the_synthetic_dump_is_shaped_like_a_worked_memory(tmp_path: Path) -> None:
    write_dump(tmp_path / "a.jsonl", 4_000, seed=3, loci=5)
    lines = _lines(tmp_path / "a.jsonl")
    encounters = [line for line in lines if line["kind"] == "encounter"]
    spine = Counter(line["type"] for line in lines if line["kind"] == "spine")
    nodes = [line for line in lines if line["kind"] == "node"]
    relations = Counter(line["type"] for line in lines if line["kind"] == "relation")
    assert len({e["locus"] for e in encounters}) == 5
    assert spine["OPENED"] == len(encounters)
    assert spine["NEXT_ENCOUNTER"] == len(encounters) - 5  # one chain per locus
    assert spine["INSTANTIATED_AFTER"] == 4  # every locus's first, but the very first
    assert relations["SUPERSEDES"] > 20 and len(relations) >= 8
    assert sum(e["tombstones"] for e in encounters) > 10
    assert any(e["dissolved_at"] for e in encounters)
    assert {n["type"] for n in nodes} >= {"Observation", "Concept", "Component", "Citation"}
    assert {n["status"] for n in nodes if n["type"] == "Question"} >= {"open", "resolved"}
    # in creation order, as an export writes them
    keys = [(n["tick"], n["ord"], n["id"]) for n in nodes]
    assert keys == sorted(keys)


def test_the_same_arguments_give_the_same_dump(tmp_path: Path) -> None:
    write_dump(tmp_path / "a.jsonl", 1_500, seed=9)
    write_dump(tmp_path / "b.jsonl", 1_500, seed=9)
    write_dump(tmp_path / "c.jsonl", 1_500, seed=10)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert (tmp_path / "a.jsonl").read_bytes() != (tmp_path / "c.jsonl").read_bytes()
