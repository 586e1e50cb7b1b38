"""The GDS engine on a real Neo4j with Graph Data Science, against the in-process engine.

The server is the one KENNING_ENCOUNTER_TEST_NEO4J_URI names (user and password
from its _USERNAME / _PASSWORD siblings; never NEO4J_*). When none answers, or it has no
GDS, these tests skip naming the URI, or fail when
KENNING_ENCOUNTER_REQUIRE_NEO4J=1. They write nothing to the database: every
graph is built from parameters and lives in GDS's memory only, so they can run
beside the backend's tests on the same server.

Tolerances (both engines read the same seeded ~300-node, ~900-relation graph):

- ArticleRank: every score within 2e-6. Each engine stops once no score moves
  by 1e-7 in a step; the iteration contracts by at most d = 0.85 a step, so
  each is within 1e-7 * d / (1 - d) < 6e-7 of the fixed point.
- PageRank (GDS's scores normalised to sum to one): every score within 1e-7.
- Betweenness (exact): every score within 1e-9 of the largest; top-10 overlap
  at least 8 (the issue's bar; in practice all 10).
- Leiden: modularity within 0.05. The partitions may differ; GDS's Leiden
  settles 0.03-0.04 below igraph's on this graph (it stops when a level no
  longer helps, igraph iterates to a stable partition).
- WCC, articulation points, bridges and the nodes they cut off: equal.
- Local clustering: within 1e-12.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, LiteralString, NoReturn, cast

import igraph as ig
import numpy as np
import pytest

from kenning_encounter.analytics import (
    InProcessEngine,
    Projection,
    ProjectionCatalog,
    build_panel,
    build_projection,
)
from kenning_encounter.analytics.engine import EngineGraph
from kenning_encounter.analytics.gds import GdsEngine, GdsGraph
from kenning_encounter.analytics.sections import frontier_seeds
from kenning_encounter.errors import StoreError
from kenning_encounter.store.neo4j import gds_queries as q
from kenning_encounter.store.neo4j.gds import GdsExecutor, open_gds
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from tests.support.backends import neo4j_uri, require_answering

if TYPE_CHECKING:
    from neo4j import Driver

pytestmark = pytest.mark.neo4j

AR_TOLERANCE = 2e-6
PR_TOLERANCE = 1e-7
BETWEENNESS_RELATIVE = 1e-9
MODULARITY_TOLERANCE = 0.05
TOP = 10


def _unavailable(reason: str) -> NoReturn:
    if os.environ.get("KENNING_ENCOUNTER_REQUIRE_NEO4J") == "1":
        pytest.fail(
            f"Neo4j with GDS is required here (KENNING_ENCOUNTER_REQUIRE_NEO4J=1): {reason}"
        )
    pytest.skip(reason)


@pytest.fixture(scope="module")
def driver() -> Iterator[Driver]:
    import neo4j

    target = require_answering()  # skips only when nothing answers; a refused login fails
    opened = neo4j.GraphDatabase.driver(
        target.uri, auth=target.auth, notifications_min_severity="OFF"
    )
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(scope="module")
def engine(driver: Driver) -> GdsEngine:
    found = open_gds(driver, uri=neo4j_uri())
    if found is None:
        _unavailable(f"the Neo4j at {neo4j_uri()} has no Graph Data Science plugin")
        raise AssertionError("unreachable")
    return GdsEngine(found)


def _executor(driver: Driver, version: str) -> GdsExecutor:
    return GdsExecutor(driver, version, database="neo4j", uri=neo4j_uri())


class RecordingEngine(GdsEngine):
    """The GDS engine, remembering the name of every graph it made."""

    def __init__(self, driver: Driver, version: str) -> None:
        super().__init__(_executor(driver, version))
        self.made: list[str] = []

    def load(self, projection: Projection) -> EngineGraph:
        graph = super().load(projection)
        if isinstance(graph, GdsGraph):
            self.made.append(graph.graph_name)
        return graph


def _graphs(driver: Driver) -> set[str]:
    records, _, _ = driver.execute_query(q.LIST_GRAPHS)
    return set(records[0]["graphs"])


def synthetic(size: int = 300, seed: int = 11) -> tuple[list[NodeRecord], list[EdgeRecord]]:
    """A seeded memory: a main body where links favour recent and well-linked nodes
    (so hubs and regions form), a few small separate groups, pendant nodes (bridges),
    a pendant held by two relations (no bridge), and isolated nodes."""
    rng = np.random.default_rng(seed)
    kinds = ["Observation", "Concept", "Question", "Hypothesis", "Note"]
    statuses = {"Question": ["open", "resolved"], "Hypothesis": ["untested", "supported"]}
    relations = ["ABOUT", "GROUNDS", "INFORMS", "SUPPORTS", "RAISES"]
    nodes: list[NodeRecord] = []
    for i in range(size):
        kind = kinds[int(rng.integers(len(kinds)))]
        choices = statuses.get(kind)
        status = None if choices is None else choices[int(rng.integers(len(choices)))]
        nodes.append(
            NodeRecord(
                id=f"n{i:04d}",
                type=kind,
                name=f"{kind.lower()} {i}",
                description="",
                tick=i + 1,
                created_at="2025-01-01T00:00:00+00:00",
                status=status,
            )
        )
    pairs: list[tuple[int, int]] = []
    main = size - 20
    degree = np.ones(main)
    for i in range(1, main):
        for _ in range(3 if i > 3 else 1):
            if rng.random() < 0.7:
                j = i - 1 - int(rng.geometric(0.15)) % i
            else:
                weights = degree[:i] / degree[:i].sum()
                j = int(rng.choice(i, p=weights))
            pairs.append((i, j))
            degree[i] += 1
            degree[j] += 1
    groups = [(main, main + 1), (main + 1, main + 2), (main + 2, main), (main + 3, main + 4)]
    groups += [(main + 5, main + 6), (main + 6, main + 7), (main + 7, main + 8)]
    pendants = [(main + 9, 5), (main + 10, 40), (main + 11, main + 10), (main + 12, 100)]
    doubled = [(main + 13, 60), (60, main + 13)]  # two relations: no bridge
    pairs += groups + pendants + doubled  # main + 14 .. size - 1 stay isolated
    edges = [
        EdgeRecord(nodes[a].id, nodes[b].id, relations[int(rng.integers(len(relations)))], size + k)
        for k, (a, b) in enumerate(pairs)
        if a != b
    ]
    return nodes, edges


@pytest.fixture(scope="module")
def projection() -> Projection:
    nodes, edges = synthetic()
    return build_projection(nodes, edges)


def _top(values: np.ndarray[Any, np.dtype[np.float64]]) -> list[int]:
    return np.lexsort((np.arange(values.shape[0]), -values))[:TOP].tolist()


# --- (1) smoke -------------------------------------------------------------------------
def test_gds_version_is_read_from_the_server(driver: Driver, engine: GdsEngine) -> None:
    found = open_gds(driver)
    version = found.version if found is not None else None
    assert version is not None and re.fullmatch(r"\d+\.\d+\.\d+", version), version
    records, _, _ = driver.execute_query(
        "CALL gds.debug.sysInfo() YIELD key, value WHERE key = 'gdsVersion' RETURN value"
    )
    assert records[0]["value"] == version  # a second source on the server agrees
    assert engine.name == f"gds {version}"
    # A refusal that is not about GDS is not read as "no GDS".
    with pytest.raises(StoreError, match="reading the GDS version"):
        open_gds(driver, database="no-such-database")


def test_no_query_we_send_is_deprecated(driver: Driver) -> None:
    """Planning each statement raises no deprecation notice (GDS marks retired
    procedures that way), so an upgrade that deprecates one shows up here."""
    params: dict[str, Any] = {
        "graph": "none",
        "config": {},
        "isolated": [0],
        "sources": [0],
        "targets": [0],
    }
    statements = {
        name: value
        for name, value in vars(q).items()
        if name.isupper() and isinstance(value, str) and "RETURN" in value
    }
    assert len(statements) >= 12
    deprecated: dict[str, list[str]] = {}
    with driver.session(notifications_min_severity="INFORMATION") as session:
        for name, text in statements.items():
            summary = session.run(cast(LiteralString, "EXPLAIN " + text), params).consume()
            notes = [
                n.status_description
                for n in summary.gql_status_objects
                if n.is_notification and n.raw_classification == "DEPRECATION"
            ]
            if notes:
                deprecated[name] = notes
    assert deprecated == {}


# --- (2) the two engines agree --------------------------------------------------------
def test_shape_of_the_synthetic_graph(projection: Projection) -> None:
    assert 290 <= projection.node_count <= 310
    assert 800 <= projection.edge_count <= 1000
    assert int(frontier_seeds(projection).sum()) >= 20


def test_articlerank_and_pagerank_agree(engine: GdsEngine, projection: Projection) -> None:
    local = InProcessEngine().load(projection)
    seeds = np.flatnonzero(frontier_seeds(projection)).tolist()
    with engine.load(projection) as gds:
        pairs = [
            ("articlerank", gds.articlerank(), local.articlerank(), AR_TOLERANCE),
            (
                "frontier pagerank",
                gds.pagerank(seeds=seeds, directed=False),
                local.pagerank(seeds=seeds, directed=False),
                PR_TOLERANCE,
            ),
            ("pagerank", gds.pagerank(), local.pagerank(), PR_TOLERANCE),
        ]
    for name, ours, theirs, tolerance in pairs:
        assert ours.engine == engine.name, name
        assert _top(ours.values) == _top(theirs.values), name
        gap = float(np.abs(ours.values - theirs.values).max())
        assert gap <= tolerance, (name, gap)
    # ArticleRank keeps GDS's scale: every node holds at least 1 - d.
    assert float(pairs[0][1].values.min()) == pytest.approx(0.15)
    assert float(pairs[1][1].values.sum()) == pytest.approx(1.0)


def test_betweenness_agrees_exactly_and_samples_reproducibly(
    engine: GdsEngine, projection: Projection
) -> None:
    local = InProcessEngine().load(projection)
    with engine.load(projection) as gds:
        exact = gds.betweenness()
        first = gds.betweenness(sources=60, seed=3)
        again = gds.betweenness(sources=60, seed=3)
    theirs = local.betweenness()
    assert exact.sampled_from is None and exact.engine == engine.name
    assert len(set(_top(exact.values)) & set(_top(theirs.values))) >= 8
    scale = float(theirs.values.max())
    assert float(np.abs(exact.values - theirs.values).max()) <= BETWEENNESS_RELATIVE * scale

    assert first.sampled_from == 60 and "estimated from 60" in first.detail
    assert np.array_equal(first.values, again.values)  # same seed, same sample
    # Scaled by n / k, a sampled run estimates the exact total.
    assert 0.8 <= float(first.values.sum()) / float(exact.values.sum()) <= 1.25


def test_components_fragility_and_clustering_agree(
    engine: GdsEngine, projection: Projection
) -> None:
    local = InProcessEngine().load(projection)
    with engine.load(projection) as gds:
        wcc, fragility, clustering = gds.wcc(), gds.fragility(), gds.clustering()
    theirs = local.wcc()
    assert wcc.count == theirs.count > 1
    assert np.array_equal(wcc.sizes, theirs.sizes)
    assert np.array_equal(wcc.membership, theirs.membership)
    assert np.array_equal(wcc.isolated, theirs.isolated) and wcc.isolated.shape[0] == 6

    cut = local.fragility()
    assert fragility.engine == engine.name
    assert np.array_equal(fragility.articulation_points, cut.articulation_points)
    assert np.array_equal(fragility.bridges, cut.bridges)
    assert np.array_equal(fragility.cut_off, cut.cut_off)
    assert fragility.bridges.shape[0] >= 4
    doubled = projection.position("n0293")
    assert doubled is not None and doubled not in fragility.bridges  # held by two relations

    near = local.clustering()
    assert np.array_equal(clustering.degree, near.degree)
    assert float(np.abs(clustering.coefficient - near.coefficient).max()) <= 1e-12


def test_leiden_modularity_agrees_within_tolerance(
    engine: GdsEngine, projection: Projection
) -> None:
    local = InProcessEngine().load(projection)
    with engine.load(projection) as gds:
        ours = gds.leiden(seed=5)
        again = gds.leiden(seed=5)
    theirs = local.leiden(seed=5)
    assert ours.engine == engine.name
    assert np.array_equal(ours.membership, again.membership)  # seeded: reproducible
    assert int(ours.sizes.sum()) == projection.node_count
    assert np.array_equal(np.bincount(ours.membership), ours.sizes)
    assert list(ours.sizes) == sorted(ours.sizes, reverse=True)
    assert ours.modularity > 0.3
    simple = ig.Graph(
        n=projection.node_count,
        edges=list(zip(projection.sources.tolist(), projection.targets.tolist(), strict=True)),
    ).simplify()
    assert ours.modularity == pytest.approx(simple.modularity(ours.membership.tolist()), abs=1e-12)
    assert abs(ours.modularity - theirs.modularity) <= MODULARITY_TOLERANCE, (
        ours.modularity,
        theirs.modularity,
    )


# --- (3) orient on GDS -----------------------------------------------------------------
def test_orient_panel_names_gds_and_reads_like_the_in_process_one(engine: GdsEngine) -> None:
    nodes, edges = synthetic()
    on_gds = build_panel(nodes, edges, engine=engine)
    in_process = build_panel(nodes, edges)
    assert set(on_gds.summary.engines.values()) == {engine.name}
    assert set(on_gds.summary.engines) >= {"mass", "frontier_mass", "betweenness", "fragility"}
    assert f"engines: {engine.name}" in on_gds.text

    def ids(panel: Any, section: str) -> list[str]:
        return [r.node.id for r in getattr(panel, section).top.items]

    for section in ("mass", "frontier_mass", "betweenness"):
        assert ids(on_gds, section) == ids(in_process, section), section
    assert on_gds.components == in_process.components
    ours, theirs = on_gds.fragility, in_process.fragility
    assert ours is not None and theirs is not None
    assert ours.bridges == theirs.bridges and ours.pendant_bridges == theirs.pendant_bridges
    # Cut points are scored by betweenness, equal up to the order of summation.
    assert [r.node for r in ours.articulation_points.items] == [
        r.node for r in theirs.articulation_points.items
    ]
    for a, b in zip(ours.articulation_points.items, theirs.articulation_points.items, strict=True):
        assert a.score == pytest.approx(b.score, rel=BETWEENNESS_RELATIVE)
    assert on_gds.weave_audit == in_process.weave_audit


def test_two_orient_calls_at_once_on_gds(driver: Driver, engine: GdsEngine) -> None:
    nodes, edges = synthetic()
    recording = RecordingEngine(driver, engine.name.removeprefix("gds "))
    texts: list[str] = []
    failures: list[BaseException] = []

    def read() -> None:
        try:
            texts.append(build_panel(nodes, edges, engine=recording).text)
        except BaseException as exc:  # reported below, not lost in the thread
            failures.append(exc)

    workers = [threading.Thread(target=read) for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    assert failures == []
    assert len(texts) == 2 and texts[0] == texts[1]
    assert len(set(recording.made)) == 2  # each call had a graph of its own
    assert not set(recording.made) & _graphs(driver)


def test_a_graph_without_relations_is_read_in_process(driver: Driver, engine: GdsEngine) -> None:
    nodes = synthetic()[0][:30]
    recording = RecordingEngine(driver, engine.name.removeprefix("gds "))
    panel = build_panel(nodes, [], engine=recording)
    assert recording.made == []
    assert engine.name not in set(panel.summary.engines.values())


# --- (4) graphs are dropped --------------------------------------------------------------
def test_orient_drops_its_graph(driver: Driver, engine: GdsEngine) -> None:
    nodes, edges = synthetic()
    recording = RecordingEngine(driver, engine.name.removeprefix("gds "))
    build_panel(nodes, edges, engine=recording)
    assert len(recording.made) == 1
    assert recording.made[0] not in _graphs(driver)


def test_a_graph_is_dropped_when_its_reader_fails(
    driver: Driver, engine: GdsEngine, projection: Projection
) -> None:
    graph = engine.load(projection)
    assert isinstance(graph, GdsGraph)
    assert graph.graph_name in _graphs(driver)
    with pytest.raises(RuntimeError, match="reader failed"), graph:
        graph.wcc()
        raise RuntimeError("reader failed")
    assert graph.graph_name not in _graphs(driver)
    graph.close()  # a second close does nothing
    with pytest.raises(StoreError, match="dropped already"):
        graph.articlerank()


def test_gds_errors_arrive_as_store_errors_naming_the_step(
    engine: GdsEngine, projection: Projection
) -> None:
    with (
        engine.load(projection) as graph,
        pytest.raises(StoreError, match="GDS failed while running PageRank"),
    ):
        graph.pagerank(seeds=[projection.node_count + 5])  # no such node in GDS


def test_catalog_on_gds_drops_what_it_made(driver: Driver, engine: GdsEngine) -> None:
    nodes, edges = synthetic()
    recording = RecordingEngine(driver, engine.name.removeprefix("gds "))
    catalog = ProjectionCatalog(recording)
    try:
        info = catalog.create("focus", nodes, edges, node_types=["Concept", "Observation"])
        catalog.create("all", nodes, edges)
        assert info.engine == engine.name
        report = catalog.run("focus", "pagerank", top_k=5)
        assert report.engine == engine.name and report.top is not None
        assert len(report.top.items) == 5
        assert set(recording.made) <= _graphs(driver)
        catalog.drop("focus")
        assert recording.made[0] not in _graphs(driver)
        assert recording.made[1] in _graphs(driver)
    finally:
        catalog.close()
    assert not set(recording.made) & _graphs(driver)


def _project_tiny(driver: Driver, name: str) -> None:
    params = {"graph": name, "isolated": [], "sources": [0], "targets": [1]}
    driver.execute_query(q.PROJECT, params)


def _legacy_prefix(pid: int) -> str:
    """How graphs were named before memories had names: host and PID of the maker."""
    host = re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"
    return f"kenning-{host}-{pid}-"


def test_graphs_left_by_stopped_servers_on_this_host_are_dropped(
    driver: Driver, engine: GdsEngine
) -> None:
    """Graphs named the old way (host and PID) go by the old rule: made on this host
    by a process that is gone. (The new naming: test_gds_sweep_race.py.)"""
    from kenning_encounter.analytics.gds_owners import sweep
    from tests.support.backends import open_neo4j_store

    stopped = subprocess.Popen([sys.executable, "-c", "pass"])
    stopped.wait()
    names = {
        "stopped": _legacy_prefix(stopped.pid) + "a",
        "stopped again": _legacy_prefix(stopped.pid) + "e",
        "live": _legacy_prefix(os.getppid()) + "b",
        "this process": _legacy_prefix(os.getpid()) + "c",
        "another host": "kenning-some.other.host-1-d",
        "older naming": "kenning-" + "0" * 32,
        "not ours": "someone-elses-graph",
    }
    for name in names.values():
        _project_tiny(driver, name)
    try:
        swept = sweep(_executor(driver, engine.name.removeprefix("gds ")))
        assert sorted(swept) == [names["stopped"], names["stopped again"]]
        kept = set(names.values()) - {names["stopped"], names["stopped again"]}
        assert kept <= _graphs(driver)
        assert not {names["stopped"], names["stopped again"]} & _graphs(driver)

        _project_tiny(driver, names["stopped"])  # died again: the engine a server starts sweeps
        store = open_neo4j_store()
        if isinstance(store, str):
            _unavailable(store)
        try:
            executor = store.analytics_executor()
            assert executor is not None
            GdsEngine.start(executor).close()
        finally:
            store.close()
        assert names["stopped"] not in _graphs(driver)
    finally:
        for name in names.values():
            driver.execute_query(q.DROP, {"graph": name})


def test_graph_names_carry_their_memory_and_maker(engine: GdsEngine) -> None:
    from kenning_encounter.analytics.gds_owners import graph_prefix

    nodes, edges = synthetic(120)
    with engine.load(build_projection(nodes, edges)) as graph:
        assert isinstance(graph, GdsGraph)
        assert graph.graph_name.startswith(graph_prefix("default", engine.owner))
