"""An export's node pages on Neo4j read about their own rows: the (_memory, tick) index
hands nodes over in tick order, so no page sorts its whole type (that made an export
quadratic in the memory's size). Checked on the plan, and on a page boundary that falls
inside one tick."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.port import bulk_read
from tests.support.backends import neo4j_unavailable, open_neo4j_store

pytestmark = pytest.mark.neo4j


@pytest.fixture
def neo() -> Iterator[Any]:
    opened = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    try:
        yield opened
    finally:
        opened.close()


def _operators(plan: dict[str, Any]) -> list[tuple[str, str]]:
    found = [(str(plan["operatorType"]).split("@")[0], str(plan["args"].get("Details", "")))]
    for child in plan.get("children", []):
        found += _operators(child)
    return found


def test_a_node_page_seeks_the_tick_index_and_sorts_only_within_a_tick(neo: Any) -> None:
    statement = Namespace().statement(q.render(q.DUMP_NODES, label="Observation"))
    params = {"tick": 3, "ord": 0, "id": "", "first": False, "limit": 10, "memory": "default"}
    with neo._driver.session(database=neo.database) as session:  # pyright: ignore[reportPrivateUsage]
        plan = session.run("EXPLAIN " + statement, params).consume().plan
    assert plan is not None
    operators = _operators(dict(plan))
    names = [name for name, _ in operators]
    seeks = [d for name, d in operators if name == "NodeIndexSeek"]
    assert any("(_memory, tick)" in d for d in seeks), operators
    assert "PartialSort" in names or "PartialTop" in names, names
    assert not {"Sort", "Top"} & set(names), names


def test_pages_that_split_one_tick_give_every_node_once_in_creation_order(neo: Any) -> None:
    memory = Memory(neo)
    memory.advance_encounter("paging", "one write of many nodes")
    batch = [{"type": "Observation", "name": f"o{i}", "description": "x"} for i in range(9)]
    memory.create_entities("paging", batch)
    memory.create_entities("paging", [{"type": "Observation", "name": "late"}])
    seen: list[tuple[int, int, str]] = []
    after = None
    while True:
        page = bulk_read(neo, lambda tx, a=after: tx.dump_nodes("Observation", a, 4))
        seen += [(d.node.tick, d.node.ord, d.node.id) for d in page]
        if len(page) < 4:
            break
        after = seen[-1]
    assert len(seen) == 10 == len(set(seen))
    assert seen == sorted(seen)
    assert len({tick for tick, _, _ in seen}) == 2  # nine share a tick across three pages
