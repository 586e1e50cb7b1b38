"""Tombstones as a gated reader sees them, on every backend (store/uses.py).

An operator's erasure leaves a count on the encounter that recorded what it removed.
That count held withheld nodes too, so a reader not granted their class learnt from
``chain_history`` (and every read that shows an encounter's tombstones) that such nodes
had been there. The reader now counts only the erased nodes it would have been shown.
"""

from __future__ import annotations

import io
import json
from typing import Any

from kenning_encounter.memory import erasure
from kenning_encounter.memory.dump import export
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.ui import views
from kenning_encounter.vocabulary import CLASSIFICATIONS

ALL = tuple(CLASSIFICATIONS)
WRITER = "tomb-writer"


def _erased(store: GraphStore) -> tuple[str, str]:
    """A public chain, a public note and two classified notes recorded in one encounter;
    the operator erases the three notes. The chain's head id, and the encounter."""
    writer = Memory(store, granted=ALL)
    encounter = writer.advance_encounter(WRITER, "lamps").encounter.name
    writer.create_entities(
        WRITER,
        [
            {"type": "Note", "name": "lamp", "description": "a lamp"},
            {"type": "Note", "name": "old lamp", "description": "an old lamp"},
            {"type": "Note", "name": "ward lamp", "classification": "phi"},
            {"type": "Note", "name": "card lamp", "classification": "pci,pii"},
        ],
    )
    head = writer.create_entities(
        WRITER,
        [{"type": "Note", "name": "lamp", "supersedes": "lamp", "revision_why": "brighter"}],
    ).created[0]
    for name in ("old lamp", "ward lamp", "card lamp"):
        erasure.erase(store, erasure.plan(store, [name]))
    return head.id, encounter


def _counts(memory: Memory, head: str) -> list[tuple[str, int]]:
    return [(t.encounter, t.removed) for t in memory.chain_history(head).tombstones]


def _encounter_counts(memory: Memory, encounter: str) -> dict[str, Any]:
    """The count as each port read of an encounter gives it."""

    def read(tx: Any) -> dict[str, Any]:
        one = tx.get_encounter(encounter)
        many = tx.get_encounters([encounter])[encounter]
        listed = {e.name: e.tombstones for e in tx.encounters(limit=50)}
        last = tx.last_encounter_of(WRITER)
        return {
            "one": one.tombstones,
            "many": many.tombstones,
            "listed": listed[encounter],
            "last": last.tombstones,
        }

    return memory.store.read(read)


def test_a_gated_reader_counts_only_the_erased_nodes_it_could_have_seen(
    store: GraphStore,
) -> None:
    head, encounter = _erased(store)
    assert _counts(Memory(store, granted=ALL), head) == [(encounter, 3)]
    assert _counts(Memory(store), head) == [(encounter, 1)]
    assert _counts(Memory(store, granted=("phi",)), head) == [(encounter, 2)]
    assert _counts(Memory(store, granted=("pii",)), head) == [(encounter, 1)]
    assert _counts(Memory(store, granted=("pci", "pii")), head) == [(encounter, 2)]
    want = dict.fromkeys(("one", "many", "listed", "last"), 1)
    assert _encounter_counts(Memory(store), encounter) == want
    assert _encounter_counts(Memory(store, granted=ALL), encounter) == {k: 3 for k in want}
    # The inspector's spine page.
    for memory, count in ((Memory(store), 1), (Memory(store, granted=ALL), 3)):
        page = {e.name: e.tombstones for e in views.spine(memory, 0).encounters}
        assert page[encounter] == count


def test_only_withheld_erasures_leave_a_gated_reader_no_tombstone(store: GraphStore) -> None:
    writer = Memory(store, granted=ALL)
    encounter = writer.advance_encounter(WRITER, "lamps").encounter.name
    made = writer.create_entities(
        WRITER,
        [
            {"type": "Note", "name": "lamp", "description": "a lamp"},
            {"type": "Note", "name": "ward lamp", "classification": "secret"},
        ],
    ).created
    erasure.erase(store, erasure.plan(store, ["ward lamp"]))
    assert _counts(Memory(store), made[0].id) == []
    assert _counts(writer, made[0].id) == [(encounter, 1)]


def test_an_export_not_granted_the_class_counts_the_tombstones_it_may_see(
    store: GraphStore,
) -> None:
    _, encounter = _erased(store)

    def counted(withheld: frozenset[str]) -> tuple[int, str | None]:
        out = io.BytesIO()
        export(store, out, app_version="test", withheld=withheld)
        lines = [json.loads(line) for line in out.getvalue().decode().splitlines()]
        [line] = [x for x in lines if x.get("kind") == "encounter" and x["name"] == encounter]
        return int(line["tombstones"]), line["tombstones_marked"]

    # Carried with the marks of the classes the export may see, and none of the others
    # (dump_format.py version 4): an import gates them as this memory does.
    assert counted(frozenset(CLASSIFICATIONS)) == (1, None)
    assert counted(frozenset({"pii"})) == (2, "phi=1")
    assert counted(frozenset()) == (3, "pci,pii=1;phi=1")


def test_read_cypher_keeps_an_encounter_with_withheld_tombstones_out_of_reach(
    store: GraphStore,
) -> None:
    """read_cypher reads the count as stored: the encounter is out of a gated caller's
    reach, as a node a withheld node used is; none shows the marks."""
    _, encounter = _erased(store)
    query = "MATCH (e:Encounter) RETURN e.id AS name, e.tombstones AS n"

    def counts(memory: Memory) -> dict[str, int]:
        return {str(r[0]): int(r[1]) for r in memory.read_cypher(query).rows}

    assert encounter not in counts(Memory(store))
    assert encounter not in counts(Memory(store, granted=("phi",)))
    assert counts(Memory(store, granted=ALL))[encounter] == 3
    whole = Memory(store, granted=ALL).read_cypher("MATCH (e:Encounter) RETURN e").rows
    assert "tombstones_marked" not in str(whole) and "KenningUsed" not in str(whole)
