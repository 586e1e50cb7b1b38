"""The memory as it stood right after a past tick: the ground every ``as_of`` read stands on.

Record time is exact here because the spine orders every write: a node came at its tick,
a SUPERSEDES edge ended its target's headship at the edge's tick, and what changes after
it is written (a status move, a relation or node an agent deleted) is kept beside the
memory with its tick (store/ops/past.py). So the answer at tick T is reconstructed, not
approximated: nodes made after T are absent, a version superseded after T is still the
head at T, a status moved after T reads as it was, a relation deleted after T is there.

What an operator hard-deleted is gone from every tick: its tombstone count on the spine is
what remains. A store made before this record existed was backfilled from the relations
that still give a status; deletions made before then left nothing to read back.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, cast

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import directors, gates, status
from kenning_encounter.memory.models import EncounterOut, NodeOut, ReEntry
from kenning_encounter.store.ops.graph import walk_back
from kenning_encounter.store.outline import Outline
from kenning_encounter.store.persons import ClaimRecord, Confirmation
from kenning_encounter.store.port import (
    MAX_CHAIN,
    ChainLink,
    ChainSpan,
    GraphStore,
    HeadsAsk,
    ReadTx,
    SearchHit,
    Subgraph,
    TermStatsSnapshot,
)
from kenning_encounter.store.records import (
    WITHHELD_SUCCESSOR,
    EdgeRecord,
    EncounterRecord,
    NodeRecord,
)
from kenning_encounter.textproc import tokenize
from kenning_encounter.textproc_bm25 import query_terms
from kenning_encounter.textproc_time import OffCalendar, utc_instant
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    FRONTIER_STATUSES,
)

AS_OF_HELP = (
    "pass a tick (a whole number such as 42: every write's answer names its tick) or an "
    "ISO-8601 time such as '2026-05-01T12:00:00Z' (read as the writes made by then; "
    "a time without a zone is UTC); omit as_of for the memory as it is now"
)
_TICK = re.compile(r"[+-]?[0-9]+")
_MAX_AS_OF = 64  # characters: a tick has at most 19 digits, an ISO time fewer than 40


@dataclass(frozen=True, slots=True)
class Moment:
    """A past the caller asked for: the tick, and what they wrote to name it."""

    tick: int
    asked: str

    def note(self) -> str:
        named = "" if self.asked == str(self.tick) else f", the writes made by {self.asked}"
        return f"as of tick {self.tick}{named}"


def stamp(moment: datetime) -> str:
    """A time in the form the stores keep their timestamps (UTC, milliseconds, Z)."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def check(as_of: object) -> int | datetime:
    """``as_of`` read without the store: a tick, or a time. Garbage is refused by field."""
    if isinstance(as_of, bool) or not isinstance(as_of, int | str):
        raise InvalidInput("as_of", f"must be a tick or an ISO-8601 time; {AS_OF_HELP}")
    if isinstance(as_of, int):
        tick = as_of
    else:
        raw = as_of.strip()
        if len(raw) > _MAX_AS_OF:  # past any tick or ISO time; int() refuses 4,300 digits
            raise InvalidInput(
                "as_of", f"is {len(raw)} characters, more than any tick or time; {AS_OF_HELP}"
            )
        if not _TICK.fullmatch(raw):
            try:
                return utc_instant(raw)
            except OffCalendar:
                raise InvalidInput(
                    "as_of",
                    f"{raw!r} falls outside the years 1 to 9999 once read in UTC; {AS_OF_HELP}",
                ) from None
            except ValueError:
                raise InvalidInput(
                    "as_of", f"{raw[:60]!r} is neither a tick nor an ISO-8601 time; {AS_OF_HELP}"
                ) from None
        tick = int(raw)
    if tick < 0:
        raise InvalidInput("as_of", f"a tick is 0 or more, not {tick}; {AS_OF_HELP}", value=tick)
    return tick


def moment(tx: ReadTx, as_of: int | str, *, now: datetime | None = None) -> Moment:
    """The tick ``as_of`` names in this memory; a tick or a time still to come is refused."""
    asked = check(as_of)
    if isinstance(asked, datetime):
        current = now or datetime.now(UTC)
        if asked > current:
            raise InvalidInput(
                "as_of",
                f"{stamp(asked)} is in the future (now is {stamp(current)}); the memory has "
                f"no record of it yet. {AS_OF_HELP}",
            )
        return Moment(tx.tick_at(stamp(asked)), stamp(asked))
    # Asked with the erasures: on Neo4j a read with a node cache has both from the
    # synchronisation its first node read makes anyway, so the clock costs no round trip.
    clock, _ = tx.clock_and_erasures()
    if asked > clock:
        raise InvalidInput(
            "as_of",
            f"tick {asked} has not happened: the memory's last write took tick {clock}; pass "
            f"a tick from 0 to {clock}, or omit as_of for now",
            value=asked,
        )
    return Moment(asked, str(asked))


def wall_time(store: GraphStore, as_of: int | str) -> datetime | None:
    """The time a read of the past stands at, for the times it reads relative to a
    moment ("last week" as of then): the time asked, or the stamp of the tick asked (None
    before the first write). An as_of the read would refuse is left for it to refuse."""
    asked = check(as_of)
    if isinstance(asked, datetime):
        return asked
    at = store.read(lambda tx: tx.stamp_at(asked))
    try:
        return utc_instant(at) if at is not None else None
    except ValueError:  # a stamp no write of ours makes: read relative to now instead
        return None


class Past:
    """Reads of the memory as it stood right after ``tick``, inside one read unit.

    It answers the node and relation reads of ``ReadTx`` as of the tick, and hands every
    other read (the spine's, the registries') to the unit it wraps, so the reads of the
    present run unchanged over it (``view``)."""

    def __init__(self, tx: ReadTx, when: Moment) -> None:
        self.tx = tx
        self.moment = when
        self.tick = when.tick
        self._gone_edges: list[EdgeRecord] | None = None
        self._gone_nodes: dict[str, NodeRecord] | None = None
        self._stamp: tuple[str | None] | None = None  # asked once, when first needed
        # Each node's status at the tick where it has moved since (the status its first
        # later move left), for every node asked about: a read asks for a node's moves once.
        self._status_then: dict[str, str | None] = {}
        self._moves_asked: set[str] = set()
        # The SUPERSEDES edges standing now into each revised node asked about, made by
        # the tick: its revision then, unless that one was deleted since (the record's).
        self._revised_by: dict[str, list[EdgeRecord]] = {}
        # Through a read gate: the status each node was recorded with (``_replayed``).
        self._recorded: dict[str, str | None] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.tx, name)

    # --- what was deleted since, as it stood at the tick ------------------------------
    def _gone(self) -> tuple[dict[str, NodeRecord], list[EdgeRecord]]:
        # Read together: a read as of a tick asks for both, and on Neo4j it is one trip.
        if self._gone_nodes is None or self._gone_edges is None:
            nodes, self._gone_edges = self.tx.ended_at(self.tick)
            self._gone_nodes = {n.id: n for n in nodes}
        return self._gone_nodes, self._gone_edges

    def gone_edges(self) -> list[EdgeRecord]:
        return self._gone()[1]

    def gone_nodes(self) -> dict[str, NodeRecord]:
        return self._gone()[0]

    # --- edges ------------------------------------------------------------------------
    def edges_into(self, ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        wanted, kinds = set(ids), set(rels)
        now = [e for e in self.tx.edges_into(list(wanted), list(kinds)) if e.tick <= self.tick]
        then = [e for e in self.gone_edges() if e.target in wanted and e.type in kinds]
        return now + then

    def edges_out_of(self, ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        wanted, kinds = set(ids), set(rels)
        now = [e for e in self.tx.edges_out_of(list(wanted), list(kinds)) if e.tick <= self.tick]
        then = [e for e in self.gone_edges() if e.source in wanted and e.type in kinds]
        return now + then

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        rels = list(AUTHORED_RELATION_TYPES)
        return self.edges_out_of([node_id], rels) + self.edges_into([node_id], rels)

    # --- nodes ------------------------------------------------------------------------
    def _as_then(self, found: dict[str, NodeRecord]) -> dict[str, NodeRecord]:
        """Status and successor as they were at the tick."""
        if not found:
            return {}
        first = self._status_then
        unasked = [i for i in found if i not in self._moves_asked]
        if unasked:
            for move in self.tx.moves_after(unasked, self.tick):  # oldest first
                first.setdefault(move.node, move.before)
            self._moves_asked.update(unasked)
        # A revision standing now is an edge into a node whose successor is set now; one
        # deleted since is in the record. Heads of now need no statement of their own.
        revised = [i for i, n in found.items() if n.superseded_by is not None]
        standing = [e for e in self.gone_edges() if e.type == "SUPERSEDES" and e.target in found]
        unread = [i for i in revised if i not in self._revised_by]
        if unread:
            self._revised_by.update((i, []) for i in unread)
            for e in self.tx.edges_into(unread, ["SUPERSEDES"]):
                kept = self._revised_by.get(e.target)
                if kept is not None and e.tick <= self.tick:
                    kept.append(e)
        standing += [e for i in revised for e in self._revised_by[i]]
        successor = {e.target: e.source for e in standing}
        then = {
            i: replace(
                n,
                status=first.get(i, n.status),
                superseded_by=successor.get(i),
            )
            for i, n in found.items()
        }
        return self._replayed(then)

    def _replayed(self, then: dict[str, NodeRecord]) -> dict[str, NodeRecord]:
        """Through a read gate, the statuses at the tick of the nodes a withheld relation
        moved (memory/gates.py): the status each was recorded with, moved by the relations
        the reader may see that stood then (memory/status.py), as the gate reads the
        present. Only a status a relation could have set can read otherwise."""
        ids = [i for i, n in then.items() if status.moved(n.type, n.status)]
        if not ids or not (gates.withholds(self.tx) or gates.hides_relations(self.tx)):
            return then
        evidence: dict[str, list[EdgeRecord]] = {}
        for e in self.edges_into(ids, status.MOVING):  # the gate meets the withheld ones
            evidence.setdefault(e.target, []).append(e)
        ids = sorted(gates.moved_unseen(self.tx, ids))
        if not ids:
            return then
        unasked = [i for i in ids if i not in self._recorded]
        if unasked:
            self._recorded.update(status.recorded_of(self.tx, {i: then[i].status for i in unasked}))
        out = dict(then)
        for i in ids:
            n = then[i]
            out[i] = replace(
                n, status=status.replayed(n.type, self._recorded[i], evidence.get(i, []))
            )
        return out

    def nodes(self, ids: Iterable[str]) -> dict[str, NodeRecord]:
        wanted = list(dict.fromkeys(ids))
        found = {i: n for i, n in self.tx.get_nodes(wanted).items() if n.tick <= self.tick}
        gone = self.gone_nodes()
        found.update({i: gone[i] for i in wanted if i in gone and i not in found})
        return self._as_then(found)

    def node(self, node_id: str) -> NodeRecord | None:
        return self.nodes([node_id]).get(node_id)

    # --- ReadTx's node and relation reads, as of the tick -----------------------------
    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        return self.nodes(node_ids)

    def get_node(self, node_id: str) -> NodeRecord | None:
        return self.node(node_id)

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        # The holders of now in two statements for every name; only a name whose holder
        # came after the tick is looked for among older versions, one by one.
        wanted = list(dict.fromkeys(names))
        holders = self.tx.head_ids_by_names(wanted)
        now = self.tx.get_nodes(list(dict.fromkeys(holders.values())))
        found = {name: self._holder_then(name, now.get(holders.get(name, ""))) for name in wanted}
        return {name: i for name, i in found.items() if i is not None}

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        return any(e.target == target for e in self.edges_out_of([source], [rel_type]))

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        edges = self.edges_out_of(node_ids, rel_types) + self.edges_into(node_ids, rel_types)
        ids = {e.source for e in edges} | {e.target for e in edges}
        return Subgraph(list(self.nodes(sorted(ids)).values()), edges)

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        # The challenges as they stood; the confirmations as ``confirmations_of`` reads them.
        return self.neighbourhood(node_ids, ["CHALLENGES"]), self.tx.confirmations_of(node_ids)

    def claims_of(self, node_ids: Sequence[str]) -> list[ClaimRecord]:
        # A claim is never changed, only revised by a later one on its pair: the claims
        # made by the tick are the ones then, and the latest of them was in force.
        return [c for c in self.tx.claims_of(node_ids) if c.tick <= self.tick]

    def get_encounter(self, name: str) -> EncounterRecord | None:
        return self._encounter_then(self.tx.get_encounter(name))

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        then = {k: self._encounter_then(e) for k, e in self.tx.get_encounters(names).items()}
        return {k: e for k, e in then.items() if e is not None}

    def _encounter_then(self, e: EncounterRecord | None) -> EncounterRecord | None:
        """An encounter at the tick: not yet opened is absent, sealed or dissolved later is
        still open. (Its tombstones are read as they are now.)"""
        if e is None or e.opened_tick > self.tick:
            return None
        if e.sealed_tick is not None and e.sealed_tick > self.tick:
            e = replace(e, sealed_tick=None, sealed_at=None, summary=None)
        if e.dissolved_at is not None and not self._dissolved_by_then(e):
            e = replace(e, dissolved_tick=None, dissolved_at=None)
        return self._activity_then(e)

    def _activity_then(self, e: EncounterRecord) -> EncounterRecord:
        """Its last activity as of the moment. Only the newest is kept: one later than the
        moment was a write made after it, and the one before is not known, so it reads as
        unknown (the encounter's opening stands in) rather than as a time still to come.
        One sealed or dissolved by then was last active before its end."""
        last = e.last_activity_at
        if last is None or last == e.opened_at or e.sealed_at or e.dissolved_at:
            return e
        then = self.stamp()
        if then is not None and last <= then:
            return e
        return replace(e, last_activity_at=None)

    def _dissolved_by_then(self, e: EncounterRecord) -> bool:
        if e.dissolved_tick is not None:
            return e.dissolved_tick <= self.tick
        # Dissolved before dissolutions kept their tick: placed by its time against the
        # moment's. The dissolution's own write stamped nothing else, so as of that very
        # tick it still reads open; from the next write on, dissolved.
        then = self.stamp()
        return then is not None and e.dissolved_at is not None and e.dissolved_at <= then

    def stamp(self) -> str | None:
        """The time of the moment read: the one asked for, or the tick's own."""
        if self._stamp is None:
            asked = self.moment.asked
            self._stamp = (asked,) if asked != str(self.tick) else (self.tx.stamp_at(self.tick),)
        return self._stamp[0]

    def head_id_by_name(self, name: str) -> str | None:
        """The id that held ``name`` at the tick, as the name registry then had it: a
        name goes to the newest node made with it and stays with that node's chain (an
        older version keeps a name its revision changed), back to the one before when
        that node is deleted."""
        holder = self.tx.head_id_by_name(name)
        return self._holder_then(name, self.tx.get_nodes([holder]).get(holder) if holder else None)

    def _holder_then(self, name: str, now: NodeRecord | None) -> str | None:
        """``head_id_by_name`` at the tick, given the node holding ``name`` now. The name
        as asked and in NFC, the form a write holds names in (store/ops/graph.py)."""
        forms = dict.fromkeys([name, unicodedata.normalize("NFC", name)])
        gone = [n for n in self.gone_nodes().values() if n.name in forms]
        if now is not None and now.tick <= self.tick:
            # No node standing now took the name after it (it would hold it now), so only
            # a node deleted since can be newer: no scan for older versions is needed.
            versions = [now, *gone]
        else:
            named = [n for form in forms for n in self.tx.nodes_named(form)]
            versions = [n for n in named if n.tick <= self.tick] + gone
        newest = max(versions, key=lambda n: (n.tick, n.ord), default=None)
        return newest.id if newest is not None else None

    def chain(self, node_id: str, *, older: int, newer: int) -> ChainSpan:
        """``ReadTx.chain`` at the tick: the line of the SUPERSEDES edges standing then
        (those made by then, and those deleted since), each version as it was then.

        The chain of now through a version is read whole, once per stretch the line of
        then runs along (a version deleted since joins two of them), so the statements
        grow with the deletions along the chain, not with its length."""
        gone = self.gone_nodes()
        back_of: dict[str, EdgeRecord] = {}  # a version's edge to the one it revised
        ahead_of: dict[str, EdgeRecord] = {}  # a version's edge from the one revising it
        for e in self.gone_edges():
            if e.type == "SUPERSEDES":
                back_of[e.source] = e
                ahead_of[e.target] = e
        records: dict[str, NodeRecord] = dict(gone)
        read: set[str] = set()

        def take(start: str) -> None:
            if start in read or start in gone:
                return
            span = self.tx.chain(start, older=MAX_CHAIN, newer=MAX_CHAIN)
            read.add(start)
            if start not in records:  # reached by an edge deleted since: not read yet
                found = self.tx.get_node(start)
                if found is not None:
                    records[start] = found
            for link in [*span.older, *span.newer]:
                read.add(link.node.id)
                records.setdefault(link.node.id, link.node)
                if link.edge.tick <= self.tick:
                    back_of.setdefault(link.edge.source, link.edge)
                    ahead_of.setdefault(link.edge.target, link.edge)

        def walk(edges: dict[str, EdgeRecord], forward: bool) -> list[ChainLink]:
            links: list[ChainLink] = []
            seen, current = {node_id}, node_id
            while len(links) < MAX_CHAIN:
                take(current)
                edge = edges.get(current)
                if edge is None:
                    break
                step = edge.source if forward else edge.target
                if step == WITHHELD_SUCCESSOR:  # revised by a version the gate withholds
                    break
                take(step)
                if step in seen or step not in records:
                    break
                links.append(ChainLink(records[step], edge))
                seen.add(step)
                current = step
            return links

        ahead = walk(ahead_of, forward=True)
        head = ahead[-1].node.id if ahead else node_id
        end = records.get(head)
        if end is not None and self._as_then({head: end})[head].superseded_by == WITHHELD_SUCCESSOR:
            head = WITHHELD_SUCCESSOR  # the newest version shown was revised by one not shown
        whole = ChainSpan(node_id, head, walk(back_of, False))
        span = replace(whole, newer=ahead).window(older, newer)
        then = self._as_then({x.node.id: x.node for x in [*span.older, *span.newer]})
        return replace(
            span,
            older=[ChainLink(then[x.node.id], x.edge) for x in span.older],
            newer=[ChainLink(then[x.node.id], x.edge) for x in span.newer],
        )

    def provenance_from(
        self, node_ids: Sequence[str], rel_types: Sequence[str], depth: int
    ) -> Subgraph:
        """``ReadTx.provenance_from`` at the tick."""
        seen, edges = walk_back(
            node_ids, lambda frontier: self.edges_into(frontier, rel_types), depth
        )
        return Subgraph(list(self.nodes(sorted(seen)).values()), edges)

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        return [
            (e.target, e.revision_why or "") for e in self.edges_out_of([node_id], ["SUPERSEDES"])
        ]

    def of_type(self, node_type: str) -> list[NodeRecord]:
        """Every node of a type standing at the tick, newest first."""
        made = {n.id: n for n in self.tx.nodes_upto(node_type, self.tick)}
        made.update({i: n for i, n in self.gone_nodes().items() if n.type == node_type})
        return sorted(self._as_then(made).values(), key=lambda n: (-n.tick, -n.ord))

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        wanted = set(statuses)
        return [n for n in self.of_type(node_type) if n.is_head and n.status in wanted][:limit]

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        return [n for n in self.of_type(node_type) if n.is_head][:limit]

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        return [a.asked_of(self) for a in asks]

    def provenance(self, node_id: str, rels: Sequence[str], depth: int) -> Subgraph:
        """``ReadTx.provenance`` at the tick: incoming ``rels`` walked ``depth`` hops back."""
        return self.provenance_from([node_id], rels, depth)

    def authored_graph(self) -> Subgraph:
        """Every node and relation standing at the tick."""
        return Subgraph(self._nodes(), self._standing(self.tx.authored_graph().edges))

    def authored_outline(self) -> Outline:
        """``authored_graph`` at the tick, its nodes outlined (handed on, it would be
        the present's): orient's input."""
        nodes = [n.outline() for n in self._nodes()]
        return Outline.of_records(nodes, self._standing(self.tx.authored_outline().edge_records()))

    def _nodes(self) -> list[NodeRecord]:
        return [n for t in AUTHORED_NODE_TYPES for n in self.of_type(t)]

    def _standing(self, present: list[EdgeRecord]) -> list[EdgeRecord]:
        # An edge standing now stood at the tick exactly when it was made by then.
        return [e for e in present if e.tick <= self.tick] + self.gone_edges()

    def gone_matching(self, text: str, types: Sequence[str] | None) -> list[tuple[NodeRecord, int]]:
        """Nodes deleted since the tick whose words meet the query's, as the text index
        would have met them (the same tokenizer, any term): with how many terms met."""
        terms = set(query_terms(text))
        out: list[tuple[NodeRecord, int]] = []
        for node in self.gone_nodes().values():
            if types and node.type not in types:
                continue
            shared = len(terms & set(tokenize(f"{node.name}\n{node.description}")))
            if shared:
                out.append((node, shared))
        return out


def view(tx: ReadTx, as_of: int | str | None) -> ReadTx:
    """``tx`` itself for the present, else the memory as it stood at ``as_of``."""
    if as_of is None:
        return tx
    # Past answers every read of ReadTx: its own as of the tick, the rest by delegation.
    return cast(ReadTx, Past(tx, moment(tx, as_of)))


def moment_of(tx: ReadTx) -> Moment | None:
    """The past a view reads, or None for the present."""
    return tx.moment if isinstance(tx, Past) else None


_AS_OF_MAX = 1_000  # index hits read at most for a past search: versions of every tick compete


def search_hits(
    store: GraphStore,
    as_of: int | str,
    words: str,
    *,
    types: Sequence[str] | None,
    include_superseded: bool,
    limit: int,
    hidden_loci: frozenset[str] = frozenset(),
) -> tuple[list[SearchHit], dict[str, NodeRecord], Moment]:
    """A search's hits and nodes as of a tick: the index's matches among every version,
    kept when they stood at the tick (heads then, unless superseded ones are asked for),
    and the nodes deleted since whose words meet the query, ranked after them. The index
    is read a few hits beyond ``limit`` first, and further only when too few stood then.
    Scores are BM25 by the caller's statistics of today's memory (memory/reads.py
    ``rescored``), not the index's own. A ``hidden_loci`` session's nodes are none of
    them, and count in none of those statistics."""
    from kenning_encounter.memory.reads import rescored

    first = min(_AS_OF_MAX, max(limit * 3, 30))

    def work(
        tx: ReadTx, hits: list[SearchHit], stats_of: Callable[[], TermStatsSnapshot]
    ) -> tuple[list[SearchHit], dict[str, NodeRecord], Moment]:
        past = Past(tx, moment(tx, as_of))
        fetch = first
        while True:
            nodes = past.nodes([h.id for h in hits])
            kept = [
                h for h in hits if h.id in nodes and (include_superseded or nodes[h.id].is_head)
            ]
            if len(kept) >= limit or len(hits) < fetch or fetch >= _AS_OF_MAX:
                break
            fetch = min(_AS_OF_MAX, fetch * 4)
            hits = store.fulltext(
                words, types=types, heads_only=False, limit=fetch, hidden_loci=hidden_loci
            )
        read = nodes  # every kept hit's node, read above
        # The statistics in the search's own read: on Neo4j they ride with its statement.
        kept = rescored(words, kept, stats_of, lambda ids: {i: read[i] for i in ids})
        gone = [
            (n, shared)
            for n, shared in past.gone_matching(words, types)
            if n.locus not in hidden_loci
        ]
        if gone:
            nodes.update(past.nodes([n.id for n, _ in gone]))
            floor = min((h.score for h in kept), default=1.0)
            terms = max(1, len(set(tokenize(words))))
            kept += [
                SearchHit(n.id, floor * shared / (terms + 1))
                for n, shared in gone
                if include_superseded or nodes[n.id].is_head
            ]
        return kept[:limit], nodes, past.moment

    return store.search_read(
        words, work, types=types, heads_only=False, limit=first, hidden_loci=hidden_loci
    )


_PREVIEW = 160  # as the re-entry payload of the present cuts a description


def _shown(nodes: Sequence[NodeRecord], hidden: frozenset[str]) -> list[NodeOut]:
    out = [NodeOut.of(n) for n in nodes if n.locus not in hidden]
    for n in out:
        if len(n.description) > _PREVIEW:
            n.description = n.description[: _PREVIEW - 1].rstrip() + "…"
    return out


def reentry_then(
    store: GraphStore,
    entry: ReEntry,
    session: str,
    then: Moment,
    *,
    hidden: frozenset[str] = frozenset(),
) -> ReEntry:
    """The re-entry payload's lists as the memory stood at a past tick: the sessions,
    open questions, live hypotheses, recent concepts and unsealed encounters of then.
    The encounter just opened is the present's; the lists are the past's."""
    from kenning_encounter.memory.spine import REENTRY_LIMIT

    def work(tx: ReadTx) -> dict[str, Any]:
        past = Past(tx, then)
        every = [e.name for e in tx.encounters(limit=1_000_000)]
        opened = sorted(past.get_encounters(every).values(), key=lambda e: -e.opened_tick)
        recent = [e for e in opened[:REENTRY_LIMIT] if e.locus not in hidden]
        unsealed = [
            e
            for e in opened
            if e.sealed_at is None and e.locus != session and e.locus not in hidden
        ]
        hypotheses = FRONTIER_STATUSES["Hypothesis"] + ("supported",)
        sessions = [EncounterOut.of(e, session) for e in recent]
        left_open = [EncounterOut.of(e, session) for e in unsealed[:50]]
        asked = past.heads_many(
            [
                HeadsAsk("Question", REENTRY_LIMIT, FRONTIER_STATUSES["Question"]),
                HeadsAsk("Hypothesis", REENTRY_LIMIT, hypotheses),
                HeadsAsk("Concept", REENTRY_LIMIT),
            ]
        )
        questions, live, concepts = (_shown(heads, hidden) for heads in asked)
        # A locus's director never changes once set, so today's answer is then's (#17).
        directors.fill_directors(
            tx,
            [*questions, *live, *concepts],
            zip(
                [*sessions, *left_open],
                [*(e.locus for e in recent), *(e.locus for e in unsealed[:50])],
                strict=True,
            ),
        )
        return {
            "recent_sessions": sessions,
            "open_questions": questions,
            "live_hypotheses": live,
            "recent_concepts": concepts,
            "unsealed": left_open,
            "as_of": then.tick,
        }

    return entry.model_copy(update=store.read(work))
