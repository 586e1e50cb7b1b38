"""Relations as columns (store/outline.py) and the projection made from them.

The embedded store hands a large memory's outline to orient as columns of positions;
records are put in the same columns. These tests hold the columns to the records they
stand for, the outline's filter to the records filtered, and a projection made from
columns in any order to the one made from records.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning_encounter.analytics.projection import Projection, build_projection
from kenning_encounter.store.outline import OUTSIDE, Outline, RelationColumns, Relations
from kenning_encounter.store.records import EdgeRecord, NodeRecord

KINDS = ("GROUNDS", "INFORMS", "SUPERSEDES")


def _node(i: int, tick: int, locus: str, superseded_by: str | None = None) -> NodeRecord:
    return NodeRecord(
        f"n{i:03d}", "Concept", f"n{i}", "", tick, "2026-01-01T00:00:00+00:00",
        locus=locus, superseded_by=superseded_by,
    )  # fmt: skip


@st.composite
def graphs(draw: st.DrawFn) -> tuple[list[NodeRecord], list[EdgeRecord]]:
    count = draw(st.integers(1, 12))
    # Few ticks, so that many nodes share one (a batch does) and the id decides.
    ticks = draw(st.lists(st.integers(0, 3), min_size=count, max_size=count))
    loci = draw(st.lists(st.sampled_from("ab"), min_size=count, max_size=count))
    nodes = [_node(i, t, lo) for i, (t, lo) in enumerate(zip(ticks, loci, strict=True))]
    ends = st.integers(0, count)  # ``count`` names a node that is not there
    raw = draw(st.lists(st.tuples(ends, ends, st.sampled_from(KINDS), st.integers(0, 9))))
    # Revisions as the write path allows them: chains, each node revising at most one and
    # revised by at most one, a newer node revising an older (no cycle). A branching or
    # circular "chain" has no head, and its projection was order-dependent only there.
    revising: set[int] = set()
    revised: set[int] = set()
    edges: list[EdgeRecord] = []
    for s, t, kind, tick in raw:
        if kind == "SUPERSEDES":
            if s <= t or s in revising or t in revised:
                continue
            revising.add(s)
            revised.add(t)
        edges.append(EdgeRecord(f"n{s:03d}", f"n{t:03d}", kind, tick))
    return nodes, edges


def _shape(p: Projection) -> tuple[object, ...]:
    return (
        [n.id for n in p.nodes],
        p.sources.tolist(),
        p.targets.tolist(),
        [p.relation_names[c] for c in p.relation_codes.tolist()],
        p.first_tick.tolist(),
        dict(p.heads),
    )


@settings(max_examples=150, deadline=None)
@given(graphs(), st.randoms(use_true_random=False))
def test_columns_in_any_order_project_as_the_records_do(
    graph: tuple[list[NodeRecord], list[EdgeRecord]], rnd: random.Random
) -> None:
    nodes, edges = graph
    from_records = build_projection(nodes, edges)
    shuffled, reordered = list(nodes), list(edges)
    rnd.shuffle(shuffled)
    rnd.shuffle(reordered)
    # Columns whose types were met in another order than the records' sorted one.
    columns = RelationColumns()
    for kind in reversed(KINDS):
        mine = [e for e in reordered if e.type == kind]
        at = {n.id: i for i, n in enumerate(shuffled)}
        columns.add(
            kind,
            (at.get(e.source, OUTSIDE) for e in mine),
            (at.get(e.target, OUTSIDE) for e in mine),
            (e.tick for e in mine),
        )
    from_columns = build_projection(shuffled, columns.relations())
    assert _shape(from_columns) == _shape(from_records)
    ordered = sorted(
        (n for n in nodes if n.id not in from_records.heads), key=lambda n: (n.tick, n.id)
    )
    assert [n.id for n in from_records.nodes] == [n.id for n in ordered]


@settings(max_examples=150, deadline=None)
@given(graphs())
def test_keeping_moves_the_relations_with_their_nodes(
    graph: tuple[list[NodeRecord], list[EdgeRecord]],
) -> None:
    nodes, edges = graph
    outline = Outline.of_records(nodes, edges)
    kept = outline.keeping(lambda n: n.locus == "a")
    ids = {n.id for n in nodes if n.locus == "a"}
    assert [n.id for n in kept.nodes] == [n.id for n in nodes if n.locus == "a"]
    expected = [e for e in edges if e.source in ids and e.target in ids]
    assert sorted(kept.edge_records(), key=repr) == sorted(expected, key=repr)


def test_an_outline_keeping_everything_is_itself() -> None:
    nodes = [_node(1, 1, "a"), _node(2, 2, "a")]
    outline = Outline.of_records(nodes, [EdgeRecord("n001", "n002", "GROUNDS", 3)])
    assert outline.keeping(lambda n: True) is outline


def test_records_from_columns_leave_out_ends_outside_and_keep_type_and_tick() -> None:
    nodes = [_node(1, 1, "a"), _node(2, 2, "a")]
    edges = [EdgeRecord("n001", "n002", "GROUNDS", 3), EdgeRecord("n001", "gone", "INFORMS", 4)]
    relations = Relations.of_records(nodes, edges)
    assert len(relations) == 2 and relations.last_tick() == 4
    assert relations.records(nodes) == [edges[0]]


def test_columns_of_unequal_length_are_refused() -> None:
    with pytest.raises(ValueError, match="one length"):
        RelationColumns().add("GROUNDS", [0, 1], [1], [5, 6])


def test_placed_ends_are_added_as_their_values_and_unequal_ones_refused() -> None:
    import numpy as np

    gathered = RelationColumns()
    gathered.add("GROUNDS", [2], [0], [1])
    gathered.add_placed("INFORMS", np.array([0, OUTSIDE]), np.array([1, 2]), [7, 8])
    relations = gathered.relations()
    assert (list(relations.source), list(relations.target)) == ([2, 0, OUTSIDE], [0, 1, 2])
    assert (list(relations.kind), list(relations.tick)) == ([0, 1, 1], [1, 7, 8])
    with pytest.raises(ValueError, match="one length"):
        gathered.add_placed("INFORMS", np.array([0, 1]), np.array([1]), [5, 6])
    with pytest.raises(ValueError, match="one length"):
        gathered.add_placed("INFORMS", np.array([0, 1]), np.array([1, 0]), [5])


def test_a_projection_refuses_a_node_given_twice() -> None:
    twice = [_node(1, 1, "a"), _node(1, 2, "a")]
    with pytest.raises(ValueError, match="distinct"):
        build_projection(twice, [])
