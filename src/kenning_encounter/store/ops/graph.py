"""Authored nodes and their relations: lookups, walks, and the writes that keep a
chain's names, source keys and heads true."""

from __future__ import annotations

import contextlib
import unicodedata
from abc import abstractmethod
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from kenning_encounter.errors import StoreError
from kenning_encounter.store.endpoints import check_relation
from kenning_encounter.store.ids import component_key, group_by_type, source_key, type_of_id
from kenning_encounter.store.ops.base import Statements, edge_from_row
from kenning_encounter.store.ops.text import NodeText, RelationText
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.port import (
    MAX_CHAIN,
    BatchStart,
    ChainLink,
    ChainSpan,
    HeadsAsk,
    Subgraph,
)
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    RELATION_TYPES,
)


def with_hops(template: str, hops: int) -> str:
    """A walk's bound written into its template: a number of ours, never a caller's."""
    if not 1 <= hops <= MAX_CHAIN:
        raise StoreError(f"internal: a walk's bound must be 1 to {MAX_CHAIN}, not {hops!r}")
    return template.replace("{hops}", str(hops))


def walk_back(
    starts: Sequence[str], incoming: Callable[[list[str]], list[EdgeRecord]], depth: int
) -> tuple[set[str], list[EdgeRecord]]:
    """``depth`` hops back from ``starts`` along what ``incoming`` gives for a frontier:
    every node reached (the starts too) and the edges walked."""
    seen = set(starts)
    frontier = list(dict.fromkeys(starts))
    edges: list[EdgeRecord] = []
    for _ in range(depth):
        if not frontier:
            break
        found = incoming(frontier)
        edges += found
        frontier = list(dict.fromkeys(e.source for e in found if e.source not in seen))
        seen.update(frontier)
    return seen, edges


def name_forms(names: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The names to look up, each as written and, where that differs, in NFC (the form a
    write holds a name in); and the NFC form of each name that has another."""
    composed = {
        n: c for n in names if not n.isascii() and (c := unicodedata.normalize("NFC", n)) != n
    }
    return list(dict.fromkeys([*names, *composed.values()])), composed


def held_as_asked(
    names: Sequence[str], composed: Mapping[str, str], held: Mapping[str, str]
) -> dict[str, str]:
    """``held`` (name -> id, as the store keys it) keyed by the names as asked."""
    found = {n: held[n] for n in names if n in held}
    for n, c in composed.items():
        if n not in found and c in held:
            found[n] = held[c]
    return found


class NodeOps(Statements):
    _nodes: NodeText

    @abstractmethod
    def node(self, label: str, row: list[Any]) -> NodeRecord:
        """One node row of the backend's node queries, as a record."""

    @abstractmethod
    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        """(ops/spine.py)"""

    def begin_batch(
        self, locus: str, names: Sequence[str], node_ids: Sequence[str], named: Sequence[str]
    ) -> BatchStart:
        encounter = self.open_encounter_of(locus)
        heads = self.head_ids_by_names(names) if names else {}
        return self._batch_nodes(encounter, heads, node_ids, named)

    def _batch_nodes(
        self,
        encounter: EncounterRecord | None,
        heads: dict[str, str],
        node_ids: Sequence[str],
        named: Sequence[str],
    ) -> BatchStart:
        """``begin_batch``'s answer, once the encounter and heads are read: the nodes."""
        ids = list(dict.fromkeys([*node_ids, *(heads[n] for n in named if n in heads)]))
        return BatchStart(encounter, heads, self.get_nodes(ids) if ids else {})

    # --- bookkeeping a backend may keep beside the graph (no-ops by default) ----------
    def _on_successor(self, node_id: str, successor: str | None) -> None:
        """A node's successor was set or cleared (a stored mirror of it may follow)."""

    def _on_deleted(self, node_id: str) -> None:
        """A node was deleted."""

    def _on_reindex(self, node: NodeRecord) -> None:
        """A node's head-ness changed: its entry in a text index may follow."""

    # --- the record of the past as_of reads stand on (store/ops/past.py keeps it) -----
    def _keep_statuses(self, moves: Sequence[tuple[NodeRecord, str]]) -> None:
        """Each ``node`` (as it is before) moves to its status in this write, in order."""

    def _keep_edges(self, edges: Sequence[EdgeRecord]) -> None:
        """``edges`` (each once) are deleted in this write."""

    def _keep_nodes(self, nodes: Sequence[NodeRecord]) -> None:
        """``nodes`` and their edges are deleted by an agent in this write."""

    def _drop_past(self, node_id: str) -> None:
        """``node_id`` is hard-deleted: nothing about it is kept, in the past either."""

    # --- reads ---------------------------------------------------------------------
    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        return self._fetch_nodes(node_ids)

    def classified(self, node_ids: Sequence[str]) -> dict[str, str]:
        # Through the node read: the embedded store answers it from its node cache.
        found = self.get_nodes(node_ids)
        return {i: str(c) for i, n in found.items() if (c := n.props.get("classification"))}

    def _fetch_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        found: dict[str, NodeRecord] = {}
        for label, ids in group_by_type(node_ids).items():
            for row in self.rows(self.render(self._nodes.nodes_get, label=label), {"ids": ids}):
                node = self.node(label, row)
                found[node.id] = node
        return found

    def get_node(self, node_id: str) -> NodeRecord | None:
        return self.get_nodes([node_id]).get(node_id)

    def all_nodes(self) -> Iterable[NodeRecord]:
        for label in AUTHORED_NODE_TYPES:
            for row in self.rows(self.render(self._nodes.nodes_all, label=label)):
                yield self.node(label, row)

    def head_id_by_name(self, name: str) -> str | None:
        return self.head_ids_by_names([name]).get(name)

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        """The live node holding each name, keyed by the name as asked. A name is held as
        written (in NFC: the write refuses another form), and asked for as written or in
        NFC: "café" typed as e + U+0301 finds the node named "café"."""
        asked, composed = name_forms(names)
        rows = self.rows(self._nodes.names_get, {"names": asked})
        return held_as_asked(names, composed, {str(r[0]): str(r[1]) for r in rows})

    def component_id_by_source(self, kind: str, label: str, key: str) -> str | None:
        rows = self.rows(self._nodes.source_get, {"key": source_key(kind, label, key)})
        return str(rows[0][0]) if rows else None

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        label = type_of_id(node_id)
        if label is None:
            return []
        rows = self.rows(self.render(self._nodes.predecessors, label=label), {"id": node_id})
        return [(str(r[0]), str(r[1] or "")) for r in rows]

    def chain(self, node_id: str, *, older: int, newer: int) -> ChainSpan:
        # One link each way first: most nodes were never revised, and a walk costs more
        # than the look (it grows with the type's table on the embedded engine). Then
        # one walk a side that has a link, and one statement more to count what lies
        # beyond a window read full (or, asked for no newer versions, to find the head).
        label = type_of_id(node_id)
        if label is None:
            return ChainSpan(node_id, node_id)
        text = self._nodes
        steps = self.rows(self.render(text.chain_steps, label=label), {"id": node_id})
        if not steps:
            return ChainSpan(node_id, node_id)
        has_older, has_newer = int(steps[0][0]) > 0, int(steps[0][1]) > 0
        with self._walks():
            back = self._walk(
                text.chain_older, label, node_id, older if has_older else 0, back=True
            )
            ahead = self._walk(
                text.chain_newer, label, node_id, newer if has_newer else 0, back=False
            )
            head = ahead[-1].node.id if ahead else node_id
            if not (has_older and len(back) == older) and not (has_newer and len(ahead) == newer):
                return ChainSpan(node_id, head, back, ahead)
            rows = self._walk_rows(text.chain_ends, label, node_id, MAX_CHAIN)
        if not rows:
            return ChainSpan(node_id, node_id)
        older_total, newer_total, last = rows[0]
        return ChainSpan(
            node_id,
            str(last) if last is not None and newer_total else head,
            back,
            ahead,
            int(older_total) - len(back) if len(back) == older else 0,
            int(newer_total) - len(ahead) if len(ahead) == newer else 0,
        )

    def _walk(
        self, template: str, label: str, node_id: str, hops: int, *, back: bool
    ) -> list[ChainLink]:
        """One side of a chain, nearest first: the rows come in no order, so the line is
        followed link by link from ``node_id``."""
        if hops <= 0:
            return []
        by_end: dict[str, ChainLink] = {}
        for row in self._walk_rows(template, label, node_id, hops):
            node = self.node(label, row[:-4])
            other, tick, encounter, why = row[-4:]
            source, target = (str(other), node.id) if back else (node.id, str(other))
            edge = EdgeRecord(source, target, "SUPERSEDES", int(tick), encounter, why)
            by_end[source if back else target] = ChainLink(node, edge)
        links: list[ChainLink] = []
        current = node_id
        while len(links) < hops and (link := by_end.get(current)) is not None:
            links.append(link)
            current = link.node.id
        return links

    def _walk_rows(self, template: str, label: str, node_id: str, hops: int) -> list[list[Any]]:
        self._walk_up_to(hops)
        return self.rows(self.render(with_hops(template, hops), label=label), {"id": node_id})

    @contextlib.contextmanager
    def _walks(self) -> Generator[None]:
        """Around a chain's walks: an engine that bounds a walk's length lifts the bound
        inside (``_walk_up_to``) and sets it back here."""
        yield

    def _walk_up_to(self, hops: int) -> None:
        """A walk of up to ``hops`` links comes next (inside ``_walks``)."""

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        query = self.render(self._nodes.heads_by_status, label=node_type)
        return self._newest(self.rows(query, {"statuses": list(statuses), "limit": limit}))

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        query = self.render(self._nodes.recent_heads, label=node_type)
        return self._newest(self.rows(query, {"limit": limit}))

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        return [a.asked_of(self) for a in asks]

    def _newest(self, rows: list[list[Any]]) -> list[NodeRecord]:
        """The nodes of a newest-first list of ids, in its order, through the node read."""
        ids = [str(r[0]) for r in rows]
        found = self.get_nodes(ids)
        return [found[i] for i in ids if i in found]

    # --- writes --------------------------------------------------------------------
    def set_status(self, node_id: str, status: str) -> None:
        self.set_statuses([(node_id, status)])

    def set_statuses(
        self, moves: Sequence[tuple[str, str]], *, known: Mapping[str, NodeRecord] | None = None
    ) -> None:
        """Status moves in order (a node moved twice keeps both moves in the record of
        the past), in a few statements: the nodes read once (unless ``known``), the moves
        kept together, and one statement per type sets the last status."""
        self._require_writable()
        groups = group_by_type(list(dict.fromkeys(node_id for node_id, _ in moves)))
        if sum(map(len, groups.values())) != len({node_id for node_id, _ in moves}):
            raise StoreError("internal: a status move names a node id of no authored type")
        moved = [node_id for group in groups.values() for node_id in group]
        now = {i: node for i in moved if (node := (known or {}).get(i)) is not None}
        unread = [i for i in moved if i not in now]
        now |= self.get_nodes(unread) if unread else {}
        kept: list[tuple[NodeRecord, str]] = []
        last: dict[str, str] = {}
        for node_id, status in moves:
            before = now.get(node_id)
            if before is not None and before.status != status:
                kept.append((before, status))
                now[node_id] = replace(before, status=status)
            last[node_id] = status
        self._put_statuses(
            kept, {label: [(i, last[i]) for i in group] for label, group in groups.items()}
        )

    def _put_statuses(
        self, kept: Sequence[tuple[NodeRecord, str]], sets: Mapping[str, Sequence[tuple[str, str]]]
    ) -> None:
        """The moves ``kept`` in the record of the past, and each type's (node, status)
        ``sets`` on its nodes."""
        self._keep_statuses(kept)
        for label, group in sets.items():
            for node_id, _ in group:
                self._on_changed(node_id)
            rows = [{"id": node_id, "status": status} for node_id, status in group]
            self.rows(self.render(self._nodes.nodes_set_status, label=label), {"rows": rows})

    def delete_nodes(self, node_ids: Sequence[str], *, keep_past: bool = False) -> None:
        self._require_writable()
        # Newest first, as one at a time would go: of two versions made heads again under
        # one name, the one the newer deletion frees holds it.
        found = self.get_nodes(list(dict.fromkeys(node_ids)))
        nodes = sorted(found.values(), key=lambda n: (n.tick, n.ord), reverse=True)
        if not nodes:
            return
        _ = self.tick
        going = {n.id for n in nodes}
        if keep_past:
            self._keep_nodes(nodes)
        else:
            for node in nodes:
                self._drop_past(node.id)
        self.rows(self._nodes.names_drop, {"rows": [{"name": n.name, "id": n.id} for n in nodes]})
        for node in nodes:
            if node.type == "Component":
                self.rows(self._nodes.source_drop, {"key": component_key(node), "id": node.id})
        by_type = group_by_type([n.id for n in nodes])
        revised: dict[str, list[str]] = {}  # deleted id -> the versions it revised
        for label, group in by_type.items():
            query = self.render(self._nodes.predecessors_many, label=label)
            for r in self.rows(query, {"ids": group}):
                revised.setdefault(str(r[0]), []).append(str(r[1]))
        for node in nodes:
            self._on_changed(node.id)
        self._on_edges(None)  # their relations go with them, at every other end too
        for label, group in by_type.items():
            self.rows(self.render(self._nodes.nodes_delete, label=label), {"ids": group})
        for node in nodes:
            self._on_deleted(node.id)
        # Undoing a revision makes the revised node a head again, under its own name.
        staying = [p for n in nodes for p in revised.get(n.id, ()) if p not in going]
        if not staying:
            return
        for pid in staying:
            self._on_successor(pid, None)
        restored = self.get_nodes(staying)
        held = self.head_ids_by_names([r.name for r in restored.values()])
        for pid in staying:
            back = restored.get(pid)
            if back is None:
                continue
            if back.name not in held:
                held[back.name] = back.id
                self.rows(self._nodes.name_set, {"name": back.name, "id": back.id})
            if back.type == "Component":
                key = component_key(back)
                if not self.rows(self._nodes.source_get, {"key": key}):
                    self.rows(self._nodes.source_set, {"key": key, "id": back.id})
            self._on_reindex(back)


class RelationOps(NodeOps):
    _relations: RelationText

    # --- reads ---------------------------------------------------------------------
    def _edges_many(
        self, template: str, ids: Sequence[str], rels: Sequence[str]
    ) -> list[EdgeRecord]:
        edges: list[EdgeRecord] = []
        for label, group in group_by_type(ids).items():
            query = self.render(template, label=label)
            edges += [
                edge_from_row(r) for r in self.rows(query, {"ids": group, "rels": list(rels)})
            ]
        return edges

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        rels = AUTHORED_RELATION_TYPES
        text = self._relations
        out = self._edges_many(text.edges_out_many, [node_id], rels)
        return out + self._edges_many(text.edges_in_many, [node_id], rels)

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return False
        if not RELATION_TYPES[rel_type].allows(s_label, t_label):
            return False
        query = self.render(
            self._relations.edge_count, source=s_label, target=t_label, rel=rel_type
        )
        return int(self.rows(query, {"s": source, "t": target})[0][0]) > 0

    def provenance(self, node_id: str, rel_types: Sequence[str], depth: int) -> Subgraph:
        """What a node rests on: incoming edges of ``rel_types``, ``depth`` hops back."""
        return self.provenance_from([node_id], rel_types, depth)

    def provenance_from(
        self, node_ids: Sequence[str], rel_types: Sequence[str], depth: int
    ) -> Subgraph:
        template = self._relations.edges_in_many
        seen, edges = walk_back(
            node_ids, lambda frontier: self._edges_many(template, frontier, rel_types), depth
        )
        return Subgraph(list(self.get_nodes(sorted(seen)).values()), edges)

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        edges = self._edges_many(self._relations.edges_out_many, node_ids, rel_types)
        edges += self._edges_many(self._relations.edges_in_many, node_ids, rel_types)
        ids = {e.source for e in edges} | {e.target for e in edges}
        return Subgraph(list(self.get_nodes(sorted(ids)).values()), edges)

    def authored_graph(self) -> Subgraph:
        rows = self.rows(self._relations.edges_all, {"rels": list(AUTHORED_RELATION_TYPES)})
        return Subgraph(list(self.all_nodes()), [edge_from_row(r) for r in rows])

    def edges_written_in(self, encounters: Sequence[str]) -> list[EdgeRecord]:
        if not encounters:
            return []
        params = {"encounters": list(encounters), "rels": list(AUTHORED_RELATION_TYPES)}
        return [edge_from_row(r) for r in self.rows(self._relations.edges_written_in, params)]

    def authored_outline(self) -> Outline:
        whole = self.authored_graph()
        return Outline.of_records([n.outline() for n in whole.nodes], whole.edges)

    # --- writes --------------------------------------------------------------------
    def create_edge(self, edge: EdgeRecord) -> None:
        if edge.type != "SUPERSEDES":
            self.create_edges([edge])
            return
        self._require_writable()
        s_label, t_label = _end_types(edge)
        params: dict[str, Any] = {
            "s": edge.source,
            "t": edge.target,
            "tick": self.tick,
            "encounter": edge.encounter,
            "at": self.now,
            "why": edge.revision_why,
        }
        query = self.render(self._relations.edge_create_supersedes, source=s_label, target=t_label)
        self._on_edges([edge.source, edge.target])
        self.rows(query, params)
        self._revised(edge.target, edge.source)

    def create_edges(self, edges: Sequence[EdgeRecord]) -> None:
        """Relations, one statement for each type between two node types; a SUPERSEDES
        edge moves a chain's head, so it goes alone (``create_edge``), in its place."""
        self._require_writable()
        groups: dict[tuple[str, str, str], list[EdgeRecord]] = {}
        for edge in edges:
            if edge.type == "SUPERSEDES":
                self.create_edge(edge)
                continue
            s_label, t_label = _end_types(edge)
            groups.setdefault((edge.type, s_label, t_label), []).append(edge)
        text = self._relations
        for (rel, s_label, t_label), group in groups.items():
            for edge in group:  # a link renews both ends' used_at (the statement)
                self._on_changed(edge.source)
                self._on_changed(edge.target)
            self._on_linked(group)
            rows = [{"s": e.source, "t": e.target, "encounter": e.encounter} for e in group]
            query = self.render(text.edges_create, source=s_label, target=t_label, rel=rel)
            params = {"rows": rows, "tick": self.tick, "at": self.now}
            self.rows(query, params | self._touched_on_the_way(group[0].encounter))

    def delete_edge(self, source: str, target: str, rel_type: str) -> None:
        self._require_writable()
        s_label, t_label = type_of_id(source), type_of_id(target)
        if s_label is None or t_label is None:
            return
        _ = self.tick
        text = self._relations
        self._keep_edges(
            [
                edge
                for edge in self._edges_many(text.edges_out_many, [source], [rel_type])
                if edge.target == target
            ]
        )
        query = self.render(text.edge_delete, source=s_label, target=t_label, rel=rel_type)
        self._on_edges([source, target])
        self.rows(query, {"s": source, "t": target})
        if rel_type == "SUPERSEDES":
            self._revised(target, None)

    def _revised(self, node_id: str, successor: str | None) -> None:
        """A SUPERSEDES edge into ``node_id`` came or went: it stops or starts being a head."""
        self._on_successor(node_id, successor)
        old = self.get_node(node_id)
        if old is not None:
            self._on_reindex(old)


def _end_types(edge: EdgeRecord) -> tuple[str, str]:
    """The node types of an edge's ends, checked against the relation's rule (Neo4j's
    schema would store anything)."""
    s_label, t_label = type_of_id(edge.source), type_of_id(edge.target)
    if s_label is None or t_label is None:
        raise StoreError("internal: edge endpoint ids must carry a type prefix")
    check_relation(edge.type, s_label, t_label)
    return s_label, t_label


def revisions_by_type(edges: Sequence[EdgeRecord]) -> dict[str, list[dict[str, Any]]]:
    """A write's revisions (``create_nodes``'s ``revises``) as statement rows, grouped by
    the type both ends share: a revision supersedes a node of its own type."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for edge in edges:
        label = type_of_id(edge.source)
        if edge.type != "SUPERSEDES" or label is None or type_of_id(edge.target) != label:
            raise StoreError("internal: a revision supersedes a node of its own type")
        check_relation(edge.type, label, label)
        row = {"label": label, "s": edge.source, "t": edge.target, "why": edge.revision_why}
        by_label.setdefault(label, []).append(row | {"encounter": edge.encounter})
    return by_label
