"""The GDS engine: orient and the focused algorithms on Neo4j Graph Data Science.

The engine is written over the store's analytics executor (``store.port.
AnalyticsExecutor``): it sends statements and reads rows, and never touches a
driver or a session. The store decides, once when it opens, whether its server
has GDS; an engine exists only where it does.

``GdsEngine.load`` projects a ``Projection`` into a GDS in-memory graph under a
fresh name, from the projection's own arrays passed as parameters (node ids are
positions), so it reads nothing stored in the database and two loads never
share a graph. The graph is dropped by ``close`` (and by ``__exit__``), and by
``load`` itself when projecting fails part-way. A server that dies cannot drop
its graphs, so each name carries its memory and its maker, the maker keeps a
lease in the database while it holds graphs, and an engine started for a server
(``GdsEngine.start``) drops the memory's graphs whose makers hold no lease, when
it starts and then periodically (``analytics.gds_owners``: why that is safe with
any number of servers on any number of hosts). The relationship types a graph
holds are described in ``store/neo4j/gds_queries``.

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

Every GDS call goes to the database's writer (the executor's promise), so on a
cluster all calls on one graph reach the server that holds it.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Sequence
from types import TracebackType
from typing import Any, LiteralString, Self, cast

import numpy as np

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
    by_size,
    check_rank_arguments,
)
from kenning_encounter.analytics.gds_owners import LeaseTimes, Owner, sweep
from kenning_encounter.analytics.gds_owners import run_step as _run
from kenning_encounter.analytics.gds_results import cut_sizes, modularity
from kenning_encounter.analytics.projection import Projection
from kenning_encounter.errors import StoreError
from kenning_encounter.store.neo4j import gds_queries as q
from kenning_encounter.store.port import AnalyticsExecutor

logger = logging.getLogger(__name__)

# One thread by default: with more, GDS's rank sums vary in the last bits from
# run to run (enough to reorder tied nodes between two readings of one graph)
# and sampled betweenness picks different sources for the same seed. Open-source
# GDS runs at most four.
DEFAULT_CONCURRENCY = 1


class GdsEngine:
    """Runs the panel's algorithms on Neo4j GDS. Thread-safe: one engine serves many
    callers, each load making a graph of its own."""

    def __init__(
        self,
        executor: AnalyticsExecutor,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        lease: LeaseTimes | None = None,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self._executor = executor
        self._concurrency = concurrency
        self._name = executor.name
        self._owner = Owner(executor, lease or LeaseTimes())

    @classmethod
    def start(
        cls,
        executor: AnalyticsExecutor,
        *,
        concurrency: int = DEFAULT_CONCURRENCY,
        lease: LeaseTimes | None = None,
    ) -> GdsEngine:
        """The engine a server process runs on: the memory's graphs that stopped
        servers left behind are dropped now and then periodically, until ``close``."""
        engine = cls(executor, concurrency=concurrency, lease=lease)
        try:
            sweep(executor, keep=engine.owner)
        except StoreError as exc:  # housekeeping: never a reason not to serve
            logger.warning("could not look for GDS graphs left by stopped servers: %s", exc)
        engine._owner.start_keeping()
        return engine

    @property
    def name(self) -> str:
        return self._name

    @property
    def owner(self) -> str:
        """The token this engine's graph names and lease carry."""
        return self._owner.token

    def load(self, projection: Projection) -> EngineGraph:
        if projection.edge_count == 0:
            logger.debug("projection without relations: read in process, not by GDS")
            return InProcessEngine().load(projection)
        return GdsGraph(self._executor, self._name, projection, self._concurrency, self._owner)

    def close(self) -> None:
        """Stop sweeping and give up the lease (graphs still open may then be swept)."""
        self._owner.close()


class GdsGraph:
    """One projection held by GDS as a named in-memory graph."""

    def __init__(
        self,
        executor: AnalyticsExecutor,
        engine: str,
        projection: Projection,
        concurrency: int,
        owner: Owner,
    ) -> None:
        self._executor = executor
        self._owner = owner
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
        owner.hold()  # the lease first: a sweep must never see the graph unleased
        self.graph_name = f"{owner.prefix}{uuid.uuid4().hex}"
        try:
            self._project()
        except BaseException:
            self.close()  # a projection that failed part-way may still hold memory
            raise

    def _project(self) -> None:
        p = self._projection
        parameters = {
            "graph": self.graph_name,
            "isolated": np.flatnonzero(self._degree == 0).tolist(),
            "sources": p.sources.tolist(),
            "targets": p.targets.tolist(),
        }
        doing = "projecting the graph into GDS"
        rows = _run(self._executor, q.PROJECT, parameters, doing)
        self._expect("projected", rows, nodes=p.node_count, relationships=p.edge_count)
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
            params = {"graph": self.graph_name, "config": config}
            rows = _run(self._executor, q.TO_UNDIRECTED, params, doing)
            self._expect(f"made {kind}", rows, relationshipsWritten=count)
        logger.debug(
            "GDS graph %s: %d nodes, %d relations", self.graph_name, p.node_count, p.edge_count
        )

    @staticmethod
    def _expect(doing: str, rows: list[dict[str, Any]], **expected: int) -> None:
        got = {k: rows[0].get(k) for k in expected} if rows else {}
        if got != expected:
            raise StoreError(f"GDS {doing} {got} where {expected} was sent")

    @property
    def projection(self) -> Projection:
        return self._projection

    # --- plumbing --------------------------------------------------------------------
    def _call(self, query: LiteralString, config: dict[str, Any], doing: str) -> dict[str, Any]:
        if self._closed:
            raise StoreError(f"the GDS graph was dropped already; cannot run {doing}")
        params = {"graph": self.graph_name, "config": config}
        rows = _run(self._executor, query, params, f"running {doing}")
        if not rows:
            raise StoreError(f"GDS {doing} returned nothing")
        return rows[0]

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
        check_rank_arguments(damping)
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
        check_rank_arguments(damping, seeds)
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
        try:
            _run(self._executor, q.DROP, {"graph": self.graph_name}, "dropping a GDS graph")
        except StoreError as exc:
            # Not raised: close runs in finally blocks, where it would hide the
            # error that brought us there. Once the lease lapses, a sweep drops it.
            logger.warning("could not drop GDS graph %s: %s", self.graph_name, exc)
        else:
            logger.debug("GDS graph %s dropped", self.graph_name)
        finally:
            self._owner.release()  # after the drop: the lease outlives the graph

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
