"""One transaction on Neo4j: every domain operation of the port.

A node's label is known from its id prefix (``obs_…`` is an Observation), so a
lookup always goes through that label's uniqueness index.

The unit of work may be run again by the driver after a transient failure;
this object lives for one attempt only and keeps nothing beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.endpoints import check_relation
from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.text import text_props
from kenning_encounter.store.port import Subgraph
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.store.tracing import Tracer
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    NODE_TYPES,
    RELATION_TYPES,
)

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

log = logging.getLogger(__name__)

PREFIX_TO_TYPE = {t.id_prefix: name for name, t in NODE_TYPES.items() if t.authored}
_BASE_PROPS = frozenset({"id", "tick", "ord", "created_at", "name", "description", "status"})


def type_of_id(node_id: str) -> str | None:
    return PREFIX_TO_TYPE.get(node_id.split("_", 1)[0]) if "_" in node_id else None


def _group_by_label(node_ids: Sequence[str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for node_id in node_ids:
        label = type_of_id(node_id)
        if label is not None:
            groups.setdefault(label, []).append(node_id)
    return groups


def _node_from_row(label: str, row: list[Any]) -> NodeRecord:
    props: dict[str, Any] = row[0]
    extra = {
        k: v
        for k, v in props.items()
        if not k.startswith("_") and k not in _BASE_PROPS and v is not None
    }
    return NodeRecord(
        id=str(props["id"]),
        type=label,
        name=str(props.get("name") or ""),
        description=str(props.get("description") or ""),
        tick=int(props["tick"]),
        created_at=str(props["created_at"]),
        status=props.get("status"),
        props=extra,
        encounter=row[1],
        locus=row[2],
        superseded_by=row[3],
        ord=int(props.get("ord") or 0),
    )


def _edge_from_row(row: list[Any]) -> EdgeRecord:
    return EdgeRecord(
        source=str(row[0]),
        target=str(row[1]),
        type=str(row[2]),
        tick=int(row[3]),
        encounter=row[4],
        revision_why=row[5],
    )


def _encounter_from(props: dict[str, Any]) -> EncounterRecord:
    return EncounterRecord(
        name=str(props["id"]),
        locus=str(props["locus"]),
        purpose=str(props.get("purpose") or ""),
        opened_tick=int(props["opened_tick"]),
        opened_at=str(props["opened_at"]),
        sealed_tick=props.get("sealed_tick"),
        sealed_at=props.get("sealed_at"),
        summary=props.get("summary"),
        dissolved_at=props.get("dissolved_at"),
        last_activity_at=props.get("last_activity_at"),
        tombstones=int(props.get("tombstones") or 0),
    )


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


def source_key(kind: str, label: str, key: str) -> str:
    return "\x1f".join((kind, label, key))


def _component_key(node: NodeRecord) -> str:
    return source_key(
        str(node.props.get("source_kind")),
        str(node.props.get("source_label")),
        str(node.props.get("source_key")),
    )


class Neo4jTx:
    def __init__(
        self,
        tx: ManagedTransaction,
        *,
        clock: Callable[[], str],
        writable: bool,
        tracer: Tracer,
    ) -> None:
        self._tx = tx
        self._clock = clock
        self._writable = writable
        self._tracer = tracer
        self._tick: int | None = None
        self._tick_used = False
        self._now: str | None = None

    # --- statements, through the backend's one execute path (engine.py) ---------
    def rows(self, query: LiteralString, params: dict[str, Any] | None = None) -> list[list[Any]]:
        return engine.rows(self._tx, query, params, tracer=self._tracer)

    # --- write context ----------------------------------------------------------
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

    # --- reads --------------------------------------------------------------------
    def meta(self, key: str) -> int:
        rows = self.rows(q.META_GET, {"key": key})
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def clock(self) -> int:
        """The last tick taken; inside a write, the reserved tick once the unit uses it."""
        stored = self.meta("clock")
        return stored - 1 if self._tick is not None and not self._tick_used else stored

    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        found: dict[str, NodeRecord] = {}
        for label, ids in _group_by_label(node_ids).items():
            for row in self.rows(q.render(q.NODES_GET, label=label), {"ids": ids}):
                node = _node_from_row(label, row)
                found[node.id] = node
        return found

    def get_node(self, node_id: str) -> NodeRecord | None:
        return self.get_nodes([node_id]).get(node_id)

    def all_nodes(self) -> list[NodeRecord]:
        return [
            _node_from_row(label, row)
            for label in AUTHORED_NODE_TYPES
            for row in self.rows(q.render(q.NODES_ALL, label=label))
        ]

    def head_id_by_name(self, name: str) -> str | None:
        rows = self.rows(q.NAME_GET, {"name": name})
        return str(rows[0][0]) if rows else None

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        rows = self.rows(q.NAMES_GET, {"names": list(names)})
        return {str(r[0]): str(r[1]) for r in rows}

    def component_id_by_source(self, kind: str, label: str, key: str) -> str | None:
        rows = self.rows(q.SOURCE_GET, {"key": source_key(kind, label, key)})
        return str(rows[0][0]) if rows else None

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        label = type_of_id(node_id)
        if label is None:
            return []
        rows = self.rows(q.render(q.PREDECESSORS, label=label), {"id": node_id})
        return [(str(r[0]), str(r[1] or "")) for r in rows]

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        rels = AUTHORED_RELATION_TYPES
        return self._edges_many(q.EDGES_OUT_MANY, [node_id], rels) + self._edges_many(
            q.EDGES_IN_MANY, [node_id], rels
        )

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return False
        if not RELATION_TYPES[rel_type].allows(s_label, t_label):
            return False
        query = q.render(q.EDGE_COUNT, source=s_label, target=t_label, rel=rel_type)
        return int(self.rows(query, {"s": source, "t": target})[0][0]) > 0

    def _encounter(self, query: LiteralString, params: dict[str, Any]) -> EncounterRecord | None:
        rows = self.rows(query, params)
        return _encounter_from(rows[0][0]) if rows else None

    def get_encounter(self, name: str) -> EncounterRecord | None:
        return self._encounter(q.ENC_GET, {"name": name})

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        found = [_encounter_from(r[0]) for r in self.rows(q.ENC_GET_MANY, {"names": list(names)})]
        return {e.name: e for e in found}

    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        return self._encounter(q.ENC_OPEN_OF, {"locus": locus})

    def last_encounter_of(self, locus: str) -> EncounterRecord | None:
        return self._encounter(q.ENC_LAST_OF, {"locus": locus})

    def latest_encounter(self) -> EncounterRecord | None:
        return self._encounter(q.ENC_LATEST, {})

    def encounters(
        self, *, unsealed_only: bool = False, limit: int = 20, exclude_locus: str | None = None
    ) -> list[EncounterRecord]:
        params = {"unsealed": unsealed_only, "exclude": exclude_locus or "", "limit": limit}
        return [_encounter_from(r[0]) for r in self.rows(q.ENC_LIST, params)]

    def loci(self) -> list[str]:
        return [str(r[0]) for r in self.rows(q.LOCI)]

    def spine(self) -> list[tuple[str, str, str]]:
        return [(str(a), str(r), str(b)) for a, r, b in self.rows(q.SPINE)]

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        query = q.render(q.HEADS_BY_STATUS, label=node_type)
        rows = self.rows(query, {"statuses": list(statuses), "limit": limit})
        return [_node_from_row(node_type, r) for r in rows]

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        rows = self.rows(q.render(q.RECENT_HEADS, label=node_type), {"limit": limit})
        return [_node_from_row(node_type, r) for r in rows]

    def recorded_ids(self, encounter: str) -> list[str]:
        return [str(r[0]) for r in self.rows(q.ENC_RECORDED, {"name": encounter})]

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for enc, node_id in self.rows(q.ENC_MEMBERS, {"names": list(encounters)}):
            out.setdefault(str(enc), []).append(str(node_id))
        return out

    def encounter_nodes(self, encounters: Sequence[str], limit: int) -> list[str]:
        rows = self.rows(q.ENC_NODES, {"names": list(encounters), "limit": limit})
        return [str(r[0]) for r in rows]

    def _edges_many(
        self, template: str, ids: Sequence[str], rels: Sequence[str]
    ) -> list[EdgeRecord]:
        edges: list[EdgeRecord] = []
        for label, group in _group_by_label(ids).items():
            rows = self.rows(q.render(template, label=label), {"ids": group, "rels": list(rels)})
            edges += [_edge_from_row(r) for r in rows]
        return edges

    def provenance(self, node_id: str, rel_types: Sequence[str], depth: int) -> Subgraph:
        seen = {node_id}
        frontier = [node_id]
        edges: list[EdgeRecord] = []
        for _ in range(depth):
            if not frontier:
                break
            incoming = self._edges_many(q.EDGES_IN_MANY, frontier, rel_types)
            edges += incoming
            frontier = [e.source for e in incoming if e.source not in seen]
            seen.update(frontier)
        nodes = self.get_nodes(sorted(seen))
        return Subgraph(list(nodes.values()), edges)

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        edges = self._edges_many(q.EDGES_OUT_MANY, node_ids, rel_types)
        edges += self._edges_many(q.EDGES_IN_MANY, node_ids, rel_types)
        ids = {e.source for e in edges} | {e.target for e in edges}
        return Subgraph(list(self.get_nodes(sorted(ids)).values()), edges)

    def authored_graph(self) -> Subgraph:
        edges = [_edge_from_row(r) for r in self.rows(q.edges_all())]
        return Subgraph(self.all_nodes(), edges)

    # --- writes -----------------------------------------------------------------------
    def _require_writable(self) -> None:
        if not self._writable:
            raise StoreError("internal: write attempted in a read transaction")

    def ensure_locus(self, locus: str) -> bool:
        self._require_writable()
        if self.rows(q.LOCUS_GET, {"id": locus}):
            return False
        self.rows(q.LOCUS_CREATE, {"id": locus, "at": self.now, "tick": self.tick})
        return True

    def create_encounter(
        self, record: EncounterRecord, *, previous: str | None, anchor: str | None
    ) -> None:
        self._require_writable()
        params = {
            "name": record.name,
            "locus": record.locus,
            "purpose": record.purpose,
            "tick": self.tick,
            "at": self.now,
        }
        self.rows(q.ENC_CREATE, params)
        if previous is not None:
            self.rows(q.ENC_NEXT, {"previous": previous, "name": record.name, "tick": self.tick})
        elif anchor is not None:
            self.rows(q.ENC_ANCHOR, {"anchor": anchor, "name": record.name, "tick": self.tick})

    def seal_encounter(self, name: str, summary: str) -> None:
        self._require_writable()
        self.rows(q.ENC_SEAL, {"name": name, "tick": self.tick, "at": self.now, "summary": summary})

    def dissolve_encounter(self, name: str) -> None:
        self._require_writable()
        _ = self.tick
        self.rows(q.ENC_DISSOLVE, {"name": name, "at": self.now})

    def touch_encounter(self, name: str) -> None:
        self._require_writable()
        self.rows(q.ENC_TOUCH, {"name": name, "at": self.now})

    def add_tombstones(self, encounter: str, count: int) -> None:
        self._require_writable()
        self.rows(q.ENC_TOMBSTONES, {"name": encounter, "count": count})

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
                rows = [{"key": _component_key(r), "id": r.id} for r in group]
                self.rows(q.SOURCE_PUT, {"rows": rows})

    def create_edge(self, edge: EdgeRecord) -> None:
        self._require_writable()
        s_label, t_label = type_of_id(edge.source), type_of_id(edge.target)
        if s_label is None or t_label is None:
            raise StoreError("internal: edge endpoint ids must carry a type prefix")
        check_relation(edge.type, s_label, t_label)  # Neo4j's schema would store anything
        params: dict[str, Any] = {
            "s": edge.source,
            "t": edge.target,
            "tick": self.tick,
            "encounter": edge.encounter,
            "at": self.now,
        }
        if edge.type == "SUPERSEDES":
            params["why"] = edge.revision_why
            query = q.render(q.EDGE_CREATE_SUPERSEDES, source=s_label, target=t_label)
        else:
            query = q.render(q.EDGE_CREATE, source=s_label, target=t_label, rel=edge.type)
        self.rows(query, params)

    def set_status(self, node_id: str, status: str) -> None:
        self._require_writable()
        label = type_of_id(node_id)
        if label is None:
            raise StoreError(f"internal: bad node id {node_id!r}")
        self.rows(q.render(q.NODE_SET_STATUS, label=label), {"id": node_id, "status": status})

    def delete_node(self, node_id: str) -> None:
        self._require_writable()
        node = self.get_node(node_id)
        if node is None:
            return
        _ = self.tick
        self.rows(q.NAME_DROP, {"name": node.name, "id": node_id})
        if node.type == "Component":
            self.rows(q.SOURCE_DROP, {"key": _component_key(node), "id": node_id})
        predecessors = [pid for pid, _ in self.predecessors(node_id)]
        self.rows(q.render(q.NODE_DELETE, label=node.type), {"id": node_id})
        # Undoing a revision makes the revised node a head again, under its own name.
        for restored in self.get_nodes(predecessors).values():
            if self.head_id_by_name(restored.name) is None:
                self.rows(q.NAME_PUT, {"rows": [{"name": restored.name, "id": restored.id}]})
            if restored.type == "Component":
                key = _component_key(restored)
                if self.rows(q.SOURCE_GET, {"key": key}) == []:
                    self.rows(q.SOURCE_PUT, {"rows": [{"key": key, "id": restored.id}]})

    def delete_edge(self, source: str, target: str, rel_type: str) -> None:
        self._require_writable()
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return
        _ = self.tick
        query = q.render(q.EDGE_DELETE, source=s_label, target=t_label, rel=rel_type)
        self.rows(query, {"s": source, "t": target})
