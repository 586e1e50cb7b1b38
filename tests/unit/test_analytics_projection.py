"""The projection: revision chains folded into heads, scoping, determinism."""

from __future__ import annotations

import random

import pytest

from kenning_encounter.analytics.projection import Projection, build_projection
from kenning_encounter.errors import InvalidInput, NotFound, UnknownType
from kenning_encounter.store.records import EdgeRecord, NodeRecord


def node(
    node_id: str, kind: str, tick: int, *, superseded_by: str | None = None, name: str = ""
) -> NodeRecord:
    return NodeRecord(
        id=node_id,
        type=kind,
        name=name or node_id,
        description="",
        tick=tick,
        created_at="2025-01-01T00:00:00+00:00",
        superseded_by=superseded_by,
    )


def edge(source: str, target: str, kind: str, tick: int) -> EdgeRecord:
    return EdgeRecord(source, target, kind, tick)


def named_edges(p: Projection) -> set[tuple[str, str, str]]:
    return {
        (p.nodes[s].id, p.nodes[t].id, p.relation_names[c])
        for s, t, c in zip(
            p.sources.tolist(), p.targets.tolist(), p.relation_codes.tolist(), strict=True
        )
    }


# c1 was revised as c2, then c2 as c3: c3 is the head. o1 grounded c1; o2
# grounds c3; c2 raised q1.
CHAIN_NODES = [
    node("o1", "Observation", 1),
    node("c1", "Concept", 2, superseded_by="c2", name="cache idea"),
    node("c2", "Concept", 5, superseded_by="c3", name="cache idea v2"),
    node("c3", "Concept", 8, name="cache idea v3"),
    node("o2", "Observation", 9),
    node("q1", "Question", 6),
]
CHAIN_EDGES = [
    edge("o1", "c1", "GROUNDS", 3),
    edge("c2", "c1", "SUPERSEDES", 5),
    edge("c2", "q1", "RAISES", 7),
    edge("c3", "c2", "SUPERSEDES", 8),
    edge("o2", "c3", "GROUNDS", 10),
    edge("o1", "c3", "GROUNDS", 11),  # the same grounding, made again on the head
]


def test_heads_replace_their_revisions_and_edges_follow_them() -> None:
    p = build_projection(CHAIN_NODES, CHAIN_EDGES)
    assert [n.id for n in p.nodes] == ["o1", "q1", "c3", "o2"]
    assert named_edges(p) == {
        ("o1", "c3", "GROUNDS"),
        ("c3", "q1", "RAISES"),
        ("o2", "c3", "GROUNDS"),
    }
    assert p.edge_count == 3  # the redirected and the repeated grounding are one relation
    assert p.folded == 2
    assert p.position("c1") == p.position("c3") == p.index["c3"]
    # The head carries the age of its oldest revision.
    assert int(p.first_tick[p.index["c3"]]) == 2


def test_the_chain_is_found_from_supersedes_edges_alone() -> None:
    bare = [node(n.id, n.type, n.tick, name=n.name) for n in CHAIN_NODES]
    p = build_projection(bare, CHAIN_EDGES)
    assert [n.id for n in p.nodes] == ["o1", "q1", "c3", "o2"]


def test_history_keeps_every_revision_and_supersedes_edges() -> None:
    p = build_projection(CHAIN_NODES, CHAIN_EDGES, include_history=True)
    assert p.node_count == 6
    assert ("c2", "c1", "SUPERSEDES") in named_edges(p)
    assert ("o1", "c1", "GROUNDS") in named_edges(p)
    assert p.folded == 0


def test_input_order_does_not_matter() -> None:
    first = build_projection(CHAIN_NODES, CHAIN_EDGES)
    nodes, edges = list(CHAIN_NODES), list(CHAIN_EDGES)
    random.Random(4).shuffle(nodes)
    random.Random(5).shuffle(edges)
    second = build_projection(nodes, edges)
    assert [n.id for n in second.nodes] == [n.id for n in first.nodes]
    assert second.sources.tolist() == first.sources.tolist()
    assert second.targets.tolist() == first.targets.tolist()
    assert second.relation_codes.tolist() == first.relation_codes.tolist()


def test_edges_to_unknown_nodes_are_left_out() -> None:
    p = build_projection(
        [node("a", "Observation", 1), node("b", "Concept", 2)],
        [edge("a", "b", "GROUNDS", 3), edge("a", "ghost", "GROUNDS", 4)],
    )
    assert named_edges(p) == {("a", "b", "GROUNDS")}


def test_arrays_are_read_only() -> None:
    p = build_projection(CHAIN_NODES, CHAIN_EDGES)
    with pytest.raises(ValueError):
        p.sources[0] = 1


# A line a - b - c - d - e of concepts and observations, plus a question off c.
LINE_NODES = [
    node("a", "Concept", 1),
    node("b", "Observation", 2),
    node("c", "Concept", 3),
    node("d", "Observation", 4),
    node("e", "Concept", 5),
    node("q", "Question", 6),
]
LINE_EDGES = [
    edge("b", "a", "GROUNDS", 7),
    edge("b", "c", "GROUNDS", 8),
    edge("d", "c", "GROUNDS", 9),
    edge("d", "e", "GROUNDS", 10),
    edge("c", "q", "RAISES", 11),
]


def test_scope_by_node_types_keeps_the_induced_subgraph() -> None:
    p = build_projection(LINE_NODES, LINE_EDGES, node_types=["Concept", "Question"])
    assert [n.id for n in p.nodes] == ["a", "c", "e", "q"]
    assert named_edges(p) == {("c", "q", "RAISES")}
    assert p.scope.scoped
    assert "types Concept, Question" in p.scope.describe()


def test_scope_around_a_node_follows_relations_both_ways() -> None:
    p = build_projection(LINE_NODES, LINE_EDGES, around="a", hops=2)
    assert [n.id for n in p.nodes] == ["a", "b", "c"]
    wider = build_projection(LINE_NODES, LINE_EDGES, around="a", hops=3)
    assert [n.id for n in wider.nodes] == ["a", "b", "c", "d", "q"]


def test_scope_around_and_types_together_keep_the_centre() -> None:
    p = build_projection(LINE_NODES, LINE_EDGES, around="b", hops=1, node_types=["Concept"])
    assert [n.id for n in p.nodes] == ["a", "b", "c"]
    assert named_edges(p) == {("b", "a", "GROUNDS"), ("b", "c", "GROUNDS")}


def test_around_accepts_a_name_and_an_old_revision() -> None:
    by_name = build_projection(CHAIN_NODES, CHAIN_EDGES, around="cache idea v3", hops=1)
    by_old_id = build_projection(CHAIN_NODES, CHAIN_EDGES, around="c1", hops=1)
    by_old_name = build_projection(CHAIN_NODES, CHAIN_EDGES, around="cache idea", hops=1)
    for p in (by_name, by_old_id, by_old_name):
        assert p.scope.around == "c3"
        assert sorted(n.id for n in p.nodes) == ["c3", "o1", "o2", "q1"]


def test_around_accepts_a_head_s_own_id() -> None:
    by_id = build_projection(CHAIN_NODES, CHAIN_EDGES, around="c3", hops=1)
    assert by_id.scope.around == "c3"
    assert sorted(n.id for n in by_id.nodes) == ["c3", "o1", "o2", "q1"]


def test_a_supersession_cycle_from_a_bad_record_keeps_one_of_its_nodes_as_the_head() -> None:
    """The store forbids cycles; were a bad record to make one, the idea still stands once."""
    nodes = [
        node("x1", "Concept", 1, superseded_by="x2"),
        node("x2", "Concept", 2, superseded_by="x1"),
        node("o1", "Observation", 3),
    ]
    p = build_projection(nodes, [edge("o1", "x2", "GROUNDS", 4)])
    concepts = [n.id for n in p.nodes if n.type == "Concept"]
    assert len(concepts) == 1
    assert p.folded == 1
    assert p.position("x1") == p.position("x2") == p.index[concepts[0]]
    assert p.edge_count == 1


def test_unknown_centre_is_refused() -> None:
    with pytest.raises(NotFound, match="no node 'nowhere'"):
        build_projection(LINE_NODES, LINE_EDGES, around="nowhere")


def test_bad_scope_arguments_are_refused() -> None:
    with pytest.raises(UnknownType, match="Encounter"):
        build_projection(LINE_NODES, LINE_EDGES, node_types=["Encounter"])
    with pytest.raises(InvalidInput, match="node_types: is empty"):
        build_projection(LINE_NODES, LINE_EDGES, node_types=[])
    with pytest.raises(InvalidInput, match="hops: must be between 1 and 4"):
        build_projection(LINE_NODES, LINE_EDGES, around="a", hops=9)


def test_an_empty_input_gives_an_empty_projection() -> None:
    p = build_projection([], [])
    assert p.node_count == 0
    assert p.edge_count == 0
