"""The GraphStore port: the domain operations the services need.

Services never see query text. They run a unit of work with ``store.write(fn)``
or ``store.read(fn)``; ``fn`` receives a transaction object offering the
operations below. A write unit is atomic, serialized with every other write,
and takes exactly one value of the global tick (``tx.tick``). A unit may be run
more than once by a backend that retries transient failures, so it must have
no side effects outside the transaction.

The operations are grouped by aggregate (the spine, nodes, relations; their reads
and their writes), and both backends implement them once, in store/ops, over their
own query text and executor.

A store whose server runs a graph-analytics engine of its own (Neo4j with Graph
Data Science) offers it through ``analytics_executor``: the analytics layer
builds its engine on that executor, and the store never imports analytics.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, LiteralString, Protocol, TypeVar, cast, runtime_checkable

from kenning_encounter.store.ledger import SessionLedgers
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.persons import ClaimRecord, Confirmation, PersonRecord
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

T = TypeVar("T")

# The most versions a chain read walks either way (``NodeReads.chain``): a bound on each
# statement's walk, far past any chain a memory grows by revising.
MAX_CHAIN: Final = 100_000


@dataclass(frozen=True, slots=True)
class SearchHit:
    id: str
    score: float
    # The document's tokens, space-joined, where the index hands them back (the embedded
    # one stores them): a hit is scored again from them without tokenizing its node.
    terms: str | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True, slots=True)
class TermStatsSnapshot:
    """Corpus statistics of the lexical index, in the tokenizer's terms."""

    n_docs: int
    avg_len: float
    doc_freqs: dict[str, int]

    def doc_freq(self, term: str) -> int:
        return self.doc_freqs.get(term, 0)


@dataclass(frozen=True, slots=True)
class CypherResult:
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool
    row_cap: int
    char_cap: int
    note: str = ""


class HeadReads(Protocol):
    """The two lists of heads a ``HeadsAsk`` names (``NodeReads`` has both)."""

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]: ...

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]: ...


@dataclass(frozen=True, slots=True)
class HeadsAsk:
    """A list of heads of one type, newest first, at most ``limit``: those whose status is
    in ``statuses``, or any head when it is None (``heads_by_status``, ``recent_heads``)."""

    type: str
    limit: int
    statuses: tuple[str, ...] | None = None

    def asked_of(self, reads: HeadReads) -> list[NodeRecord]:
        """This list, asked by itself."""
        if self.statuses is None:
            return reads.recent_heads(self.type, self.limit)
        return reads.heads_by_status(self.type, self.statuses, self.limit)


@dataclass(frozen=True, slots=True)
class Subgraph:
    nodes: list[NodeRecord] = field(default_factory=list)
    edges: list[EdgeRecord] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class ChainLink:
    """A version met walking a revision chain, and the SUPERSEDES edge that joins it to the
    version met just before it: walking back, the edge into it; walking forward, its own."""

    node: NodeRecord
    edge: EdgeRecord


@dataclass(frozen=True, slots=True)
class BatchStart:
    """A write's first questions, answered together (``WriteContext.begin_batch``)."""

    encounter: EncounterRecord | None  # the locus's open encounter
    heads: dict[str, str]  # name -> id of the live node holding it, for the names asked
    nodes: dict[str, NodeRecord]  # the nodes asked for, by id (absent ones left out)


@dataclass(frozen=True, slots=True)
class ChainSpan:
    """A revision chain around one version, ``node`` (``NodeReads.chain``).

    ``older`` and ``newer`` are nearest first; ``older_left`` and ``newer_left`` count the
    versions beyond them that were not read; ``head`` is the chain's live version (``node``
    itself when nothing is newer)."""

    node: str
    head: str
    older: list[ChainLink] = field(default_factory=list[ChainLink])
    newer: list[ChainLink] = field(default_factory=list[ChainLink])
    older_left: int = 0
    newer_left: int = 0

    def window(
        self, older: int, newer: int, keep: Callable[[NodeRecord], bool] | None = None
    ) -> ChainSpan:
        """This span cut to ``older`` and ``newer`` versions. With ``keep``, a walk ends at
        the first version ``keep`` refuses, as if the chain ended there; the span must then
        have been read whole (nothing left beyond it), or the counts would not be exact."""
        head = self.head
        back, ahead = self.older, self.newer
        if keep is not None:
            back = list(itertools.takewhile(lambda link: keep(link.node), back))
            ahead = list(itertools.takewhile(lambda link: keep(link.node), ahead))
            if len(ahead) < len(self.newer):
                head = ahead[-1].node.id if ahead else self.node
        older_left = (self.older_left if len(back) == len(self.older) else 0) + max(
            0, len(back) - older
        )
        newer_left = (self.newer_left if len(ahead) == len(self.newer) else 0) + max(
            0, len(ahead) - newer
        )
        return ChainSpan(self.node, head, back[:older], ahead[:newer], older_left, newer_left)


# --- a unit of work's operations, by aggregate ------------------------------------
class SpineReads(Protocol):
    """The clock, loci and encounters, and what each encounter recorded."""

    def clock(self) -> int: ...

    def erasures(self) -> int:
        """How many erasures (an operator's hard deletions) the memory has seen: a server
        that caches node text drops it when the count moves (infusion/select.py)."""
        ...

    def clock_and_erasures(self) -> tuple[int, int]:
        """``clock()`` and ``erasures()`` in one read: what a cache keyed by both asks
        at every call (memory/activation.py)."""
        ...

    def work_spans(
        self, since: str, hidden_loci: frozenset[str] = frozenset()
    ) -> list[tuple[str, str]]:
        """When the memory was worked in: each encounter's span from its opening to its
        last write, and its seal as a moment of its own (a seal made when the next session
        begins must not count the pause before it as work), for the encounters with either
        at or after ``since`` (ISO time; "" for all). Standing ages in this time
        (memory/activation.py). ``hidden_loci``: those sessions' encounters left out, for a
        reader face that hides them (memory/gates.py ``HidingReads``)."""
        ...

    def get_encounter(self, name: str) -> EncounterRecord | None: ...

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]: ...

    def open_encounter_of(self, locus: str) -> EncounterRecord | None: ...

    def last_encounter_of(self, locus: str) -> EncounterRecord | None: ...

    def latest_encounter(self) -> EncounterRecord | None: ...

    def encounters(
        self,
        *,
        unsealed_only: bool = False,
        limit: int = 20,
        exclude_locus: str | None = None,
        offset: int = 0,
    ) -> list[EncounterRecord]:
        """Encounters newest first (by opening tick), the first ``offset`` of them skipped."""
        ...

    def reentry_encounters(
        self, *, recent: int, unsealed: int, exclude_locus: str
    ) -> tuple[list[EncounterRecord], list[EncounterRecord]]:
        """What a re-entry lists, newest first: the ``recent`` latest encounters, and the
        ``unsealed`` latest unsealed ones of loci other than ``exclude_locus``."""
        ...

    def loci(self) -> list[str]: ...

    def spine(self) -> list[tuple[str, str, str]]:
        """Every (encounter, NEXT_ENCOUNTER | INSTANTIATED_AFTER, encounter) edge."""
        ...

    def recorded_ids(self, encounter: str) -> list[str]: ...

    def encounters_drawing_on(self, node_ids: Sequence[str]) -> list[str]:
        """The encounters that recorded, confirmed, consulted or pinned any of these
        nodes, sorted (what an operator's erasure withdraws the words of)."""
        ...

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        """encounter -> ids it recorded, in creation order (tick, then place in the write)."""
        ...

    def encounter_nodes(self, encounters: Sequence[str], limit: int) -> list[str]:
        """Ids recorded in the given encounters, newest first."""
        ...


class NodeReads(Protocol):
    """Authored nodes: by id, by live name, by source, by status; a chain's links."""

    def get_node(self, node_id: str) -> NodeRecord | None: ...

    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]: ...

    def classified(self, node_ids: Sequence[str]) -> dict[str, str]:
        """id -> classification, for those of ``node_ids`` that carry one (the read gate
        asks this of the ids an answer names, so it need not read the whole nodes)."""
        ...

    def classes_used(self) -> frozenset[str]:
        """Every class a node of this memory has carried, standing or deleted since (the
        record of the past keeps what it was), or more, never fewer: a class once used
        stays. The read gate does the work a class it withholds calls for only when one
        is here (memory/gates.py); each read asks afresh, so another process's write of a
        classified node counts from the next read on."""
        ...

    def head_id_by_name(self, name: str) -> str | None: ...

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        """name -> id of the node holding each live name (absent names left out)."""
        ...

    def component_id_by_source(self, kind: str, label: str, key: str) -> str | None: ...

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        """(id, revision_why) of nodes this one supersedes."""
        ...

    def chain(self, node_id: str, *, older: int, newer: int) -> ChainSpan:
        """The revision chain around ``node_id``, in a few statements whatever its length:
        up to ``older`` versions it revised and up to ``newer`` that revised it, each with
        its edge, how many lie beyond (counted), and the head. Each walk is bounded by
        ``MAX_CHAIN``. A node that does not exist is a chain of itself alone."""
        ...

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]: ...

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]: ...

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        """Each ask's heads, in the order asked: several lists in one read (a re-entry's
        open questions, live hypotheses and recent concepts)."""
        ...


class RelationReads(Protocol):
    """Authored relations and the walks over them."""

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        """Authored edges touching the node, both directions."""
        ...

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool: ...

    def provenance(self, node_id: str, rel_types: Sequence[str], depth: int) -> Subgraph:
        """Nodes and edges reached walking *into* the node along ``rel_types``."""
        ...

    def provenance_from(
        self, node_ids: Sequence[str], rel_types: Sequence[str], depth: int
    ) -> Subgraph:
        """``provenance`` of several nodes at once: one walk from all of them, each node
        and edge once (a chain's versions, traced together)."""
        ...

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        """The nodes one hop from ``node_ids`` along ``rel_types``, with those edges."""
        ...

    def authored_graph(self) -> Subgraph:
        """Every authored node and authored edge."""
        ...

    def edges_written_in(self, encounters: Sequence[str]) -> list[EdgeRecord]:
        """The authored relations standing that these encounters wrote: what a reader
        hiding their sessions leaves out of the outline (memory/gates.py)."""
        ...

    def authored_outline(self) -> Outline:
        """``authored_graph`` without the nodes' words: each node as ``NodeRecord.outline``
        gives it (no description; of its properties, only its classification), and the
        relations as columns over that node list (store/outline.py). The analytics
        projection's input: a panel reads who, when and what standing, never the text,
        and at a million nodes the text and the relation records were most of the read."""
        ...


@dataclass(frozen=True, slots=True)
class UseRecord:
    """One use of a node (memory/activation.py): a link at either end, a confirmation, a
    consultation, a pin or unpin, with the encounter and session that made it. What a
    reader face hiding sessions reads a node's standing again from (memory/gates.py)."""

    node: str
    kind: str  # "link", "CONFIRMED", "CONSULTED" or "PINNED"
    encounter: str
    locus: str
    tick: int
    at: str | None
    state: str | None = None  # a pin's: "pinned" or "unpinned"
    other: str | None = None  # a link's: the classification of the node at its other end


@dataclass(frozen=True, slots=True)
class LociUses:
    """Where the uses some sessions made can be: when each of their encounters was open
    (opened, and sealed or dissolved; None while open: a use is written only then), and
    every node they pinned or unpinned."""

    spans: list[tuple[str, str | None]]
    pinned: frozenset[str]
    # The encounters' names: a relation one of them wrote is theirs too.
    encounters: frozenset[str] = frozenset()


class UseReads(Protocol):
    """The uses of nodes, one record each."""

    def loci_uses(self, loci: Sequence[str]) -> LociUses:
        """The encounters of ``loci`` and what they pinned (``LociUses``): a reader hiding
        them asks for the uses of only the nodes whose standing could be theirs."""
        ...

    def node_uses(self, node_ids: Sequence[str]) -> list[UseRecord]:
        """Every use of these nodes their edges still show: the authored relations at
        either end (but revisions, which renew neither end), confirmations,
        consultations (the latest of each encounter), pins and unpins."""
        ...


class PastReads(Protocol):
    """The record of the past beside the memory (store/ops/past.py), for as_of reads."""

    def moves_after(self, node_ids: Sequence[str], tick: int) -> list[StatusMove]: ...

    def ended_edges_at(self, tick: int) -> list[EdgeRecord]:
        """Relations an agent deleted after ``tick`` that stood at it."""
        ...

    def ended_nodes_at(self, tick: int) -> list[NodeRecord]:
        """Nodes an agent deleted after ``tick`` that stood at it, as they were deleted."""
        ...

    def ended_at(self, tick: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        """``ended_nodes_at`` and ``ended_edges_at`` together (an as_of read asks both)."""
        ...

    def edges_into(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]: ...

    def edges_out_of(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]: ...

    def nodes_named(self, name: str) -> list[NodeRecord]: ...

    def encounters_in_the_past_of(self, node_ids: Sequence[str]) -> list[str]:
        """For an operator's erasure: the encounters the record of the past says drew on
        these nodes, or on nodes an agent deleted that an erasure of these takes from the
        past (``_drop_past``): that recorded such a node, or made a relation, since
        deleted, to one. Sorted."""
        ...

    def nodes_upto(self, node_type: str, tick: int) -> list[NodeRecord]: ...

    def tick_at(self, at: str) -> int: ...

    def stamp_at(self, tick: int) -> str | None: ...


class IdentityReads(Protocol):
    """Who directed each locus; the latest confirmation of nodes; referent claims."""

    def directors_of(self, loci: Sequence[str]) -> dict[str, PersonRecord]: ...

    def director_of(self, locus: str) -> PersonRecord | None: ...

    def confirmations_of(self, node_ids: Sequence[str]) -> dict[str, Confirmation]: ...

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        """The CHALLENGES relations touching ``node_ids`` (either end) with their nodes, as
        ``neighbourhood`` gives them, and the latest confirmation of each of ``node_ids``
        that has one: what infusion asks of the nodes it surfaced, asked together."""
        ...

    def claims_of(self, node_ids: Sequence[str]) -> list[ClaimRecord]:
        """Every referent claim touching the nodes, either end, oldest first."""
        ...


class IdentityWrites(Protocol):
    def direct_locus(self, locus: str, person: PersonRecord) -> None: ...

    def direct_undirected(self, person: PersonRecord) -> None: ...

    def confirm_nodes(self, encounter: str, node_ids: Sequence[str], why: str = "") -> None: ...

    def create_claim(self, claim: ClaimRecord) -> None: ...


class ActivationWrites(Protocol):
    """Uses that renew a node's standing without changing it (memory/activation.py)."""

    def consult_nodes(self, encounter: str, node_ids: Sequence[str]) -> None: ...

    def pin_nodes(
        self, encounter: str, node_ids: Sequence[str], *, pinned: bool, why: str = ""
    ) -> None: ...

    def mark_uses(self, marks: Mapping[str, str]) -> None:
        """Each node's ``used_marks`` (store/uses.py), set as given."""
        ...


class WriteContext(Protocol):
    """The one tick and the one timestamp of a write."""

    @property
    def tick(self) -> int: ...

    @property
    def now(self) -> str: ...

    def begin_batch(
        self, locus: str, names: Sequence[str], node_ids: Sequence[str], named: Sequence[str]
    ) -> BatchStart:
        """What a batch write asks before it writes, in as few round trips as the backend
        can: ``locus``'s open encounter (``open_encounter_of``), the heads holding
        ``names`` (``head_ids_by_names``), and the nodes ``node_ids`` and the heads of
        ``named`` (names among ``names``) are (``get_nodes``)."""
        ...


class SpineWrites(Protocol):
    def ensure_locus(self, locus: str) -> bool:
        """Create the locus if absent; True when it was created."""
        ...

    def create_encounter(
        self, record: EncounterRecord, *, previous: str | None, anchor: str | None
    ) -> EncounterRecord:
        """Open ``record`` at this write's tick and time, after ``previous`` (the locus's
        last encounter) or else ``anchor`` (the memory's latest); the encounter as written,
        so the caller need not read it back."""
        ...

    def seal_encounter(self, encounter: EncounterRecord, summary: str) -> EncounterRecord:
        """Seal ``encounter`` (as this write read it) at this write's tick and time; the
        encounter as sealed, so the caller need not read it back."""
        ...

    def dissolve_encounter(self, name: str) -> None: ...

    def touch_encounter(self, name: str) -> None: ...

    def add_tombstones(self, encounter: str, count: int, marked: str | None = None) -> None:
        """``count`` more nodes erased from ``encounter``; ``marked``: its classified
        tombstones by class after them (store/uses.py), when some of these were."""
        ...

    def withdraw_encounter_text(self, names: Sequence[str], text: str) -> None:
        """An operator's erasure: these encounters' purpose and (when sealed) summary
        become ``text``."""
        ...

    def count_erasure(self) -> None:
        """This write is an erasure: the count ``erasures`` reads moves with its commit."""
        ...


class NodeWrites(Protocol):
    def create_nodes(
        self,
        records: Sequence[NodeRecord],
        encounter: str,
        *,
        held: Mapping[str, str] | None = None,
        revises: Sequence[EdgeRecord] = (),
    ) -> None:
        """Create nodes recorded by ``encounter`` and register their names. ``held`` is
        what this transaction already read of the names' holders (name -> head id, for
        at least every name of ``records``), so a backend need not look them up again;
        None: it looks them up itself. ``revises``: SUPERSEDES edges, each from one of
        ``records`` to a node of its type that it revises, made with the nodes."""
        ...

    def set_status(self, node_id: str, status: str) -> None: ...

    def set_statuses(
        self, moves: Sequence[tuple[str, str]], *, known: Mapping[str, NodeRecord] | None = None
    ) -> None:
        """Each (node id, status) in order, as ``set_status`` would, in fewer statements.
        ``known``: moved nodes as this write read them before any of the moves, which
        need not be read again (the rest are)."""
        ...

    def delete_nodes(self, node_ids: Sequence[str], *, keep_past: bool = False) -> None:
        """Delete nodes, newest first (ids not held are passed over); a node one of them
        revised, and that stays, becomes a head again under its own name. ``keep_past``
        (an agent's undo) keeps the nodes and their edges in the record of the past, so a
        read as of an earlier tick still finds them; without it (an operator's hard
        deletion) nothing about them is kept. A few statements per node type, not per
        node."""
        ...


class RelationWrites(Protocol):
    def create_edge(self, edge: EdgeRecord) -> None: ...

    def create_edges(self, edges: Sequence[EdgeRecord]) -> None:
        """Each edge as ``create_edge`` would make it, in fewer statements."""
        ...

    def delete_edge(self, source: str, target: str, rel_type: str) -> None: ...


# --- a whole memory, moved in bulk (memory/dump.py) ----------------------------------
@dataclass(frozen=True, slots=True)
class LocusRecord:
    """A locus; ``director`` is the Person it is DIRECTED_BY (None in a version 1 dump,
    which did not carry directors), ``directed_tick`` that edge's tick."""

    id: str
    tick: int
    created_at: str
    director: str | None = None
    directed_tick: int | None = None


@dataclass(frozen=True, slots=True)
class SpineEdge:
    """OPENED (locus -> encounter), NEXT_ENCOUNTER or INSTANTIATED_AFTER (encounter ->
    encounter), with the tick of the write that made it."""

    source: str
    type: str
    target: str
    tick: int


@dataclass(frozen=True, slots=True)
class DumpedNode:
    """A node as a dump holds it: the record (its encounter and locus filled) and the
    tick of the RECORDED edge that ties it to that encounter."""

    node: NodeRecord
    recorded_tick: int | None


@dataclass(frozen=True, slots=True)
class DumpedEdge:
    edge: EdgeRecord
    created_at: str | None


@dataclass(frozen=True, slots=True)
class ConfirmationRecord:
    """One CONFIRMED edge: ``encounter`` reviewed ``node`` at ``tick`` and found it true."""

    node: str
    encounter: str
    tick: int
    created_at: str | None
    why: str | None


@dataclass(frozen=True, slots=True)
class ConsultationRecord:
    """One CONSULTED edge: ``encounter`` read ``node`` deliberately, last at ``tick``."""

    node: str
    encounter: str
    tick: int
    created_at: str | None


@dataclass(frozen=True, slots=True)
class PinRecord:
    """One PINNED edge: ``encounter`` pinned ``node`` (state ``pinned``) or unpinned it."""

    node: str
    encounter: str
    tick: int
    created_at: str | None
    why: str | None
    state: str


@dataclass(frozen=True, slots=True)
class DumpedMove:
    """A status move of the record of the past, with the time of its write (None for a
    move a migration backfilled)."""

    move: StatusMove
    at: str | None


@dataclass(frozen=True, slots=True)
class DumpedEndedEdge:
    """A relation an agent deleted: as it stood, the tick that ended it, that write's time."""

    edge: EdgeRecord
    ended: int
    at: str | None


@dataclass(frozen=True, slots=True)
class DumpedEndedNode:
    """A node an agent deleted: as it stood, the tick that ended it, that write's time."""

    node: NodeRecord
    ended: int
    at: str | None


PastRecord = DumpedEndedNode | DumpedEndedEdge | DumpedMove
# The record of the past by kind, in the order a dump holds them (a deleted relation
# may name a deleted node).
PAST_KINDS = ("node", "edge", "status")


@dataclass(frozen=True, slots=True)
class LoadMarker:
    """Left by an import that has not finished: which dump, and how many of its records
    are in."""

    digest: str
    done: int


class DumpReads(Protocol):
    """Every stored thing, in pages a dump can stream (each page its own read)."""

    def dump_counts(self) -> dict[str, int]:
        """How many of each kind a dump holds are stored (dump_format.KINDS)."""
        ...

    def dump_persons(self, after: str, limit: int) -> list[PersonRecord]:
        """Persons by id, after ``after``."""
        ...

    def dump_loci(self, after: str, limit: int) -> list[LocusRecord]:
        """Loci by id, after ``after``."""
        ...

    def dump_encounters(self, after: str, limit: int) -> list[EncounterRecord]:
        """Encounters by name, after ``after``."""
        ...

    def dump_spine(self, encounters: Sequence[str]) -> list[SpineEdge]:
        """The spine edges each encounter was given when it opened: OPENED and
        NEXT_ENCOUNTER into it, INSTANTIATED_AFTER out of it."""
        ...

    def dump_nodes(
        self, label: str, after: tuple[int, int, str] | None, limit: int
    ) -> list[DumpedNode]:
        """One type's nodes in creation order (tick, ord, id), after ``after``."""
        ...

    def dump_node_ids(self, label: str, after: str, limit: int) -> list[str]: ...

    def dump_relations(self, label: str, sources: Sequence[str]) -> list[DumpedEdge]:
        """The authored relations out of the given nodes of one type."""
        ...

    def dump_claims(self, label: str, sources: Sequence[str]) -> list[ClaimRecord]:
        """The referent claims out of the given nodes of one type."""
        ...

    def dump_confirmations(self, label: str, nodes: Sequence[str]) -> list[ConfirmationRecord]:
        """The confirmations of the given nodes of one type."""
        ...

    def dump_consultations(self, label: str, nodes: Sequence[str]) -> list[ConsultationRecord]:
        """The consultations of the given nodes of one type."""
        ...

    def dump_pins(self, label: str, nodes: Sequence[str]) -> list[PinRecord]:
        """The pins and unpins of the given nodes of one type."""
        ...

    def dump_past(self, kind: str, after: str, limit: int) -> list[tuple[str, PastRecord]]:
        """(key, record) of one kind of the record of the past (PAST_KINDS), by key."""
        ...

    def load_marker(self) -> LoadMarker | None: ...


class LoadWrites(Protocol):
    """An import's writes: records as they were, their ticks kept (none is taken).

    Only the operator's import calls these; no tool reaches them."""

    def begin_load(self, digest: str) -> None:
        """Leave the marker of an import of the dump ``digest`` (nothing loaded yet)."""
        ...

    def load_persons(self, persons: Sequence[PersonRecord]) -> None: ...

    def load_loci(self, loci: Sequence[LocusRecord]) -> None:
        """Loci, each DIRECTED_BY its director in the same write (a Person loaded before)."""
        ...

    def load_encounters(self, encounters: Sequence[EncounterRecord]) -> None: ...

    def load_spine(self, edges: Sequence[SpineEdge]) -> None: ...

    def load_nodes(self, nodes: Sequence[DumpedNode]) -> None:
        """Nodes in creation order, with their RECORDED edges; a name (a Component's
        source) goes to the newest node carrying it, as creation would have left it."""
        ...

    def load_relations(self, edges: Sequence[DumpedEdge]) -> None: ...

    def load_claims(self, claims: Sequence[ClaimRecord]) -> None: ...

    def load_confirmations(self, confirmations: Sequence[ConfirmationRecord]) -> None: ...

    def load_consultations(self, consultations: Sequence[ConsultationRecord]) -> None: ...

    def load_pins(self, pins: Sequence[PinRecord]) -> None: ...

    def load_past(self, records: Sequence[PastRecord]) -> None:
        """Rows of the record of the past, each under the key a live write would give it."""
        ...

    def mark_loaded(self, digest: str, done: int) -> None: ...

    def finish_load(self, clock: int) -> None:
        """Set the clock to the dump's and drop the marker."""
        ...

    def clear_some(self, limit: int) -> int:
        """Delete up to ``limit`` of the memory's nodes (an interrupted import's); once
        none is left, the registries, the record of the past, the marker and the clock
        too. How many went."""
        ...


class ReadTx(SpineReads, NodeReads, RelationReads, UseReads, PastReads, IdentityReads, Protocol):
    """What a read unit of work is handed."""


class WriteTx(
    ReadTx,
    WriteContext,
    SpineWrites,
    NodeWrites,
    RelationWrites,
    IdentityWrites,
    ActivationWrites,
    Protocol,
):
    """What a write unit of work is handed: every read, and the writes, under one tick."""


class DumpTx(ReadTx, DumpReads, Protocol):
    """A read unit of an export (every backend's read transaction is one)."""


def bulk_read(store: GraphStore, work: Callable[[DumpTx], T]) -> T:
    """A read unit with the dump's pages: every backend's read transaction has them
    (store/ops/load.py), which the port's ReadTx does not promise."""

    def run(tx: ReadTx) -> T:
        return work(cast(DumpTx, tx))

    return store.read(run)


class LoadTx(WriteTx, DumpReads, LoadWrites, Protocol):
    """A write unit of an import (every backend's write transaction is one)."""


class AnalyticsExecutor(Protocol):
    """The door to an analytics engine inside the store's server: statements in, rows out.

    Each ``run`` is one statement in a session of its own on the server's writer (an
    engine's in-memory graphs live on the server that made them), retried by the
    backend when the failure is transient. Failures arrive in our tree:
    ``StoreUnavailable`` when the server cannot be reached, ``EngineError`` (with the
    engine's ``code``) when it refuses the statement; ``doing`` names the step in
    either message.
    """

    @property
    def name(self) -> str:
        """The engine and its version, as analytics results name it (``gds 2.13.2``)."""
        ...

    @property
    def memory(self) -> str:
        """The memory the executor serves: an engine's graphs and leases carry it."""
        ...

    def run(
        self, statement: LiteralString, params: Mapping[str, Any] | None = None, *, doing: str
    ) -> list[dict[str, Any]]: ...


# --- the store's own operations, by concern -------------------------------------
class UnitsOfWork(Protocol):
    def write(self, work: Callable[[WriteTx], T]) -> T: ...

    def read(self, work: Callable[[ReadTx], T]) -> T: ...


class TextSearch(Protocol):
    def fulltext(
        self,
        text: str,
        *,
        types: Iterable[str] | None = None,
        heads_only: bool = True,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> list[SearchHit]:
        """The index's best hits for ``text``'s words, none classified with a ``withheld``
        class and none recorded in a session of ``hidden_loci`` (a reader's hidden loci):
        those are left out by the query, so they take no candidate's place. Their scores
        are the index's own, counted over every document it holds: candidates to rank,
        never a score to show a gated caller (textproc_bm25.py)."""
        ...

    def fulltext_stats(
        self,
        terms: Iterable[str],
        *,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> TermStatsSnapshot:
        """Document count, mean length and per-term document frequencies, counting no
        document classified with a ``withheld`` class (memory/gates.py) nor recorded in
        a session of ``hidden_loci``: a gated caller's ranking says nothing of the words
        of what it may not see."""
        ...

    def search_read(
        self,
        text: str,
        work: Callable[[ReadTx, list[SearchHit], Callable[[], TermStatsSnapshot]], T],
        *,
        types: Iterable[str] | None = None,
        heads_only: bool = True,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> T:
        """``work`` over the hits ``fulltext`` finds, in the same read, with the statistics
        of ``text``'s terms (``query_terms``; asked for only if needed, ``withheld`` and
        ``hidden_loci`` as in ``fulltext_stats``): what a search does (its hits, their
        nodes, the clock, the words' weights), one round of the store instead of several."""
        ...

    def read_text(
        self,
        text: str,
        terms: Iterable[str],
        work: Callable[[ReadTx, list[SearchHit], Callable[[], TermStatsSnapshot]], T],
        *,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> T:
        """``work`` over a search's hits (heads, every type) and the statistics of
        ``terms`` (asked for only if needed; ``withheld`` and ``hidden_loci`` as in
        ``fulltext_stats``), all in one read: what the lexical infusion does per prompt,
        one round of the store instead of three."""
        ...


class CypherReads(Protocol):
    def read_cypher(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        row_cap: int,
        char_cap: int,
        timeout_s: float,
        withheld: frozenset[str] = frozenset(),
    ) -> CypherResult:
        """One caller-written query, read-only, bounded in time, memory, rows and text.
        A node classified with a ``withheld`` class is out of the query's reach
        (memory/gates.py); a backend that cannot promise it refuses the query."""
        ...


class AnalyticsSource(Protocol):
    def analytics_executor(self) -> AnalyticsExecutor | None:
        """The analytics engine the store's server runs, or None (analytics then runs
        in process). Decided once, when the store opens."""
        ...


class LedgerKeeping(Protocol):
    @property
    def ledgers(self) -> SessionLedgers:
        """The infusion ledger's tables (store/ledger.py): no tick, not the memory."""
        ...


class GraphStore(UnitsOfWork, TextSearch, CypherReads, AnalyticsSource, LedgerKeeping, Protocol):
    backend: str

    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


@runtime_checkable
class WarmsCache(Protocol):
    """A store that reads what it will be asked for into a cache while serving begins
    (Neo4j: its node cache, on a thread of its own)."""

    def start_warming(self) -> None: ...
