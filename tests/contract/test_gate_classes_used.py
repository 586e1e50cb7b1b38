"""The classes a memory's nodes have carried, on both backends: what the read gate asks
before the work a withheld class calls for (memory/gates.py ``withheld_in_use``).

A memory that never held a class its reader is not granted reads every status as stored
and pays nothing for the gate's second reading; the first node of such a class turns that
reading on for the next read, and nothing turns it off again (a deleted node's class still
counts: the record of the past keeps the node for reads as of before its deletion).
"""

from __future__ import annotations

from pathlib import Path

from kenning_encounter.memory import dump, load
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.backends import neo4j_unavailable, open_neo4j_store

ALL = tuple(CLASSIFICATIONS)


def _used(store: GraphStore) -> frozenset[str]:
    return store.read(lambda tx: tx.classes_used())


def test_a_class_counts_from_its_first_node_on_and_stays(store: GraphStore) -> None:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter("w", "lamps")
    writer.create_entities("w", [{"type": "Note", "name": "plain lamp"}])
    assert _used(store) == frozenset()
    writer.create_entities(
        "w",
        [
            {"type": "Note", "name": "ward lamp", "classification": ["phi", "pii"]},
            {"type": "Note", "name": "vault lamp", "classification": "secret"},
        ],
    )
    assert _used(store) == {"phi", "pii", "secret"}
    # Undone, the node leaves its class counted: a read as of before the undo finds it.
    writer.delete_entities("w", ["vault lamp"])
    assert _used(store) == {"phi", "pii", "secret"}
    assert store.write(lambda tx: tx.classes_used()) == {"phi", "pii", "secret"}


def test_a_status_a_withheld_node_moves_later_reads_as_the_reader_s_evidence(
    store: GraphStore,
) -> None:
    # The reader reads while nothing is withheld (the gate's work skipped), then a granted
    # writer challenges the hypothesis from a node the reader may not see: the reader's
    # next reads take the gate's work up again, and the challenge moves nothing for it.
    writer, reader = Memory(store, granted=ALL), Memory(store)
    writer.advance_encounter("w", "lamps")
    writer.create_entities(
        "w",
        [
            {"type": "Hypothesis", "name": "oil lamp", "description": "the lamp burns oil"},
            {"type": "Question", "name": "which lamp", "description": "which lamp burns"},
        ],
    )
    assert reader.find_by_name("oil lamp").node.status == "untested"
    assert reader.search("lamp").hits
    writer.create_entities(
        "w",
        [
            {"type": "Observation", "name": "ward finding", "classification": "phi"},
            {"type": "Note", "name": "plain finding"},
        ],
    )
    writer.create_relations(
        "w",
        [
            {"source": "ward finding", "type": "CHALLENGES", "target": "oil lamp"},
            {"source": "ward finding", "type": "RESOLVES", "target": "which lamp"},
        ],
    )
    assert writer.find_by_name("oil lamp").node.status == "challenged"
    assert reader.find_by_name("oil lamp").node.status == "untested"
    assert {h.name: h.status for h in reader.search("lamp").hits} == {
        "oil lamp": "untested",
        "which lamp": "open",
    }
    reader.advance_encounter("r", "again")  # a re-entry lists the question as open
    again = reader.advance_encounter("r2", "again")
    assert "which lamp" in [q.name for q in again.open_questions]


def test_an_embedded_store_finds_its_classes_again_when_it_opens(tmp_path: Path) -> None:
    # Kept by the process, read again from the graph and the record of the past at open.
    path = tmp_path / "memory"
    store = EmbeddedStore.open(path)
    try:
        writer = Memory(store, granted=ALL)
        writer.advance_encounter("w", "lamps")
        writer.create_entities(
            "w",
            [
                {"type": "Note", "name": "vault lamp", "classification": "secret"},
                {"type": "Note", "name": "card lamp", "classification": "pci"},
            ],
        )
        writer.delete_entities("w", ["vault lamp"])  # in the record of the past alone
    finally:
        store.close()
    store = EmbeddedStore.open(path)
    try:
        assert _used(store) == {"pci", "secret"}
    finally:
        store.close()


def test_an_imported_memory_counts_the_classes_it_brought(
    store: GraphStore, tmp_path: Path
) -> None:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter("w", "lamps")
    writer.create_entities(
        "w",
        [
            {"type": "Note", "name": "card lamp", "classification": "pci"},
            {"type": "Note", "name": "plain lamp"},
        ],
    )
    with (tmp_path / "d.jsonl").open("wb") as out:
        dump.export(store, out, app_version="test")
    if store.backend == "embedded":
        copy: GraphStore = EmbeddedStore.open(tmp_path / "copy")
    else:  # the test database emptied again, under the store that wrote it
        opened = open_neo4j_store()
        if isinstance(opened, str):
            neo4j_unavailable(opened)
        copy = opened
    try:
        assert _used(copy) == frozenset()
        load.load(copy, load.verify(tmp_path / "d.jsonl"))
        assert _used(copy) == {"pci"}
        assert Memory(copy).find_by_name("plain lamp").node.name == "plain lamp"
    finally:
        copy.close()
