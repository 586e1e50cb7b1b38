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
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.backend import EmbeddedStore

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
    # Read in a write transaction: from the engine itself, not from a cache of what was sent.
    nodes = memory.store.write(lambda tx: tx.get_nodes(list(ids.values())))
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
