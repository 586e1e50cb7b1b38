"""A whole memory in bulk: the pages an export reads and the writes an import makes.

Written once over each backend's ``LoadText``; how a batch of nodes is created stays
the backend's (``load_nodes``), as ``create_nodes`` does. Nothing here takes a tick:
an import keeps every record's own, and ends by setting the clock to the dump's.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.ids import type_of_id
from kenning_encounter.store.ops.base import encounter_from
from kenning_encounter.store.ops.past import edge_key, node_body, node_key, node_of, status_key
from kenning_encounter.store.ops.standing_load import StandingLoadOps
from kenning_encounter.store.ops.text import LoadText
from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.persons import ClaimRecord, PersonRecord
from kenning_encounter.store.port import (
    PAST_KINDS,
    ConfirmationRecord,
    DumpedEdge,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    DumpedNode,
    LoadMarker,
    LocusRecord,
    PastRecord,
    SpineEdge,
)
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.store.uses import used_labels
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    REFERENT_TYPES,
)

_MARKER_KEY = "import"


class LoadOps(StandingLoadOps):
    _load: LoadText

    @abstractmethod
    def node(self, label: str, row: list[Any]) -> NodeRecord:
        """One node row of the backend's node queries, as a record."""

    @abstractmethod
    def load_nodes(self, nodes: Sequence[DumpedNode]) -> None:
        """The backend's own statement shape for a batch of nodes."""

    def _on_clock_set(self) -> None:
        """The clock was set outright (a backend that reserved a tick forgets it)."""

    def _on_cleared(self) -> None:
        """Every node is gone: counters kept beside them start again."""

    def _on_load_changed(self, node_ids: Sequence[str]) -> None:
        """Stored nodes were deleted or given a successor (a node cache drops them)."""

    def _count(self, query: LiteralString, params: dict[str, Any] | None = None) -> int:
        rows = self.rows(query, params)
        return int(rows[0][0]) if rows else 0

    # --- an export's pages ------------------------------------------------------------
    def dump_counts(self) -> dict[str, int]:
        text = self._load
        rels = {"rels": list(AUTHORED_RELATION_TYPES)}
        past = {
            f"deleted_{kind}" if kind != "status" else "status_move": self._count(
                text.count_past, {"kind": kind}
            )
            for kind in PAST_KINDS
        }
        return {
            "person": self._count(text.count_persons),
            "locus": self._count(text.count_loci),
            "encounter": self._count(text.count_encounters),
            "spine": self._count(text.count_spine),
            "node": sum(
                self._count(self.render(text.count_nodes, label=label))
                for label in AUTHORED_NODE_TYPES
            ),
            "relation": sum(
                self._count(self.render(text.count_relations, label=label), rels)
                for label in AUTHORED_NODE_TYPES
            ),
            "claim": self._count(text.count_claims),
            "confirmation": self._count(text.count_confirmations),
            **self.standing_counts(),
            "deleted_node": past["deleted_node"],
            "deleted_relation": past["deleted_edge"],
            "status_move": past["status_move"],
        }

    def dump_persons(self, after: str, limit: int) -> list[PersonRecord]:
        rows = self.rows(self._load.dump_persons, {"after": after, "limit": limit})
        return [
            PersonRecord(str(r[0]), str(r[1] or ""), r[2], int(r[3] or 0), str(r[4] or ""))
            for r in rows
        ]

    def dump_loci(self, after: str, limit: int) -> list[LocusRecord]:
        rows = self.rows(self._load.dump_loci, {"after": after, "limit": limit})
        loci = [
            LocusRecord(
                str(r[0]),
                int(r[1]),
                str(r[2]),
                None if r[3] is None else str(r[3]),
                None if r[4] is None else int(r[4]),
            )
            for r in rows
        ]
        return sorted(loci, key=lambda r: r.id)

    def dump_encounters(self, after: str, limit: int) -> list[EncounterRecord]:
        rows = self.rows(self._load.dump_encounters, {"after": after, "limit": limit})
        return [encounter_from(r[0]) for r in rows]

    def dump_spine(self, encounters: Sequence[str]) -> list[SpineEdge]:
        params = {"names": list(encounters)}
        rows = self.rows(self._load.dump_spine_into, params)
        rows += self.rows(self._load.dump_spine_anchor, params)
        return [SpineEdge(str(a), str(rel), str(b), int(t)) for a, rel, b, t in rows]

    def dump_nodes(
        self, label: str, after: tuple[int, int, str] | None, limit: int
    ) -> list[DumpedNode]:
        tick, ord_, node_id = after if after is not None else (0, 0, "")
        params = {"tick": tick, "ord": ord_, "id": node_id, "first": after is None, "limit": limit}
        rows = self.rows(self.render(self._load.dump_nodes, label=label), params)
        out: list[DumpedNode] = []
        for row in rows:
            recorded = row[-1]
            out.append(
                DumpedNode(self.node(label, row[:-1]), None if recorded is None else int(recorded))
            )
        # The statement pages in this order; the page is put in it again here so the next
        # page's key never rests on the order a backend returns rows after its joins.
        out.sort(key=lambda d: (d.node.tick, d.node.ord, d.node.id))
        return out

    def dump_node_ids(self, label: str, after: str, limit: int) -> list[str]:
        query = self.render(self._load.dump_node_ids, label=label)
        return [str(r[0]) for r in self.rows(query, {"after": after, "limit": limit})]

    def dump_relations(self, label: str, sources: Sequence[str]) -> list[DumpedEdge]:
        query = self.render(self._load.dump_relations, label=label)
        params = {"ids": list(sources), "rels": list(AUTHORED_RELATION_TYPES)}
        return [
            DumpedEdge(
                EdgeRecord(str(r[0]), str(r[1]), str(r[2]), int(r[3]), r[4], r[5]),
                None if r[6] is None else str(r[6]),
            )
            for r in self.rows(query, params)
        ]

    def dump_claims(self, label: str, sources: Sequence[str]) -> list[ClaimRecord]:
        if label not in REFERENT_TYPES:
            return []
        query = self.render(self._load.dump_claims, label=label)
        claims = [
            ClaimRecord(
                str(r[0]), str(r[1]), str(r[2]), str(r[3] or ""), int(r[4]), str(r[5]), str(r[6])
            )
            for r in self.rows(query, {"ids": list(sources)})
        ]
        return sorted(claims, key=lambda c: (c.tick, c.source, c.target, c.resolution))

    def dump_confirmations(self, label: str, nodes: Sequence[str]) -> list[ConfirmationRecord]:
        query = self.render(self._load.dump_confirmations, label=label)
        found = [
            ConfirmationRecord(str(r[0]), str(r[1]), int(r[2]), r[3], r[4])
            for r in self.rows(query, {"ids": list(nodes)})
        ]
        return sorted(found, key=lambda c: (c.tick, c.node, c.encounter))

    def dump_past(self, kind: str, after: str, limit: int) -> list[tuple[str, PastRecord]]:
        rows = self.rows(self._load.dump_past, {"kind": kind, "after": after, "limit": limit})
        out: list[tuple[str, PastRecord]] = []
        for key, node, source, target, rel, tick, ended, seq, at, was, now, enc, why, body in rows:
            record: PastRecord
            if kind == "node":
                record = DumpedEndedNode(node_of(str(body)), int(ended), at)
            elif kind == "edge":
                edge = EdgeRecord(str(source), str(target), str(rel), int(tick), enc, why)
                record = DumpedEndedEdge(edge, int(ended), at)
            else:
                record = DumpedMove(StatusMove(str(node), int(tick), int(seq), was, now), at)
            out.append((str(key), record))
        return sorted(out, key=lambda kr: kr[0])

    def load_marker(self) -> LoadMarker | None:
        rows = self.rows(self._load.marker_get, {"key": _MARKER_KEY})
        if not rows or rows[0][0] is None:
            return None
        return LoadMarker(str(rows[0][0]), int(rows[0][1] or 0))

    # --- an import's writes -----------------------------------------------------------
    def begin_load(self, digest: str) -> None:
        self.mark_loaded(digest, 0)

    def mark_loaded(self, digest: str, done: int) -> None:
        self._require_writable()
        self.rows(self._load.marker_put, {"key": _MARKER_KEY, "digest": digest, "done": done})

    def load_persons(self, persons: Sequence[PersonRecord]) -> None:
        self._require_writable()
        rows = [
            {"id": p.id, "name": p.name, "key": p.key, "tick": p.tick, "created_at": p.created_at}
            for p in persons
        ]
        if rows:
            self.rows(self._load.load_persons, {"rows": rows})

    def load_loci(self, loci: Sequence[LocusRecord]) -> None:
        self._require_writable()
        rows = [{"id": r.id, "tick": r.tick, "created_at": r.created_at} for r in loci]
        if rows:
            self.rows(self._load.load_loci, {"rows": rows})
        directed = [
            {"locus": r.id, "person": r.director, "tick": r.directed_tick}
            for r in loci
            if r.director is not None
        ]
        if directed:
            self.rows(self._load.load_directed, {"rows": directed})

    def load_encounters(self, encounters: Sequence[EncounterRecord]) -> None:
        self._require_writable()
        rows = [
            {
                "id": e.name,
                "locus": e.locus,
                "purpose": e.purpose,
                "opened_tick": e.opened_tick,
                "opened_at": e.opened_at,
                "sealed_tick": e.sealed_tick,
                "sealed_at": e.sealed_at,
                "summary": e.summary,
                "dissolved_at": e.dissolved_at,
                "dissolved_tick": e.dissolved_tick,
                "last_activity_at": e.last_activity_at,
                "tombstones": e.tombstones,
            }
            for e in encounters
        ]
        if rows:
            self.rows(self._load.load_encounters, {"rows": rows})
        # As a live erasure leaves them (ops/spine.py ``add_tombstones``): the marks, and on
        # Neo4j the labels read_cypher's scope keeps such an encounter out of reach by.
        marked = [
            {"id": e.name, "marks": m, "labels": used_labels(m)}
            for e in encounters
            if (m := e.tombstones_marked) is not None
        ]
        if marked:
            self.rows(self._load.load_tombstones_marked, {"rows": marked})

    def load_spine(self, edges: Sequence[SpineEdge]) -> None:
        self._require_writable()
        statements: dict[str, LiteralString] = {
            "OPENED": self._load.load_opened,
            "NEXT_ENCOUNTER": self._load.load_next,
            "INSTANTIATED_AFTER": self._load.load_anchor,
        }
        for rel, statement in statements.items():
            rows = [
                {"source": e.source, "target": e.target, "tick": e.tick}
                for e in edges
                if e.type == rel
            ]
            if rows:
                self.rows(statement, {"rows": rows})

    def load_relations(self, edges: Sequence[DumpedEdge]) -> None:
        """One statement per (source type, target type, relation) of the batch."""
        self._require_writable()
        groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
        for dumped in edges:
            e = dumped.edge
            key = (_type(e.source), _type(e.target), e.type)
            row: dict[str, Any] = {
                "s": e.source,
                "t": e.target,
                "tick": e.tick,
                "encounter": e.encounter,
                "at": dumped.created_at,
            }
            if e.type == "SUPERSEDES":
                row["why"] = e.revision_why
            groups.setdefault(key, []).append(row)
        if groups:
            self._on_edges(None)
        for (source, target, rel), rows in groups.items():
            if rel == "SUPERSEDES":
                self._on_load_changed([r["t"] for r in rows])
                query = self.render(self._load.load_supersedes, source=source, target=target)
            else:
                query = self.render(self._load.load_edges, source=source, target=target, rel=rel)
            self.rows(query, {"rows": rows})

    def load_claims(self, claims: Sequence[ClaimRecord]) -> None:
        self._require_writable()
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in claims:
            groups.setdefault(_type(c.source), []).append(
                {
                    "s": c.source,
                    "t": c.target,
                    "resolution": c.resolution,
                    "why": c.why,
                    "tick": c.tick,
                    "encounter": c.encounter,
                    "at": c.created_at,
                }
            )
        for label, rows in groups.items():
            self.rows(self.render(self._load.load_claims, label=label), {"rows": rows})

    def load_confirmations(self, confirmations: Sequence[ConfirmationRecord]) -> None:
        self._require_writable()
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in confirmations:
            groups.setdefault(_type(c.node), []).append(
                {
                    "node": c.node,
                    "encounter": c.encounter,
                    "tick": c.tick,
                    "at": c.created_at,
                    "why": c.why,
                }
            )
        if groups:
            self._on_edges(None)  # confirmations are relations too, held beside the nodes
        for label, rows in groups.items():
            self.rows(self.render(self._load.load_confirmations, label=label), {"rows": rows})

    def load_past(self, records: Sequence[PastRecord]) -> None:
        self._require_writable()
        rows = [_past_row(r) for r in records]
        if rows:
            self.rows(self._load.load_past, {"rows": rows})

    def finish_load(self, clock: int) -> None:
        self._require_writable()
        self.rows(self._load.clock_set, {"value": clock})
        self._on_clock_set()
        self.rows(self._load.marker_drop, {"key": _MARKER_KEY})

    def clear_some(self, limit: int) -> int:
        self._require_writable()
        for label in (*AUTHORED_NODE_TYPES, "Encounter", "Locus", "Person"):
            query = self.render(self._load.clear_nodes, label=label)
            gone = [str(r[0]) for r in self.rows(query, {"limit": limit})]
            if gone:
                self._on_load_changed(gone)
                self._on_edges(None)
                return len(gone)
        for statement in self._load.clear_registries:
            self.rows(statement)
        self.rows(self._load.clock_set, {"value": 0})
        self._on_clock_set()
        self._on_cleared()
        self.rows(self._load.marker_drop, {"key": _MARKER_KEY})
        return 0


_PAST_COLUMNS = [
    "node",
    "name",
    "source",
    "target",
    "rel",
    "tick",
    "ended",
    "seq",
    "at",
    "moved_from",
    "moved_to",
    "encounter",
    "why",
    "body",
]


def _past_row(record: PastRecord) -> dict[str, Any]:
    """A row of the record of the past as the live write leaves it (store/ops/past.py)."""
    row: dict[str, Any] = dict.fromkeys(_PAST_COLUMNS)
    if isinstance(record, DumpedEndedNode):
        n = record.node
        row |= {"key": node_key(n.id), "kind": "node", "node": n.id, "name": n.name}
        row |= {"tick": n.tick, "ended": record.ended, "body": node_body(n)}
    elif isinstance(record, DumpedEndedEdge):
        e = record.edge
        row |= {"key": edge_key(e.source, e.type, e.target, record.ended), "kind": "edge"}
        row |= {"source": e.source, "target": e.target, "rel": e.type, "tick": e.tick}
        row |= {"ended": record.ended, "encounter": e.encounter, "why": e.revision_why}
    else:
        m = record.move
        row |= {"key": status_key(m.node, m.tick, m.seq), "kind": "status", "node": m.node}
        row |= {"tick": m.tick, "ended": m.tick, "seq": m.seq}
        row |= {"moved_from": m.before, "moved_to": m.after}
    row["at"] = record.at
    return row


def _type(node_id: str) -> str:
    label = type_of_id(node_id)
    if label is None:
        raise StoreError(f"internal: {node_id!r} carries no type prefix")
    return label
