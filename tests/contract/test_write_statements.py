"""What a batch write sends to the store: every value kept, and no statement wasted.

A batch names an optional property on some of its nodes only; the embedded store
binds a batch one list per column and leaves out the columns no node of a type
fills, so a value given on one node of many, and the nulls beside it, must come
back exactly as sent, on every backend. On the embedded engine a statement sent
without parameters is planned anew each time, so the write path sends none but the
transaction brackets; and one write touches its encounter once and reads the
batch's names once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import past
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.embedded_store import read_uncached

SESSION = "statements"
WHEN = "2026-03-02T09:00:00Z"


def test_an_optional_property_on_one_node_of_a_batch_comes_back_only_there(
    memory: Memory,
) -> None:
    memory.advance_encounter(SESSION, "optional columns")
    created = memory.create_entities(
        SESSION,
        [
            {"type": "Observation", "name": "plain one"},
            {"type": "Observation", "name": "dated", "t_observed": WHEN, "valid_from": WHEN},
            {"type": "Observation", "name": "plain two", "description": "words"},
            {"type": "Question", "name": "asked", "status": "resolved"},
            {"type": "Question", "name": "still open"},
        ],
    )
    ids = {n.name: n.id for n in created.created}
    # From the engine itself, not from a cache of what was sent: the embedded store's
    # writes read unchanged nodes from its cache too, so it is read around the cache.
    store = memory.store
    if isinstance(store, EmbeddedStore):
        nodes = read_uncached(store, lambda tx: tx.get_nodes(list(ids.values())))
    else:
        nodes = store.write(lambda tx: tx.get_nodes(list(ids.values())))
    by_name = {n.name: n for n in nodes.values()}
    assert set(by_name) == set(ids)
    assert by_name["dated"].props.get("t_observed") == WHEN
    assert by_name["dated"].props.get("valid_from") == WHEN
    for plain in ("plain one", "plain two"):
        assert by_name[plain].props.get("t_observed") is None
        assert by_name[plain].props.get("valid_from") is None
    assert by_name["plain two"].description == "words"
    assert by_name["plain one"].description == ""
    assert by_name["asked"].status == "resolved"
    assert by_name["still open"].status == "open"


def test_a_batch_sends_parameters_with_every_statement_and_touches_once(tmp_path: Path) -> None:
    sent: list[tuple[str, bool]] = []

    def tracer(statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        sent.append((statement, bool(params)))

    store = EmbeddedStore.open(tmp_path / "memory", tracer=tracer)
    try:
        memory = Memory(store)
        memory.advance_encounter(SESSION, "statement shape")
        sent.clear()
        memory.create_entities(
            SESSION,
            [
                {"type": "Observation", "name": "seen"},
                {"type": "Question", "name": "asked"},
                {"type": "Note", "name": "noted", "valid_from": WHEN},
            ],
        )
    finally:
        store.close()
    bare = {statement for statement, has_params in sent if not has_params}
    assert bare <= {"BEGIN TRANSACTION", "COMMIT"}, bare
    statements = [statement for statement, _ in sent]
    assert statements.count(q.ENC_TOUCH) == 1
    assert statements.count(q.NAMES_GET) == 1


def _revising_batch(memory: Memory) -> dict[str, str]:
    """Three heads of two types, then one batch revising all three (with reasons)."""
    memory.advance_encounter(SESSION, "revisions together")
    first = memory.create_entities(
        SESSION,
        [
            {"type": "Concept", "name": "cache", "description": "one layer"},
            {"type": "Concept", "name": "queue", "description": "fifo"},
            {"type": "Note", "name": "plan", "description": "measure"},
        ],
    )
    # Each head's relations read once before it is revised: a cache that keeps them must
    # learn of the revision.
    heads = [n.id for n in first.created]
    memory.store.read(lambda tx: [tx.edges_of(i) for i in heads])
    second = memory.create_entities(
        SESSION,
        [
            {"type": "Concept", "name": "cache", "description": "two layers",
             "supersedes": "cache", "revision_why": "a second layer was found"},
            {"type": "Concept", "name": "queue v2", "description": "priority",
             "supersedes": "queue", "revision_why": "urgent work jumps ahead"},
            {"type": "Note", "name": "plan", "description": "measure twice",
             "supersedes": "plan", "revision_why": "the first count was off"},
            {"type": "Observation", "name": "beside them"},
        ],
    )  # fmt: skip
    old = {f"old {n.name}": n.id for n in first.created}
    return old | {n.name: n.id for n in second.created}


def test_revisions_of_several_types_in_one_batch_each_stand_alone(memory: Memory) -> None:
    ids = _revising_batch(memory)
    pairs = {
        "old cache": ("cache", "a second layer was found"),
        "old queue": ("queue v2", "urgent work jumps ahead"),
        "old plan": ("plan", "the first count was off"),
    }
    nodes = memory.store.write(lambda tx: tx.get_nodes(list(ids.values())))
    for old, (new, why) in pairs.items():
        assert nodes[ids[old]].superseded_by == ids[new]
        assert nodes[ids[new]].superseded_by is None
        edges = memory.store.read(lambda tx, i=ids[old]: tx.edges_of(i))
        (link,) = [e for e in edges if e.type == "SUPERSEDES"]
        assert (link.source, link.target, link.revision_why) == (ids[new], ids[old], why)
    # The text index follows: an old version is found only when asked for.
    found = {h.id for h in memory.search("fifo", limit=10).hits}
    assert ids["old queue"] not in found
    everything = {h.id for h in memory.search("fifo", limit=10, include_superseded=True).hits}
    assert ids["old queue"] in everything


def _recording(tmp_path: Path) -> tuple[EmbeddedStore, list[str]]:
    """An embedded store in ``tmp_path`` and the list every statement it sends goes to."""
    sent: list[str] = []

    def tracer(statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        sent.append(statement)

    return EmbeddedStore.open(tmp_path / "memory", tracer=tracer), sent


def test_a_batch_makes_its_revisions_together(tmp_path: Path) -> None:
    """Embedded: one edge statement and one successor statement per revised type, not
    one of each per revision (and one node read for the revised nodes)."""
    store, sent = _recording(tmp_path)
    try:
        memory = Memory(store)
        sent.clear()
        ids = _revising_batch(memory)
        assert len(ids) == 7
    finally:
        store.close()
    made = [s for s in sent if "CREATE (a)-[:SUPERSEDES" in s]
    assert sorted(made) == sorted(
        q.render(q.REVISIONS_CREATE, label=t) for t in ("Concept", "Note")
    )
    assert not [s for s in sent if "SET n.superseded_by = $successor" in s and "UNWIND" not in s]


def test_a_relations_batch_makes_each_kind_in_one_statement(tmp_path: Path) -> None:
    """Embedded: one statement per relation type between two node types, not one per
    relation; a SUPERSEDES among them still goes alone; the status moves are kept in one
    statement and set in one per type, the second move of a node after the first."""
    store, sent = _recording(tmp_path)
    try:
        memory = Memory(store)
        memory.advance_encounter(SESSION, "link in bulk")
        observations = [{"type": "Observation", "name": f"o{i}"} for i in range(6)]
        concepts = [{"type": "Concept", "name": f"c{i}"} for i in range(3)]
        hypotheses = [{"type": "Hypothesis", "name": f"h{i}"} for i in range(2)]
        memory.create_entities(SESSION, [*observations, *concepts, *hypotheses])
        rels = [{"source": f"o{i}", "type": "ABOUT", "target": f"c{i % 3}"} for i in range(6)] + [
            {"source": "c0", "type": "INFORMS", "target": "c1"},
            {"source": "c1", "type": "INFORMS", "target": "c2"},
            {"source": "c2", "type": "SUPERSEDES", "target": "c0", "revision_why": "merged"},
            {"source": "o0", "type": "SUPPORTS", "target": "h0"},
            {"source": "o1", "type": "SUPPORTS", "target": "h1"},
            {"source": "o2", "type": "CHALLENGES", "target": "h0"},
        ]
        sent.clear()
        made = memory.create_relations(SESSION, rels)
        assert len(made.created) == 12
        assert [(c["name"], c["from"], c["to"]) for c in made.status_changes] == [
            ("h0", "untested", "supported"),
            ("h1", "untested", "supported"),
            ("h0", "supported", "challenged"),
        ]
        statuses = {n: memory.find_by_name(n).node.status for n in ("h0", "h1")}
        edges = store.read(lambda tx: tx.edges_of(memory.find_by_name("c1").node.id))
    finally:
        store.close()
    creating = [s for s in sent if "CREATE (a)-[:" in s]
    assert sorted(creating) == sorted(
        [
            q.render(q.EDGES_CREATE, source="Observation", target="Concept", rel="ABOUT"),
            q.render(q.EDGES_CREATE, source="Concept", target="Concept", rel="INFORMS"),
            q.render(q.EDGE_CREATE_SUPERSEDES, source="Concept", target="Concept"),
            q.render(q.EDGES_CREATE, source="Observation", target="Hypothesis", rel="SUPPORTS"),
            q.render(q.EDGES_CREATE, source="Observation", target="Hypothesis", rel="CHALLENGES"),
        ]
    )
    assert statuses == {"h0": "challenged", "h1": "supported"}
    assert [s for s in sent if "SET n.status" in s] == [
        q.render(q.NODES_SET_STATUS, label="Hypothesis")
    ]
    assert [s for s in sent if "'status'" in s] == [past.STATUSES_PUT]
    assert sorted((e.source == e.target, e.type) for e in edges) == [
        (False, "ABOUT"),
        (False, "ABOUT"),
        (False, "INFORMS"),
        (False, "INFORMS"),
    ]
