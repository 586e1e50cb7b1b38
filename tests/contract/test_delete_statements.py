"""An agent's deletion of a batch costs the same statements whatever the batch's size.

``delete_entities`` undoes what its own encounter recorded; a KNDL import that fails
undoes thousands of nodes that way. Read and deleted one node at a time it cost about
six statements a node (7 s for 3,000 on the embedded store); now its reads, the record
of the past it keeps, and the deletion are a few statements per node type.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from tests.support.counted import Counter

S = "undoer"
TYPES = ("Observation", "Concept", "Note", "Question")


def _batch(memory: Memory, tag: str, per_type: int) -> list[str]:
    """``per_type`` nodes of each type, linked in pairs, and one revised chain of three;
    the ids of all but the chain's first version."""
    memory.advance_encounter(S, f"work {tag}")
    made = memory.create_entities(
        S,
        [
            {"type": t, "name": f"{tag} {t} {i}", "description": f"about {tag}"}
            for t in TYPES
            for i in range(per_type)
        ]
        + [{"type": "Concept", "name": f"{tag} chain", "description": "first"}],
    )
    ids = [n.id for n in made.created][:-1]
    links: list[dict[str, Any]] = [
        {"source": f"{tag} Observation {i}", "type": "ABOUT", "target": f"{tag} Concept {i}"}
        for i in range(per_type)
    ]
    memory.create_relations(S, links)
    for step in ("second", "third"):
        revised = memory.create_entities(
            S,
            [
                {
                    "type": "Concept",
                    "name": f"{tag} chain",
                    "description": step,
                    "supersedes": f"{tag} chain",
                    "revision_why": f"the {step} reading",
                }
            ],
        )
        ids += [n.id for n in revised.created]
    return ids


def _sent_deleting(memory: Memory, counter: Counter, ids: list[str]) -> list[str]:
    before = len(counter.texts)
    memory.delete_entities(S, ids)
    sent = counter.texts[before:]
    memory.close_encounter(S, "undone")
    return sent


def test_a_deletion_sends_the_same_statements_for_four_nodes_or_forty(
    counted: tuple[GraphStore, Counter],
) -> None:
    store, counter = counted
    memory = Memory(store)
    small = _sent_deleting(memory, counter, _batch(memory, "small", 1))
    large = _sent_deleting(memory, counter, _batch(memory, "large", 10))
    assert len(large) == len(small), (len(small), len(large))
    # Each chain's first version is the head again, under the chain's name.
    for tag in ("small", "large"):
        head = memory.find_by_name(f"{tag} chain").node
        assert (head.description, head.superseded_by) == ("first", None)


def test_a_cold_deletion_seeks_each_node_s_relations_once(tmp_path: Path) -> None:
    """Embedded, on a store just opened (nothing cached): the refs' check and the record
    of the past both want each node's relations, both ways; one seek brings them all."""
    path = tmp_path / "memory"
    store = EmbeddedStore.open(path, warm_limit=0)
    try:
        ids = _batch(Memory(store), "cold", 3)
    finally:
        store.close()
    counter = Counter()
    store = EmbeddedStore.open(path, tracer=counter, warm_limit=0)
    try:
        Memory(store).delete_entities(S, ids)
    finally:
        store.close()
    seeks = [t for t in counter.texts if t.startswith("MATCH (n:") and ")-[r]-(m)" in t]
    assert len(seeks) == len(ids), seeks
