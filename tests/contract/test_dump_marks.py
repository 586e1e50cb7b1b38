"""The gate's use marks through export and import, on every backend (store/uses.py,
memory/dump_format.py version 4).

A reader not granted a class sees a node's ``used_at`` without the uses that class's
nodes made, and an encounter's tombstones without that class's erased nodes. Both rest
on marks the store keeps beside the count every reader saw; a dump that dropped them
handed the imported memory's gated readers a node gone hot and a tombstone more: that
a classified node had been there. Imported, the memory reads to every reader as the
source did, read_cypher included (Neo4j: the ``KenningUsed_`` labels follow the marks).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.memory import erasure, load
from kenning_encounter.memory.dump import export
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from tests.contract.test_gated_standing import ALL, MONTH, Clock, _planted, _standing
from tests.support.backends import BACKENDS, opened_store

ERASER = "eraser"
# Each reader by its grant: none, the erased node's class, the linking node's, every one.
GRANTS: dict[str, tuple[str, ...]] = {
    "none": (),
    "phi": ("phi",),
    "secret": ("secret",),
    "all": ALL,
}
NODES = tuple(f"MATCH (n:{t}) RETURN n.name, n.used_at" for t in ("Concept", "Observation", "Note"))
ENCOUNTERS = "MATCH (e:Encounter) RETURN e.id, e.tombstones"


def _marked(store: GraphStore, clock: Clock) -> str:
    """The concept used by a ``secret`` observation on day 100 (test_gated_standing), then
    on day 101 a public note and a ``phi`` note, the phi one erased. The erasure's
    encounter."""
    _planted(store, clock)
    writer = Memory(store, granted=ALL, activation=MONTH)
    clock.day(101)
    encounter = writer.advance_encounter(ERASER, "notes").encounter.name
    writer.create_entities(
        ERASER,
        [
            {"type": "Note", "name": "lamp note", "description": "a lamp"},
            {"type": "Note", "name": "ward note", "classification": "phi"},
        ],
    )
    erasure.erase(store, erasure.plan(store, ["ward note"]))
    return encounter


def _readings(store: GraphStore, clock: Clock, encounter: str) -> dict[str, Any]:
    """What each reader sees of the concept's standing and the encounter's tombstones,
    through the tools, the port and read_cypher."""
    out: dict[str, Any] = {}
    for who, grant in GRANTS.items():
        memory = Memory(store, granted=grant, activation=MONTH)

        def tombs(tx: Any) -> tuple[int, int]:
            one = tx.get_encounter(encounter)
            listed = {e.name: e.tombstones for e in tx.encounters(limit=50)}
            return one.tombstones, listed[encounter]

        out[who] = {
            **_standing(memory, clock),
            "tombstones": memory.store.read(tombs),
            "cypher nodes": sorted(tuple(r) for q in NODES for r in memory.read_cypher(q).rows),
            "cypher encounters": sorted(tuple(r) for r in memory.read_cypher(ENCOUNTERS).rows),
        }
    return out


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


def _imported(backend: str, clock: Clock, dump: Path, path: Path, encounter: str) -> Any:
    """The readings of a fresh memory ``dump`` was imported into."""
    with opened_store(backend, path, clock) as copy:
        load.load(copy, load.verify(dump))
        if backend == "neo4j":
            return _readings(copy, clock, encounter)
    with opened_store(backend, path, clock) as copy:  # embedded: its text index made on opening
        return _readings(copy, clock, encounter)


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_imported_memory_reads_to_a_gated_reader_as_the_source_did(
    backend: str, tmp_path: Path
) -> None:
    clock = Clock()
    with opened_store(backend, tmp_path / "source", clock) as store:
        encounter = _marked(store, clock)
        before = _readings(store, clock, encounter)
        with (tmp_path / "whole.jsonl").open("wb") as out:
            export(store, out, app_version="test")
        with (tmp_path / "no-phi.jsonl").open("wb") as out:
            export(store, out, app_version="test", withheld=frozenset({"phi"}))
    # What the readings compare is not empty: the withheld use and erasure show to the
    # reader granted their class, and stay unsaid to the one not granted it.
    assert (before["all"]["find tier"], before["none"]["find tier"]) == ("hot", "cold")
    assert before["secret"]["find tier"] == "hot" and before["phi"]["find tier"] == "cold"
    assert before["all"]["tombstones"] == before["phi"]["tombstones"] == (1, 1)
    assert before["none"]["tombstones"] == before["secret"]["tombstones"] == (0, 0)
    assert "lamp theory" not in str(before["none"]["cypher nodes"])
    assert encounter not in str(before["none"]["cypher encounters"])
    # The whole dump carries the marks, as stored.
    lines = _lines(tmp_path / "whole.jsonl")
    assert lines[0]["version"] == 4
    [concept] = [x for x in lines if x.get("name") == "lamp theory"]
    assert concept["used_marks"] and "secret=" in concept["used_marks"]
    [erased] = [x for x in lines if x["kind"] == "encounter" and x["name"] == encounter]
    assert (erased["tombstones"], erased["tombstones_marked"]) == (1, "phi=1")

    assert _imported(backend, clock, tmp_path / "whole.jsonl", tmp_path / "copy", encounter) == (
        before
    )

    # A dump not granted phi leaves out the phi node's erasure, and keeps the marks of the
    # classes it may see: imported, a reader there not granted secret sees the concept as
    # such a reader saw it in the source, and every reader the tombstones a reader not
    # granted phi saw. The erasure's encounter, marked by nothing left, is in reach.
    assert "phi" not in (tmp_path / "no-phi.jsonl").read_text()
    held = _imported(backend, clock, tmp_path / "no-phi.jsonl", tmp_path / "held", encounter)
    for who, was in (("none", "none"), ("phi", "none"), ("secret", "secret"), ("all", "secret")):
        assert {k: v for k, v in held[who].items() if k != "cypher encounters"} == {
            k: v for k, v in before[was].items() if k != "cypher encounters"
        }
        assert (encounter, 0) in held[who]["cypher encounters"]
