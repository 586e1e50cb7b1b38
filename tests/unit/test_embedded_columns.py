"""A whole-node read on the embedded store names every column of the type's table.

The engine hands a node's columns over about six times quicker than the node itself,
so node reads return the columns ``queries.stored_columns`` lists. A column a
migration adds and that list misses would be dropped from every read: this holds the
list to the tables a fresh store and a migrated one really have.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kenning_encounter.store.embedded import queries
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES
from tests.support.embedded_store import made_at_schema


def _tables(store: EmbeddedStore) -> dict[str, list[str]]:
    with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
        return {
            label: [
                str(r[1])  # pyright: ignore[reportUnknownArgumentType]
                for r in conn.execute(f"CALL table_info('{label}') RETURN *").get_all()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
            ]
            for label in AUTHORED_NODE_TYPES
        }


@pytest.mark.parametrize("start", ["fresh", "migrated from schema 1"])
def test_the_columns_a_node_read_returns_are_the_tables_columns(tmp_path: Path, start: str) -> None:
    path = tmp_path / "memory"
    if start != "fresh":
        made_at_schema(path, 1)
    store = EmbeddedStore.open(path)
    try:
        for label, columns in _tables(store).items():
            assert sorted(queries.stored_columns(label)) == sorted(columns), label
    finally:
        store.close()


def test_a_whole_node_slot_is_filled_for_every_authored_type() -> None:
    for label in AUTHORED_NODE_TYPES:
        text = queries.render(queries.NODES_GET, label=label)
        assert "RETURN n.id, n.tick" in text and text.endswith("n.superseded_by"), label


def test_no_statement_merges_a_node_for_each_unwound_row() -> None:
    """Unwound over a batch, the engine's MERGE of a node scans the whole table for the
    batch (3,000 names among 700k: 6 s, where a read of the held ones, a CREATE and a
    SET took 0.13 s; the import of a million nodes ran at 330 records/s on it). Key
    writes read which keys are held, then create or move (tx.py ``_put_keys``)."""
    import re

    from kenning_encounter.store.embedded import infusion_log, ledger, past

    unwound_merge = re.compile(r"UNWIND\b.*\bMERGE \(\w+:", re.DOTALL)
    found = {
        f"{module.__name__}.{name}"
        for module in (queries, past, ledger, infusion_log)
        for name, value in vars(module).items()
        if isinstance(value, str) and unwound_merge.search(value)
    }
    assert found == set(), found


def test_the_authored_graph_read_in_pages_is_every_node_and_relation_once(
    embedded: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole-memory read pages each node type and relation type by row offsets; the
    holes a deletion leaves and a last short page lose nothing and repeat nothing (fails
    with the pages cut short)."""
    from kenning_encounter.memory import operator
    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded import tx as tx_module

    memory = Memory(embedded)
    memory.advance_encounter("pages", "many nodes")
    made = memory.create_entities(
        "pages",
        [
            {
                "type": "Concept" if i % 3 == 2 else "Observation",
                "name": f"n{i}",
                "description": f"{i}",
            }
            for i in range(23)
        ],
    )
    memory.create_relations(
        "pages",
        [{"source": f"n{i}", "type": "ABOUT", "target": f"n{i + 1}"} for i in range(1, 21, 3)],
    )
    memory.create_entities(
        "pages",
        [
            {
                "type": "Observation",
                "name": f"r{i}",
                "description": "again",
                "supersedes": f"n{i}",
                "revision_why": f"why {i}",
            }
            for i in (1, 7, 10)
        ],
    )
    operator.forget(embedded, [made.created[4].id, made.created[9].id])

    def graph() -> tuple[list[str], list[tuple[object, ...]]]:
        sub = embedded.read(lambda tx: tx.authored_graph())
        edges = [
            (e.source, e.type, e.target, e.tick, e.encounter, e.revision_why) for e in sub.edges
        ]
        return [n.id for n in sub.nodes], edges

    nodes, edges = graph()
    monkeypatch.setattr(tx_module, "PAGE_ROWS", 4)
    paged_nodes, paged_edges = graph()
    assert sorted(paged_nodes) == sorted(nodes) and len(set(paged_nodes)) == len(nodes) == 24
    assert sorted(paged_edges) == sorted(edges) and len(set(paged_edges)) == len(edges)
    assert {e[1] for e in edges} == {"ABOUT", "SUPERSEDES"}
    assert {e[5] for e in edges if e[1] == "SUPERSEDES"} == {"why 1", "why 7", "why 10"}
