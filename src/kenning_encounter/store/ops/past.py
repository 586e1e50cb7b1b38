"""The record of the past that ``as_of`` reads stand on (memory/asof.py), kept beside the
memory and written in the same transaction as the change it records.

The graph itself holds only the present: a node's status as it is now, the relations
that exist now. Three things change after they are written, and each leaves a row here:

- a status move (``status``): the node, the tick, its place in the write, before, after;
- a relation an agent deleted (``edge``): the edge as it stood, and the tick it ended;
- a node an agent deleted (``node``): the record as it stood, its edges, the tick it ended.

Everything else is already exact in the graph: a node's tick says when it came, a
SUPERSEDES edge's tick when its target stopped being a head. Kept beside the graph,
these rows cost the present's reads nothing (no filter on an end tick in any current
query, nothing new for read_cypher to see); a read as of a tick adds a few lookups here.
An operator's hard deletion drops the rows about the node too: what it removed is gone
from the past as well, and the tombstone count on the spine is what remains.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any, Final, LiteralString

from kenning_encounter.store.ops.graph import RelationOps
from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, AUTHORED_RELATION_TYPES


@dataclass(frozen=True, slots=True)
class PastText:
    """One backend's statements for the record of the past."""

    # $rows of {key, node, seq, before, after}, $tick $at: keys of this write's own tick
    statuses_put: LiteralString
    # $rows of {key, source, target, rel, tick, encounter, why}, $ended $at: keys of this
    # write's own tick, each once
    edges_put: LiteralString
    nodes_put: LiteralString  # $rows of {key, node, name, tick, body}, $ended $at
    drop_about: LiteralString  # $id: every row about the node
    linked_gone: LiteralString  # $id -> ids of deleted nodes a deleted edge tied to it
    about_many: LiteralString  # $ids -> kind, encounter, body: every row about the nodes
    # $ids $tick -> node, tick, seq, before, after: the moves made after the tick
    moves_after: LiteralString
    # $tick -> source, target, rel, tick, encounter, why, ended: deleted edges standing at it
    edges_at: LiteralString
    nodes_at: LiteralString  # $tick -> body, ended: deleted nodes standing at the tick
    nodes_named: LiteralString  # {label}; $name -> a node row (every version with the name)
    nodes_upto: LiteralString  # {label}; $tick -> node rows made at or before the tick
    # Each: $at -> the latest tick a record stamped at or before that time carries, and
    # the earliest one stamped after it (one row of two numbers, either may be null).
    tick_at_steps: tuple[LiteralString, ...]  # encounters, loci, the record of the past
    tick_at_nodes: LiteralString  # {label}; $at: nodes
    tick_at_edges: LiteralString  # $at $rels: authored relations
    # Each: $tick -> the latest stamp a record of that tick or earlier carries (one row of
    # one string, or null), in the same kinds as the three above.
    stamp_at_steps: tuple[LiteralString, ...]
    stamp_at_nodes: LiteralString  # {label}
    stamp_at_edges: LiteralString  # $rels


# ``terms`` is derived from the text, never kept in the record of the past.
_BODY_FIELDS: Final = tuple(f.name for f in fields(NodeRecord) if f.name != "terms")


def node_body(node: NodeRecord) -> str:
    # Field by field: asdict would copy every nested value first, to the same JSON.
    body = {name: getattr(node, name) for name in _BODY_FIELDS}
    return json.dumps(body, separators=(",", ":"), sort_keys=True)


def node_of(body: str) -> NodeRecord:
    fields: dict[str, Any] = json.loads(body)
    return NodeRecord(**fields)


# Each row's key: one per move (a node's place in its write), per deleted edge, per node.
def status_key(node: str, tick: int, seq: int) -> str:
    return f"s:{node}:{tick}:{seq}"


def edge_key(source: str, rel: str, target: str, ended: int) -> str:
    return f"e:{source}:{rel}:{target}:{ended}"


def edge_ended(row: Sequence[Any]) -> EdgeRecord:
    """A relation of the record of the past from its row (``edges_at``'s columns)."""
    return EdgeRecord(str(row[0]), str(row[1]), str(row[2]), int(row[3]), row[4], row[5])


def node_key(node: str) -> str:
    return f"n:{node}"


class PastOps(RelationOps):
    _past: PastText
    _moves_made: int = 0  # a node may move twice in one write: the place keeps them in order

    # --- writes (the hooks the node and relation writes call) -------------------------
    def _keep_statuses(self, moves: Sequence[tuple[NodeRecord, str]]) -> None:
        if moves:
            params = {"rows": self._status_rows(moves), "tick": self.tick, "at": self.now}
            self.rows(self._past.statuses_put, params)

    def _status_rows(self, moves: Sequence[tuple[NodeRecord, str]]) -> list[dict[str, Any]]:
        """The record's rows of these moves, each keyed and numbered in this write."""
        rows: list[dict[str, Any]] = []
        for node, status in moves:
            self._moves_made += 1
            seq = self._moves_made
            key = status_key(node.id, self.tick, seq)
            rows.append(
                {"key": key, "node": node.id, "seq": seq, "before": node.status, "after": status}
            )
        return rows

    def _keep_edges(self, edges: Sequence[EdgeRecord]) -> None:
        # One row per key: an edge between two nodes deleted together is met from both
        # ends (the last met is kept, as a MERGE of each would keep it).
        once = {edge_key(e.source, e.type, e.target, self.tick): e for e in edges}
        if not once:
            return
        rows = [
            {
                "key": key,
                "source": e.source,
                "target": e.target,
                "rel": e.type,
                "tick": e.tick,
                "encounter": e.encounter,
                "why": e.revision_why,
            }
            for key, e in once.items()
        ]
        self.rows(self._past.edges_put, {"rows": rows, "ended": self.tick, "at": self.now})

    def _keep_nodes(self, nodes: Sequence[NodeRecord]) -> None:
        ids = [n.id for n in nodes]
        edges = self.edges_out_of(ids, AUTHORED_RELATION_TYPES)
        self._keep_edges(edges + self.edges_into(ids, AUTHORED_RELATION_TYPES))
        rows = [
            {
                "key": node_key(n.id),
                "node": n.id,
                "name": n.name,
                "tick": n.tick,
                "body": node_body(n),
            }
            for n in nodes
        ]
        self.rows(self._past.nodes_put, {"rows": rows, "ended": self.tick, "at": self.now})

    def _linked_gone(self, node_id: str) -> set[str]:
        """The nodes an agent deleted that were linked to this one, and what was linked to
        those, outward through the deleted nodes; the node itself included."""
        linked = {node_id}
        frontier = [node_id]
        while frontier:
            met = {str(r[0]) for r in self.rows(self._past.linked_gone, {"id": frontier.pop()})}
            frontier += sorted(met - linked)
            linked |= met
        return linked

    def _drop_past(self, node_id: str) -> None:
        # A node an agent deleted that was linked to this one spoke of it: it goes too (no
        # operator can see it to plan its erasure, and what is kept must not outlive this).
        # And what was linked to that, outward through the deleted nodes, as an erasure
        # takes what is about what is about its referent: a question raised by a deleted
        # observation about the referent spoke of it as much as the observation did.
        linked = self._linked_gone(node_id)
        for gone in sorted(linked - {node_id}):
            self.rows(self._past.drop_about, {"id": gone})
        self.rows(self._past.drop_about, {"id": node_id})

    def encounters_in_the_past_of(self, node_ids: Sequence[str]) -> list[str]:
        linked: set[str] = set()
        for node_id in node_ids:
            if node_id not in linked:
                linked |= self._linked_gone(node_id)
        names: set[str] = set()
        for kind, encounter, body in self.rows(self._past.about_many, {"ids": sorted(linked)}):
            if kind == "edge" and encounter:
                names.add(str(encounter))
            elif kind == "node" and body and (recorded := node_of(str(body)).encounter):
                names.add(recorded)
        return sorted(names)

    # --- reads --------------------------------------------------------------------------
    def moves_after(self, node_ids: Sequence[str], tick: int) -> list[StatusMove]:
        """The status moves of these nodes made after ``tick``, in the order they were made."""
        if not node_ids:
            return []
        rows = self.rows(self._past.moves_after, {"ids": list(node_ids), "tick": tick})
        moves = [StatusMove(str(r[0]), int(r[1]), int(r[2]), r[3], r[4]) for r in rows]
        return sorted(moves, key=lambda m: (m.tick, m.seq))

    def ended_edges_at(self, tick: int) -> list[EdgeRecord]:
        """Relations deleted since ``tick`` that stood at it."""
        return [edge_ended(r) for r in self.rows(self._past.edges_at, {"tick": tick})]

    def ended_nodes_at(self, tick: int) -> list[NodeRecord]:
        """Nodes an agent deleted since ``tick`` that stood at it, as they were deleted."""
        return [node_of(str(r[0])) for r in self.rows(self._past.nodes_at, {"tick": tick})]

    def ended_at(self, tick: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        """``ended_nodes_at`` and ``ended_edges_at`` together."""
        return self.ended_nodes_at(tick), self.ended_edges_at(tick)

    def edges_into(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        """Authored edges of ``rels`` into the nodes."""
        if not node_ids:
            return []
        return self._edges_many(self._relations.edges_in_many, node_ids, rels)

    def edges_out_of(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        """Authored edges of ``rels`` out of the nodes."""
        if not node_ids:
            return []
        return self._edges_many(self._relations.edges_out_many, node_ids, rels)

    def nodes_named(self, name: str) -> list[NodeRecord]:
        """Every stored version carrying ``name``, head or not."""
        found: list[NodeRecord] = []
        for label in AUTHORED_NODE_TYPES:
            query = self.render(self._past.nodes_named, label=label)
            found += [self.node(label, r) for r in self.rows(query, {"name": name})]
        return found

    def nodes_upto(self, node_type: str, tick: int) -> list[NodeRecord]:
        """A type's stored nodes made at or before ``tick``."""
        query = self.render(self._past.nodes_upto, label=node_type)
        return [self.node(node_type, r) for r in self.rows(query, {"tick": tick})]

    def _each_kind(
        self,
        steps: tuple[LiteralString, ...],
        nodes: LiteralString,
        edges: LiteralString,
        params: dict[str, Any],
    ) -> list[list[Any]]:
        """The one row each kind of stamped thing answers (encounters opened, sealed and
        dissolved, loci, the record of the past, each type's nodes, authored relations)."""
        asked: list[tuple[LiteralString, dict[str, Any]]] = [(s, params) for s in steps]
        for label in AUTHORED_NODE_TYPES:
            asked.append((self.render(nodes, label=label), params))
        asked.append((edges, {**params, "rels": list(AUTHORED_RELATION_TYPES)}))
        return [row for statement, given in asked for row in self.rows(statement, given)[:1]]

    def _tick_bounds(self, at: str) -> list[tuple[Any, Any]]:
        """For each kind of stamped thing: the latest tick stamped at or before ``at`` and
        the first stamped after it, None where there is none."""
        text = self._past
        rows = self._each_kind(
            text.tick_at_steps, text.tick_at_nodes, text.tick_at_edges, {"at": at}
        )
        return [(latest, first_after) for latest, first_after in rows]

    def _stamps_upto(self, tick: int) -> list[Any]:
        """For each kind of stamped thing: the latest stamp of that tick or before."""
        text = self._past
        rows = self._each_kind(
            text.stamp_at_steps, text.stamp_at_nodes, text.stamp_at_edges, {"tick": tick}
        )
        return [row[0] for row in rows]

    def stamp_at(self, tick: int) -> str | None:
        """The time the memory stood at right after ``tick``: the latest stamp carried by
        a write of that tick or before it (None before the first write). A clock stepped
        back cannot take it back: the latest stamp holds."""
        stamps = [str(s) for s in self._stamps_upto(tick) if s is not None]
        return max(stamps, default=None)

    def tick_at(self, at: str) -> int:
        """The tick the memory stood at when the time was ``at`` (a stored timestamp's
        form): the end of the longest run of writes, from the first, all stamped at or
        before it.

        Ticks order the writes; stamps come from a clock that can step back (NTP, a
        resumed machine, another server's clock on a shared Neo4j). Were the answer just
        the latest tick stamped by then, a write stamped later would be read into a time
        before it whenever a later write carried an earlier stamp. The first write stamped
        after ``at`` ends the run instead: nothing read as of a time claims to be newer."""
        by_then, after = 0, None
        for latest, first_after in self._tick_bounds(at):
            if latest is not None:
                by_then = max(by_then, int(latest))
            if first_after is not None:
                after = int(first_after) if after is None else min(after, int(first_after))
        return by_then if after is None else max(0, min(by_then, after - 1))
