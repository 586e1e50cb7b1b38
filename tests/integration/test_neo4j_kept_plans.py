"""The statements that keep their first plan (``queries.KEEP_PLAN``) must not need a
better one as the memory grows: planned on an empty memory, where the statistics give the
planner the least reason to seek, each still reaches every node and relationship through
an index or an element id, never a scan. A statement whose plan could scan must not carry
the prefix (a kept scan would be kept at a million nodes)."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.namespace import Namespace

pytestmark = pytest.mark.neo4j

# Operators that read a label, a relationship type or an index whole.
_SCANS = ("Scan",)

# Values of the types the write path sends (the plan cache keys on parameter types).
_PARAMS: dict[str, Any] = {
    "memory": "default",
    "locus": "a session",
    "names": ["", "a name"],
    "named": ["", "a name"],
    "ids": ["note_0"],
    "s": "note_0",
    "t": "con_0",
    "name": "E1",
    "encounter": "E1",
    "tick": 1,
    "at": "2026-01-01T00:00:00.000+00:00",
    "touched_at": None,
    "why": "a reason",
    "made": 1,
    "tokens": 1,
    "rows": [
        {
            "label": "Note",
            "classes": [],
            "props": {"id": "note_1", "name": "n"},
            "source": None,
            "revises": None,
            "revised": None,
            "why": None,
        }
    ],
}


def _kept() -> dict[str, str]:
    """Every statement of queries.py that keeps its plan, templates filled."""
    kept: dict[str, str] = {}
    for name, value in vars(q).items():
        if name == "KEEP_PLAN" or not (isinstance(value, str) and value.startswith(q.KEEP_PLAN)):
            continue
        slots = {"label": "Note", "source": "Note", "target": "Concept", "rel": "ABOUT"}
        template = any("{" + slot + "}" in value for slot in slots)
        kept[name] = q.render(value, **slots) if template else value
    return kept


def _operators(plan: dict[str, Any]) -> list[str]:
    found = [str(plan["operatorType"]).split("@")[0]]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def test_the_write_path_keeps_its_plans() -> None:
    kept = _kept()
    every_write = {"CLOCK_NEXT", "CLOCK_NEXT_OPEN_OF", "BATCH_BEGIN", "NODES_CREATE_ALL"}
    assert every_write <= set(kept), sorted(kept)


def _planned_afresh(statement: str) -> str:
    """``statement`` planned now, on what the memory holds now, whatever plan is cached.
    Not by emptying the server's plan cache: every plan the rest of the run had made would
    then be made again (about 30 s of server CPU for a third of the contract tests)."""
    assert statement.startswith(q.KEEP_PLAN), statement
    return "CYPHER replan=force " + statement.removeprefix(q.KEEP_PLAN)


@pytest.mark.parametrize("name", sorted(_kept()))
def test_a_kept_plan_made_on_an_empty_memory_seeks(neo4j_store: Any, name: str) -> None:
    statement = _planned_afresh(Namespace().statement(_kept()[name]))
    with neo4j_store._driver.session(database=neo4j_store.database) as session:  # pyright: ignore[reportPrivateUsage]
        plan = session.run("EXPLAIN " + statement, _PARAMS).consume().plan
    assert plan is not None
    operators = _operators(dict(plan))
    scans = [o for o in operators if any(s in o for s in _SCANS)]
    assert not scans, f"{name} plans {scans} on an empty memory: {operators}"
