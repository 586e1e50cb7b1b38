"""read_cypher shows the same graph on both stores (issue #14 item 3).

A node reads with the same properties on either backend, once, and the
stores' bookkeeping (counters, name and source registries, index fields,
columns that mirror edges) is not part of what a query sees.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore

CAPS: dict[str, Any] = {"row_cap": 100, "char_cap": 100_000, "timeout_s": 10.0}
# What an authored node shows: the vocabulary's properties and the store's id, tick,
# creation time and place in its batch. The same on both backends.
SHOWN = {"_LABEL", "id", "tick", "created_at", "name", "description", "ord"}


@pytest.fixture
def seeded(store: GraphStore) -> GraphStore:
    memory = Memory(store)
    memory.advance_encounter("shape-session", "shape")
    memory.create_entities(
        "shape-session",
        [
            {"type": "Question", "name": "q1", "description": "why"},
            {"type": "Observation", "name": "o1", "t_observed": "2026-01-01T00:00:00Z"},
            {
                "type": "Component",
                "name": "client.py",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": "src/client.py",
            },
        ],
    )
    memory.create_entities(
        "shape-session",
        [{"type": "Question", "name": "q2", "supersedes": "q1", "revision_why": "sharper"}],
    )
    return store


def _rows(store: GraphStore, query: str) -> list[list[Any]]:
    return store.read_cypher(query, None, **CAPS).rows


def test_a_node_shows_the_same_properties_on_either_store(seeded: GraphStore) -> None:
    [[question], _] = _rows(seeded, "MATCH (n:Question) RETURN n ORDER BY n.name")
    assert set(question) == SHOWN | {"status"}
    [[observation]] = _rows(seeded, "MATCH (n:Observation) RETURN n")
    assert set(observation) == SHOWN | {"t_observed"}
    [[component]] = _rows(seeded, "MATCH (n:Component) RETURN n")
    assert set(component) == SHOWN | {"source_kind", "source_label", "source_key"}
    # The revision is the edge, on both stores: no mirror column says it again.
    assert _rows(seeded, "MATCH (s)-[:SUPERSEDES]->(o) RETURN s.name, o.name") == [["q2", "q1"]]


def test_a_node_is_returned_once(seeded: GraphStore) -> None:
    assert _rows(seeded, "MATCH (n) WHERE n.name = 'q2' RETURN n.name") == [["q2"]]
    assert _rows(seeded, "MATCH (n) WHERE n.name = 'client.py' RETURN count(n)") == [[1]]


def test_bookkeeping_is_not_in_the_graph_a_query_sees(seeded: GraphStore) -> None:
    # Four authored nodes, the session's Locus, its encounter and the Person directing it
    # (the process layer, which a query may read): nothing else.
    assert _rows(seeded, "MATCH (n) RETURN count(n)") == [[7]]
    assert _rows(seeded, "MATCH (:Locus)-[:DIRECTED_BY]->(p:Person) RETURN count(p)") == [[1]]
    with pytest.raises(ReadOnlyViolation):
        _rows(seeded, "MATCH (m:Meta) RETURN m.key")
