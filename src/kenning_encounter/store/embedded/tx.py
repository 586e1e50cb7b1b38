"""One transaction on the embedded engine: the shared operations (store/ops) over its
query text, its executor, and the bookkeeping it keeps beside the graph — the node
cache's view of what a write changed, the text index's pending entries, and each
node's ``superseded_by`` column, a mirror of its SUPERSEDES edge that keeps "is a head"
one column read.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import re
from collections.abc import (
    Callable,
    Container,
    Generator,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import TYPE_CHECKING, Any, Final, LiteralString, TypeVar, cast

import ladybug

from kenning_encounter import abandon
from kenning_encounter.errors import EngineError, StoreError
from kenning_encounter.store.bulk import collector_paused
from kenning_encounter.store.embedded import engine
from kenning_encounter.store.embedded import past as past_text
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.nodecache import (
    MAX_MARKS,
    TOO_MANY,
    Adjacency,
    LazySnapshot,
    NodeCache,
    Whole,
)
from kenning_encounter.store.embedded.textindex import IndexDoc, classes_of
from kenning_encounter.store.ids import component_key, type_of_id
from kenning_encounter.store.ops.activation import ActivationOps
from kenning_encounter.store.ops.base import node_record
from kenning_encounter.store.ops.graph import revisions_by_type, with_hops
from kenning_encounter.store.ops.identity import IdentityOps
from kenning_encounter.store.ops.load import LoadOps
from kenning_encounter.store.ops.past import PastOps, node_of
from kenning_encounter.store.ops.spine import SpineOps
from kenning_encounter.store.outline import OUTSIDE, Outline, RelationColumns, Relations
from kenning_encounter.store.persons import Confirmation
from kenning_encounter.store.port import MAX_CHAIN, DumpedNode, Subgraph
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord
from kenning_encounter.store.tracing import Tracer
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    CLASSIFICATIONS,
    NODE_TYPES,
    RELATION_TYPES,
)

_AUTHORED = frozenset(AUTHORED_RELATION_TYPES)
# Up to this many nodes a relation read seeks each one; more, and one scan of each type's
# table costs less than the seeks.
SEEK_LIMIT = 128
# What the node cache holds per id: a node, its relation lists, or its confirmation.
V = TypeVar("V")
# Which list of a node's relations a read of edges out of or into nodes takes.
_WAYS = {q.RELATION_TEXT.edges_out_many: 0, q.RELATION_TEXT.edges_in_many: 1}

log = logging.getLogger(__name__)


# The engine's kind for a failed read or write of its files (a full disk, a size limit,
# a disk gone read-only); ours for its page memory (its buffer pool) full: a memory too
# large for the pool the settings give it, never damage.
IO_FAULT: Final = EngineError.IO_FAULT
POOL_FULL: Final = EngineError.POOL_FULL
POOL_SETTING: Final = "KENNING_ENCOUNTER_BUFFER_POOL_MIB"


def pool_is_full(text: str) -> bool:
    """Whether the engine's words say its buffer pool had no room."""
    return "buffer pool is full" in text.lower()


def pool_full_message(doing: str, pool_mib: int | None = None) -> str:
    """The refusal; ``pool_mib`` is the size the store was given, where it is known (the
    store names it: ``EmbeddedStore._sized``)."""
    size = f" ({pool_mib} MiB)" if pool_mib is not None else ""
    return (
        f"the embedded store ran out of page memory while {doing}: its buffer pool{size} "
        f"holds too little for this memory's size; nothing of this call was written and "
        f"nothing is damaged. Raise {POOL_SETTING} (or --buffer-pool-mib), say to twice "
        "that, and restart the server"
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
    if pool_is_full(text):
        return EngineError(pool_full_message(doing), code=POOL_FULL, detail=detail)
    if code == IO_FAULT:
        return EngineError(
            f"the embedded store could not write its files while {doing} "
            f"({detail.rstrip('. ')}); nothing of this call was written. Is the disk full "
            "or read-only? Free space (or mend the disk), then restart the server: the "
            "store takes no more writes until it is opened again, and everything written "
            "before this call is kept",
            code=code,
            detail=detail,
        )
    return EngineError(
        f"the embedded store refused a statement while {doing}: {detail.rstrip('. ')}; "
        "nothing of this call was written. The request passed validation, so this is a "
        "fault of the store: try once more, and report it if it repeats",
        code=code,
        detail=detail,
    )


def node_to_index_doc(node: NodeRecord) -> IndexDoc:
    return IndexDoc(
        node.id,
        node.type,
        node.is_head,
        node.name,
        node.description,
        classes=classes_of(node.props.get("classification")),
        locus=node.locus,
    )


def node_from_row(label: str, row: Sequence[Any]) -> NodeRecord:
    """A node row as a record: its columns first, in ``q.stored_columns`` order (a
    whole-node read's ``{n}``); what follows them is the caller's."""
    props = dict(zip(q.stored_columns(label), row, strict=False))
    return node_record(
        props,
        label=label,
        encounter=props.get("encounter"),
        locus=props.get("locus"),
        superseded_by=props.get("superseded_by"),
    )


class ClassesUsed:
    """The classes the memory's nodes have carried (``classes_used``), kept by the one
    process that owns the store: read from the graph and its record of the past when the
    store opens (``scan``), then grown by each write that makes a classified node, before
    it commits (a write that then fails leaves a class too many, never one too few)."""

    def __init__(self, found: Iterable[str] = ()) -> None:
        self.now: frozenset[str] = frozenset(found)

    def add(self, classification: object) -> None:
        if isinstance(classification, str) and classification:
            named = {c for c in classification.split(",") if c in CLASSIFICATIONS}
            if not named <= self.now:
                self.now = self.now | named  # one assignment: a read sees before or after

    @classmethod
    def scan(cls, rows: Callable[[LiteralString], list[list[Any]]]) -> ClassesUsed:
        """Read from the graph whole (``rows`` runs a statement on the store)."""
        found = cls()
        for label in _MARKED:
            for (mark,) in rows(q.render(q.CLASSES_LIVE, label=label)):
                found.add(mark)
        for (body,) in rows(q.CLASSES_PAST):
            found.add(node_of(str(body)).props.get("classification"))
        return found


class EmbeddedTx(SpineOps, PastOps, LoadOps, IdentityOps, ActivationOps):
    _spine = q.SPINE_TEXT
    _past = past_text.PAST_TEXT
    _identity = q.IDENTITY_TEXT
    _activation = q.ACTIVATION_TEXT
    _nodes = q.NODE_TEXT
    _relations = q.RELATION_TEXT
    _load = q.LOAD_TEXT

    def __init__(
        self,
        conn: ladybug.Connection,
        *,
        clock: Callable[[], str],
        writable: bool,
        tracer: Tracer,
        snapshot: LazySnapshot | None = None,
        open_names: dict[str, str] | None = None,
        committed: NodeCache | None = None,
        classes: ClassesUsed | None = None,
    ) -> None:
        self._conn = conn
        self._classes = classes
        self._open_names = open_names
        # A write's view of the node cache: under the write lock the cache holds what the
        # last commit left, so its relation lists of a node this write has not linked or
        # unlinked are the node's lists now (nodecache.py).
        self._committed = committed
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
        # The classification (or None) of every node this write creates, an import's too.
        self.created_marks: dict[str, str | None] = {}
        # Nodes whose authored relations this write removed or remade; None: it cannot say.
        self.changed_edges: set[str] | None = set()
        # Relations this write only added (``_on_linked``), and the relation lists it read
        # of nodes whose relations it had not yet moved: after the commit, the cache adds
        # the first to the second (or to the lists it holds) instead of reading them again.
        self.linked_edges: list[EdgeRecord] = []
        self.sought_edges: dict[str, Adjacency] = {}
        self._edges_moved: set[str] = set()
        self._touched: set[str] = set()
        self._walk_bound = q.VAR_LENGTH_DEFAULT

    # --- statements, through the backend's one execute path (engine.py) -------------
    def rows(self, query: LiteralString, params: dict[str, Any] | None = None) -> list[list[Any]]:
        if not self._writable:
            abandon.check()  # a read given up takes no next statement
        if self._snapshot is not None:
            self._snapshot.ensure_open()
        if self._open_names and _opens(query):
            self._open_names.clear()  # a new encounter: it may be its locus's newest open one
        try:
            return engine.rows(self._conn, query, params, tracer=self._tracer)
        except RuntimeError as exc:
            raise engine_error(exc, "writing" if self._writable else "reading") from exc

    def render(self, template: str, **names: str) -> LiteralString:
        return q.render(template, **names)

    def node(self, label: str, row: list[Any]) -> NodeRecord:
        return node_from_row(label, row)

    # --- write context ----------------------------------------------------------------
    @property
    def ticked(self) -> bool:
        """Whether this unit used a tick (it is taken the first time it is asked for)."""
        return self._tick is not None

    @property
    def tick(self) -> int:
        if not self._writable:
            raise StoreError("internal: a read transaction has no tick")
        if self._tick is None:
            self._tick = int(self.rows(q.CLOCK_NEXT, {"key": "clock"})[0][0])
        return self._tick

    @property
    def now(self) -> str:
        if self._now is None:
            self._now = self._clock()
        return self._now

    def touch_encounter(self, name: str) -> None:
        # One timestamp per transaction: a second touch would write the same value again.
        if name in self._touched:
            return
        super().touch_encounter(name)
        self._touched.add(name)

    @contextlib.contextmanager
    def _walks(self) -> Generator[None]:
        """The engine refuses a walk longer than a connection's bound (30 by default): a
        chain's walks raise it and set it back after, so no other statement on the pooled
        connection (a read_cypher among them) walks further than it did."""
        try:
            yield
        except BaseException:
            with contextlib.suppress(EngineError):  # the failure that ended the walk wins
                self._walk_back()
            raise
        self._walk_back()

    def _walk_back(self) -> None:
        if self._walk_bound != q.VAR_LENGTH_DEFAULT:
            self._walk_bound = q.VAR_LENGTH_DEFAULT
            self.rows(cast(LiteralString, with_hops(q.VAR_LENGTH_SET, q.VAR_LENGTH_DEFAULT)))

    def _walk_up_to(self, hops: int) -> None:
        if hops > self._walk_bound:
            self.rows(cast(LiteralString, with_hops(q.VAR_LENGTH_SET, MAX_CHAIN)))
            self._walk_bound = MAX_CHAIN

    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        """In a write, the locus's open encounter is remembered by name (one write runs at
        a time). A use reads that encounter by its key and takes it only while it is still
        open and the locus's; a statement that gives a locus an encounter forgets every
        name. Scanning the locus's encounters each write grew with its history: 7 ms a
        write at 1,000 encounters."""
        known = self._open_names
        if known is None:
            return super().open_encounter_of(locus)
        name = known.get(locus)
        if name is not None:
            found = self.get_encounter(name)
            if found is not None and found.is_open and found.locus == locus:
                return found
            known.pop(locus, None)
        current = super().open_encounter_of(locus)
        if current is not None:
            known[locus] = current.name
        return current

    # --- reads: through the node cache of a read snapshot -------------------------------
    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        if self._snapshot is None:
            return self._written_nodes(node_ids)
        cached, missing = self._from_cache(self._snapshot.cached, list(node_ids))
        if not missing:
            return cached
        fetched = self._fetch_nodes(missing)
        self._snapshot.offer(fetched)
        return cached | fetched

    def _written_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        """A write's nodes: from the cache those this write has not changed (each change
        is heard before its statement runs), else read."""
        cache = self._committed
        if cache is None:
            return self._fetch_nodes(node_ids)
        changed = self.changed_nodes
        found = cache.get(cache.generation, [i for i in node_ids if i not in changed])
        missing = [i for i in node_ids if i not in found]
        return found | self._fetch_nodes(missing) if missing else found

    def all_nodes(self) -> Iterable[NodeRecord]:
        """Every authored node, each type read in pages of its row offsets (inside the one
        read snapshot the offsets stand still): a whole type as one result ran the buffer
        pool out at a million nodes. The strings many nodes share (encounter, locus, time
        of writing, status) are held once (store/bulk.py)."""
        return self._all_nodes({})

    def _all_nodes(self, held: dict[str | None, str | None]) -> Iterable[NodeRecord]:
        return (node for _, _, node in self._placed_nodes(held, outline=False))

    def _placed_nodes(
        self, held: dict[str | None, str | None], *, outline: bool
    ) -> Iterable[tuple[str, int, NodeRecord]]:
        """Every authored node with its type and its row offset in the type's table (a
        page's last column), whole or as an outline (``NodeRecord.outline``)."""
        same = held.setdefault
        # An outline's properties are its classification alone: nodes of one mark share
        # one dict (64 MiB a million nodes; a record's props are never written).
        marked: dict[str | None, dict[str, Any]] = {}
        for label in AUTHORED_NODE_TYPES:
            last = q.render(q.NODES_LAST_OFFSET, label=label)
            if not outline:
                shared = _shared_columns(label)
                for row in self._pages(last, q.render(q.NODES_PAGE, label=label)):
                    for i in shared:
                        row[i] = same(row[i], row[i])
                    yield label, row[-1], self.node(label, row)
                continue
            status = _OUT["status"] if "status" in q.outline_columns(label) else None
            for r in self._pages(last, q.render(q.NODES_OUTLINE_PAGE, label=label)):
                mark = r[_MARK]
                props = marked.get(mark)
                if props is None:
                    props = marked[mark] = {} if mark is None else {"classification": mark}
                node = NodeRecord(
                    r[_NID],
                    label,
                    r[_NAME] or "",
                    "",
                    int(r[_TICK]),
                    same(r[_MADE], r[_MADE]) or "",
                    None if status is None else same(r[status], r[status]),
                    props,
                    same(r[_ENC], r[_ENC]),
                    same(r[_LOCUS], r[_LOCUS]),
                    r[_NEXT],
                    int(r[_ORD] or 0),
                    same(r[_USED], r[_USED]),
                    same(r[_PIN], r[_PIN]) or None,
                    r[_USES] or None,
                )
                yield label, r[-1], node

    def authored_graph(self) -> Subgraph:
        """The whole authored graph, its relations paged like its nodes (``all_nodes``).
        A relation's ends are its nodes' own id strings, and its type and encounter are
        held once; the collector rests while the records are made (store/bulk.py)."""
        held: dict[str | None, str | None] = {}
        with collector_paused():
            nodes, at = self._nodes_by_offset(held, outline=False)
            if len(nodes) >= PAIRS_FROM:
                ids = {
                    label: [nodes[i].id if i >= 0 else "" for i in col] for label, col in at.items()
                }
                edges = self._edges_by_pair(ids, held)
            else:
                edges = self._edges_by_type(nodes, held)
        return Subgraph(nodes, edges)

    def authored_outline(self) -> Outline:
        """``authored_graph`` reading only an outline's columns (``NodeRecord.outline``),
        its relations as columns of positions (store/outline.py): at a million nodes the
        words and the relation records were most of the read's time and memory. A small
        memory's relations are read by type and then put in columns: fewer statements."""
        held: dict[str | None, str | None] = {}
        with collector_paused():
            nodes, at = self._nodes_by_offset(held, outline=True)
            if len(nodes) < PAIRS_FROM:
                return Outline.of_records(nodes, self._edges_by_type(nodes, held))
            return Outline(nodes, self._relation_columns(at))

    def _nodes_by_offset(
        self, held: dict[str | None, str | None], *, outline: bool
    ) -> tuple[list[NodeRecord], dict[str, list[int]]]:
        """Every authored node, and each type's nodes by row offset: the node's place in
        the list (-1 where a row was deleted)."""
        nodes: list[NodeRecord] = []
        at: dict[str, list[int]] = {label: [] for label in AUTHORED_NODE_TYPES}
        for label, offset, node in self._placed_nodes(held, outline=outline):
            column = at[label]
            if offset >= len(column):
                column.extend([OUTSIDE] * (offset + 1 - len(column)))
            column[offset] = len(nodes)
            nodes.append(node)
        return nodes, at

    def _relation_columns(self, at: Mapping[str, list[int]]) -> Relations:
        """Each relation type's pairs of node types a page at a time, as three lists a
        page (its ends' row offsets and its tick) rather than a row per relation: made
        into values of their own, the rows were most of the read (3M relations: 5.4 s as
        rows of five, 2.0 s as lists)."""
        import numpy as np  # a large memory's read; the analytics that follow use it too

        gathered = RelationColumns()
        places = {label: np.asarray(column, dtype=np.int64) for label, column in at.items()}
        for rel, _, _, ends in _held_pairs(at):
            froms, tos = places[ends["source"]], places[ends["target"]]
            last = q.render(q.EDGES_PAIR_LAST_OFFSET, **ends)
            for starts, stops, ticks in self._pages(last, q.render(q.EDGES_PAIR_COLUMNS, **ends)):
                gathered.add_placed(
                    rel,
                    froms[np.asarray(starts, dtype=np.int64)],
                    tos[np.asarray(stops, dtype=np.int64)],
                    ticks,
                )
        return gathered.relations()

    def _edges_by_type(
        self, nodes: Sequence[NodeRecord], held: dict[str | None, str | None]
    ) -> list[EdgeRecord]:
        """Each relation type a page at a time, its ends by id."""
        same = held.setdefault
        ids = {n.id: n.id for n in nodes}
        end = ids.setdefault
        edges: list[EdgeRecord] = []
        for rel in AUTHORED_RELATION_TYPES:
            page = q.SUPERSEDES_PAGE if rel == "SUPERSEDES" else q.EDGES_PAGE
            last = q.render(q.EDGES_LAST_OFFSET, rel=rel)
            edges += [
                EdgeRecord(end(r[0], r[0]), end(r[1], r[1]), rel, int(r[2]), same(r[3], r[3]), r[4])
                for r in self._pages(last, q.render(page, rel=rel))
            ]
        return edges

    def _edges_by_pair(
        self, at: Mapping[str, list[str]], held: dict[str | None, str | None]
    ) -> list[EdgeRecord]:
        """Each relation type's pairs of node types a page at a time, its ends by row
        offset: naming the ends' ids joined each page to both node tables (3M relations
        at 1M nodes: 19.9 s, 14.0 s this way; more statements, so only for a large
        memory)."""
        same = held.setdefault
        edges: list[EdgeRecord] = []
        for rel, froms, tos, ends in _held_pairs(at):
            template = q.SUPERSEDES_PAIR_PAGE if rel == "SUPERSEDES" else q.EDGES_PAIR_PAGE
            last = q.render(q.EDGES_PAIR_LAST_OFFSET, **ends)
            edges += [
                EdgeRecord(froms[r[0]], tos[r[1]], rel, int(r[2]), same(r[3], r[3]), r[4])
                for r in self._pages(last, q.render(template, **ends))
            ]
        return edges

    def _pages(self, last: LiteralString, page: LiteralString) -> Iterable[list[Any]]:
        """The rows of ``page`` ($lo, $hi: a span of row offsets) over every offset up to
        the one ``last`` gives, PAGE_ROWS at a time."""
        rows = self.rows(last)
        top = rows[0][0] if rows else None
        if top is None:
            return
        for lo in range(0, int(top) + 1, PAGE_ROWS):
            yield from self.rows(page, {"lo": lo, "hi": lo + PAGE_ROWS})

    def classes_used(self) -> frozenset[str]:
        """As the store keeps them (``ClassesUsed``); a transaction made without them
        reads the graph for them."""
        if self._classes is None:
            return ClassesUsed.scan(lambda st: self.rows(st)).now
        return self._classes.now

    def classified(self, node_ids: Sequence[str]) -> dict[str, str]:
        """The read gate's question. In a read, from the cache's classified set, filled by
        one scan per type when not known (a classified node is rare: the set stays small);
        a node is not read for it. Past MAX_MARKS of them the nodes are read instead."""
        if self._snapshot is None or not self._snapshot.uses_cache:
            return super().classified(node_ids)
        marks = self._snapshot.cached_marks()
        if marks is None:
            found: dict[str, str] = {}
            for label in _MARKED:
                left = {"limit": MAX_MARKS + 1 - len(found)}
                for row in self.rows(q.render(q.MARKS_ALL, label=label), left):
                    found[str(row[0])] = str(row[1])
                if len(found) > MAX_MARKS:
                    break
            self._snapshot.offer_marks(found)
            marks = found if len(found) <= MAX_MARKS else TOO_MANY
        if marks is TOO_MANY:
            return super().classified(node_ids)
        return {i: m for i in node_ids if (m := marks.get(i))}

    def _edges_many(
        self, template: str, ids: Sequence[str], rels: Sequence[str]
    ) -> list[EdgeRecord]:
        """Authored relations out of (or into) the nodes. In a read, from each node's
        lists in the cache (nodecache.py); for a few nodes, each node's own seek
        (``EDGES_OF_ONE``), whose cost does not grow with the memory."""
        way = _WAYS.get(template)
        wanted = frozenset(rels)
        unique = list(dict.fromkeys(ids))
        if way is None or not wanted <= _AUTHORED or len(unique) > SEEK_LIMIT:
            return super()._edges_many(template, ids, rels)
        if self._snapshot is None:
            listed = self._written_lists(unique)
        else:
            listed = self._relation_lists(unique)
        return [e for edges in listed.values() for e in edges[way] if e.type in wanted]

    def _written_lists(self, ids: list[str]) -> dict[str, Adjacency]:
        """A write's relation lists: from the cache for nodes whose relations this write
        has not moved, else each node's seek (kept for the cache if still unmoved)."""
        found: dict[str, Adjacency] = {}
        cache = self._committed if self.changed_edges is not None else None
        if cache is not None:
            unmoved = [i for i in ids if i not in self._edges_moved]
            found = cache.get_edges(cache.generation, unmoved)
            # Sought earlier in this write and unmoved since: a seek brings both ways.
            sought = self.sought_edges
            found |= {i: sought[i] for i in unmoved if i not in found and i in sought}
        missing = [i for i in ids if i not in found]
        for node_id, (lists, _) in self._seek_relations(missing).items():
            found[node_id] = lists
            if node_id not in self._edges_moved:
                self.sought_edges[node_id] = lists
        return {i: found[i] for i in ids}

    def _relation_lists(self, ids: list[str]) -> dict[str, Adjacency]:
        assert self._snapshot is not None
        found, missing = self._from_cache(self._snapshot.cached_edges, ids)
        if not missing:
            return found
        fetched = {i: lists for i, (lists, _) in self._seek_and_keep(missing).items()}
        return {i: found[i] if i in found else fetched[i] for i in ids}

    def _from_cache(
        self, cached: Callable[[list[str]], dict[str, V]], ids: list[str]
    ) -> tuple[dict[str, V], list[str]]:
        """What the cache holds of ``ids``, and the ids it lacks; on a miss the small
        memory is read whole first (``warm``), once."""
        found = cached(ids)
        missing = [i for i in ids if i not in found]
        if missing and self.warm():
            found = cached(ids)
            missing = [i for i in ids if i not in found]
        return found, missing

    def warm(self) -> bool:
        """Read the whole memory into the node cache, once, if it is small (at most the
        cache's ``warm_limit`` authored nodes): its nodes, each one's relation lists and
        latest confirmation. True when that was done now. A cold prompt at 10k nodes made
        about seven seeks of a millisecond each; one read of the whole memory (0.45 s at
        10k) answers every later one until a commit changes what it read."""
        snapshot = self._snapshot
        if snapshot is None or not snapshot.take_warming():
            return False
        try:
            whole = self._whole_memory(snapshot.warm_limit)
        except BaseException:
            snapshot.end_warming(None, failed=True)
            raise
        snapshot.end_warming(whole)
        return whole is not None

    def _whole_memory(self, limit: int) -> Whole | None:
        """The whole memory as the cache keeps it, or None past ``limit`` nodes (counted
        by row offsets: an upper bound)."""
        size = 0
        for label in AUTHORED_NODE_TYPES:
            rows = self.rows(q.render(q.NODES_LAST_OFFSET, label=label))
            top = rows[0][0] if rows else None
            size += 0 if top is None else int(top) + 1
            if size > limit:
                return None
        graph = self.authored_graph()
        out: dict[str, list[EdgeRecord]] = {n.id: [] for n in graph.nodes}
        into: dict[str, list[EdgeRecord]] = {n.id: [] for n in graph.nodes}
        for edge in graph.edges:
            if (ends := out.get(edge.source)) is not None:
                ends.append(edge)
            if (ends := into.get(edge.target)) is not None:
                ends.append(edge)
        latest: dict[str, Confirmation | None] = dict.fromkeys(out)
        for r in self.rows(q.CONFIRMATIONS_ALL):
            node = str(r[0])
            if node not in latest:
                continue
            held = latest[node]
            if held is not None and held.tick >= int(r[2]):
                continue
            latest[node] = Confirmation(node, str(r[1]), int(r[2]), str(r[3] or ""))
        lists = {i: (tuple(out[i]), tuple(into[i])) for i in out}
        return graph.nodes, lists, latest

    def _seek_and_keep(self, ids: list[str]) -> dict[str, tuple[Adjacency, Confirmation | None]]:
        """The seeks, each node's relation lists and latest confirmation offered to the
        cache (a read's): one seek brings both."""
        assert self._snapshot is not None
        sought = self._seek_relations(ids)
        self._snapshot.offer_edges({i: lists for i, (lists, _) in sought.items()})
        self._snapshot.offer_confirmations({i: latest for i, (_, latest) in sought.items()})
        return sought

    def _seek_relations(self, ids: list[str]) -> dict[str, tuple[Adjacency, Confirmation | None]]:
        """Each node's authored relations (out of it, into it) and latest confirmation,
        a seek per node."""
        found: dict[str, tuple[Adjacency, Confirmation | None]] = {}
        for node_id in ids:
            label = type_of_id(node_id)
            out: list[EdgeRecord] = []
            into: list[EdgeRecord] = []
            latest: Confirmation | None = None
            if label is not None and label in NODE_TYPES:
                query = q.render(q.EDGES_OF_ONE, label=label)
                for own, other, rel in self.rows(query, {"id": node_id}):
                    kind = str(rel["_LABEL"])
                    outward = rel["_SRC"] == own
                    if kind == "CONFIRMED" and not outward:
                        tick = int(rel["tick"])
                        if latest is None or tick > latest.tick:
                            at = str(rel.get("created_at") or "")
                            latest = Confirmation(node_id, str(other), tick, at)
                        continue
                    if kind not in _AUTHORED:
                        continue
                    tick, enc, why = int(rel["tick"]), rel.get("encounter"), rel.get("revision_why")
                    if outward:
                        out.append(EdgeRecord(node_id, str(other), kind, tick, enc, why))
                    if rel["_DST"] == own:
                        into.append(EdgeRecord(str(other), node_id, kind, tick, enc, why))
            found[node_id] = ((tuple(out), tuple(into)), latest)
        return found

    def confirmations_of(self, node_ids: Sequence[str]) -> dict[str, Confirmation]:
        """The latest confirmation of each node that has one; in a read, through the cache
        (a node that has none is kept as having none)."""
        if self._snapshot is None:
            return super().confirmations_of(node_ids)
        ids = list(dict.fromkeys(node_ids))
        found, missing = self._from_cache(self._snapshot.cached_confirmations, ids)
        if missing and len(missing) <= SEEK_LIMIT:
            found |= {i: latest for i, (_, latest) in self._seek_and_keep(missing).items()}
        elif missing:
            fetched = super().confirmations_of(missing)
            more = {i: fetched.get(i) for i in missing}
            self._snapshot.offer_confirmations(more)
            found |= more
        return {i: c for i in ids if (c := found[i]) is not None}

    # --- the bookkeeping beside the graph ------------------------------------------------
    def _on_changed(self, node_id: str) -> None:
        self.changed_nodes.add(node_id)

    def _on_edges(self, node_ids: Sequence[str] | None) -> None:
        if node_ids is None:
            self.changed_edges = None
        elif self.changed_edges is not None:
            self.changed_edges.update(node_ids)
            self._edges_moved.update(node_ids)

    def _on_linked(self, edges: Sequence[EdgeRecord]) -> None:
        if self.changed_edges is None:
            return
        tick = self.tick
        for edge in edges:
            # As a seek would read it back: the write's tick, no reason (not a revision).
            self.linked_edges.append(
                EdgeRecord(edge.source, edge.target, edge.type, tick, edge.encounter, None)
            )
            self._edges_moved.update((edge.source, edge.target))

    def _on_successor(self, node_id: str, successor: str | None) -> None:
        label = type_of_id(node_id)
        if label is not None:
            self.changed_nodes.add(node_id)
            query = q.render(q.NODE_SET_SUCCESSOR, label=label)
            self.rows(query, {"id": node_id, "successor": successor})

    def _create_revisions(self, edges: Sequence[EdgeRecord]) -> None:
        """Two statements per type instead of two per revision (and one node read for
        all of them): the edges, then the successors they make."""
        for label, rows in revisions_by_type(edges).items():
            olds = [r["t"] for r in rows]
            self._on_edges([r["s"] for r in rows] + olds)
            params = {"rows": rows, "tick": self.tick, "at": self.now}
            self.rows(q.render(q.REVISIONS_CREATE, label=label), params)
            self.changed_nodes.update(olds)
            self.rows(q.render(q.SUCCESSORS_SET, label=label), {"rows": rows})
        for old in self.get_nodes([e.target for e in edges]).values():
            self._on_reindex(old)

    def _on_deleted(self, node_id: str) -> None:
        self.index_deletes.append(node_id)

    def _on_reindex(self, node: NodeRecord) -> None:
        self.index_upserts.append(node_to_index_doc(node))

    def _on_load_changed(self, node_ids: Sequence[str]) -> None:
        self.changed_nodes.update(node_ids)

    # --- node creation: the engine's own statement shape ---------------------------------
    def create_nodes(
        self,
        records: Sequence[NodeRecord],
        encounter: str,
        *,
        held: Mapping[str, str] | None = None,
        revises: Sequence[EdgeRecord] = (),
    ) -> None:
        """Batch creation: two statements per type, one or two for the names, one for
        sources, two per type revised."""
        self._require_writable()
        by_label: dict[str, list[NodeRecord]] = {}
        for record in records:
            by_label.setdefault(record.type, []).append(record)
        for label, group in by_label.items():
            if label not in NODE_TYPES:
                raise StoreError(f"internal: unknown label {label}")
            self._create_group(label, group)
            self.created_nodes.extend(group)
            self.rows(
                q.render(q.NODES_RECORD, label=label),
                {"ids": [r.id for r in group], "encounter": encounter, "tick": self.tick},
            )
        # A name already held is being passed down a supersession chain.
        if held is None:
            held = self.head_ids_by_names([r.name for r in records])
        self._put_keys(q.NAME_KEYS, {r.name: r.id for r in records}, held)
        # A revision that keeps its source takes the bookmark over.
        self._put_keys(
            q.SOURCE_KEYS, {component_key(r): r.id for r in records if r.type == "Component"}
        )
        self.index_upserts += [node_to_index_doc(r) for r in records]
        if revises:
            self._create_revisions(revises)

    def _put_keys(
        self, text: q.KeyText, keys: Mapping[str, str], held: Container[str] | None = None
    ) -> None:
        """Point each key (a name, a source) at its node: created where new, moved where
        held (``held``: the keys known to be held; read when not given). Never one MERGE:
        unwound over a batch, the engine's MERGE scans the whole key table for each one
        (6 s for 3,000 names among 700k, against 0.13 s this way)."""
        if not keys:
            return
        if held is None:
            held = {str(r[0]) for r in self.rows(text.get, {"keys": list(keys)})}
        fresh = [k for k in keys if k not in held]
        if fresh:
            self.rows(text.create, {"keys": fresh, "ids": [keys[k] for k in fresh]})
        moved = [{"key": k, "id": i} for k, i in keys.items() if k in held]
        if moved:
            self.rows(text.move, {"rows": moved})

    def _create_group(
        self, label: str, group: Sequence[NodeRecord], columns: Sequence[str] | None = None
    ) -> None:
        """One CREATE for a type's nodes: a list per column, naming only the columns
        some row gives a value (queries.nodes_create says why). ``columns``: the type's
        own by default; an import adds the standing mirrors."""
        cols = list(columns) if columns is not None else q.node_columns(label)
        for r in group:
            mark = r.props.get("classification")
            self.created_marks[r.id] = str(mark) if mark else None
            if self._classes is not None:
                self._classes.add(mark)
        rows = [_row_for(r, cols) for r in group]
        lists = {c: [row[c] for row in rows] for c in cols}
        params = {c: v for c, v in lists.items() if c == "id" or any(x is not None for x in v)}
        self.rows(q.nodes_create(label, list(params)), params)

    # --- an import's nodes: no tick taken, none cached, none indexed -------------------
    # The text index is derived again when the store next opens: its recorded tick then
    # lags the clock the import set (backend.py ``_sync_index``).
    def load_nodes(self, nodes: Sequence[DumpedNode]) -> None:
        self._require_writable()
        by_label: dict[str, list[NodeRecord]] = {}
        recorded: dict[tuple[str, str, int], list[str]] = {}
        for dumped in nodes:
            node = dumped.node
            if node.type not in NODE_TYPES or node.encounter is None:
                raise StoreError(f"internal: {node.id} has no type or no encounter")
            by_label.setdefault(node.type, []).append(node)
            tick = node.tick if dumped.recorded_tick is None else dumped.recorded_tick
            recorded.setdefault((node.type, node.encounter, tick), []).append(node.id)
        for label, group in by_label.items():
            self._create_group(label, group, [*q.node_columns(label), *q.STANDING_COLUMNS])
        # One statement per write the batch holds: the encounter matched once each time.
        for (label, encounter, tick), ids in recorded.items():
            params = {"ids": ids, "encounter": encounter, "tick": tick}
            self.rows(q.render(q.NODES_RECORD, label=label), params)
        # In creation order the newest holder of a name (or a source) comes last.
        self._put_keys(q.NAME_KEYS, {d.node.name: d.node.id for d in nodes})
        sources = {component_key(d.node): d.node.id for d in nodes if d.node.type == "Component"}
        self._put_keys(q.SOURCE_KEYS, sources)


if TYPE_CHECKING:
    from kenning_encounter.store.port import LoadTx

    _CARRIES_THE_BULK_OPERATIONS: type[LoadTx] = EmbeddedTx


# The columns whose strings many nodes share: a whole-memory read holds each value once.
_SHARED: Final = frozenset({"encounter", "locus", "created_at", "status", "used_at", "pinned"})


@functools.cache
def _shared_columns(label: str) -> tuple[int, ...]:
    return tuple(i for i, c in enumerate(q.stored_columns(label)) if c in _SHARED)


E = TypeVar("E")


def _held_pairs(
    at: Mapping[str, list[E]],
) -> Iterator[tuple[str, list[E], list[E], dict[str, str]]]:
    """Each relation type's pairs of node types, with each end type's nodes by row offset
    and the names a pair's statements are rendered with; a pair one of whose types holds
    no node holds no relation either, and is passed over."""
    for rel in AUTHORED_RELATION_TYPES:
        for source, target in RELATION_TYPES[rel].pairs():
            froms, tos = at.get(source), at.get(target)
            if froms and tos:
                yield rel, froms, tos, {"rel": rel, "source": source, "target": target}


# Rows a whole-memory read takes at a time (``all_nodes``, ``authored_graph``).
PAGE_ROWS: Final = 50_000
# From this many nodes the whole graph's relations are read by pairs of node types
# (``_edges_by_pair``).
PAIRS_FROM = 50_000

# A write statement that gives a locus an encounter (ENC_OPENED, an import's LOAD_OPENED).
_OPENS: Final = re.compile(r"CREATE\s*\([^)]*\)\s*-\s*\[:OPENED\b")
# Where each column of an outline read stands in its row (q.outline_columns).
_OUT: Final = {column: i for i, column in enumerate(q.OUTLINE_COLUMNS)}
_NID, _TICK, _ORD, _MADE, _ENC, _LOCUS, _NAME, _MARK, _USED, _PIN, _USES, _NEXT = (
    _OUT[c]
    for c in (
        "id", "tick", "ord", "created_at", "encounter", "locus", "name",
        "classification", "used_at", "pinned", "used_marks", "superseded_by",
    )
)  # fmt: skip


@functools.cache
def _opens(statement: str) -> bool:
    """Whether a statement gives a locus an encounter: asked of every statement a write
    sends, answered once per text (the texts are the queries module's)."""
    return _OPENS.search(statement) is not None


# The types whose nodes may carry a classification.
_MARKED: Final = tuple(name for name, t in NODE_TYPES.items() if "classification" in t.prop_names())


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
        "used_at": record.used_at,
        "pinned": record.pinned,
        "used_marks": record.used_marks,
    }
    return {c: base[c] if c in base else record.props.get(c) for c in cols}
