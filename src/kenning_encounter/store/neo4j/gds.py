"""The GDS engine: orient and the focused algorithms on Neo4j Graph Data Science.

``GdsEngine.load`` projects a ``Projection`` into a GDS in-memory graph under a
fresh name, from the projection's own arrays passed as parameters (node ids are
positions), so it reads nothing stored in the database and two loads never
share a graph. The graph is dropped by ``close`` (and by ``__exit__``), and by
``load`` itself when projecting fails part-way. A server that dies cannot drop
its graphs, so each name carries the host and PID of its maker, and the store
drops, when it opens, the graphs of this host's processes that are gone
(``sweep_orphans``). The relationship types a graph holds are described in
``gds_queries``.

How each algorithm keeps the conventions of ``analytics.engine``, so the two
engines agree on the same projection:

- ArticleRank: ``gds.articleRank`` is the definition in ``analytics.power``
  (score passed on divided by out-degree plus the mean out-degree, every node
  starting from ``1 - d``, nothing redistributed from nodes without out-edges),
  on the directed graph with parallel relations counted, and the same stopping
  rule. Values are GDS's own. A stream does not say how many iterations ran, so
  the detail states the settings rather than the outcome.
- PageRank: GDS's scores are not a distribution (each restart node receives
  ``1 - d`` per step, and a walker at a dead end is lost). When restart and
  dead-end mass both go back to one distribution (the in-process convention),
  the scores are a constant multiple of GDS's, so GDS's are normalised to sum
  to one. GDS applies ``tolerance`` to each node's unnormalised score, the
  in-process engine to the L1 change of the distribution; with GDS's scores
  summing to about the number of restart nodes the two are of the same order.
  ``directed=False`` walks every relation both ways, parallel relations kept.
- Betweenness: the simple undirected view; GDS counts each unordered pair once,
  as igraph does. Sampled runs use GDS's ``samplingSize``/``samplingSeed``,
  scaled here by ``n / k`` (GDS returns the unscaled sum) so sampled and exact
  values share a scale. GDS draws its own sources: the same seed picks other
  sources than the in-process engine does.
- Leiden: the simple undirected view, modularity objective (gamma 1), seeded.
  GDS stops by itself (``maxLevels`` 10, or when a level no longer improves
  modularity), so ``iterations`` is not passed on and the result says "until
  stable". Its partitions score lower than igraph's (modularity 0.03 to 0.06
  below, measured at 300 to 10k nodes); re-running it seeded with its own
  partition, to iterate as igraph does, was erratic in GDS 2.13 (a collapse to
  one community, then an internal error), so it runs once. Modularity is
  computed here from GDS's partition, with igraph's definition.
- WCC, articulation points, clustering: the simple undirected view. Bridges
  come from GDS on the simple view; a pair joined by two relations is no
  bridge of the authored graph, so such pairs are left out, and each bridge is
  given in its relation's direction, in relation order. How many nodes a
  bridge cuts off is computed here (GDS 2.13's ``gds.bridges`` does not say).

Everything runs on one GDS thread unless ``concurrency`` says otherwise (see
``DEFAULT_CONCURRENCY``); Leiden and sampled betweenness always run on one,
because only there does the seed fix the result.

A projection with no relations is not sent to GDS (the undirected types could
not be derived from nothing); the in-process engine reads it and its results
name that engine.

Every GDS call goes to the database's writer (the driver's default routing),
so on a cluster all calls on one graph reach the server that holds it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import threading
import uuid
from collections.abc import Generator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, LiteralString, Self, cast

import numpy as np
from scipy import sparse
from scipy.sparse import csgraph

from kenning_encounter.analytics.algorithms import InProcessEngine
from kenning_encounter.analytics.engine import (
    DAMPING,
    DEFAULT_SEED,
    Clustering,
    Communities,
    Components,
    EngineGraph,
    FloatArray,
    Fragility,
    IntArray,
    Scores,
)
from kenning_encounter.analytics.projection import Projection
from kenning_encounter.errors import StoreError, StoreUnavailable
from kenning_encounter.store.neo4j import gds_queries as q

if TYPE_CHECKING:
    from neo4j import Driver, Record

logger = logging.getLogger(__name__)

# One thread by default: with more, GDS's rank sums vary in the last bits from
# run to run (enough to reorder tied nodes between two readings of one graph)
# and sampled betweenness picks different sources for the same seed. Open-source
# GDS runs at most four.
DEFAULT_CONCURRENCY = 1
GRAPH_PREFIX = "kenning-"


def _host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def graph_owner_prefix(pid: int | None = None) -> str:
    """The name prefix of the graphs one process makes: host and PID, so a server
    starting later can tell the graphs of a server that died from live ones."""
    return f"{GRAPH_PREFIX}{_host_tag()}-{os.getpid() if pid is None else pid}-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_orphans(driver: Driver, database: str = "neo4j") -> list[str]:
    """Drop the GDS graphs that servers on this host left when they died; their names.

    Only graphs named by a process of this host that is gone are dropped; graphs of
    live processes, of other hosts and of anything else are left alone.
    """
    mine = f"{GRAPH_PREFIX}{_host_tag()}-"
    with _translated("listing the GDS graphs"):
        records, _, _ = driver.execute_query(q.LIST_GRAPHS, database_=database)
    dropped: list[str] = []
    for name in records[0]["graphs"] if records else []:
        owner = str(name)[len(mine) :].split("-", 1)[0] if str(name).startswith(mine) else ""
        if not owner.isdigit() or int(owner) == os.getpid() or _alive(int(owner)):
            continue
        with _translated("dropping a GDS graph a stopped server left"):
            driver.execute_query(q.DROP, {"graph": name}, database_=database)
        dropped.append(str(name))
    if dropped:
        logger.info("dropped %d GDS graph(s) left by stopped servers on this host", len(dropped))
    return dropped


UNKNOWN_FUNCTION = "Neo.ClientError.Statement.SyntaxError"


def gds_available(driver: Driver, database: str = "neo4j") -> str | None:
    """The GDS version the server runs, or None when the plugin is absent."""
    from neo4j.exceptions import ClientError

    with _translated("reading the GDS version"):
        try:
            records, _, _ = driver.execute_query(q.GDS_VERSION, database_=database)
        except ClientError as exc:
            # Unknown function 'gds.version': no plugin. Any other refusal (wrong
            # password, no such database) is not an answer about GDS.
            if exc.code == UNKNOWN_FUNCTION:
                return None
            raise
    return str(records[0]["version"]) if records else None


class GdsEngine:
    """Runs the panel's algorithms on Neo4j GDS. Thread-safe: one engine serves many
    callers, each load making a graph of its own."""

    def __init__(
        self,
        driver: Driver,
        version: str,
        *,
        database: str = "neo4j",
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._driver = driver
        self._database = database
        self._concurrency = concurrency
        self._name = f"gds {version}"

    @classmethod
    def detect(
        cls,
        driver: Driver,
        *,
        database: str = "neo4j",
        concurrency: int = DEFAULT_CONCURRENCY,
    ) -> GdsEngine | None:
        """An engine on ``driver`` if the server has GDS, else None."""
        version = gds_available(driver, database)
        if version is None:
            return None
        return cls(driver, version, database=database, concurrency=concurrency)

    @property
    def name(self) -> str:
        return self._name

    def load(self, projection: Projection) -> EngineGraph:
        if projection.edge_count == 0:
            logger.debug("projection without relations: read in process, not by GDS")
            return InProcessEngine().load(projection)
        return GdsGraph(self._driver, self._database, self._name, projection, self._concurrency)


@contextlib.contextmanager
def _translated(doing: str) -> Generator[None]:
    """Driver failures as our errors, naming what was being done."""
    from neo4j.exceptions import DriverError, Neo4jError, ServiceUnavailable, SessionExpired

    try:
        yield
    except (ServiceUnavailable, SessionExpired) as exc:
        raise StoreUnavailable(f"Neo4j could not be reached while {doing}: {exc}") from exc
    except Neo4jError as exc:
        raise StoreError(f"GDS failed while {doing}: {exc.message}") from exc
    except DriverError as exc:
        raise StoreError(f"the Neo4j driver failed while {doing}: {exc}") from exc


class GdsGraph:
    """One projection held by GDS as a named in-memory graph."""

    def __init__(
        self,
        driver: Driver,
        database: str,
        engine: str,
        projection: Projection,
        concurrency: int,
    ) -> None:
        self._driver = driver
        self._database = database
        self._engine = engine
        self._projection = projection
        self._concurrency = concurrency
        self._lock = threading.Lock()
        self._closed = False
        n = projection.node_count
        # The simple undirected view: each related pair once, smaller position first.
        low = np.minimum(projection.sources, projection.targets)
        high = np.maximum(projection.sources, projection.targets)
        pairs, counts = np.unique(low * max(n, 1) + high, return_counts=True)
        self._pair_key = pairs
        self._pair_relations = counts
        self._simple_sources, self._simple_targets = np.divmod(pairs, max(n, 1))
        self._degree = np.bincount(
            np.concatenate((self._simple_sources, self._simple_targets)), minlength=n
        ).astype(np.int64)
        self.graph_name = f"{graph_owner_prefix()}{uuid.uuid4().hex}"
        try:
            self._project()
        except BaseException:
            self._drop()  # a projection that failed part-way may still hold memory
            raise

    def _project(self) -> None:
        p = self._projection
        parameters = {
            "graph": self.graph_name,
            "isolated": np.flatnonzero(self._degree == 0).tolist(),
            "sources": p.sources.tolist(),
            "targets": p.targets.tolist(),
        }
        with _translated("projecting the graph into GDS"):
            row = self._driver.execute_query(q.PROJECT, parameters, database_=self._database)
            self._expect(
                "projected", row.records[0], nodes=p.node_count, relationships=p.edge_count
            )
            # GDS counts an undirected relationship once per direction.
            for kind, aggregation, count in (
                (q.BOTH_WAYS, "NONE", 2 * p.edge_count),
                (q.SIMPLE, "SINGLE", 2 * self._simple_sources.shape[0]),
            ):
                config = {
                    "relationshipType": q.DIRECTED,
                    "mutateRelationshipType": kind,
                    "aggregation": aggregation,
                }
                row = self._driver.execute_query(
                    q.TO_UNDIRECTED,
                    {"graph": self.graph_name, "config": config},
                    database_=self._database,
                )
                self._expect(f"made {kind}", row.records[0], relationshipsWritten=count)
        logger.debug(
            "GDS graph %s: %d nodes, %d relations", self.graph_name, p.node_count, p.edge_count
        )

    @staticmethod
    def _expect(doing: str, row: Record, **expected: int) -> None:
        got = {k: row[k] for k in expected}
        if got != expected:
            raise StoreError(f"GDS {doing} {got} where {expected} was sent")

    @property
    def projection(self) -> Projection:
        return self._projection

    # --- plumbing --------------------------------------------------------------------
    def _call(self, query: LiteralString, config: dict[str, Any], doing: str) -> Record:
        if self._closed:
            raise StoreError(f"the GDS graph was dropped already; cannot run {doing}")
        with _translated(f"running {doing}"):
            records, _, _ = self._driver.execute_query(
                query, {"graph": self.graph_name, "config": config}, database_=self._database
            )
        return records[0]

    def _per_node(
        self, query: LiteralString, config: dict[str, Any], doing: str
    ) -> tuple[IntArray, list[Any]]:
        """A stream of (nodeId, value): the positions and their values, every node once."""
        row = self._call(query, config, doing)
        ids = np.asarray(row["ids"], dtype=np.int64)
        n = self._projection.node_count
        if ids.shape[0] != n or (n and (ids.min() < 0 or ids.max() >= n)):
            raise StoreError(f"GDS {doing} answered for {ids.shape[0]} nodes of {n}")
        return ids, cast(list[Any], row["values"])

    def _floats(self, query: LiteralString, config: dict[str, Any], doing: str) -> FloatArray:
        ids, found = self._per_node(query, config, doing)
        values = np.zeros(self._projection.node_count, dtype=np.float64)
        values[ids] = np.asarray(found, dtype=np.float64)
        return values

    def _groups(self, query: LiteralString, config: dict[str, Any], doing: str) -> IntArray:
        """Group ids GDS gave, renumbered largest group first."""
        ids, found = self._per_node(query, config, doing)
        raw = np.zeros(self._projection.node_count, dtype=np.int64)
        raw[ids] = np.asarray(found, dtype=np.int64)
        _, dense = np.unique(raw, return_inverse=True)
        return dense.astype(np.int64).reshape(-1)

    def _config(self, relationship_type: str, **settings: Any) -> dict[str, Any]:
        return {
            "relationshipTypes": [relationship_type],
            "concurrency": self._concurrency,
            **settings,
        }

    # --- algorithms ----------------------------------------------------------------
    def articlerank(
        self,
        *,
        damping: float = DAMPING,
        tolerance: float = 1e-7,
        max_iterations: int = 100,
    ) -> Scores:
        if not 0.0 < damping < 1.0:
            raise ValueError(f"damping must lie strictly between 0 and 1, got {damping}")
        config = self._config(
            q.DIRECTED,
            dampingFactor=damping,
            tolerance=tolerance,
            maxIterations=max_iterations,
        )
        values = self._floats(q.ARTICLE_RANK, config, "ArticleRank")
        return Scores(
            "articlerank",
            self._engine,
            values,
            f"damping {damping}, tolerance {tolerance:g}, at most {max_iterations} iterations",
        )

    def pagerank(
        self,
        *,
        damping: float = DAMPING,
        seeds: Sequence[int] | None = None,
        directed: bool = True,
        tolerance: float = 1e-9,
        max_iterations: int = 200,
    ) -> Scores:
        if seeds is not None and len(seeds) == 0:
            raise ValueError("seeds is empty; pass None for unpersonalized PageRank")
        if not 0.0 < damping < 1.0:
            raise ValueError(f"damping must lie strictly between 0 and 1, got {damping}")
        settings: dict[str, Any] = {
            "dampingFactor": damping,
            "tolerance": tolerance,
            "maxIterations": max_iterations,
        }
        if seeds is not None:
            settings["sourceNodes"] = sorted({int(s) for s in seeds})
        config = self._config(q.DIRECTED if directed else q.BOTH_WAYS, **settings)
        values = self._floats(q.PAGE_RANK, config, "PageRank")
        total = float(values.sum())
        if total > 0:
            values = values / total
        view = "directed" if directed else "undirected"
        start = f"restarting at {len(seeds)} seeds" if seeds is not None else "uniform restart"
        return Scores(
            "pagerank",
            self._engine,
            values,
            f"{view}, damping {damping}, {start}, tolerance {tolerance:g}, "
            f"at most {max_iterations} iterations, normalised to sum to 1",
        )

    def betweenness(self, *, sources: int | None = None, seed: int = DEFAULT_SEED) -> Scores:
        n = self._projection.node_count
        if sources is not None and sources < 1:
            raise ValueError("sources must be at least 1, or None for exact betweenness")
        if sources is None or sources >= n:
            values = self._floats(q.BETWEENNESS, self._config(q.SIMPLE), "betweenness")
            return Scores("betweenness", self._engine, values, "exact")
        # The seed fixes the sample only on one thread.
        config = self._config(q.SIMPLE, samplingSize=sources, samplingSeed=seed, concurrency=1)
        values = self._floats(q.BETWEENNESS, config, "betweenness") * (n / sources)
        return Scores(
            "betweenness",
            self._engine,
            values,
            f"estimated from {sources} of {n} sources (seed {seed}), scaled by n/{sources}",
            sampled_from=sources,
        )

    def leiden(self, *, iterations: int = -1, seed: int = DEFAULT_SEED) -> Communities:
        """Leiden to convergence whatever ``iterations`` asks (see the module docstring)."""
        del iterations  # GDS stops by itself; the result says "until stable"
        config = self._config(q.SIMPLE, randomSeed=seed, concurrency=1)
        membership, sizes = by_size(self._groups(q.LEIDEN, config, "Leiden"))
        score = modularity(membership, self._simple_sources, self._simple_targets)
        return Communities(self._engine, membership, sizes, score, -1, seed)

    def wcc(self) -> Components:
        membership, sizes = by_size(self._groups(q.WCC, self._config(q.SIMPLE), "WCC"))
        isolated = np.flatnonzero(self._degree == 0).astype(np.int64)
        return Components(self._engine, membership, sizes, isolated)

    def fragility(self) -> Fragility:
        row = self._call(q.ARTICULATION_POINTS, self._config(q.SIMPLE), "articulation points")
        cut_points = np.sort(np.asarray(row["ids"], dtype=np.int64))
        row = self._call(q.BRIDGES, self._config(q.SIMPLE), "bridges")
        ends = self._bridge_relations(
            np.asarray(row["sources"], dtype=np.int64), np.asarray(row["targets"], dtype=np.int64)
        )
        n = self._projection.node_count
        cut_off = cut_sizes(n, self._simple_sources, self._simple_targets, ends)
        return Fragility(self._engine, cut_points, ends, cut_off)

    def _bridge_relations(self, a: IntArray, b: IntArray) -> IntArray:
        """Bridges of the simple view that are bridges of the authored graph, as
        (source, target) of their one relation, in relation order."""
        p = self._projection
        n = max(p.node_count, 1)
        keys = np.minimum(a, b) * n + np.maximum(a, b)
        at = np.searchsorted(self._pair_key, keys)
        single = keys[self._pair_relations[at] == 1]
        edge_keys = np.minimum(p.sources, p.targets) * n + np.maximum(p.sources, p.targets)
        ids = np.flatnonzero(np.isin(edge_keys, single))
        return np.column_stack((p.sources[ids], p.targets[ids])).astype(np.int64).reshape(-1, 2)

    def clustering(self) -> Clustering:
        coefficient = self._floats(q.LOCAL_CLUSTERING, self._config(q.SIMPLE), "local clustering")
        return Clustering(self._engine, coefficient, self._degree.copy())

    # --- lifetime -------------------------------------------------------------------
    def close(self) -> None:
        """Drop the GDS graph (once; later calls do nothing)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._drop()

    def _drop(self) -> None:
        from neo4j.exceptions import DriverError, Neo4jError

        try:
            self._driver.execute_query(q.DROP, {"graph": self.graph_name}, database_=self._database)
        except (DriverError, Neo4jError) as exc:
            # Not raised: close runs in finally blocks, where it would hide the
            # error that brought us there. The graph holds memory until restart.
            logger.warning("could not drop GDS graph %s: %s", self.graph_name, exc)
        else:
            logger.debug("GDS graph %s dropped", self.graph_name)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def by_size(membership: IntArray) -> tuple[IntArray, IntArray]:
    """Renumber dense groups largest first (ties: earliest member first), as the
    in-process engine numbers them."""
    if membership.shape[0] == 0:
        return membership, np.zeros(0, dtype=np.int64)
    sizes = np.bincount(membership)
    first = np.full(sizes.shape[0], membership.shape[0], dtype=np.int64)
    np.minimum.at(first, membership, np.arange(membership.shape[0], dtype=np.int64))
    order = np.lexsort((first, -sizes))
    rename = np.empty_like(order)
    rename[order] = np.arange(order.shape[0], dtype=np.int64)
    return rename[membership], sizes[order]


def modularity(membership: IntArray, sources: IntArray, targets: IntArray) -> float:
    """Newman's modularity (resolution 1) of a partition of a simple undirected graph."""
    m = sources.shape[0]
    if m == 0:
        return 0.0
    groups = int(membership.max()) + 1
    inside = membership[sources] == membership[targets]
    internal = np.bincount(membership[sources[inside]], minlength=groups).astype(np.float64)
    degree = np.bincount(
        np.concatenate((membership[sources], membership[targets])), minlength=groups
    ).astype(np.float64)
    return float(np.sum(internal / m - (degree / (2.0 * m)) ** 2))


def cut_sizes(n: int, sources: IntArray, targets: IntArray, bridges: IntArray) -> IntArray:
    """Nodes on the smaller side of each bridge.

    Without its bridges the graph falls into 2-edge-connected blocks, and the
    bridges join the blocks into a forest; a bridge's smaller side is the
    lighter of the two subtrees it separates.
    """
    if bridges.shape[0] == 0:
        return np.zeros(0, dtype=np.int64)
    key = np.minimum(sources, targets) * n + np.maximum(sources, targets)
    cut = np.minimum(bridges[:, 0], bridges[:, 1]) * n + np.maximum(bridges[:, 0], bridges[:, 1])
    keep = ~np.isin(key, cut)
    ones = np.ones(int(keep.sum()), dtype=np.int8)
    rest = sparse.csr_matrix((ones, (sources[keep], targets[keep])), shape=(n, n))
    _, block = csgraph.connected_components(rest, directed=False)
    block = block.astype(np.int64)
    weight = np.bincount(block).astype(np.int64)
    a, b = block[bridges[:, 0]], block[bridges[:, 1]]
    # Only blocks a bridge touches matter; number them densely.
    touched, dense = np.unique(np.concatenate((a, b)), return_inverse=True)
    k = touched.shape[0]
    da, db = dense[: a.shape[0]], dense[a.shape[0] :]
    forest = sparse.csr_matrix((np.ones(da.shape[0], dtype=np.int8), (da, db)), shape=(k, k))
    trees, tree_of = csgraph.connected_components(forest, directed=False)
    roots = np.full(trees, k, dtype=np.int64)
    np.minimum.at(roots, tree_of, np.arange(k, dtype=np.int64))
    # A virtual node above every tree's root: one traversal covers the forest.
    virtual = k
    rows = np.concatenate((da, db, np.full(trees, virtual)))
    cols = np.concatenate((db, da, roots))
    linked = sparse.csr_matrix(
        (np.ones(rows.shape[0], dtype=np.int8), (rows, cols)), shape=(k + 1, k + 1)
    )
    order, parents = csgraph.breadth_first_order(
        linked, virtual, directed=True, return_predecessors=True
    )
    parent = parents.astype(np.int64).tolist()
    subtree = [*weight[touched].tolist(), 0]
    for v in reversed(order.tolist()[1:]):
        subtree[parent[v]] += subtree[v]
    out = np.empty(bridges.shape[0], dtype=np.int64)
    for j, (x, y) in enumerate(zip(da.tolist(), db.tolist(), strict=True)):
        child = x if parent[x] == y else y
        below = subtree[child]
        out[j] = min(below, subtree[int(roots[tree_of[child]])] - below)
    return out
