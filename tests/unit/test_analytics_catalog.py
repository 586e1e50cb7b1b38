"""Named projections for the focused tools: create, run, cap, expiry, drop."""

from __future__ import annotations

import threading

import pytest

from kenning_encounter.analytics.catalog import ALGORITHMS, ProjectionCatalog
from kenning_encounter.errors import Conflict, InvalidInput, NotFound
from kenning_encounter.store.records import EdgeRecord, NodeRecord


def node(node_id: str, kind: str, tick: int) -> NodeRecord:
    return NodeRecord(
        id=node_id,
        type=kind,
        name=f"{kind.lower()} {node_id}",
        description="",
        tick=tick,
        created_at="2025-01-01T00:00:00+00:00",
    )


# Two concepts grounded by observations, a question about one of them, and a
# component nothing points at.
NODES = [
    node("c1", "Concept", 1),
    node("c2", "Concept", 2),
    *(node(f"o{i}", "Observation", 3 + i) for i in range(6)),
    node("q", "Question", 10),
    node("cmp", "Component", 11),
]
EDGES = [
    *(EdgeRecord(f"o{i}", "c1", "GROUNDS", 20 + i) for i in range(4)),
    *(EdgeRecord(f"o{i}", "c2", "GROUNDS", 30 + i) for i in range(4, 6)),
    EdgeRecord("q", "c1", "ABOUT", 40),
    EdgeRecord("o0", "q", "RAISES", 41),
]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_run_each_algorithm_and_get_named_results() -> None:
    catalog = ProjectionCatalog()
    info = catalog.create("all", NODES, EDGES)
    assert (info.nodes, info.edges) == (10, 8)
    assert info.engine == "in-process"

    articlerank = catalog.run("all", "articlerank", top_k=3)
    assert articlerank.engine == "scipy"
    assert articlerank.top is not None
    assert articlerank.top.items[0].node.id == "c1"
    assert articlerank.top.total == 10 and len(articlerank.top.items) == 3
    assert "«concept c1» [Concept c1]" in articlerank.text

    pagerank = catalog.run("all", "pagerank")
    assert pagerank.top is not None and pagerank.top.items[0].node.id == "c1"

    betweenness = catalog.run("all", "betweenness")
    assert betweenness.engine == "igraph" and betweenness.detail == "exact"
    assert betweenness.top is not None and betweenness.top.items[0].node.id == "c1"

    leiden = catalog.run("all", "leiden")
    assert leiden.communities is not None
    assert leiden.communities.largest.items[0].label[0].id == "c1"

    wcc = catalog.run("all", "wcc")
    assert wcc.components is not None
    assert wcc.components.count == 3
    assert list(wcc.components.sizes.items) == [6, 3, 1]
    assert [r.id for r in wcc.components.isolated.items] == ["cmp"]
    assert set(ALGORITHMS) == {"pagerank", "articlerank", "betweenness", "leiden", "wcc"}


def test_scoped_projections() -> None:
    catalog = ProjectionCatalog()
    around = catalog.create("near-q", NODES, EDGES, around="q", hops=1)
    assert (around.nodes, around.edges) == (3, 3)  # q, c1, o0 and all their relations
    assert "within 1 hops of q" in around.scope
    typed = catalog.create("evidence", NODES, EDGES, node_types=["Observation", "Concept"])
    assert (typed.nodes, typed.edges) == (8, 6)


def test_an_empty_projection_is_refused_with_the_reason() -> None:
    catalog = ProjectionCatalog()
    with pytest.raises(InvalidInput, match="no nodes yet"):
        catalog.create("p", [], [])
    with pytest.raises(InvalidInput, match="no edges yet: the memory holds 10 nodes"):
        catalog.create("p", NODES, [])
    with pytest.raises(InvalidInput, match=r"selects no nodes .* too narrow"):
        catalog.create("p", NODES, EDGES, node_types=["Hypothesis"])
    with pytest.raises(InvalidInput, match=r"selects 3 nodes but no relations .* too narrow"):
        catalog.create("p", NODES, EDGES, node_types=["Concept", "Component"])
    assert catalog.open_projections() == []


def test_the_cap_refuses_one_more_until_one_is_dropped() -> None:
    catalog = ProjectionCatalog(cap=2)
    catalog.create("a", NODES, EDGES)
    catalog.create("b", NODES, EDGES)
    with pytest.raises(Conflict, match="2 projections are open already \\(a, b\\)"):
        catalog.create("c", NODES, EDGES)
    dropped = catalog.drop("a")
    assert dropped.name == "a"
    catalog.create("c", NODES, EDGES)
    assert [p.name for p in catalog.open_projections()] == ["b", "c"]


def test_idle_projections_expire_and_use_keeps_them() -> None:
    clock = Clock()
    catalog = ProjectionCatalog(idle_seconds=900, clock=clock)
    catalog.create("used", NODES, EDGES)
    catalog.create("idle", NODES, EDGES)
    clock.now += 600
    catalog.run("used", "wcc")
    clock.now += 600
    assert [p.name for p in catalog.open_projections()] == ["used"]
    with pytest.raises(NotFound, match=r"no projection 'idle'.*gds_create_projection"):
        catalog.run("idle", "wcc")
    clock.now += 901
    assert catalog.open_projections() == []


def test_names_must_be_new_and_well_formed() -> None:
    catalog = ProjectionCatalog()
    catalog.create("p1", NODES, EDGES)
    with pytest.raises(Conflict, match="'p1' exists already"):
        catalog.create("p1", NODES, EDGES)
    with pytest.raises(InvalidInput, match="name:"):
        catalog.create("no spaces", NODES, EDGES)


def test_unknown_algorithm_projection_and_drop_are_refused() -> None:
    catalog = ProjectionCatalog()
    catalog.create("p", NODES, EDGES)
    with pytest.raises(InvalidInput, match="algorithm: unknown; use one of: pagerank"):
        catalog.run("p", "closeness")
    with pytest.raises(InvalidInput, match="top_k"):
        catalog.run("p", "pagerank", top_k=0)
    catalog.drop("p")
    with pytest.raises(NotFound, match="no projection 'p'"):
        catalog.drop("p")
    with pytest.raises(NotFound):
        catalog.run("p", "pagerank")


def test_concurrent_creates_respect_the_cap() -> None:
    catalog = ProjectionCatalog(cap=3)
    barrier = threading.Barrier(8)
    refused: list[Exception] = []

    def create(i: int) -> None:
        barrier.wait()
        try:
            catalog.create(f"p{i}", NODES, EDGES)
        except Conflict as exc:
            refused.append(exc)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(catalog.open_projections()) == 3
    assert len(refused) == 5


def test_close_drops_everything() -> None:
    catalog = ProjectionCatalog()
    catalog.create("a", NODES, EDGES)
    catalog.close()
    assert catalog.open_projections() == []
