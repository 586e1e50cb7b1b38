"""Batch statements find each row's nodes by key, on the engine's own plan.

A batch of rows unwound into one MATCH of two nodes (``MATCH (a {id: r.s}), (b {id:
r.t})``) is planned by the engine as a cross product of two whole-table scans: two
revisions among 20k nodes took 84 ms that way, 0.6 ms with a key lookup per MATCH.
Timing would not show it in a small test; the plan does. These tests ask the real
engine (EXPLAIN, on a store our schema made) for the plan of each statement that
unwinds a batch of node keys.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import ladybug
import pytest

from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.backend import EmbeddedStore

ROWS: dict[str, Any] = {
    "rows": [
        {
            "s": "con-a",
            "t": "con-b",
            "why": "sharper",
            "encounter": "E1",
            "id": "que-a",
            "status": "open",
        }
    ],
    "tick": 1,
    "at": "2026-12-03T00:00:00Z",
    "ids": ["con-a"],
    "encounter": "E1",
}


# A whole table read; a key's own lookup is PRIMARY_KEY_SCAN_NODE_TABLE (a hash index).
WHOLE_SCAN = re.compile(r"(?<!PRIMARY_KEY_)SCAN_NODE_TABLE|CROSS_PRODUCT")


@pytest.fixture(scope="module")
def conn(tmp_path_factory: pytest.TempPathFactory) -> Any:
    data = Path(tmp_path_factory.mktemp("plans")) / "memory"
    EmbeddedStore.open(data).close()  # our schema, then the engine alone
    db = ladybug.Database(str(data / "graph.lbdb"), buffer_pool_size=1 << 28)
    connection = ladybug.Connection(db)
    yield connection
    connection.close()
    db.close()


def _plan(conn: Any, statement: str) -> str:
    result = conn.execute("EXPLAIN " + statement, ROWS)
    return "\n".join(str(row[0]) for row in result.get_all())


@pytest.mark.parametrize(
    "statement",
    [
        q.render(q.REVISIONS_CREATE, label="Concept"),
        q.render(q.SUCCESSORS_SET, label="Concept"),
        q.render(q.NODES_RECORD, label="Concept"),
        q.render(q.EDGES_CREATE, source="Concept", target="Concept", rel="INFORMS"),
        q.render(q.NODES_SET_STATUS, label="Question"),
    ],
    ids=["revisions", "successors", "recorded", "relations", "statuses"],
)
def test_a_batch_statement_looks_each_node_up_by_key(conn: Any, statement: str) -> None:
    plan = _plan(conn, statement)
    assert "PRIMARY_KEY_LOOKUP" in plan
    assert not WHOLE_SCAN.search(plan), plan


def test_the_plan_check_sees_a_batch_that_scans(conn: Any) -> None:
    """The shape that scanned: the check above must be able to fail."""
    scanning = (
        "UNWIND $rows AS r MATCH (a:Concept {id: r.s}), (b:Concept {id: r.t}) "
        "CREATE (a)-[:SUPERSEDES {tick: $tick}]->(b)"
    )
    assert WHOLE_SCAN.search(_plan(conn, scanning))
