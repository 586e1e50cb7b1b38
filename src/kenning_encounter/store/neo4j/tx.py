"""One transaction on Neo4j: the shared operations (store/ops) over its query text,
its executor, and its write context.

Heads are read from the graph itself (no SUPERSEDES edge in), and the names and the
lexical corpus counters are kept by the node statements, so this backend needs none
of the bookkeeping hooks. The unit of work may be run again by the driver after a
transient failure; this object lives for one attempt only and keeps nothing beyond it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final, LiteralString, NamedTuple

from kenning_encounter import abandon
from kenning_encounter.errors import StoreError
from kenning_encounter.store.ids import component_key, group_by_type, type_of_id
from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j import past as past_text
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.classified import class_labels
from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.neo4j.nodecache import NodeCache
from kenning_encounter.store.neo4j.text import text_props
from kenning_encounter.store.ops.activation import ActivationOps
from kenning_encounter.store.ops.base import edge_from_row, encounter_from, node_record
from kenning_encounter.store.ops.graph import held_as_asked, name_forms, revisions_by_type
from kenning_encounter.store.ops.identity import IdentityOps, keep_latest
from kenning_encounter.store.ops.load import LoadOps
from kenning_encounter.store.ops.past import PastOps, edge_ended, node_of
from kenning_encounter.store.ops.spine import SpineOps
from kenning_encounter.store.persons import Confirmation, PersonRecord
from kenning_encounter.store.port import BatchStart, DumpedNode, HeadsAsk, Subgraph
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.store.tracing import Tracer
from kenning_encounter.store.uses import used_labels
from kenning_encounter.vocabulary import (
    AUTHORED_RELATION_TYPES,
    CLASSIFICATIONS,
    NODE_TYPES,
    STATUS_EFFECTS,
)

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

log = logging.getLogger(__name__)
MOVING: Final = sorted(STATUS_EFFECTS)


# A tick no clock reaches: a cache that never synchronised asks for no touched ids.
_NEVER: Final = 2**62


class _Synced(NamedTuple):
    """What a read's synchronisation of the node cache found (NODES_TOUCHED_SINCE)."""

    clock: int
    erasures: int
    deletions: int
    docs: int
    tokens: int
    classes: frozenset[str]  # those the memory's nodes have carried (CLASSES_NOTE)


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


# What a read finds when the database was emptied under this server (the clock is made
# when a store opens).
_CLOCK_GONE: Final = (
    "this memory's clock is missing from the Neo4j database: it was emptied or the memory "
    "removed while this server ran; restart the server"
)
# What a read finds when the memory was emptied and made again under this server: what
# the process holds of the old one (nodes, encounters' members, text) is no longer true.
_REMADE: Final = (
    "this memory was emptied and made again in the Neo4j database while this server ran "
    "(an import, or another server opening the emptied memory): what this server holds of "
    "the memory before is no longer true, so it answers nothing from it; restart the server"
)
# Up to this many nodes, a read's gate question (``classified``) reads them whole.
_READ_WHOLE: Final = 16
_EDGES_EACH: Final[dict[str, LiteralString]] = {
    q.RELATION_TEXT.edges_out_many: q.EDGES_OUT_EACH,
    q.RELATION_TEXT.edges_in_many: q.EDGES_IN_EACH,
}


class Neo4jTx(SpineOps, PastOps, LoadOps, IdentityOps, ActivationOps):
    _spine = q.SPINE_TEXT
    _past = past_text.PAST_TEXT
    _identity = q.IDENTITY_TEXT
    _activation = q.ACTIVATION_TEXT
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
        cache: NodeCache | None = None,
        made: int | None = None,
    ) -> None:
        self._tx = tx
        self._made = made  # the memory's identity when the store opened (None: unknown)
        # Reads only: a write reads afresh what it may change, and marks what it changed.
        self._cache = None if writable else cache
        self._synced: _Synced | None = None  # this read's synchronisation, once made
        self._moment_seen: tuple[int, int] | None = None  # (clock, erasures), ``remember``
        self._changed: set[str] = set()
        self._deleted = False
        self._touch_due: set[str] = set()  # encounters to touch before the write ends
        self._ns = ns
        self._clock = clock
        self._writable = writable
        self._tracer = tracer
        self._tick: int | None = None
        self._reserve_due = False  # begin_write's reservation, made by the first statement
        self._classes: frozenset[str] | None = None  # as the reservation read them
        # As a read's statement read them, with the clock they stood at; and the latest
        # tick a node this read took from the server was changed at (``classes_used``).
        self._classes_seen: tuple[int, frozenset[str]] | None = None
        self._newest_touch = -1
        self._tick_used = False
        self._now: str | None = None
        self._touched: set[str] = set()
        self._encounters_seen: dict[str, EncounterRecord] = {}
        self._nodes_seen: dict[str, NodeRecord] = {}
        # A write's nodes as it read them: id -> element id, valid for this transaction
        # (NODES_CREATE_ALL seeks a revised node by it).
        self._element_ids: dict[str, str] = {}

    # --- statements, through the backend's one execute path (engine.py) -------------
    def rows(self, query: LiteralString, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if not self._writable:
            abandon.check()  # a read given up takes no next statement
        if self._reserve_due:
            self._reserve(q.CLOCK_NEXT, {})
        return engine.rows(self._tx, query, params, tracer=self._tracer, ns=self._ns)

    def render(self, template: str, **names: str) -> LiteralString:
        return q.render(template, **names)

    def node(self, label: str, row: list[Any]) -> NodeRecord:
        node = node_from_row(label, row)
        self.saw_touched(row[0])
        if len(row) > 4 and self._writable:  # a node read (NODES_GET): its element id too
            self._element_ids[node.id] = str(row[4])
        return node

    # --- edges of ids of several types: one statement, not one per type ---------------
    def _edges_many(
        self, template: str, ids: Sequence[str], rels: Sequence[str]
    ) -> list[EdgeRecord]:
        each = _EDGES_EACH.get(template)
        groups = group_by_type(ids)
        if each is None or len(groups) < 2:
            return super()._edges_many(template, ids, rels)
        # One list for every branch: a branch seeks its own label's index with it, and a
        # parameter that is sometimes empty would make the server plan the text anew.
        rows = self.rows(each, {"ids": list(ids), "rels": list(rels)})
        return [edge_from_row(r) for r in rows]

    # --- reads of every authored type: one statement, not one per type --------------
    def nodes_named(self, name: str) -> list[NodeRecord]:
        rows = self.rows(q.NODES_NAMED_EACH, {"name": name})
        return [self.node(str(r[0]), r[1:]) for r in rows]

    def ended_at(self, tick: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        # Both halves aggregate, so the statement answers one row, empty lists when nothing
        # ended.
        [[bodies, edges]] = self.rows(past_text.ENDED_AT, {"tick": tick})
        return [node_of(str(b)) for b in bodies], [edge_ended(e) for e in edges]

    def _stamps_upto(self, tick: int) -> list[Any]:
        rows = self.rows(q.STAMP_AT_EACH, {"tick": tick, "rels": list(AUTHORED_RELATION_TYPES)})
        return [row[0] for row in rows]

    def _tick_bounds(self, at: str) -> list[tuple[Any, Any]]:
        rows = self.rows(q.TICK_AT_EACH, {"at": at, "rels": list(AUTHORED_RELATION_TYPES)})
        return [(latest, first_after) for latest, first_after in rows]

    # --- write context ----------------------------------------------------------------
    def begin_write(self) -> None:
        """Reserve the next tick before anything else: writing the clock node takes its lock.

        Concurrent writers (from any process) queue on that lock until this
        transaction ends, so ticks follow commit order. Reserving eagerly saves a
        round trip on every write; ``end_write`` hands back a tick left unused. The
        reservation is made by the write's first statement: a write that begins with
        its session's open encounter (every tool's does) asks for it, and for a batch's
        names, in the same statement (``open_encounter_of``, ``begin_batch``); any other
        first statement is preceded by the reservation's own."""
        self._reserve_due = True

    def _reserve(self, statement: LiteralString, params: dict[str, Any]) -> list[list[Any]]:
        """Run ``statement``, which reserves the tick in its first column (CLOCK_NEXT and
        the statements that begin as it does), and return its rows."""
        self._reserve_due = False
        reserved = engine.rows(self._tx, statement, params, tracer=self._tracer, ns=self._ns)
        if not reserved:
            # The memory's clock is made when a store opens: gone, the database was
            # emptied (or the memory removed) under this server, and no write can be ordered.
            raise StoreError(
                "this memory's clock is missing from the Neo4j database: it was emptied or "
                "the memory removed while this server ran; restart the server to make a new "
                "memory there (an export taken before holds what was lost)"
            )
        tick, classes, shape = reserved[0][0]
        newer = newer_shape(shape)
        if newer is not None:
            raise StoreError(newer + "; nothing of this call was written")
        self._tick = int(tick)
        self._classes = frozenset(str(c) for c in classes)
        return reserved

    def begin_batch(
        self, locus: str, names: Sequence[str], node_ids: Sequence[str], named: Sequence[str]
    ) -> BatchStart:
        """A batch write's first questions, all but the nodes in the statement that reserves
        its tick."""
        if not self._reserve_due:
            return super().begin_batch(locus, names, node_ids, named)
        # Blanks name nothing. The plan cache keys on a list's size class as well as its
        # type, and a list of one is a class of its own: two blanks keep a batch that
        # revises nothing on the plan of one that revises a few.
        asked, composed = name_forms(names)
        forms = [*named, *(composed[n] for n in named if n in composed)]
        params = {"locus": locus, "names": ["", *asked], "named": ["", "", *forms]}
        [(_, open_, held, found)] = self._reserve(q.BATCH_BEGIN, params)
        heads = held_as_asked(names, composed, {str(name): str(i) for name, i in held})
        encounter = None if open_ is None else encounter_from(open_)
        # The named heads the statement found by their keys' element ids; the rest (asked
        # by id, or under a key that noted none) are read by id.
        nodes: dict[str, NodeRecord] = {}
        for row in found:
            label = type_of_id(str(row[0]["id"]))
            if label is not None:
                node = self.node(label, row)
                nodes[node.id] = node
        wanted = [*node_ids, *(heads[n] for n in named if n in heads)]
        rest = [i for i in dict.fromkeys(wanted) if i not in nodes]
        return BatchStart(encounter, heads, {**nodes, **(self.get_nodes(rest) if rest else {})})

    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        if not self._reserve_due:
            return super().open_encounter_of(locus)
        [(_, found)] = self._reserve(q.CLOCK_NEXT_OPEN_OF, {"locus": locus})
        return None if found is None else encounter_from(found)

    def end_write(self) -> None:
        """Touch the encounters no statement touched yet, mark what this write changed for
        the node caches of every process (nodecache.py), then hand back the tick if it went
        unused."""
        for name in sorted(self._touch_due):
            super().touch_encounter(name)
        self._touch_due.clear()
        if self._changed and self._tick is None:
            self._deleted = True  # the clock was set outright: every cache starts again
        elif self._changed:
            tick = self.tick
            for label, ids in group_by_type(sorted(self._changed)).items():
                self.rows(q.render(q.NODES_TOUCH, label=label), {"ids": ids, "tick": tick})
        if self._deleted:
            self.rows(q.DELETIONS_COUNT)
        if self._tick is not None and not self._tick_used:
            self.rows(q.CLOCK_UNDO)
        self._reserve_due = False  # a write that sent nothing reserved nothing

    # --- what a write changed, for the node caches (nodecache.py) ---------------------
    def _on_changed(self, node_id: str) -> None:
        self._changed.add(node_id)

    def _on_successor(self, node_id: str, successor: str | None) -> None:
        self._changed.add(node_id)

    def _on_deleted(self, node_id: str) -> None:
        self._deleted = True

    def _on_load_changed(self, node_ids: Sequence[str]) -> None:
        # An import's batch holds no tick of its own (the clock is the dump's): every
        # process's cache starts again instead.
        self._deleted = True

    def _marked(self, node_ids: Iterable[str]) -> None:
        """A statement of this write marked these nodes itself (it sets ``_touched``)."""
        self._changed.difference_update(node_ids)

    def create_edge(self, edge: EdgeRecord) -> None:
        super().create_edge(edge)
        self._marked((edge.source, edge.target))

    def create_edges(self, edges: Sequence[EdgeRecord]) -> None:
        super().create_edges(edges)
        self._marked(end for edge in edges for end in (edge.source, edge.target))

    # A node's moved labels follow the relations into it from classified nodes
    # (classified.py): a relation or node that goes takes its part of them along.
    def delete_edge(self, source: str, target: str, rel_type: str) -> None:
        super().delete_edge(source, target, rel_type)
        if rel_type in STATUS_EFFECTS and self.classes_used() and self.classified([source]):
            self._relabel_moved([target])

    def delete_nodes(self, node_ids: Sequence[str], *, keep_past: bool = False) -> None:
        # No node was ever classified: no node carries a moved label (nor a class label).
        if not self.classes_used():
            super().delete_nodes(node_ids, keep_past=keep_past)
            return
        marked = list(self.classified(list(dict.fromkeys(node_ids))))
        moved = {e.target for e in self.edges_out_of(marked, MOVING)} if marked else set()
        super().delete_nodes(node_ids, keep_past=keep_past)
        self._relabel_moved(sorted(moved - set(node_ids)))

    def _relabel_moved(self, node_ids: Sequence[str]) -> None:
        for label, group in group_by_type(node_ids).items():
            self.rows(self.render(q.MOVED_RELABEL, label=label), {"ids": group})

    def confirm_nodes(self, encounter: str, node_ids: Sequence[str], why: str = "") -> None:
        super().confirm_nodes(encounter, node_ids, why)
        self._marked(node_ids)

    def consult_nodes(self, encounter: str, node_ids: Sequence[str]) -> None:
        super().consult_nodes(encounter, node_ids)
        self._marked(node_ids)

    def mark_uses(self, marks: Mapping[str, str]) -> None:
        super().mark_uses(marks)
        self._marked(marks)

    def pin_nodes(
        self, encounter: str, node_ids: Sequence[str], *, pinned: bool, why: str = ""
    ) -> None:
        super().pin_nodes(encounter, node_ids, pinned=pinned, why=why)
        self._marked(node_ids)

    @property
    def ticked(self) -> bool:
        """Whether this unit used its tick (reserved at the start, handed back if unused)."""
        return self._tick_used

    @property
    def tick(self) -> int:
        if self._reserve_due:
            self._reserve(q.CLOCK_NEXT, {})
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
        return self._taken(self.meta("clock"))

    def clock_and_erasures(self) -> tuple[int, int]:
        if self._synced is None and self._moment_seen is not None:
            return self._moment_seen  # a statement of this read brought them (``remember``)
        synced = self._synced_read()  # a read with a node cache: its synchronisation read both
        if synced is not None:
            return synced.clock, synced.erasures
        found = self.metas(("clock", "erasures", "made"))
        self._same_memory(found["made"] or None)
        return self._taken(found["clock"]), found["erasures"]

    def _same_memory(self, made: int | None) -> None:
        """Refuse a read of a memory made again since the store opened: the caches a
        process keeps by the clock and counts (the node cache, infusion's) would answer
        from the memory before, whose clock and counts the new one may show again."""
        if self._writable or self._made is None or made is None:
            return
        if int(made) != self._made:
            raise StoreError(_REMADE)

    def _taken(self, stored: int) -> int:
        return stored - 1 if self._tick is not None and not self._tick_used else stored

    # --- a re-entry's writes and reads: one statement each (memory/spine.py advance) -----
    def ensure_locus(self, locus: str) -> bool:
        self._require_writable()
        rows = self.rows(q.LOCUS_ENSURE, {"id": locus, "at": self.now, "tick": self.tick})
        return bool(rows[0][0])

    def create_encounter(
        self, record: EncounterRecord, *, previous: str | None, anchor: str | None
    ) -> EncounterRecord:
        self._require_writable()
        params = self._encounter_params(record) | {"previous": previous, "anchor": anchor}
        self.rows(q.ENC_CREATE_LINKED, params)
        return self._opened(record)

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        """A read with a node cache not yet synchronised asks for the names and the
        synchronisation in one statement: its next step reads the nodes named."""
        if self._cache is None or self._synced is not None:
            return super().head_ids_by_names(names)
        asked, composed = name_forms(names)
        params = {"names": asked} | self.synchronisation_params()
        row = self.synchronising_row(q.NAMES_GET_SYNCED, params)
        return held_as_asked(names, composed, {str(k): str(i) for k, i in row[6]})

    def directors_of(self, loci: Sequence[str]) -> dict[str, PersonRecord]:
        """A read takes the directors its process found before from the node cache (a
        locus's director never changes), and asks only for the rest."""
        cache = self._cache
        if cache is None:
            return super().directors_of(loci)
        known = cache.directors(loci)
        found = super().directors_of([locus for locus in loci if locus not in known])
        cache.keep_directors(found)
        return known | found

    def reentry_encounters(
        self, *, recent: int, unsealed: int, exclude_locus: str
    ) -> tuple[list[EncounterRecord], list[EncounterRecord]]:
        params = {"recent": recent, "unsealed": unsealed, "exclude": exclude_locus}
        [(latest, open_elsewhere)] = self.rows(q.ENC_REENTRY, params)
        return (
            [encounter_from(e) for e in latest],
            [encounter_from(e) for e in open_elsewhere],
        )

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        if self._cache is not None:  # the ids, then the nodes, mostly from the cache
            return super().heads_by_status(node_type, statuses, limit)
        params = {"statuses": list(statuses), "limit": limit}
        return self._head_rows(q.HEADS_BY_STATUS_NODES, node_type, params)

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        if self._cache is not None:
            return super().recent_heads(node_type, limit)
        return self._head_rows(q.RECENT_HEADS_NODES, node_type, {"limit": limit})

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        """In a write (no cache), every list in one statement, read whole."""
        if self._cache is not None or len(asks) < 2:
            return super().heads_many(asks)
        params: dict[str, Any] = {}
        for i, a in enumerate(asks):
            params[f"limit{i}"] = a.limit
            if a.statuses is not None:
                params[f"statuses{i}"] = list(a.statuses)
        query = q.heads_many([(a.type, a.statuses is not None) for a in asks])
        found: list[list[NodeRecord]] = [[] for _ in asks]
        for row in self.rows(query, params):
            i = int(row[0])
            found[i].append(self.node(asks[i].type, row[1:]))
        return found

    def _head_rows(
        self, template: LiteralString, label: str, params: dict[str, Any]
    ) -> list[NodeRecord]:
        """Heads read whole, newest first: with no cache, a fetch of their ids would be a
        second round trip."""
        return [
            self.node(label, row) for row in self.rows(self.render(template, label=label), params)
        ]

    # --- node creation: one statement for the whole batch ---------------------------------
    def create_nodes(
        self,
        records: Sequence[NodeRecord],
        encounter: str,
        *,
        held: Mapping[str, str] | None = None,
        revises: Sequence[EdgeRecord] = (),
    ) -> None:
        """Batch creation: every type, name, source key, revision and counter in one
        round trip (the statement moves a held name itself, so ``held`` is not needed)."""
        self._require_writable()
        revising = {r["s"]: r for rows in revisions_by_type(revises).values() for r in rows}
        if {r["encounter"] for r in revising.values()} - {encounter}:
            raise StoreError("internal: a revision is recorded by its new node's encounter")
        if revising.keys() - {r.id for r in records}:
            raise StoreError("internal: a revision is made with the node that revises")
        if not records:
            return
        element_ids = self._element_ids_of([r["t"] for r in revising.values()])
        rows: list[dict[str, Any]] = []
        tokens = 0
        for r in records:
            props = _node_row(r)
            tokens += int(props[q.TEXT_LENGTH])
            source = component_key(r) if r.type == "Component" else None
            revision = revising.get(r.id)
            rows.append(
                {
                    "label": q.authored_label(r.type),
                    "classes": class_labels(props.get("classification")),
                    "props": props,
                    "source": source,
                    "revised": None if revision is None else revision["t"],
                    "revises": None if revision is None else element_ids[revision["t"]],
                    "why": None if revision is None else revision["why"],
                }
            )
        params = {
            "rows": rows,
            "encounter": encounter,
            "tick": self.tick,
            "made": len(rows),
            "tokens": tokens,
            "at": self.now,
            "touched_at": self.now if encounter in self._touch_due else None,
        }
        self._note_classes(r.props.get("classification") for r in records)
        made = self.rows(q.NODES_CREATE_ALL, params)
        if not made or made[0][0] != len(revising):
            raise StoreError(
                f"internal: a write to {encounter} made "
                f"{made[0][0] if made else 'no'} of its {len(revising)} revisions"
            )
        self._touch_due.discard(encounter)

    def _element_ids_of(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The element ids of nodes this write reads (it reads those it revises first)."""
        unread = [i for i in node_ids if i not in self._element_ids]
        if unread:
            self._read_nodes(unread)
        missing = [i for i in node_ids if i not in self._element_ids]
        if missing:
            raise StoreError(f"internal: {missing[0]} is revised but not stored")
        return {i: self._element_ids[i] for i in node_ids}

    def _fetch_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        """Nodes of several types in one round trip (the shared form takes one per type).

        Ids of one type take the shared form: its plan is smaller, and quicker to make
        again when the planner finds the data grown. Nodes a read already met (a
        search that brought them, ``remember``) are not fetched again."""
        seen = {i: n for i in node_ids if (n := self._nodes_seen.get(i)) is not None}
        if seen:
            rest = [i for i in node_ids if i not in seen]
            return {**seen, **(self._fetch_nodes(rest) if rest else {})}
        cache = self._cache
        if cache is None:
            return self._read_nodes(node_ids)
        # The first read of a process synchronises even with nothing cached: only a
        # synchronised cache keeps what is offered.
        cached = self._cached(cache, node_ids, first=cache.synced is None)
        self._nodes_seen.update(cached)
        rest = [i for i in node_ids if i not in cached]
        generation = cache.generation  # noted before reading: see NodeCache.offer
        found = self._read_nodes(rest) if rest else {}
        cache.offer(generation, found)
        return {**cached, **found}

    def cached(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        """What the node cache holds of ``node_ids`` for this read (nothing in a write)."""
        return {} if self._cache is None else self._cached(self._cache, node_ids)

    def _cached(
        self, cache: NodeCache, node_ids: Sequence[str], *, first: bool = False
    ) -> dict[str, NodeRecord]:
        """What the cache holds of ``node_ids``, once this read has synchronised (which it
        does now if the cache holds any of them, or when ``first``)."""
        if self._synced is None and (first or cache.holds_any(node_ids)):
            self._synchronise(cache)
        return cache.get(node_ids) if self._synced is not None else {}

    def _synchronise(self, cache: NodeCache) -> _Synced:
        """Bring the process's node cache up to the clock, once per read (nodecache.py)."""
        rows = self.rows(q.NODES_TOUCHED_SINCE, self.synchronisation_params())
        if not rows:
            raise StoreError(_CLOCK_GONE)
        return self._adopt(cache, rows[0])

    def synchronising_row(self, statement: LiteralString, params: dict[str, Any]) -> list[Any]:
        """The one row of ``statement``, which begins as NODES_TOUCHED_SINCE does (its
        columns first, asked with ``synchronisation_params``), taken for this read. No row:
        the memory's clock is gone, and a read says so rather than answering from nothing."""
        rows = self.rows(statement, params)
        if not rows:
            raise StoreError(_CLOCK_GONE)
        self._same_memory(rows[0][2][2])
        self.synchronised(rows[0])
        return rows[0]

    def synchronisation_params(self) -> dict[str, Any]:
        """$since and $over for a statement that synchronises the node cache as
        NODES_TOUCHED_SINCE does (the search's, text.py, begins with it): a tick no clock
        reaches when this read has synchronised already or has no cache."""
        cache = self._cache
        if cache is None or self._synced is not None:
            return {"since": _NEVER, "over": 0}
        since = cache.synced  # asked again: its write may have been read half-applied
        return {"since": _NEVER if since is None else since - 1, "over": cache.drop_limit + 1}

    def synchronised(self, row: Sequence[Any]) -> None:
        """Take a synchronisation's answer (clock, erasures, deletions, docs, tokens,
        touched; asked with ``synchronisation_params``) for this read, if it has a cache
        and has not synchronised yet."""
        if self._cache is not None and self._synced is None:
            self._adopt(self._cache, row)

    def _adopt(self, cache: NodeCache, row: Sequence[Any]) -> _Synced:
        clock, erasures, (deletions, deleted_at, made, classes), docs, tokens, touched = row[:6]
        self._same_memory(made)
        synced = _Synced(
            int(clock),
            int(erasures),
            int(deletions),
            int(docs),
            int(tokens),
            frozenset(str(c) for c in classes),
        )
        self._synced = synced
        counts = (synced.erasures, synced.deletions)
        cache.synchronise(
            synced.clock, counts, touched, None if deleted_at is None else int(deleted_at)
        )
        return synced

    def _synced_read(self) -> _Synced | None:
        """This read's synchronisation (made now if not yet); None in a write."""
        if self._cache is None:
            return None
        return self._synced or self._synchronise(self._cache)

    def moment(self) -> tuple[int, int, int] | None:
        """The clock, erasure and deletion counts as this read's synchronisation found them
        (what was counted then holds while they stand); None in a write."""
        synced = self._synced_read()
        return None if synced is None else (synced.clock, synced.erasures, synced.deletions)

    def classes_used(self) -> frozenset[str]:
        """A write's from the statement that reserved its tick, which holds the clock and
        so every other writer off until this one ends; a read's from its node cache's
        synchronisation or a statement that brought them (a search's), else from a
        synchronisation made now (asked alone when the store keeps no node cache)."""
        if self._writable:
            if self._reserve_due:
                self._reserve(q.CLOCK_NEXT, {})
            if self._classes is not None:
                return self._classes
            rows = self.rows(q.CLASSES_USED)
            return frozenset(str(c) for c in rows[0][1]) if rows else frozenset()
        seen = self._classes_seen
        if self._synced is not None and (seen is None or self._synced.clock >= seen[0]):
            seen = (self._synced.clock, self._synced.classes)
        elif seen is None and (synced := self._synced_read()) is not None:
            seen = (synced.clock, synced.classes)
        # A read takes no lock: a node it read may have been changed by a write made after
        # the clock those classes stand at, and that write (or one before it) may have made
        # the first node of a class. Then the classes are asked again, after the node.
        if seen is None or self._newest_touch > seen[0]:
            rows = self.rows(q.CLASSES_USED)
            if not rows:
                raise StoreError(_CLOCK_GONE)
            seen = (int(rows[0][0]), frozenset(str(c) for c in rows[0][1]))
            self._classes_seen = seen
        return seen[1]

    def saw_classes(self, clock: int, classes: Iterable[object]) -> None:
        """A statement of this read brought the memory's classes and the clock they stand
        at (as CLASSES_USED reads them): ``classes_used`` answers from them."""
        if not self._writable:
            self._classes_seen = (clock, frozenset(str(c) for c in classes))

    def saw_touched(self, props: Mapping[str, Any]) -> None:
        """A node this read took from the server: the tick it was last changed at."""
        touched = props.get(q.TOUCHED)
        if isinstance(touched, int) and touched > self._newest_touch:
            self._newest_touch = touched

    def _note_classes(self, classifications: Iterable[object]) -> None:
        """The classes of nodes this write makes, added to the memory's (CLASSES_NOTE):
        a statement only when one is new to it."""
        named = {
            c
            for mark in classifications
            if isinstance(mark, str)
            for c in mark.split(",")
            if c in CLASSIFICATIONS
        }
        if named and not named <= (self._classes or frozenset()):
            params = {"classes": sorted(named), "all": list(CLASSIFICATIONS)}
            self.rows(q.CLASSES_NOTE, params)
            self._classes = (self._classes or frozenset()) | named

    def erasures(self) -> int:
        """From the node cache's synchronisation when this read has one (the same count)."""
        synced = self._synced_read()
        if synced is not None:
            return synced.erasures
        found = self.metas(("erasures", "made"))
        self._same_memory(found["made"] or None)
        return found["erasures"]

    def text_counters(self) -> tuple[int, int, int]:
        """Documents, tokens and erasures, as TEXT_COUNTERS reads them; a read with a node
        cache takes them from its synchronisation, one statement for both."""
        synced = self._synced_read()
        if synced is None:  # a write reads them afresh: its own writes move them
            rows = self.rows(q.TEXT_COUNTERS)
            row = rows[0] if rows else [0, 0, 0]
            return int(row[0] or 0), int(row[1] or 0), int(row[2] or 0)
        return synced.docs, synced.tokens, synced.erasures

    def cache_generation(self) -> int | None:
        """The node cache's generation before a read that may offer it nodes."""
        return None if self._cache is None else self._cache.generation

    def _read_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        groups = group_by_type(node_ids)
        if len(groups) < 2:
            return super()._fetch_nodes(node_ids)
        ids = [i for group in groups.values() for i in group]
        found: dict[str, NodeRecord] = {}
        rows = self.rows(q.NODES_GET_ALL, {"ids": ids})
        for label, props, enc, locus, successor, encounter, element_id in rows:
            node = node_from_row(str(label), [props, enc, locus, successor])
            self.saw_touched(props)
            found[node.id] = node
            if self._writable:
                self._element_ids[node.id] = str(element_id)
            if encounter is not None and not self._writable:
                self._encounters_seen[str(enc)] = encounter_from(encounter)
        return found

    def classified(self, node_ids: Sequence[str]) -> dict[str, str]:
        """Two columns of the few that carry a class, not every node whole (the gate's
        question of 900 encounter members took a node read as long as infusion's own).
        A read asking about a few nodes reads them whole instead, in the same one round
        trip: the gate asks before the read goes on to read them (a lookup by name), and
        then they are at hand."""
        seen = {i: n for i in node_ids if (n := self._nodes_seen.get(i)) is not None}
        if self._cache is not None:
            seen |= self._cached(self._cache, [i for i in node_ids if i not in seen])
        marks = {i: str(c) for i, n in seen.items() if (c := n.props.get("classification"))}
        rest = [i for i in node_ids if i not in seen]
        if rest and not self._writable and len(rest) <= _READ_WHOLE:
            found = self._fetch_nodes(rest)
            self._nodes_seen.update(found)
            return marks | {
                i: str(c) for i, n in found.items() if (c := n.props.get("classification"))
            }
        groups = group_by_type(rest)
        if groups:
            ids = [i for group in groups.values() for i in group]
            marks |= {str(i): str(c) for i, c in self.rows(q.CLASSIFIED_ALL, {"ids": ids})}
        return marks

    def confirmations_of(self, node_ids: Sequence[str]) -> dict[str, Confirmation]:
        """The shared form asks once per type; ids of several types go in one statement
        (one list, each branch taking its own type's ids, as ``_fetch_nodes`` does)."""
        groups = group_by_type(node_ids)
        if len(groups) < 2:
            return super().confirmations_of(node_ids)
        ids = [i for group in groups.values() for i in group]
        latest: dict[str, Confirmation] = {}
        keep_latest(latest, self.rows(q.CONFIRMATIONS_OF_ALL, {"ids": ids}))
        return latest

    def remember(
        self,
        nodes: Sequence[NodeRecord],
        encounters: Sequence[EncounterRecord],
        generation: int | None = None,
        *,
        moment: tuple[int, int] | None = None,
    ) -> None:
        """What a statement of this read brought beside its answer, for later reads of it
        (never in a write, which reads afresh what it may have changed); offered to the
        node cache too when the read noted its ``generation`` before that statement. The
        ``moment`` (clock, erasures) it read answers ``clock_and_erasures``."""
        if self._writable:
            return
        self._moment_seen = self._moment_seen or moment
        self._nodes_seen.update((n.id, n) for n in nodes)
        self._encounters_seen.update((e.name, e) for e in encounters)
        if self._cache is not None and generation is not None:
            self._cache.offer(generation, {n.id: n for n in nodes})

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        """Encounters a read met beside their nodes are not fetched again (infusion asks
        for the encounters of the nodes it has just read: a round trip per prompt). A
        read-only transaction sees committed states only, and a second fetch would give
        one a moment later, no truer; a write transaction always reads afresh."""
        seen = {n: e for n in names if (e := self._encounters_seen.get(n)) is not None}
        missing = [n for n in names if n not in seen]
        return {**seen, **(super().get_encounters(missing) if missing else {})}

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        rows = self.rows(q.ENC_MEMBERS, {"names": list(encounters)})
        return {str(name): [str(i) for i in ids] for name, ids in rows}

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        """Both directions in one round trip: ids of one type in that type's text (infusion's
        hop from its concepts), of several in the union over every type."""
        groups = group_by_type(node_ids)
        if not groups:
            return Subgraph()
        params = {"ids": list(node_ids), "rels": list(rel_types)}
        if len(groups) == 1:
            [label] = groups
            rows = self.rows(self.render(q.EDGES_BOTH, label=label), params)
        else:
            rows = self.rows(q.EDGES_BOTH_EACH, params)
        edges = [edge_from_row(r) for r in rows]
        ids = {e.source for e in edges} | {e.target for e in edges}
        return Subgraph(list(self.get_nodes(sorted(ids)).values()), edges)

    def _put_statuses(
        self, kept: Sequence[tuple[NodeRecord, str]], sets: Mapping[str, Sequence[tuple[str, str]]]
    ) -> None:
        """Moves of one type (a relation's target, mostly) and their record in one
        statement; the shared form sends the record apart."""
        if len(sets) != 1 or not kept:
            super()._put_statuses(kept, sets)
            return
        [(label, group)] = sets.items()
        for node_id, _ in group:
            self._on_changed(node_id)
        params = {
            "rows": [{"id": node_id, "status": status} for node_id, status in group],
            "past": self._status_rows(kept),
            "tick": self.tick,
            "at": self.now,
        }
        self.rows(self.render(q.NODES_SET_STATUS_KEPT, label=label), params)

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        """The challenges and the confirmations in one statement (the shared form sends
        one for each)."""
        if not node_ids:
            return Subgraph(), {}
        rows = self.rows(q.TENSION_EACH, {"ids": list(node_ids)})
        edges = [edge_from_row(r[:6]) for r in rows if r[2] is not None]
        latest: dict[str, Confirmation] = {}
        keep_latest(latest, ((r[0], r[1], r[3], r[6]) for r in rows if r[2] is None))
        ends = {e.source for e in edges} | {e.target for e in edges}
        return Subgraph(list(self.get_nodes(sorted(ends)).values()), edges), latest

    def _touched_on_the_way(self, encounter: str | None) -> dict[str, Any]:
        """The encounter's due touch goes with its relation statement (EDGES_CREATE's
        $touch), as its node creation's does (``touched_at``)."""
        if encounter is None or encounter not in self._touch_due:
            return {"touch": None}
        self._touch_due.discard(encounter)
        return {"touch": encounter}

    def touch_encounter(self, name: str) -> None:
        # One timestamp per transaction: a second touch would write the same value again.
        # It is written by the statement that creates the write's nodes, which matches
        # the encounter anyway, or else when the write ends (end_write): a round trip less.
        if name in self._touched:
            return
        self._touched.add(name)
        self._touch_due.add(name)

    def _revised(self, node_id: str, successor: str | None) -> None:
        """Heads are read from the graph and the index needs no entry moved: only the node
        caches hear of it."""
        self._changed.add(node_id)

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
            # Its standing as dumped (a null is simply not stored, as on a live write).
            props = _node_row(node)
            tokens += props["_len"]
            props |= {"used_at": node.used_at, "pinned": node.pinned, "used_marks": node.used_marks}
            # Its class labels, and those of the classes its marks name (as MARK_USES
            # leaves them): read_cypher's scope keeps it from who may not see them.
            labels = class_labels(props.get("classification")) + used_labels(node.used_marks)
            by_label.setdefault(node.type, []).append(
                {"encounter": node.encounter, "recorded": tick, "props": props, "classes": labels}
            )
            names[node.name] = node.id
            if node.type == "Component":
                sources[component_key(node)] = node.id
        self._note_classes(d.node.props.get("classification") for d in nodes)
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
        self._deleted = True
        self._touched.clear()
        self.rows(q.TEXT_RESET, {"docs": 0, "tokens": 0, "format": q.TEXT_FORMAT})


if TYPE_CHECKING:
    from kenning_encounter.store.port import LoadTx

    _CARRIES_THE_BULK_OPERATIONS: type[LoadTx] = Neo4jTx


def newer_shape(shape: Sequence[Any], *, opening: bool = False) -> str | None:
    """What is wrong when ``shape``, the newest shape of the servers that opened the
    memory ([schema version, text format], set by q.META_INIT), is newer than this server's;
    None when it is not. Such a server may have migrated the memory's schema or
    derived its words anew, which this one's writes (or its opening) would undo."""
    ours = q.SHAPE
    if all(int(theirs) <= mine for theirs, mine in zip(shape, ours, strict=False)):
        return None
    theirs = ", text format ".join(str(int(v)) for v in shape)
    this = f"schema {ours[0]}, text format {ours[1]}"
    upgrade = "Upgrade kenning-encounter (pip install -U kenning-encounter)"
    if opening:
        return (
            f"a newer kenning-encounter (schema {theirs}) has opened this memory and may "
            f"have changed its shape; this one ({this}) cannot serve it. {upgrade} to open it"
        )
    return (
        f"a newer kenning-encounter (schema {theirs}) has opened this memory since this "
        f"server ({this}) did, and may have changed its shape: this server writes nothing "
        f"more to it. {upgrade} and restart this server"
    )
