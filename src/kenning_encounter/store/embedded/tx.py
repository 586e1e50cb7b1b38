"""One transaction on the embedded engine: every domain operation of the port.

A node's table is known from its id prefix (``obs_…`` is an Observation), so a
lookup never scans every table.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import ladybug

from kenning_encounter.errors import EngineError, StoreError
from kenning_encounter.store.embedded import engine
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.nodecache import LazySnapshot
from kenning_encounter.store.embedded.textindex import IndexDoc
from kenning_encounter.store.endpoints import check_relation
from kenning_encounter.store.port import Subgraph
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.store.tracing import Tracer
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    NODE_TYPES,
    RELATION_TYPES,
)

log = logging.getLogger(__name__)

PREFIX_TO_TYPE = {t.id_prefix: name for name, t in NODE_TYPES.items() if t.authored}
_BASE_COLUMNS = (
    "id",
    "tick",
    "ord",
    "created_at",
    "name",
    "description",
    "status",
    "encounter",
    "locus",
    "superseded_by",
)


def engine_error(exc: RuntimeError, doing: str) -> EngineError:
    """The engine's refusal (``Binder exception: ...``) in our tree, naming what was done.

    The engine raises a bare RuntimeError whose text opens with its kind; the kind
    becomes ``code`` and the rest ``detail``, so callers can tell a schema refusal
    from a uniqueness one without parsing the message again.
    """
    text = str(exc).strip()
    kind, sep, rest = text.partition(" exception: ")
    code, detail = (kind, rest) if sep and " " not in kind else ("", text)
    return EngineError(
        f"the embedded store refused a statement while {doing}: {detail.rstrip('. ')}; "
        "nothing of this call was written. The request passed validation, so this is a "
        "fault of the store: try once more, and report it if it repeats",
        code=code,
        detail=detail,
    )


def type_of_id(node_id: str) -> str | None:
    return PREFIX_TO_TYPE.get(node_id.split("_", 1)[0]) if "_" in node_id else None


def node_to_index_doc(node: NodeRecord) -> IndexDoc:
    return IndexDoc(node.id, node.type, node.is_head, node.name, node.description)


def _columns(label: str) -> list[str]:
    t = NODE_TYPES[label]
    return ["id", "tick", "ord", "created_at", "encounter", "locus", *(p.name for p in t.props)]


def _node_from_row(row: list[Any]) -> NodeRecord:
    props_in: dict[str, Any] = row[0]
    extra = {
        k: v
        for k, v in props_in.items()
        if not k.startswith("_") and k not in _BASE_COLUMNS and v is not None
    }
    return NodeRecord(
        id=str(props_in["id"]),
        type=str(props_in["_LABEL"]),
        name=str(props_in.get("name") or ""),
        description=str(props_in.get("description") or ""),
        tick=int(props_in["tick"]),
        created_at=str(props_in["created_at"]),
        status=props_in.get("status"),
        props=extra,
        encounter=props_in.get("encounter"),
        locus=props_in.get("locus"),
        superseded_by=props_in.get("superseded_by"),
        ord=int(props_in.get("ord") or 0),
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


class EmbeddedTx:
    def __init__(
        self,
        conn: ladybug.Connection,
        *,
        clock: Callable[[], str],
        writable: bool,
        tracer: Tracer,
        snapshot: LazySnapshot | None = None,
    ) -> None:
        self._conn = conn
        # A read transaction opens its snapshot at its first statement (nodecache.py).
        self._snapshot = snapshot
        self._clock = clock
        self._writable = writable
        self._tracer = tracer
        self._tick: int | None = None
        self._now: str | None = None
        self.index_upserts: list[IndexDoc] = []
        self.index_deletes: list[str] = []
        # What a write does to stored nodes, for the node cache (nodecache.py).
        self.created_nodes: list[NodeRecord] = []
        self.changed_nodes: set[str] = set()

    # --- statements, through the backend's one execute path (engine.py) ---------
    def _run(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if self._snapshot is not None:
            self._snapshot.ensure_open()
        try:
            return engine.rows(self._conn, query, params, tracer=self._tracer)
        except RuntimeError as exc:
            raise engine_error(exc, "writing" if self._writable else "reading") from exc

    # --- write context ------------------------------------------------------------
    @property
    def ticked(self) -> bool:
        return self._tick is not None

    @property
    def tick(self) -> int:
        if not self._writable:
            raise StoreError("internal: a read transaction has no tick")
        if self._tick is None:
            self._tick = int(self._run(q.CLOCK_NEXT)[0][0])
        return self._tick

    @property
    def now(self) -> str:
        if self._now is None:
            self._now = self._clock()
        return self._now

    # --- reads ------------------------------------------------------------------
    def meta(self, key: str) -> int:
        rows = self._run(q.META_GET, {"key": key})
        return int(rows[0][0]) if rows else 0

    def clock(self) -> int:
        return self.meta("clock")

    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        if self._snapshot is None:
            return self._fetch_nodes(node_ids)
        cached = self._snapshot.cached(list(node_ids))
        missing = [i for i in node_ids if i not in cached]
        if not missing:
            return cached
        fetched = self._fetch_nodes(missing)
        self._snapshot.offer(fetched)
        return cached | fetched

    def _fetch_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        by_label: dict[str, list[str]] = {}
        for node_id in node_ids:
            label = type_of_id(node_id)
            if label is not None:
                by_label.setdefault(label, []).append(node_id)
        found: dict[str, NodeRecord] = {}
        for label, ids in by_label.items():
            for row in self._run(q.render(q.NODES_GET, label=label), {"ids": ids}):
                node = _node_from_row(row)
                found[node.id] = node
        return found

    def get_node(self, node_id: str) -> NodeRecord | None:
        return self.get_nodes([node_id]).get(node_id)

    def all_nodes(self) -> Iterator[NodeRecord]:
        for label in AUTHORED_NODE_TYPES:
            for row in self._run(q.render(q.NODES_ALL, label=label)):
                yield _node_from_row(row)

    def head_id_by_name(self, name: str) -> str | None:
        rows = self._run(q.NAME_GET, {"name": name})
        return str(rows[0][0]) if rows else None

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        rows = self._run(q.NAMES_GET, {"names": list(names)})
        return {str(r[0]): str(r[1]) for r in rows}

    def component_id_by_source(self, kind: str, label: str, key: str) -> str | None:
        rows = self._run(q.SOURCE_GET, {"key": _source_key(kind, label, key)})
        return str(rows[0][0]) if rows else None

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        label = type_of_id(node_id)
        if label is None:
            return []
        rows = self._run(q.render(q.PREDECESSORS, label=label), {"id": node_id})
        return [(str(r[0]), str(r[1] or "")) for r in rows]

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        label = type_of_id(node_id)
        if label is None:
            return []
        params = {"id": node_id, "rels": list(AUTHORED_RELATION_TYPES)}
        rows = self._run(q.render(q.EDGES_OUT, label=label), params)
        rows += self._run(q.render(q.EDGES_IN, label=label), params)
        return [_edge_from_row(r) for r in rows]

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return False
        if not RELATION_TYPES[rel_type].allows(s_label, t_label):
            return False
        query = q.render(q.EDGE_COUNT, source=s_label, target=t_label, rel=rel_type)
        return int(self._run(query, {"s": source, "t": target})[0][0]) > 0

    def _encounter(self, query: str, params: dict[str, Any]) -> EncounterRecord | None:
        rows = self._run(query, params)
        return _encounter_from(rows[0][0]) if rows else None

    def get_encounter(self, name: str) -> EncounterRecord | None:
        return self._encounter(q.ENC_GET, {"name": name})

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        found = [_encounter_from(r[0]) for r in self._run(q.ENC_GET_MANY, {"names": list(names)})]
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
        return [_encounter_from(r[0]) for r in self._run(q.ENC_LIST, params)]

    def loci(self) -> list[str]:
        return [str(r[0]) for r in self._run(q.LOCI)]

    def spine(self) -> list[tuple[str, str, str]]:
        return [(str(a), str(r), str(b)) for a, r, b in self._run(q.SPINE)]

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        query = q.render(q.HEADS_BY_STATUS, label=node_type)
        rows = self._run(query, {"statuses": list(statuses), "limit": limit})
        return [_node_from_row(r) for r in rows]

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        rows = self._run(q.render(q.RECENT_HEADS, label=node_type), {"limit": limit})
        return [_node_from_row(r) for r in rows]

    def recorded_ids(self, encounter: str) -> list[str]:
        return [str(r[0]) for r in self._run(q.ENC_RECORDED, {"name": encounter})]

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        rows = self._run(q.ENC_MEMBERS, {"names": list(encounters)})
        out: dict[str, list[str]] = {}
        for enc, node_id, _tick, _ord in rows:
            out.setdefault(str(enc), []).append(str(node_id))
        return out

    def encounter_nodes(self, encounters: Sequence[str], limit: int) -> list[str]:
        rows = self._run(q.ENC_NODES, {"names": list(encounters), "limit": limit})
        return [str(r[0]) for r in rows]

    def _edges_many(
        self, template: str, ids: Sequence[str], rels: Sequence[str]
    ) -> list[EdgeRecord]:
        by_label: dict[str, list[str]] = {}
        for node_id in ids:
            label = type_of_id(node_id)
            if label is not None:
                by_label.setdefault(label, []).append(node_id)
        edges: list[EdgeRecord] = []
        for label, group in by_label.items():
            rows = self._run(q.render(template, label=label), {"ids": group, "rels": list(rels)})
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
        edges = [
            _edge_from_row(r)
            for r in self._run(q.EDGES_ALL, {"rels": list(AUTHORED_RELATION_TYPES)})
        ]
        return Subgraph(list(self.all_nodes()), edges)

    # --- writes -------------------------------------------------------------------
    def _require_writable(self) -> None:
        if not self._writable:
            raise StoreError("internal: write attempted in a read transaction")

    def ensure_locus(self, locus: str) -> bool:
        self._require_writable()
        if self._run(q.LOCUS_GET, {"id": locus}):
            return False
        self._run(q.LOCUS_CREATE, {"id": locus, "at": self.now, "tick": self.tick})
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
        self._run(q.ENC_CREATE, params)
        self._run(q.ENC_OPENED, {"locus": record.locus, "name": record.name, "tick": self.tick})
        if previous is not None:
            self._run(q.ENC_NEXT, {"previous": previous, "name": record.name, "tick": self.tick})
        elif anchor is not None:
            self._run(q.ENC_ANCHOR, {"anchor": anchor, "name": record.name, "tick": self.tick})

    def seal_encounter(self, name: str, summary: str) -> None:
        self._require_writable()
        self._run(q.ENC_SEAL, {"name": name, "tick": self.tick, "at": self.now, "summary": summary})

    def dissolve_encounter(self, name: str) -> None:
        self._require_writable()
        _ = self.tick
        self._run(q.ENC_DISSOLVE, {"name": name, "at": self.now})

    def touch_encounter(self, name: str) -> None:
        self._require_writable()
        self._run(q.ENC_TOUCH, {"name": name, "at": self.now})

    def add_tombstones(self, encounter: str, count: int) -> None:
        self._require_writable()
        self._run(q.ENC_TOMBSTONES, {"name": encounter, "count": count})

    def create_nodes(self, records: Sequence[NodeRecord], encounter: str) -> None:
        """Batch creation: two statements per type and two for all the names."""
        self._require_writable()
        by_label: dict[str, list[NodeRecord]] = {}
        for record in records:
            by_label.setdefault(record.type, []).append(record)
        for label, group in by_label.items():
            if label not in NODE_TYPES:
                raise StoreError(f"internal: unknown label {label}")
            cols = _columns(label)
            assignments = ", ".join(f"{c}: r.{c}" for c in cols)
            rows = [_row_for(record, cols) for record in group]
            self._run(q.NODES_CREATE.format(label=label, assignments=assignments), {"rows": rows})
            self.created_nodes.extend(group)
            self._run(
                q.render(q.NODES_RECORD, label=label),
                {"ids": [r.id for r in group], "encounter": encounter, "tick": self.tick},
            )
        # A name already held is being passed down a supersession chain.
        held = self.head_ids_by_names([r.name for r in records])
        moved = [{"name": r.name, "id": r.id} for r in records if r.name in held]
        fresh = [{"name": r.name, "id": r.id} for r in records if r.name not in held]
        if fresh:
            self._run(q.NAMES_CREATE, {"rows": fresh})
        if moved:
            self._run(q.NAMES_MOVE, {"rows": moved})
        for record in records:
            if record.type == "Component":
                key = _component_key(record)
                # A revision that keeps its source takes the bookmark over.
                source_held = self._run(q.SOURCE_GET, {"key": key})
                self._run(
                    q.SOURCE_MOVE if source_held else q.SOURCE_PUT, {"key": key, "id": record.id}
                )
            self.index_upserts.append(node_to_index_doc(record))

    def create_edge(self, edge: EdgeRecord) -> None:
        self._require_writable()
        s_label, t_label = type_of_id(edge.source), type_of_id(edge.target)
        if s_label is None or t_label is None:
            raise StoreError("internal: edge endpoint ids must carry a type prefix")
        check_relation(edge.type, s_label, t_label)
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
            self._run(query, params)
            self._set_successor(edge.target, edge.source)
            old = self.get_node(edge.target)
            if old is not None:
                self.index_upserts.append(node_to_index_doc(old))
        else:
            query = q.render(q.EDGE_CREATE, source=s_label, target=t_label, rel=edge.type)
            self._run(query, params)

    def _set_successor(self, node_id: str, successor: str | None) -> None:
        label = type_of_id(node_id)
        if label is not None:
            self.changed_nodes.add(node_id)
            query = q.render(q.NODE_SET_SUCCESSOR, label=label)
            self._run(query, {"id": node_id, "successor": successor})

    def set_status(self, node_id: str, status: str) -> None:
        self._require_writable()
        label = type_of_id(node_id)
        if label is None:
            raise StoreError(f"internal: bad node id {node_id!r}")
        self.changed_nodes.add(node_id)
        self._run(q.render(q.NODE_SET_STATUS, label=label), {"id": node_id, "status": status})

    def delete_node(self, node_id: str) -> None:
        self._require_writable()
        node = self.get_node(node_id)
        if node is None:
            return
        _ = self.tick
        self._run(q.NAME_DROP, {"name": node.name, "id": node_id})
        if node.type == "Component":
            self._run(q.SOURCE_DROP, {"key": _component_key(node), "id": node_id})
        predecessors = [pid for pid, _ in self.predecessors(node_id)]
        self.changed_nodes.add(node_id)
        self._run(q.render(q.NODE_DELETE, label=node.type), {"id": node_id})
        for pid in predecessors:
            self._set_successor(pid, None)
        self.index_deletes.append(node_id)
        # Undoing a revision makes the revised node a head again, under its own name.
        for restored in self.get_nodes(predecessors).values():
            if self.head_id_by_name(restored.name) is None:
                self._run(q.NAME_PUT, {"name": restored.name, "id": restored.id})
            if restored.type == "Component":
                key = _component_key(restored)
                if not self._run(q.SOURCE_GET, {"key": key}):
                    self._run(q.SOURCE_PUT, {"key": key, "id": restored.id})
            self.index_upserts.append(node_to_index_doc(restored))

    def delete_edge(self, source: str, target: str, rel_type: str) -> None:
        self._require_writable()
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return
        _ = self.tick
        query = q.render(q.EDGE_DELETE, source=s_label, target=t_label, rel=rel_type)
        self._run(query, {"s": source, "t": target})
        if rel_type == "SUPERSEDES":
            self._set_successor(target, None)
            old = self.get_node(target)
            if old is not None:
                self.index_upserts.append(node_to_index_doc(old))


def _row_for(record: NodeRecord, cols: list[str]) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": record.id,
        "tick": record.tick,
        "ord": record.ord,
        "created_at": record.created_at,
        "encounter": record.encounter,
        "locus": record.locus,
        "name": record.name,
        "description": record.description,
        "status": record.status,
    }
    return {c: base[c] if c in base else record.props.get(c) for c in cols}


def _component_key(node: NodeRecord) -> str:
    return _source_key(
        str(node.props.get("source_kind")),
        str(node.props.get("source_label")),
        str(node.props.get("source_key")),
    )


def _source_key(kind: str, label: str, key: str) -> str:
    return "\x1f".join((kind, label, key))
