"""Named projections for the focused tools (gds_create_projection ... gds_drop_projection).

One catalog per server. It holds at most ``cap`` projections; one left unused
for ``idle_seconds`` is dropped at the next catalog call, so a forgotten
projection costs memory for a while, never forever. Creating an empty
projection is refused with the reason (nothing in scope, or no relations yet),
because every algorithm on it would answer with nothing.

Thread-safe: the catalog's table is guarded by a lock, algorithms run outside
it on loaded graphs that are only read.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Final, Literal, get_args

import numpy as np

from kenning_encounter.analytics.algorithms import InProcessEngine
from kenning_encounter.analytics.engine import (
    DEFAULT_SEED,
    Engine,
    EngineGraph,
    betweenness_sources,
    leiden_iterations,
)
from kenning_encounter.analytics.panel import (
    CommunitiesSection,
    ComponentsSection,
    Listing,
    NodeRef,
    Ranked,
)
from kenning_encounter.analytics.projection import Projection, build_projection
from kenning_encounter.analytics.render import node
from kenning_encounter.analytics.reports import AlgorithmReport, ProjectionInfo
from kenning_encounter.analytics.sections import (
    communities_section,
    components_section,
    everyone,
    ranked,
    status_of,
)
from kenning_encounter.errors import Conflict, InvalidInput, NotFound
from kenning_encounter.store.outline import Relations
from kenning_encounter.store.records import EdgeRecord, NodeRecord

logger = logging.getLogger(__name__)

Algorithm = Literal["pagerank", "articlerank", "betweenness", "leiden", "wcc"]
ALGORITHMS: Final[tuple[str, ...]] = get_args(Algorithm)

DEFAULT_CAP = 8
DEFAULT_IDLE_SECONDS = 15 * 60.0
MAX_TOP_K = 100
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")


@dataclass
class _Entry:
    projection: Projection
    graph: EngineGraph
    last_used: float


class ProjectionCatalog:
    """The named projections of one server; ``clock`` is seconds, monotonic."""

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        cap: int = DEFAULT_CAP,
        idle_seconds: float = DEFAULT_IDLE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
        shared: bool = False,
    ) -> None:
        """``shared``: other server processes may serve the memory (Neo4j), and a name this
        catalog does not hold may be held by one of them."""
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self._shared = shared
        self._engine: Engine = engine or InProcessEngine()
        self._cap = cap
        self._idle = idle_seconds
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, _Entry] = {}

    def create(
        self,
        name: str,
        nodes: Sequence[NodeRecord],
        edges: Sequence[EdgeRecord] | Relations,
        *,
        node_types: Collection[str] | None = None,
        around: str | None = None,
        hops: int = 2,
        include_history: bool = False,
    ) -> ProjectionInfo:
        """Project the memory under ``name``; see ``build_projection`` for the scope."""
        if not NAME_PATTERN.fullmatch(name):
            raise InvalidInput(
                "name",
                "use 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit",
                value=name,
            )
        with self._lock:
            expired = self._expire()
            self._check_room(name)
        self._close(expired)

        projection = build_projection(
            nodes,
            edges,
            include_history=include_history,
            node_types=node_types,
            around=around,
            hops=hops,
        )
        _refuse_empty(projection)
        graph = self._engine.load(projection)
        with self._lock:
            try:
                self._check_room(name)  # another caller may have taken it meanwhile
            except Conflict:
                graph.close()
                raise
            now = self._clock()
            self._entries[name] = _Entry(projection, graph, now)
            logger.info(
                "projection %r created: %d nodes, %d edges",
                name,
                projection.node_count,
                projection.edge_count,
            )
            return self._info(name, self._entries[name], now)

    def run(
        self,
        name: str,
        algorithm: str,
        *,
        top_k: int = 10,
        seed: int = DEFAULT_SEED,
    ) -> AlgorithmReport:
        """Run ``algorithm`` (one of ``ALGORITHMS``) on a named projection."""
        if algorithm not in ALGORITHMS:
            raise InvalidInput(
                "algorithm", f"unknown; use one of: {', '.join(ALGORITHMS)}", value=algorithm
            )
        if not 1 <= top_k <= MAX_TOP_K:
            raise InvalidInput("top_k", f"must be between 1 and {MAX_TOP_K}", value=top_k)
        with self._lock:
            expired = self._expire()
            entry = self._entries.get(name)
            if entry is not None:
                entry.last_used = self._clock()
        self._close(expired)
        if entry is None:
            raise NotFound(
                "projection",
                name,
                "create it with gds_create_projection (projections unused for "
                f"{self._idle / 60:g} minutes are dropped)" + self._elsewhere(),
            )
        report = _run(name, entry, algorithm, top_k, seed)
        return report.model_copy(update={"text": _render(report)})

    def drop(self, name: str) -> ProjectionInfo:
        with self._lock:
            expired = self._expire()
            entry = self._entries.pop(name, None)
            now = self._clock()
        self._close(expired)
        if entry is None:
            raise NotFound(
                "projection",
                name,
                "it was dropped already, expired or never made" + self._elsewhere(),
            )
        entry.graph.close()
        return self._info(name, entry, now)

    def _elsewhere(self) -> str:
        if not self._shared:
            return ""
        return (
            "; a projection is held by the server process that made it, and several serve "
            "this memory: this call may have reached another than the one that made it. "
            "Send a session's gds_ calls to one server (route by the Mcp-Session-Id header), "
            "or create the projection again and use it at once"
        )

    def open_projections(self) -> list[ProjectionInfo]:
        with self._lock:
            expired = self._expire()
            now = self._clock()
            infos = [self._info(n, e, now) for n, e in sorted(self._entries.items())]
        self._close(expired)
        return infos

    def close(self) -> None:
        """Drop every projection (at server shutdown)."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        self._close(entries)

    def _check_room(self, name: str) -> None:
        if name in self._entries:
            raise Conflict(
                f"a projection named {name!r} exists already; run algorithms on it, "
                "or drop it first (gds_drop_projection) to make it anew"
            )
        if len(self._entries) >= self._cap:
            raise Conflict(
                f"{self._cap} projections are open already ({', '.join(sorted(self._entries))}); "
                "drop one with gds_drop_projection first"
            )

    def _expire(self) -> list[_Entry]:
        now = self._clock()
        stale = [n for n, e in self._entries.items() if now - e.last_used > self._idle]
        for n in stale:
            logger.info("projection %r dropped after %g s unused", n, self._idle)
        return [self._entries.pop(n) for n in stale]

    @staticmethod
    def _close(entries: Sequence[_Entry]) -> None:
        for entry in entries:
            entry.graph.close()

    def _info(self, name: str, entry: _Entry, now: float) -> ProjectionInfo:
        p = entry.projection
        return ProjectionInfo(
            name=name,
            nodes=p.node_count,
            edges=p.edge_count,
            scope=p.scope.describe(),
            engine=self._engine.name,
            idle_seconds=round(max(0.0, now - entry.last_used), 3),
        )


def _refuse_empty(projection: Projection) -> None:
    scope = projection.scope
    if projection.node_count == 0:
        if scope.scoped:
            raise InvalidInput(
                "scope",
                f"selects no nodes ({scope.describe()}): the scope is too narrow; "
                "choose other node_types or leave them out",
            )
        raise InvalidInput(
            "scope", "the memory holds no nodes yet; record some with create_entities first"
        )
    if projection.edge_count == 0:
        if scope.scoped:
            raise InvalidInput(
                "scope",
                f"selects {projection.node_count} nodes but no relations between them "
                f"({scope.describe()}): the scope is too narrow; add node_types or raise hops",
            )
        raise InvalidInput(
            "scope",
            f"no edges yet: the memory holds {projection.node_count} nodes but no relations; "
            "link them with create_relations first",
        )


def _run(name: str, entry: _Entry, algorithm: str, k: int, seed: int) -> AlgorithmReport:
    p, graph = entry.projection, entry.graph

    def ref(i: int) -> NodeRef:
        n = p.nodes[i]
        return NodeRef(id=n.id, name=n.name, type=n.type, status=status_of(p, i))

    n, m = p.node_count, p.edge_count
    top: Listing[Ranked] | None = None
    communities: CommunitiesSection | None = None
    components: ComponentsSection | None = None
    if algorithm == "leiden":
        found = graph.leiden(iterations=leiden_iterations(n), seed=seed)
        communities = communities_section(found, graph.articlerank().values, ref, k)
        engine, detail = found.engine, communities.detail
    elif algorithm == "wcc":
        wcc = graph.wcc()
        components = components_section(wcc, p, ref, k)
        singles = int(np.count_nonzero(wcc.sizes == 1))
        engine, detail = wcc.engine, f"weakly connected components, {singles} of them single nodes"
    else:
        if algorithm == "pagerank":
            scores = graph.pagerank()
        elif algorithm == "articlerank":
            scores = graph.articlerank()
        else:
            scores = graph.betweenness(sources=betweenness_sources(n, m), seed=seed)
        top = ranked(scores.values, everyone(n), ref, k)
        engine, detail = scores.engine, scores.detail
    return AlgorithmReport(
        projection=name,
        algorithm=algorithm,
        engine=engine,
        detail=detail,
        nodes=n,
        edges=m,
        top=top,
        communities=communities,
        components=components,
    )


def _render(report: AlgorithmReport) -> str:
    lines = [
        f"{report.algorithm.upper()} on {report.projection!r} · {report.nodes} nodes · "
        f"{report.edges} relations · {report.engine}: {report.detail}"
    ]
    if report.top is not None:
        lines.append(f"top {len(report.top.items)} of {report.top.total}")
        lines.extend(f"  {node(r.node)} {r.score:.4g}" for r in report.top.items)
    if report.communities is not None:
        c = report.communities
        lines.append(
            f"{c.count} communities ({c.singletons} single nodes), modularity {c.modularity:.3f}; "
            f"largest {len(c.largest.items)} of {c.largest.total}:"
        )
        lines.extend(
            f"  {x.size} nodes: " + "; ".join(node(r) for r in x.label) for x in c.largest.items
        )
    if report.components is not None:
        c = report.components
        sizes = ", ".join(str(s) for s in c.sizes.items)
        lines.append(f"{c.count} components; sizes {sizes}; largest holds {c.largest_share:.0%}")
        lines.append(f"isolated {len(c.isolated.items)} of {c.isolated.total}")
        lines.extend(f"  {node(r)}" for r in c.isolated.items)
    return "\n".join(lines)
