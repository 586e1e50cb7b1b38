"""A KNDL import whose writes fail part way, on every backend: what it wrote is deleted
again, so the memory holds none of it and the same import can run once the cause is
gone (before, its first facts stayed, and every later run was refused as a second
import of them)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import NameTaken
from kenning_encounter.memory.kndl_facts import read_facts
from kenning_encounter.memory.kndl_import import plan, run, write
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore

MEM = "default"


def _facts(folder: Path) -> Path:
    """A fact with a source and a subject, and its revision (written in a later call)."""
    (folder / "facts").mkdir(parents=True)
    docs: list[dict[str, Any]] = [
        {
            "@id": "fact:disk-full",
            "statement": "runner r7 ran out of disk",
            "source": "https://ci.example.org/r7",
            "subject": "runner:r7",
        },
        {
            "@id": "fact:disk-freed",
            "statement": "runner r7 has disk again",
            "supersedes": "fact:disk-full",
            "derivedFrom": "fact:disk-full",
        },
    ]
    for i, doc in enumerate(docs):
        body = {"@context": "../context/v1.jsonld", "@type": "Fact", **doc}
        (folder / "facts" / f"{i}.fact.json").write_text(json.dumps(body))
    return folder


def _authored(store: GraphStore) -> set[str]:
    return {n.name for n in store.read(lambda tx: tx.authored_graph()).nodes}


def test_an_import_failing_half_way_is_undone_and_runs_again(
    store: GraphStore, tmp_path: Path
) -> None:
    folder = _facts(tmp_path / "in")
    memory = Memory(store)
    checked = plan(store, read_facts(folder), MEM)
    # Between the checks and the writes another session takes the revision's name
    # (on Neo4j nothing keeps a server from writing while the import runs).
    memory.advance_encounter("agent", "racing the import")
    memory.create_entities("agent", [{"type": "Note", "name": "fact:disk-freed"}])
    with pytest.raises(NameTaken) as failed:
        write(memory, checked, folder)
    assert not getattr(failed.value, "__notes__", None)  # the undo itself went through
    assert _authored(store) == {"fact:disk-freed"}  # the Note; nothing of the import

    memory.delete_entities("agent", ["fact:disk-freed"])
    done = run(memory, folder, MEM)
    assert (done.facts, done.citations, done.subjects) == (2, 1, 1)
    assert _authored(store) == {
        "fact:disk-full",
        "fact:disk-freed",
        "https://ci.example.org/r7",
        "runner:r7",
    }
    assert memory.find_by_name("fact:disk-freed").history[0].name == "fact:disk-full"
