"""Known answers for the in-process engine: hand-computed cases and an
independent dense power iteration written here with numpy."""

from __future__ import annotations

from collections.abc import Sequence

import igraph as ig
import numpy as np
import pytest

from kenning_encounter.analytics import power
from kenning_encounter.analytics.algorithms import InProcessEngine, InProcessGraph
from kenning_encounter.analytics.engine import betweenness_sources, leiden_iterations
from kenning_encounter.analytics.projection import build_projection
from kenning_encounter.store.records import EdgeRecord, NodeRecord


def graph(n: int, pairs: Sequence[tuple[int, int]], relation: str = "INFORMS") -> InProcessGraph:
    """Nodes n0..n{n-1} in that order (their ticks), one relation per pair."""
    nodes = [
        NodeRecord(id=f"n{i}", type="Concept", name=f"c{i}", description="", tick=i, created_at="")
        for i in range(n)
    ]
    edges = [EdgeRecord(f"n{a}", f"n{b}", relation, n + j) for j, (a, b) in enumerate(pairs)]
    return InProcessEngine().load(build_projection(nodes, edges))


def random_pairs(n: int, m: int, seed: int) -> list[tuple[int, int]]:
    rng = np.random.default_rng(seed)
    pairs = {(int(a), int(b)) for a, b in rng.integers(0, n, size=(m, 2)) if a != b}
    return sorted(pairs)


def dense_articlerank(n: int, pairs: Sequence[tuple[int, int]], d: float = 0.85) -> np.ndarray:
    out = np.zeros(n)
    for a, _ in pairs:
        out[a] += 1
    mean = len(pairs) / n
    x = np.full(n, 1 - d)
    for _ in range(2000):
        nxt = np.full(n, 1 - d)
        for a, b in pairs:
            nxt[b] += d * x[a] / (out[a] + mean)
        x = nxt
    return x


def dense_ppr(
    n: int,
    pairs: Sequence[tuple[int, int]],
    seeds: Sequence[int],
    directed: bool,
    d: float = 0.85,
    weights: np.ndarray | None = None,
) -> np.ndarray:
    """Walk with restart at the seeds (or by ``weights``); a walker at a dead end
    restarts too."""
    adj = np.zeros((n, n))
    for a, b in pairs:
        adj[a, b] += 1
        if not directed:
            adj[b, a] += 1
    reset = np.zeros(n)
    reset[list(seeds)] = 1 / len(seeds)
    if weights is not None:
        reset = weights / weights.sum()
    out = adj.sum(axis=1)
    x = np.full(n, 1 / n)
    for _ in range(3000):
        moving = np.where(out > 0, x / np.where(out > 0, out, 1), 0.0)
        stuck = x[out == 0].sum()
        x = (1 - d) * reset + d * (adj.T @ moving) + d * stuck * reset
    return x


def test_articlerank_three_nodes_by_hand() -> None:
    # a -> b, a -> c, b -> c: out-degrees 2, 1, 0; mean out-degree 1.
    # AR(a) = 0.15; AR(b) = 0.15 + 0.85 * 0.15 / 3 = 0.1925;
    # AR(c) = 0.15 + 0.85 * (0.15 / 3 + 0.1925 / 2) = 0.2743125.
    scores = graph(3, [(0, 1), (0, 2), (1, 2)]).articlerank()
    assert scores.values == pytest.approx([0.15, 0.1925, 0.2743125], abs=1e-9)
    assert scores.engine == "scipy"
    assert "converged after" in scores.detail


def test_articlerank_matches_a_dense_iteration_with_cycles_and_dangling_nodes() -> None:
    pairs = random_pairs(40, 120, seed=3)
    scores = graph(40, pairs).articlerank(tolerance=1e-12, max_iterations=1000)
    assert scores.values == pytest.approx(dense_articlerank(40, pairs), abs=1e-9)


def test_articlerank_counts_parallel_relations() -> None:
    # Two relation types between the same pair are two edges: out-degree 2.
    nodes = [
        NodeRecord(id=f"n{i}", type="Concept", name=f"c{i}", description="", tick=i, created_at="")
        for i in range(2)
    ]
    edges = [EdgeRecord("n0", "n1", "INFORMS", 5), EdgeRecord("n0", "n1", "COMPOSES", 6)]
    scores = InProcessEngine().load(build_projection(nodes, edges)).articlerank()
    # mean out-degree 1; n1 = 0.15 + 0.85 * 2 * 0.15 / (2 + 1)
    assert scores.values == pytest.approx([0.15, 0.15 + 0.85 * 0.1], abs=1e-9)


def test_articlerank_reports_when_it_stops_early() -> None:
    scores = graph(3, [(0, 1), (1, 2), (2, 0)]).articlerank(max_iterations=2)
    assert "stopped before converging after 2 iterations" in scores.detail


def test_personalized_pagerank_on_a_cycle_by_hand() -> None:
    # a -> b -> c -> a, restart at a: x_b = .85 x_a, x_c = .85 x_b,
    # x_a = .15 + .85 x_c, so x_a = .15 / (1 - .85^3).
    scores = graph(3, [(0, 1), (1, 2), (2, 0)]).pagerank(
        seeds=[0], tolerance=1e-13, max_iterations=1000
    )
    a = 0.15 / (1 - 0.85**3)
    assert scores.values == pytest.approx([a, 0.85 * a, 0.85**2 * a], abs=1e-12)
    assert scores.engine == "scipy"
    assert "converged after" in scores.detail


@pytest.mark.parametrize("directed", [True, False])
def test_personalized_pagerank_matches_a_dense_iteration(directed: bool) -> None:
    pairs = random_pairs(30, 70, seed=11)
    seeds = [2, 7, 19]
    scores = graph(30, pairs).pagerank(seeds=seeds, directed=directed, tolerance=1e-14)
    assert scores.values == pytest.approx(dense_ppr(30, pairs, seeds, directed), abs=1e-12)
    assert scores.values.sum() == pytest.approx(1.0)


def test_unpersonalized_pagerank_restarts_anywhere() -> None:
    pairs = random_pairs(25, 60, seed=12)
    scores = graph(25, pairs).pagerank(tolerance=1e-14)
    assert scores.values == pytest.approx(dense_ppr(25, pairs, range(25), True), abs=1e-12)


def test_pagerank_gives_the_same_bits_every_time() -> None:
    loaded = graph(500, random_pairs(500, 1500, seed=13))
    first = loaded.pagerank(seeds=list(range(0, 500, 7)), directed=False).values
    for _ in range(5):
        again = loaded.pagerank(seeds=list(range(0, 500, 7)), directed=False).values
        assert again.tolist() == first.tolist()


def test_pagerank_with_weighted_restart_matches_a_dense_iteration() -> None:
    pairs = random_pairs(30, 70, seed=14)
    weights = np.zeros(30)
    weights[[1, 4, 9]] = [1.0, 0.5, 0.1]
    src = np.asarray([a for a, _ in pairs], dtype=np.int64)
    dst = np.asarray([b for _, b in pairs], dtype=np.int64)
    values, _, converged = power.pagerank(
        30, src, dst, restart=weights, directed=False, tolerance=1e-14, max_iterations=1000
    )
    assert converged
    expected = dense_ppr(30, pairs, [0], directed=False, weights=weights)
    assert values == pytest.approx(expected, abs=1e-12)
    with pytest.raises(ValueError, match="one non-negative weight per node"):
        power.pagerank(30, src, dst, restart=np.zeros(30))


def test_pagerank_refuses_an_empty_seed_list() -> None:
    with pytest.raises(ValueError, match="seeds is empty"):
        graph(2, [(0, 1)]).pagerank(seeds=[])


def test_articulation_points_and_bridges_on_a_path() -> None:
    fragility = graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)]).fragility()
    assert fragility.articulation_points.tolist() == [1, 2, 3]
    assert fragility.bridges.tolist() == [[0, 1], [1, 2], [2, 3], [3, 4]]
    assert fragility.cut_off.tolist() == [1, 2, 2, 1]


def test_articulation_points_and_bridges_on_a_barbell() -> None:
    left = [(a, b) for a in range(4) for b in range(a + 1, 4)]
    right = [(a + 4, b + 4) for a, b in left]
    fragility = graph(8, [*left, *right, (3, 4)]).fragility()
    assert fragility.articulation_points.tolist() == [3, 4]
    assert fragility.bridges.tolist() == [[3, 4]]
    assert fragility.cut_off.tolist() == [4]


def test_two_relations_between_one_pair_are_not_a_bridge() -> None:
    nodes = [
        NodeRecord(id=f"n{i}", type="Concept", name=f"c{i}", description="", tick=i, created_at="")
        for i in range(3)
    ]
    edges = [
        EdgeRecord("n0", "n1", "INFORMS", 5),
        EdgeRecord("n1", "n0", "INFORMS", 6),
        EdgeRecord("n1", "n2", "INFORMS", 7),
    ]
    fragility = InProcessEngine().load(build_projection(nodes, edges)).fragility()
    assert fragility.bridges.tolist() == [[1, 2]]
    assert fragility.articulation_points.tolist() == [1]


def test_bridge_cut_sizes_in_a_tree_of_blocks() -> None:
    # Triangle 0-1-2, a tail 2-3-4, and a triangle 4-5-6 with a leaf 7 on 6.
    pairs = [(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 5), (5, 6), (6, 4), (6, 7)]
    fragility = graph(8, pairs).fragility()
    cuts = dict(
        zip(map(tuple, fragility.bridges.tolist()), fragility.cut_off.tolist(), strict=True)
    )
    assert cuts == {(2, 3): 3, (3, 4): 4, (6, 7): 1}


def test_exact_betweenness_on_a_path() -> None:
    scores = graph(5, [(0, 1), (1, 2), (2, 3), (3, 4)]).betweenness()
    # Undirected pairs through each inner node: 1 -> 3 pairs, 2 -> 4, 3 -> 3.
    assert scores.values.tolist() == [0.0, 3.0, 4.0, 3.0, 0.0]
    assert scores.sampled_from is None
    assert scores.detail == "exact"


def test_sampled_betweenness_says_so_and_is_scaled_to_the_exact_values() -> None:
    pairs = random_pairs(200, 500, seed=5)
    loaded = graph(200, pairs)
    exact = loaded.betweenness().values
    estimates = [loaded.betweenness(sources=40, seed=s) for s in range(60)]
    assert all(e.sampled_from == 40 for e in estimates)
    assert "estimated from 40 of 200 sources" in estimates[0].detail
    mean = np.mean([e.values for e in estimates], axis=0)
    top = np.argsort(-exact)[:10]
    # Unbiased: the average of many samples lands near the exact value.
    assert mean[top] == pytest.approx(exact[top], rel=0.12)
    again = loaded.betweenness(sources=40, seed=0)
    assert again.values.tolist() == estimates[0].values.tolist()


def test_sampling_plan_is_exact_for_small_graphs_and_bounded_for_large() -> None:
    assert betweenness_sources(1_000, 3_000) is None
    assert betweenness_sources(10_000, 30_000) == 256
    assert betweenness_sources(100_000, 300_000) == 62
    assert betweenness_sources(1_000_000, 3_000_000) == 16  # the floor: work bounds it lower
    assert leiden_iterations(1_000) == -1
    assert leiden_iterations(100_000) == 2
    assert leiden_iterations(500_000) == 2
    assert leiden_iterations(500_001) == 1
    assert leiden_iterations(1_000_000) == 1


def test_leiden_separates_two_cliques_and_is_reproducible() -> None:
    left = [(a, b) for a in range(5) for b in range(a + 1, 5)]
    right = [(a + 5, b + 5) for a, b in left]
    loaded = graph(11, [*left, *right, (4, 5)])  # node 10 stands alone
    found = loaded.leiden(seed=7)
    assert found.sizes.tolist() == [5, 5, 1]
    assert found.membership.tolist() == [0] * 5 + [1] * 5 + [2]
    assert found.modularity > 0.4
    assert found.engine == "igraph"
    assert loaded.leiden(seed=7).membership.tolist() == found.membership.tolist()


def test_leiden_with_the_same_seed_gives_the_same_partition_on_a_noisy_graph() -> None:
    loaded = graph(300, random_pairs(300, 900, seed=9))
    first = loaded.leiden(iterations=2, seed=3)
    assert loaded.leiden(iterations=2, seed=3).membership.tolist() == first.membership.tolist()


def test_wcc_counts_sizes_and_isolated_nodes() -> None:
    found = graph(7, [(0, 1), (1, 2), (3, 4)]).wcc()
    assert found.count == 4
    assert found.sizes.tolist() == [3, 2, 1, 1]
    assert found.isolated.tolist() == [5, 6]
    assert found.membership.tolist() == [0, 0, 0, 1, 1, 2, 3]


def test_local_clustering_of_a_triangle_with_a_star() -> None:
    # Triangle 0-1-2; node 0 also holds leaves 3, 4, 5.
    found = graph(6, [(0, 1), (1, 2), (2, 0), (0, 3), (0, 4), (0, 5)]).clustering()
    assert found.degree.tolist() == [5, 2, 2, 1, 1, 1]
    # Node 0: one linked pair among C(5, 2) = 10.
    assert found.coefficient.tolist() == pytest.approx([0.1, 1.0, 1.0, 0.0, 0.0, 0.0])


def test_results_cannot_be_changed_in_place() -> None:
    scores = graph(3, [(0, 1), (1, 2)]).articlerank()
    with pytest.raises(ValueError):
        scores.values[0] = 1.0


def test_an_empty_graph_gives_empty_results() -> None:
    loaded = graph(0, [])
    assert loaded.articlerank().values.shape == (0,)
    assert loaded.pagerank().values.shape == (0,)
    assert loaded.betweenness().values.shape == (0,)
    assert loaded.leiden().count == 0
    assert loaded.wcc().count == 0
    assert loaded.fragility().bridges.shape == (0, 2)


def test_a_projection_loaded_a_chunk_at_a_time_is_the_same_graph(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The edges go to igraph in chunks (a list of every pair at once held 675 MiB at a
    million nodes); the view must still be the one igraph's own collapse of the directed
    relations gives, edge for edge, or a bridge would name the wrong ends."""
    from kenning_encounter.analytics import algorithms

    pairs = [*random_pairs(40, 90, seed=7), (40, 41), (41, 42)]  # bridges out to a tail
    whole = graph(43, pairs)
    monkeypatch.setattr(algorithms, "LOAD_CHUNK", 4)
    chunked = graph(43, pairs)
    p = chunked.projection
    directed = ig.Graph(
        n=43, edges=list(zip(p.sources.tolist(), p.targets.tolist(), strict=True)), directed=True
    )
    loaded = chunked._simple.get_edgelist()  # pyright: ignore[reportPrivateUsage]
    assert loaded == directed.as_undirected(mode="collapse").get_edgelist()
    a, b = whole.fragility(), chunked.fragility()
    assert b.bridges.tolist() == a.bridges.tolist() and len(b.bridges) >= 2
    assert b.articulation_points.tolist() == a.articulation_points.tolist()
    assert b.cut_off.tolist() == a.cut_off.tolist()
    assert np.array_equal(chunked.wcc().membership, whole.wcc().membership)


@pytest.mark.parametrize("seed", range(12))
def test_bridges_and_components_are_the_relations_multigraph_s(seed: int) -> None:
    """Only the simple view is loaded; what the directed multigraph of the relations
    says (igraph on it, here the oracle) must still be what is found: a pair joined by
    two relations, either way round or of two types, is no bridge."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 30))
    kinds = ("INFORMS", "GROUNDS")
    nodes = [
        NodeRecord(id=f"n{i}", type="Concept", name=f"c{i}", description="", tick=i, created_at="")
        for i in range(n)
    ]
    edges = [
        EdgeRecord(f"n{a}", f"n{b}", kinds[int(k)], n + j)
        for j, (a, b, k) in enumerate(
            rng.integers(0, [n, n, 2], size=(int(rng.integers(n, 2 * n)), 3))
        )
        if a != b
    ]
    loaded = InProcessEngine().load(build_projection(nodes, edges))
    p = loaded.projection
    multigraph = ig.Graph(
        n=p.node_count,
        edges=list(zip(p.sources.tolist(), p.targets.tolist(), strict=True)),
        directed=True,
    )
    ids = sorted(multigraph.bridges())
    expected = [[int(p.sources[i]), int(p.targets[i])] for i in ids]
    fragility = loaded.fragility()
    assert fragility.bridges.tolist() == expected
    # Each bridge cuts off the smaller of the two sides it joins.
    cut_off: list[int] = []
    for i in ids:
        rest = multigraph.copy()
        rest.delete_edges([i])
        parts = rest.connected_components(mode="weak")
        sides = [len(parts[parts.membership[int(end)]]) for end in (p.sources[i], p.targets[i])]
        cut_off.append(min(sides))
    assert fragility.cut_off.tolist() == cut_off
    weak = multigraph.connected_components(mode="weak")
    found = loaded.wcc()
    assert sorted(map(sorted, weak)) == sorted(
        sorted(np.flatnonzero(found.membership == c).tolist()) for c in range(found.count)
    )
