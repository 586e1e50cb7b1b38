"""One transaction on Neo4j: the shared operations (store/ops) over its query text,
its executor, and its write context.

Heads are read from the graph itself (no SUPERSEDES edge in), and the names and the
lexical corpus counters are kept by the node statements, so this backend needs none
of the bookkeeping hooks. The unit of work may be run again by the driver after a
transient failure; this object lives for one attempt only and keeps nothing beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.ids import component_key
from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.neo4j.text import text_props
from kenning_encounter.store.ops.base import node_record
from kenning_encounter.store.ops.graph import RelationOps
from kenning_encounter.store.ops.load import LoadOps
from kenning_encounter.store.ops.spine import SpineOps
from kenning_encounter.store.port import DumpedNode
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.store.tracing import Tracer
from kenning_encounter.vocabulary import NODE_TYPES

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

log = logging.getLogger(__name__)


def node_from_row(label: str, row: list[Any]) -> NodeRecord:
    """A node row: its properties, then its encounter, locus and successor."""
    return node_record(row[0], label=label, encounter=row[1], locus=row[2], superseded_by=row[3])


def _node_row(record: NodeRecord) -> dict[str, Any]:
    """The stored properties: the type's vocabulary properties, and its derived tokens."""
    base: dict[str, Any] = {
        "id": record.id,
        "tick": record.tick,
        "ord": record.ord,
        "created_at": record.created_at,
        "name": record.name,
        "description": record.description,
        "status": record.status,
    }
    cols = ["id", "tick", "ord", "created_at", *(p.name for p in NODE_TYPES[record.type].props)]
    row = {c: base[c] if c in base else record.props.get(c) for c in cols}
    return {**row, **text_props(record.name, record.description)}


class Neo4jTx(SpineOps, RelationOps, LoadOps):
    _spine = q.SPINE_TEXT
    _nodes = q.NODE_TEXT
    _relations = q.RELATION_TEXT
    _load = q.LOAD_TEXT

    def __init__(
        self,
        tx: ManagedTransaction,
        *,
        clock: Callable[[], str],
        writable: bool,
        tracer: Tracer,
        ns: Namespace,
    ) -> None:
        self._tx = tx
        self._ns = ns
        self._clock = clock
        self._writable = writable
        self._tracer = tracer
        self._tick: int | None = None
        self._tick_used = False
        self._now: str | None = None

    # --- statements, through the backend's one execute path (engine.py) -------------
    def rows(self, query: LiteralString, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return engine.rows(self._tx, query, params, tracer=self._tracer, ns=self._ns)

    def render(self, template: str, **names: str) -> LiteralString:
        return q.render(template, **names)

    def node(self, label: str, row: list[Any]) -> NodeRecord:
        return node_from_row(label, row)

    # --- write context ----------------------------------------------------------------
    def begin_write(self) -> None:
        """Reserve the next tick first thing: writing the clock node takes its lock.

        Concurrent writers (from any process) queue on that lock until this
        transaction ends, so ticks follow commit order. Reserving eagerly saves a
        round trip on every write; ``end_write`` hands back a tick left unused.
        """
        self._tick = int(self.rows(q.CLOCK_NEXT)[0][0])

    def end_write(self) -> None:
        if self._tick is not None and not self._tick_used:
            self.rows(q.CLOCK_UNDO)

    @property
    def ticked(self) -> bool:
        """Whether this unit used its tick (reserved at the start, handed back if unused)."""
        return self._tick_used

    @property
    def tick(self) -> int:
        if not self._writable or self._tick is None:
            raise StoreError("internal: only a write transaction has a tick")
        self._tick_used = True
        return self._tick

    @property
    def now(self) -> str:
        if self._now is None:
            self._now = self._clock()
        return self._now

    def clock(self) -> int:
        """The last tick taken; inside a write, the reserved tick once the unit uses it."""
        stored = self.meta("clock")
        return stored - 1 if self._tick is not None and not self._tick_used else stored

    # --- node creation: one statement per type keeps nodes, names and counters ----------
    def create_nodes(self, records: Sequence[NodeRecord], encounter: str) -> None:
        """Batch creation: a few statements per type, never one per node."""
        self._require_writable()
        by_label: dict[str, list[NodeRecord]] = {}
        for record in records:
            by_label.setdefault(record.type, []).append(record)
        for label, group in by_label.items():
            create = q.render(q.NODES_CREATE, label=label)
            params = {
                "rows": [_node_row(r) for r in group],
                "encounter": encounter,
                "tick": self.tick,
            }
            self.rows(create, params)
            if label == "Component":
                rows = [{"key": component_key(r), "id": r.id} for r in group]
                self.rows(q.SOURCE_PUT, {"rows": rows})

    # --- an import's nodes: one statement per type for the whole batch ----------------
    def load_nodes(self, nodes: Sequence[DumpedNode]) -> None:
        """Each row names its encounter and RECORDED tick, so a batch is one statement per
        type, not one per past write. Names and sources are written after, each to the
        last node of the batch holding it: in creation order, the newest."""
        self._require_writable()
        by_label: dict[str, list[dict[str, Any]]] = {}
        names: dict[str, str] = {}
        sources: dict[str, str] = {}
        tokens = 0
        for dumped in nodes:
            node = dumped.node
            if node.type not in NODE_TYPES or node.encounter is None:
                raise StoreError(f"internal: {node.id} has no type or no encounter")
            tick = node.tick if dumped.recorded_tick is None else dumped.recorded_tick
            props = _node_row(node)
            tokens += props["_len"]
            by_label.setdefault(node.type, []).append(
                {"encounter": node.encounter, "recorded": tick, "props": props}
            )
            names[node.name] = node.id
            if node.type == "Component":
                sources[component_key(node)] = node.id
        for label, rows in by_label.items():
            self.rows(q.render(q.LOAD_NODES, label=label), {"rows": rows})
        if nodes:
            self.rows(q.LOAD_TEXT_COUNTERS, {"docs": len(nodes), "tokens": tokens})
        if names:
            self.rows(q.NAME_PUT, {"rows": [{"name": k, "id": v} for k, v in names.items()]})
        if sources:
            self.rows(q.SOURCE_PUT, {"rows": [{"key": k, "id": v} for k, v in sources.items()]})

    def _on_clock_set(self) -> None:
        # The tick reserved at the start is not handed back: the clock was set outright.
        self._tick = None

    def _on_cleared(self) -> None:
        self.rows(q.TEXT_RESET, {"docs": 0, "tokens": 0, "format": q.TEXT_FORMAT})


if TYPE_CHECKING:
    from kenning_encounter.store.port import LoadTx

    _CARRIES_THE_BULK_OPERATIONS: type[LoadTx] = Neo4jTx
