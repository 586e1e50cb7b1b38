"""Classification gates: the one place a read leaves out what its caller may not see.

A node whose classification names a class the server does not grant (config ``grant``,
or ``reader_grant`` on the reader face) is *withheld*. The gate sits at the store port:
``GatedStore`` wraps the memory's store, and every read unit of work is handed a
``GatedReads`` transaction that answers as if withheld nodes were not there (no record,
no id, no edge to them, no hit). Every service reads through ``Memory.store``, so search,
name lookups, provenance, chain histories, conflicts, orient and the gds projections,
the re-entry payload, infusion (both channels), the inspector and ``kndl export`` pass
through here without a check of their own; a new read tool does too. A dump
(memory/dump.py) reads its pages whole and holds back the same nodes by their records.

Write units are handed the store's own transaction: integrity rules (a name is taken, a
source is bookmarked) must see the whole memory, and a write returns only what it wrote.
``read_cypher`` cannot be filtered after the fact (a projection of a property carries no
id), so the withheld classes go to the backend, which keeps those nodes out of what the
query can reach (store/embedded/sandbox.py prunes its snapshot; the Neo4j store refuses).

Two things a shown node carries were made by the nodes beside it, and are read here as the
caller's memory gives them, in one place for every read:

- A version revised by a withheld one is superseded, whoever may see its successor: it is
  no head of anything (search, lookups, re-entry, orient, conflicts, infusion, as_of), and
  where it is shown it says so by ``superseded_by`` = ``WITHHELD_SUCCESSOR``, which names,
  counts and describes nothing (no id, no reason, no author). A chain read through it
  ends there, its head that same word. A name the withheld version holds is, to this
  caller, the name of the newest version it may see that carries it, as if the withheld
  one had never been made.
- A status a relation moved (a question resolved, a hypothesis supported or challenged) is
  the replay of the relations the caller may see (memory/status.py): a withheld challenge
  moves no shown hypothesis, and a list asked by status (open questions) lists by that.

That second reading costs statements (the relations into each such node), and most
memories never hold a node of a class their readers are not granted: the default grant
is empty, so every default server reads through a gate. So a read first asks the store
which classes the memory's nodes have ever carried (``classes_used``: kept with the
clock, read by the statement a read or write begins with anyway, never fewer than
there are) and, when it withholds none of them, reads every status as stored, which is
then the replay of evidence it may all see. The answer is asked afresh by each read, so
a node classified by another server counts from the next read on. Within a read, a
write that commits while it runs is heard too: on Neo4j a node fetched after the clock
the answer stands at has it asked again (store/neo4j/tx.py ``classes_used``), the
embedded store's reads stand on one snapshot, and a read that meets a withheld node
does the work from then on whatever it was told.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from kenning_encounter.memory import status
from kenning_encounter.memory.classification import split
from kenning_encounter.store import uses
from kenning_encounter.store.outline import OUTSIDE, Outline, as_numpy
from kenning_encounter.store.persons import Confirmation
from kenning_encounter.store.port import (
    MAX_CHAIN,
    ChainSpan,
    CypherResult,
    GraphStore,
    HeadsAsk,
    ReadTx,
    SearchHit,
    Subgraph,
    TermStatsSnapshot,
    UseRecord,
    WriteTx,
)
from kenning_encounter.store.records import (
    WITHHELD_SUCCESSOR,
    EdgeRecord,
    EncounterRecord,
    NodeRecord,
)
from kenning_encounter.vocabulary import CLASSIFICATIONS

T = TypeVar("T")
# A node's standing as a reader hiding sessions reads it: used_at, used_marks, pinned.
Standing = tuple[str | None, str | None, str | None]
_PAGED = ("dump_", "load_marker")
_MORE = 4  # how many times a short page is asked again, larger, before it is given as is


class Gate:
    """Which classes a caller may not see; a node carrying any of them is withheld."""

    def __init__(self, granted: Iterable[str]) -> None:
        self.granted = frozenset(granted)
        self.withheld = frozenset(CLASSIFICATIONS) - self.granted

    @property
    def open(self) -> bool:
        return not self.withheld

    def hides(self, node: NodeRecord | None) -> bool:
        if node is None or self.open:
            return False
        mark = node.props.get("classification")
        return bool(mark) and bool(split(mark) & self.withheld)


def _if_shown(edge: EdgeRecord, shown: set[str]) -> EdgeRecord | None:
    """The relation if both its ends are among ``shown``."""
    return edge if edge.source in shown and edge.target in shown else None


class GatedReads:
    """A read transaction with the withheld nodes left out of every answer."""

    def __init__(self, tx: ReadTx, gate: Gate) -> None:
        self._tx = tx
        self._gate = gate
        # id -> shown, for the nodes this read met: a version's successor is usually met
        # in the same walk, so the cut of a chain (``_cut``) rarely asks the store again.
        self._met: dict[str, bool] = {}
        # The nodes whose status was checked against their evidence, and the status each
        # one a withheld relation moved reads as here.
        self._checked: set[str] = set()
        self._restated: dict[str, str | None] = {}
        # The shown nodes a relation from a withheld node (standing, or deleted since)
        # runs into, of a kind that moves a status: met by ``_restate`` and ``_unnamed``.
        self._moved_unseen: set[str] = set()
        # Whether the memory ever held a node this gate withholds; None until asked.
        self._in_use: bool | None = None

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._tx, name)
        if name.startswith(_PAGED) or not callable(found):
            # An export's pages: memory/dump.py gates the records (a page cut short
            # here would end the export early).
            return found

        def filtered(*args: Any, **kwargs: Any) -> Any:
            return self._filter(found(*args, **kwargs))

        # A read added to the port without a method here still answers gated, as far
        # as its records show it: nodes, edges, subgraphs and containers of them.
        return filtered

    def _filter(self, value: Any) -> Any:
        if isinstance(value, EncounterRecord):
            return self._tombs(value)
        if isinstance(value, NodeRecord):
            kept = self._keep([value])
            return kept[0] if kept else None
        if isinstance(value, Subgraph):
            return self._sub(value)
        if isinstance(value, EdgeRecord):
            return _if_shown(value, self._shown([value.source, value.target]))
        if isinstance(value, dict):
            items = cast(dict[Any, Any], value)
            self._meet(list(items.values()))
            kept = {k: self._filter(v) for k, v in items.items()}
            return {k: v for k, v in kept.items() if v is not None or items[k] is None}
        if isinstance(value, list | tuple):
            seq = cast(Sequence[Any], value)
            # The ends of every relation in the list asked about at once: one question
            # per relation was one statement per relation on Neo4j.
            ends = {x for v in seq if isinstance(v, EdgeRecord) for x in (v.source, v.target)}
            shown = self._shown(ends) if ends else set[str]()
            self._meet(seq)
            kept_list = [
                _if_shown(v, shown) if isinstance(v, EdgeRecord) else self._filter(v) for v in seq
            ]
            out = [v for v, raw in zip(kept_list, seq, strict=True) if v is not None or raw is None]
            return out if isinstance(value, list) else tuple(out)
        return value

    # --- helpers -----------------------------------------------------------------
    def withheld_in_use(self) -> bool:
        """Whether a node of a class this gate withholds was ever in the memory: asked of
        the store only where the answer spares the read some work, and asked again each
        time until it is yes (the store answers from what its read has already asked)."""
        if not self._in_use:
            self._in_use = bool(self._tx.classes_used() & self._gate.withheld)
        return self._in_use

    def classified(self, node_ids: Sequence[str]) -> dict[str, str]:
        # The marks of what the caller may see; a withheld node is not there at all.
        withheld = self._gate.withheld
        return {i: c for i, c in self._tx.classified(node_ids).items() if not split(c) & withheld}

    def _shown(self, ids: Iterable[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        marks = self._tx.classified(wanted)
        withheld = self._gate.withheld
        shown = {i for i in wanted if not split(marks.get(i)) & withheld}
        if len(shown) < len(wanted):
            self._in_use = True  # met one: made after the read asked, if it said none
        return shown

    def _shown_met(self, ids: Iterable[str]) -> set[str]:
        """``_shown``, asking the store only about the ids this read has not met."""
        wanted = list(dict.fromkeys(ids))
        unmet = [i for i in wanted if i not in self._met]
        if unmet:
            shown = self._shown(unmet)
            self._met.update((i, i in shown) for i in unmet)
        return {i for i in wanted if self._met[i]}

    def _keep(self, nodes: Sequence[NodeRecord]) -> list[NodeRecord]:
        self._met.update((n.id, not self._gate.hides(n)) for n in nodes)
        kept = [n for n in nodes if self._met[n.id]]
        if len(kept) < len(nodes):
            self._in_use = True
        return self._restate(self._cut(self._used(kept)))

    def _used(self, nodes: list[NodeRecord]) -> list[NodeRecord]:
        """``nodes`` with the ``used_at`` the uses shown give (store/uses.py): read off
        the record, so nothing is asked, and nothing done where no classified node ever
        linked one of them."""
        if not any(n.used_marks is not None for n in nodes):
            return nodes
        withheld = self._gate.withheld
        return [uses.restated(n, withheld) for n in nodes]

    def _restate(self, nodes: list[NodeRecord]) -> list[NodeRecord]:
        """``nodes`` with each status a withheld relation moved read as the relations
        shown give it (memory/status.py). Only a status a relation could have set is
        asked about: one statement for the relations into them, at most two more when
        some of those come from nodes not met yet or from withheld ones."""
        asked = [n for n in nodes if n.id not in self._checked and status.moved(n.type, n.status)]
        if asked and self.withheld_in_use():
            ids = list(dict.fromkeys(n.id for n in asked))
            self._checked.update(ids)
            evidence = self._tx.edges_into(ids, status.MOVING)
            shown = self._shown_met({e.source for e in evidence})
            unseen = sorted({e.target for e in evidence if e.source not in shown})
            self._moved_unseen.update(unseen)
            if unseen:
                by_id = {n.id: n for n in asked}
                starts = status.recorded_of(self._tx, {i: by_id[i].status for i in unseen})
                for i in unseen:
                    seen = [e for e in evidence if e.target == i and e.source in shown]
                    self._restated[i] = status.replayed(by_id[i].type, starts[i], seen)
        if not any(n.id in self._restated for n in nodes):
            return nodes
        return [
            replace(n, status=self._restated[n.id]) if n.id in self._restated else n for n in nodes
        ]

    def _meet(self, values: Sequence[Any]) -> None:
        """The nodes among ``values`` met, and their successors asked about at once: the
        records of a list are then cut one by one without a question each."""
        self._keep([v for v in values if isinstance(v, NodeRecord)])

    def _cut(self, nodes: list[NodeRecord]) -> list[NodeRecord]:
        """``nodes`` as if the withheld versions were not there: one revised by a withheld
        version is still superseded (no head), and names no successor (as ``chain`` ends
        a walk there)."""
        after = [
            n.superseded_by
            for n in nodes
            if n.superseded_by is not None and n.superseded_by != WITHHELD_SUCCESSOR
        ]
        shown = self._shown_met(after)
        if len(shown) == len(set(after)):
            return nodes
        return [
            n
            if n.superseded_by is None or n.superseded_by in shown
            else replace(n, superseded_by=WITHHELD_SUCCESSOR)
            for n in nodes
        ]

    def _paged(
        self,
        fetch: Callable[[int], list[NodeRecord]],
        limit: int,
        first: list[NodeRecord] | None = None,
        statuses: Sequence[str] | None = None,
    ) -> list[NodeRecord]:
        """Up to ``limit`` shown nodes of a list, asked larger while the gate cuts it
        short; ``first``: its first page (``limit`` asked), read already. ``statuses``:
        only the nodes whose status, as shown, is one of them (the list asked of the
        store holds more: ``status.widened``)."""

        def kept_of(got: list[NodeRecord]) -> list[NodeRecord]:
            kept = self._keep(got)
            return kept if statuses is None else [n for n in kept if n.status in statuses]

        return _paged(fetch, limit, kept_of, first)

    def _sub(self, sub: Subgraph) -> Subgraph:
        nodes = self._keep(sub.nodes)
        kept = {n.id for n in nodes}
        ends = {e.source for e in sub.edges} | {e.target for e in sub.edges}
        shown = kept | self._shown(ends - kept - {n.id for n in sub.nodes})
        edges = [e for e in sub.edges if e.source in shown and e.target in shown]
        return Subgraph(nodes=nodes, edges=edges)

    def withheld_among(self, ids: Sequence[str]) -> set[str]:
        wanted = list(dict.fromkeys(ids))
        return {i for i, n in self._tx.get_nodes(wanted).items() if self._gate.hides(n)}

    # --- the spine: process nodes carry no classification, what they list does -----
    def clock(self) -> int:
        return self._tx.clock()

    def erasures(self) -> int:
        return self._tx.erasures()

    def clock_and_erasures(self) -> tuple[int, int]:
        return self._tx.clock_and_erasures()

    def work_spans(
        self, since: str, hidden_loci: frozenset[str] = frozenset()
    ) -> list[tuple[str, str]]:
        return self._tx.work_spans(since, hidden_loci)

    def _tombs(self, encounter: EncounterRecord) -> EncounterRecord:
        """The encounter with the tombstones of the nodes the caller could have seen."""
        return uses.tombstones_seen(encounter, self._gate.withheld)

    def get_encounter(self, name: str) -> EncounterRecord | None:
        found = self._tx.get_encounter(name)
        return found if found is None else self._tombs(found)

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        return {k: self._tombs(e) for k, e in self._tx.get_encounters(names).items()}

    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        found = self._tx.open_encounter_of(locus)
        return found if found is None else self._tombs(found)

    def last_encounter_of(self, locus: str) -> EncounterRecord | None:
        found = self._tx.last_encounter_of(locus)
        return found if found is None else self._tombs(found)

    def latest_encounter(self) -> EncounterRecord | None:
        found = self._tx.latest_encounter()
        return found if found is None else self._tombs(found)

    def encounters(
        self,
        *,
        unsealed_only: bool = False,
        limit: int = 20,
        exclude_locus: str | None = None,
        offset: int = 0,
    ) -> list[EncounterRecord]:
        found = self._tx.encounters(
            unsealed_only=unsealed_only, limit=limit, exclude_locus=exclude_locus, offset=offset
        )
        return [self._tombs(e) for e in found]

    def loci(self) -> list[str]:
        return self._tx.loci()

    def spine(self) -> list[tuple[str, str, str]]:
        return self._tx.spine()

    def recorded_ids(self, encounter: str) -> list[str]:
        ids = self._tx.recorded_ids(encounter)
        shown = self._shown(ids)
        return [i for i in ids if i in shown]

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        members = self._tx.encounter_members(encounters)
        shown = self._shown(i for ids in members.values() for i in ids)
        return {e: [i for i in ids if i in shown] for e, ids in members.items()}

    def encounter_nodes(self, encounters: Sequence[str], limit: int) -> list[str]:
        ask = limit
        for _ in range(_MORE):
            got = self._tx.encounter_nodes(encounters, ask)
            shown = self._shown(got)
            kept = [i for i in got if i in shown]
            if len(kept) >= limit or len(got) < ask:
                return kept[:limit]
            ask *= 4
        got = self._tx.encounter_nodes(encounters, ask)
        shown = self._shown(got)
        return [i for i in got if i in shown][:limit]

    # --- nodes -----------------------------------------------------------------------
    def get_node(self, node_id: str) -> NodeRecord | None:
        node = self._tx.get_node(node_id)
        kept = self._keep([node]) if node is not None else []
        return kept[0] if kept else None

    def get_nodes(self, node_ids: Sequence[str]) -> dict[str, NodeRecord]:
        return {n.id: n for n in self._keep(list(self._tx.get_nodes(node_ids).values()))}

    def head_id_by_name(self, name: str) -> str | None:
        return self.head_ids_by_names([name]).get(name)

    def head_ids_by_names(self, names: Sequence[str]) -> dict[str, str]:
        # A name a withheld node holds is held, here, as the name registry would hold it
        # had that node never been made: by the newest version shown that carries it
        # (asof.Past reads a past the same way, so now and as_of now agree). The registry
        # gives a name to the newest node made with it and keeps it with that node's chain
        # (a revision's new name leaves the old one with the version it revised), so that
        # version is in the withheld holder's chain: walked by id, where every version of
        # every type with the name is a scan of each type's nodes.
        found = self._tx.head_ids_by_names(names)
        shown = self._shown_met(found.values())
        out = {name: i for name, i in found.items() if i in shown}
        for name in (n for n in dict.fromkeys(names) if n in found and n not in out):
            forms = dict.fromkeys([name, unicodedata.normalize("NFC", name)])
            back = self._tx.chain(found[name], older=MAX_CHAIN, newer=0)
            named = self._keep([x.node for x in back.older if x.node.name in forms])
            if not named and back.older_left:  # longer than a walk: every version named
                named = self._keep([n for form in forms for n in self._tx.nodes_named(form)])
            newest = max(named, key=lambda n: (n.tick, n.ord), default=None)
            if newest is not None:
                out[name] = newest.id
        return out

    def component_id_by_source(self, kind: str, label: str, key: str) -> str | None:
        found = self._tx.component_id_by_source(kind, label, key)
        return found if found is None or found in self._shown([found]) else None

    def predecessors(self, node_id: str) -> list[tuple[str, str]]:
        got = self._tx.predecessors(node_id)
        shown = self._shown(i for i, _ in got)
        return [(i, why) for i, why in got if i in shown]

    def chain(self, node_id: str, *, older: int, newer: int) -> ChainSpan:
        # A withheld version ends a walk where it stands, as if the chain ended there. A
        # window without one says nothing of what lies beyond it: that side is read whole.
        span = self._tx.chain(node_id, older=older, newer=newer)

        def keep(node: NodeRecord) -> bool:
            return not self._gate.hides(node)

        back = MAX_CHAIN if span.older_left and all(keep(x.node) for x in span.older) else older
        ahead = MAX_CHAIN if span.newer_left and all(keep(x.node) for x in span.newer) else newer
        if (back, ahead) != (older, newer):
            span = self._tx.chain(node_id, older=back, newer=ahead)
        self._met.update((link.node.id, keep(link.node)) for link in [*span.older, *span.newer])
        withheld_ahead = not all(keep(x.node) for x in span.newer)
        span = span.window(older, newer, keep)
        if withheld_ahead:  # revised by a version not shown: the chain's head is not either
            span = replace(span, head=WITHHELD_SUCCESSOR)
        links = [*span.older, *span.newer]
        cut = self._keep([link.node for link in links])
        if all(a is b.node for a, b in zip(cut, links, strict=True)):
            return span
        moved = [replace(link, node=node) for link, node in zip(links, cut, strict=True)]
        return replace(span, older=moved[: len(span.older)], newer=moved[len(span.older) :])

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        # Asked of the store with every status a withheld relation could have moved one of
        # ``statuses`` to, and kept by the status shown.
        wide = status.widened(node_type, statuses) if self.withheld_in_use() else statuses
        return self._paged(
            lambda n: self._tx.heads_by_status(node_type, wide, n), limit, statuses=statuses
        )

    def recent_heads(self, node_type: str, limit: int) -> list[NodeRecord]:
        return self._paged(lambda n: self._tx.recent_heads(node_type, n), limit)

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        # Asked together; a list the gate cut short pages on by itself, from its second page.
        # A list by status is asked wider and kept by the status shown (heads_by_status).
        in_use = any(a.statuses is not None for a in asks) and self.withheld_in_use()
        wide = [
            a
            if a.statuses is None or not in_use
            else HeadsAsk(a.type, a.limit, status.widened(a.type, a.statuses))
            for a in asks
        ]
        return [
            self._paged(
                lambda n, a=ask: HeadsAsk(a.type, n, a.statuses).asked_of(self._tx),
                ask.limit,
                first=got,
                statuses=asked.statuses,
            )
            for asked, ask, got in zip(asks, wide, self._tx.heads_many(wide), strict=True)
        ]

    # --- relations -----------------------------------------------------------------
    def _unnamed(self, edges: Sequence[EdgeRecord]) -> list[EdgeRecord]:
        """The relations between shown nodes, and of a revision of a shown version by a
        withheld one, the fact and its tick alone: its source ``WITHHELD_SUCCESSOR``, no
        encounter, no reason. What a read of the past needs to know a version was revised
        then (asof.Past), and no more."""
        shown = self._shown_met({x for e in edges for x in (e.source, e.target)})
        out: list[EdgeRecord] = []
        for e in edges:
            if e.source in shown and e.target in shown:
                out.append(e)
            elif e.type == "SUPERSEDES" and e.target in shown:
                out.append(EdgeRecord(WITHHELD_SUCCESSOR, e.target, e.type, e.tick))
            elif e.type in status.MOVING and e.target in shown:
                self._moved_unseen.add(e.target)
        return out

    def moved_unseen(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` this read met a withheld relation into that moves a status (or
        one a hidden session wrote, read through ``HidingReads``)."""
        ids = set(ids)
        found = self._moved_unseen.intersection(ids)
        return found | self._tx.moved_unseen(ids) if isinstance(self._tx, HidingReads) else found

    def hides_relations(self) -> bool:
        """Whether this read leaves out relations a hidden session wrote (``HidingReads``)."""
        return isinstance(self._tx, HidingReads) and self._tx.hides_relations()

    def edges_into(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        return self._unnamed(self._tx.edges_into(node_ids, rels))

    def edges_out_of(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        shown = self._shown_met(node_ids)
        return self._unnamed(self._tx.edges_out_of([i for i in node_ids if i in shown], rels))

    def ended_at(self, tick: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        # A node deleted since is asked about by its record: the store's classes know
        # only the nodes it holds, and a deleted withheld node is withheld still.
        nodes, edges = self._tx.ended_at(tick)
        kept = self._keep(nodes)
        return kept, self._unnamed(edges)

    def ended_nodes_at(self, tick: int) -> list[NodeRecord]:
        return self.ended_at(tick)[0]

    def ended_edges_at(self, tick: int) -> list[EdgeRecord]:
        return self.ended_at(tick)[1]

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        if node_id not in self._shown([node_id]):
            return []
        edges = self._tx.edges_of(node_id)
        shown = self._shown({e.source for e in edges} | {e.target for e in edges})
        return [e for e in edges if e.source in shown and e.target in shown]

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        if len(self._shown([source, target])) < len({source, target}):
            return False
        return self._tx.edge_exists(source, target, rel_type)

    def provenance(self, node_id: str, rel_types: Sequence[str], depth: int) -> Subgraph:
        # A withheld node is no step of a walk either: what lies behind it stays unseen.
        if node_id not in self._shown([node_id]):
            return Subgraph()
        return _reachable(self._sub(self._tx.provenance(node_id, rel_types, depth)), [node_id])

    def provenance_from(
        self, node_ids: Sequence[str], rel_types: Sequence[str], depth: int
    ) -> Subgraph:
        shown = self._shown(node_ids)
        starts = [i for i in dict.fromkeys(node_ids) if i in shown]
        if not starts:
            return Subgraph()
        return _reachable(self._sub(self._tx.provenance_from(starts, rel_types, depth)), starts)

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        shown = self._shown(node_ids)
        return self._sub(self._tx.neighbourhood([i for i in node_ids if i in shown], rel_types))

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        shown = self._shown(node_ids)
        challenges, confirmations = self._tx.tension_of([i for i in node_ids if i in shown])
        return self._sub(challenges), confirmations

    def authored_graph(self) -> Subgraph:
        # Every relation is here: only the nodes one from a withheld node moves a status of
        # are asked about again (``_restate``), not every node with such a status.
        whole = self._tx.authored_graph()
        hidden = {n.id for n in whole.nodes if self._gate.hides(n)}
        moved = {e.target for e in whole.edges if e.type in status.MOVING and e.source in hidden}
        self._checked.update(n.id for n in whole.nodes if n.id not in moved)
        return self._sub(whole)

    def authored_outline(self) -> Outline:
        # Every relation end is a node of the outline, so what is kept is kept whole.
        # An outline's props are its classification alone: most nodes have none to split.
        hides = self._gate.hides
        whole = self._tx.authored_outline()
        outline = whole.keeping(lambda n: not (n.props and hides(n)))
        used = self._used(outline.nodes)  # the same list where no node is marked
        if used is not outline.nodes:
            outline = Outline(used, outline.relations)
        if outline.nodes is whole.nodes:
            return whole
        # What the withheld nodes made of those kept: a successor, a status moved.
        kept = {n.id for n in outline.nodes}
        self._met.update((n.id, n.id in kept) for n in whole.nodes)
        moved = _moved_by_unseen(whole, kept)
        restated = {n.id: n for n in self._restate([n for n in outline.nodes if n.id in moved])}
        nodes = [
            restated.get(n.id, n)
            if n.superseded_by is None or n.superseded_by in kept
            else replace(restated.get(n.id, n), superseded_by=WITHHELD_SUCCESSOR)
            for n in outline.nodes
        ]
        return Outline(nodes, outline.relations)


def _moved_by_unseen(whole: Outline, kept: set[str]) -> set[str]:
    """The kept nodes of ``whole`` a relation that moves a status runs into from a node
    not kept: those whose status the gate reads again."""
    import numpy as np  # as Outline.keeping: only when something is withheld

    rel = whole.relations
    codes = [i for i, name in enumerate(rel.names) if name in status.MOVING]
    if not codes or not len(rel):
        return set()
    source, target = as_numpy(rel.source), as_numpy(rel.target)
    here = np.fromiter((n.id in kept for n in whole.nodes), dtype=np.bool_, count=len(whole.nodes))
    pick = np.isin(as_numpy(rel.kind), codes) & (source != OUTSIDE) & (target != OUTSIDE)
    pick[pick] = ~here[source[pick]] & here[target[pick]]
    return {whole.nodes[t].id for t in target[pick].tolist()}


def _paged(
    fetch: Callable[[int], list[NodeRecord]],
    limit: int,
    kept_of: Callable[[list[NodeRecord]], list[NodeRecord]],
    first: list[NodeRecord] | None = None,
) -> list[NodeRecord]:
    """Up to ``limit`` of a list's nodes ``kept_of`` keeps, asked larger (``_MORE`` times)
    while it cuts the list short; ``first``: its first page (``limit`` asked), read already."""
    ask = limit
    for _ in range(_MORE):
        got = fetch(ask) if first is None else first
        first = None
        kept = kept_of(got)
        if len(kept) >= limit or len(got) < ask:
            return kept[:limit]
        ask *= 4
    return kept_of(fetch(ask))[:limit]


def _reachable(sub: Subgraph, starts: Sequence[str]) -> Subgraph:
    """What of a provenance walk still reaches ``starts`` once withheld nodes are gone."""
    into: dict[str, list[EdgeRecord]] = {}
    for e in sub.edges:
        into.setdefault(e.target, []).append(e)
    seen, todo = set(starts), list(starts)
    while todo:
        for e in into.get(todo.pop(), []):
            if e.source not in seen:
                seen.add(e.source)
                todo.append(e.source)
    return Subgraph(
        nodes=[n for n in sub.nodes if n.id in seen],
        edges=[e for e in sub.edges if e.source in seen and e.target in seen],
    )


class HiddenStanding:
    """What a reader hiding sessions worked out of their uses (``HidingReads``), kept
    between its reads while the memory stands still: keyed, as the work time is
    (memory/activation.py ``WorkTime``), by the memory's clock and erasure count, which
    every write moves (another replica's too). Holds the hidden sessions' reach, and the
    standing of each node it read again, none of the others."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, int] | None = None
        self._reach: uses.Reach | None = None
        # id -> the node's standing restated (used_at, used_marks, pinned), or None where
        # it stands as stored.
        self._standing: dict[str, Standing | None] = {}
        # id -> the status the relations shown give a node whose status a relation moved
        # (memory/status.py), its stored one where no hidden session's relation did.
        self._statuses: dict[str, str | None] = {}
        # The relations the hidden sessions wrote, as the outline leaves them out.
        self._written: list[EdgeRecord] | None = None

    def at(self, key: tuple[int, int]) -> tuple[uses.Reach | None, dict[str, Standing | None]]:
        with self._lock:
            if key != self._key:
                self._key, self._reach, self._standing, self._statuses = key, None, {}, {}
                self._written = None
            return self._reach, self._standing

    def written(self, key: tuple[int, int]) -> list[EdgeRecord] | None:
        with self._lock:
            return self._written if key == self._key else None

    def keep_written(self, key: tuple[int, int], written: list[EdgeRecord]) -> None:
        with self._lock:
            if key == self._key:
                self._written = written

    def statuses(self, key: tuple[int, int]) -> dict[str, str | None]:
        with self._lock:
            # Never changed in place (``keep_statuses`` replaces it): handed out as it is.
            return self._statuses if key == self._key else {}

    def keep_statuses(self, key: tuple[int, int], found: dict[str, str | None]) -> None:
        with self._lock:
            if key == self._key:
                self._statuses = {**self._statuses, **found}

    def keep(
        self, key: tuple[int, int], reach: uses.Reach, standing: dict[str, Standing | None]
    ) -> None:
        with self._lock:
            if key == self._key:
                self._reach = reach
                self._standing = {**self._standing, **standing}


class HidingReads:
    """A read transaction for a reader face that hides sessions (``hidden_loci``): each
    node it hands back carries the standing the sessions shown gave it, and the memory's
    work is the spans of their encounters alone (memory/activation.py).

    A node's ``used_at`` and ``pinned`` are written by whichever session used it last, so
    a hidden session's link, confirmation, consultation or pin of a node shown would tell
    of that session. Where the hidden sessions' uses can be (``loci_uses``: their
    encounters' spans, the nodes they pinned) is asked once per state of the memory, and
    only a node whose standing they could have moved is read again from its uses
    (store/uses.py ``Reach``, ``hiding_restated``: two statements per type), once per
    state too (``HiddenStanding``); a read of what is known asks only for the clock. Under
    a gate (``GatedReads`` wraps this), a node restated here has no marks left: its
    ``used_at`` already leaves the withheld links out.

    Nor is a relation a hidden session wrote there, whatever its ends: every read that
    hands back relations leaves out those whose encounter is one of the hidden sessions'
    (named with their uses, ``loci_uses``), a walk does not reach past them, the outline
    takes them out of its columns (``edges_written_in``: one more statement, only where
    they wrote something), and a status one of them moved reads as the relations shown
    move it from the status the node was recorded with (memory/status.py), as the class
    gate reads one a withheld relation moved; a list by status is asked wider for it.
    Revisions stay: a hidden version is the services' to walk through (memory/reads.py).
    Built only where sessions are hidden: a reader hiding none reads as it did."""

    def __init__(
        self,
        tx: ReadTx,
        hidden: frozenset[str],
        withheld: frozenset[str],
        kept: HiddenStanding | None = None,
    ) -> None:
        self._tx = tx
        self._hidden = hidden
        self._withheld = withheld
        self._kept = kept or HiddenStanding()
        self._key: tuple[int, int] | None = None
        self._reached: uses.Reach | None = None
        # The shown nodes a hidden session's relation that moves a status runs into,
        # among those this read met (asof.Past reads their past statuses again).
        self._moved_unseen: set[str] = set()

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._tx, name)
        if name.startswith(_PAGED) or not callable(found):
            return found  # an export's pages: the dump carries what is stored

        def restated(*args: Any, **kwargs: Any) -> Any:
            return self._restate(found(*args, **kwargs))

        return restated

    def work_spans(
        self, since: str, hidden_loci: frozenset[str] = frozenset()
    ) -> list[tuple[str, str]]:
        return self._tx.work_spans(since, self._hidden | hidden_loci)

    def _state(self) -> tuple[int, int]:
        if self._key is None:  # the memory's state this read stands on, asked once
            self._key = self._tx.clock_and_erasures()
        return self._key

    def _reach(self) -> uses.Reach:
        """Where the hidden sessions' uses can be, and their encounters: asked once per
        state of the memory (``HiddenStanding``)."""
        if self._reached is None:
            key = self._state()
            reach, _ = self._kept.at(key)
            if reach is None:
                reach = uses.Reach(self._tx.loci_uses(sorted(self._hidden)))
                self._kept.keep(key, reach, {})
            self._reached = reach
        return self._reached

    # --- relations: those a hidden session wrote are not there --------------------------
    def hides_relations(self) -> bool:
        """Whether a hidden session wrote anything (it has an encounter)."""
        return bool(self._reach().encounters)

    def _theirs(self, edge: EdgeRecord) -> bool:
        # A revision is the hidden version's own (memory/reads.py walks a chain through
        # it): a relation only between nodes a hidden session made otherwise.
        return edge.type != "SUPERSEDES" and edge.encounter in self._reach().encounters

    def _written(self, edges: Iterable[EdgeRecord]) -> list[EdgeRecord]:
        """``edges`` without those a hidden session wrote."""
        edges = list(edges)
        if not edges or not self.hides_relations():
            return edges
        out: list[EdgeRecord] = []
        for e in edges:
            if not self._theirs(e):
                out.append(e)
            elif e.type in status.MOVING:
                self._moved_unseen.add(e.target)
        return out

    def moved_unseen(self, ids: Iterable[str]) -> set[str]:
        return self._moved_unseen.intersection(ids)

    def _hood(self, sub: Subgraph) -> Subgraph:
        """A neighbourhood (its nodes the ends of its relations) without the hidden
        sessions' relations, and the nodes only those reached."""
        edges = self._written(sub.edges)
        if len(edges) == len(sub.edges):
            return self._restate(sub)
        ends = {x for e in edges for x in (e.source, e.target)}
        return self._restate(Subgraph([n for n in sub.nodes if n.id in ends], edges))

    def edges_into(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        return self._written(self._tx.edges_into(node_ids, rels))

    def edges_out_of(self, node_ids: Sequence[str], rels: Sequence[str]) -> list[EdgeRecord]:
        return self._written(self._tx.edges_out_of(node_ids, rels))

    def edges_of(self, node_id: str) -> list[EdgeRecord]:
        return self._written(self._tx.edges_of(node_id))

    def edge_exists(self, source: str, target: str, rel_type: str) -> bool:
        if not self._tx.edge_exists(source, target, rel_type):
            return False
        if not self.hides_relations():
            return True
        return any(e.target == target for e in self.edges_out_of([source], [rel_type]))

    def ended_at(self, tick: int) -> tuple[list[NodeRecord], list[EdgeRecord]]:
        nodes, edges = self._tx.ended_at(tick)
        return self._restate(nodes), self._written(edges)

    def ended_nodes_at(self, tick: int) -> list[NodeRecord]:
        return self.ended_at(tick)[0]

    def ended_edges_at(self, tick: int) -> list[EdgeRecord]:
        return self.ended_at(tick)[1]

    def provenance(self, node_id: str, rel_types: Sequence[str], depth: int) -> Subgraph:
        sub = self._tx.provenance(node_id, rel_types, depth)
        kept = self._written(sub.edges)
        if len(kept) == len(sub.edges):
            return self._restate(sub)
        return self._restate(_reachable(Subgraph(sub.nodes, kept), [node_id]))

    def provenance_from(
        self, node_ids: Sequence[str], rel_types: Sequence[str], depth: int
    ) -> Subgraph:
        sub = self._tx.provenance_from(node_ids, rel_types, depth)
        kept = self._written(sub.edges)
        if len(kept) == len(sub.edges):
            return self._restate(sub)
        return self._restate(_reachable(Subgraph(sub.nodes, kept), node_ids))

    def neighbourhood(self, node_ids: Sequence[str], rel_types: Sequence[str]) -> Subgraph:
        return self._hood(self._tx.neighbourhood(node_ids, rel_types))

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        challenges, confirmations = self._tx.tension_of(node_ids)
        return self._hood(challenges), confirmations

    def authored_graph(self) -> Subgraph:
        whole = self._tx.authored_graph()
        edges = self._written(whole.edges)
        if len(edges) == len(whole.edges):
            return self._restate(whole, statuses=False)
        moved = {e.target for e in whole.edges if e.type in status.MOVING and self._theirs(e)}
        sub = self._restate(Subgraph(whole.nodes, edges), statuses=False)
        return self._with_statuses(sub, [n for n in sub.nodes if n.id in moved])

    def authored_outline(self) -> Outline:
        # The outline's relations carry no encounter: the hidden sessions' are asked for
        # apart (one statement, only where they wrote something) and taken out.
        whole = self._tx.authored_outline()
        theirs = self._reach().encounters
        key = self._state()
        written = self._kept.written(key)
        if written is None:  # asked once per state of the memory, as the reach is
            written = [e for e in self._tx.edges_written_in(sorted(theirs)) if self._theirs(e)]
            self._kept.keep_written(key, written)
        if not written:
            return self._restate(whole, statuses=False)
        moved = {e.target for e in written if e.type in status.MOVING}
        self._moved_unseen.update(moved)
        outline = self._restate(whole.without_relations(written), statuses=False)
        return self._with_statuses(outline, [n for n in outline.nodes if n.id in moved])

    def heads_by_status(
        self, node_type: str, statuses: Sequence[str], limit: int
    ) -> list[NodeRecord]:
        # Asked wider, as GatedReads does: a status a hidden relation moved reads otherwise.
        if not self.hides_relations():
            return self._restate(self._tx.heads_by_status(node_type, statuses, limit))
        wide = status.widened(node_type, statuses)
        return _paged(
            lambda n: self._tx.heads_by_status(node_type, wide, n),
            limit,
            lambda got: [n for n in self._restate(got) if n.status in statuses],
        )

    def heads_many(self, asks: Sequence[HeadsAsk]) -> list[list[NodeRecord]]:
        if not any(a.statuses is not None for a in asks) or not self.hides_relations():
            return self._restate(self._tx.heads_many(asks))
        return [a.asked_of(cast(ReadTx, self)) for a in asks]

    def _statuses(self, nodes: Sequence[NodeRecord]) -> dict[str, str | None]:
        """id -> the status the relations shown give each of ``nodes`` a relation could
        have moved: the replay (memory/status.py) without the hidden sessions' relations.
        One statement for the relations into those not yet read in this state of the
        memory, one more for where they started when a hidden relation moved one."""
        asked = [n for n in nodes if status.moved(n.type, n.status)]
        if not asked or not self.hides_relations():
            return {}
        key = self._state()
        known = self._kept.statuses(key)
        unknown = {n.id: n for n in asked if n.id not in known}
        if unknown:
            evidence = self._tx.edges_into(list(unknown), status.MOVING)
            theirs = sorted({e.target for e in evidence if self._theirs(e)})
            found: dict[str, str | None] = {i: n.status for i, n in unknown.items()}
            if theirs:
                self._moved_unseen.update(theirs)
                starts = status.recorded_of(self._tx, {i: unknown[i].status for i in theirs})
                for i in theirs:
                    shown = [e for e in evidence if e.target == i and not self._theirs(e)]
                    found[i] = status.replayed(unknown[i].type, starts[i], shown)
            self._kept.keep_statuses(key, found)
            known = {**known, **found}
        return {n.id: known[n.id] for n in asked if known[n.id] != n.status}

    def _with_statuses(self, value: T, nodes: Sequence[NodeRecord]) -> T:
        restated = self._statuses(nodes)
        if not restated:
            return value
        return cast(
            T,
            _with_nodes(
                value,
                lambda n: replace(n, status=restated[n.id]) if n.id in restated else n,
            ),
        )

    def _restate(self, value: Any, *, statuses: bool = True) -> Any:
        met: list[NodeRecord] = []
        _nodes_in(value, met)
        if statuses and met:
            value = self._with_statuses(value, met)
            met = []
            _nodes_in(value, met)
        # A node never used since its creation has nothing a hidden session could move.
        used = [n for n in met if n.used_at is not None or n.pinned is not None]
        if not used:
            return value
        key = self._state()
        reach = self._reach()
        _, standing = self._kept.at(key)
        asked = {n.id: n for n in used if n.id not in standing and reach.could_move(n)}
        found: dict[str, Standing | None] = {}
        if asked:
            by_node: dict[str, list[UseRecord]] = {}
            for use in self._tx.node_uses(list(asked)):
                by_node.setdefault(use.node, []).append(use)
            for i, n in asked.items():
                was = uses.hiding_restated(
                    n, by_node.get(i, []), self._hidden, self._withheld, reach
                )
                found[i] = None if was is n else (was.used_at, was.used_marks, was.pinned)
            standing = {**standing, **found}
            self._kept.keep(key, reach, found)
        if not any(standing.get(n.id) is not None for n in used):
            return value

        def shown(node: NodeRecord) -> NodeRecord:
            restated = standing.get(node.id)
            if restated is None:
                return node
            used_at, marks, pinned = restated
            return replace(node, used_at=used_at, used_marks=marks, pinned=pinned)

        return _with_nodes(value, shown)


def _nodes_in(value: Any, out: list[NodeRecord]) -> None:
    """Every node record ``value`` holds, as a read hands them back."""
    if isinstance(value, NodeRecord):
        out.append(value)
    elif isinstance(value, Subgraph | Outline):
        out.extend(value.nodes)
    elif isinstance(value, ChainSpan):
        out.extend(link.node for link in [*value.older, *value.newer])
    elif isinstance(value, dict):
        for v in cast(dict[Any, Any], value).values():
            _nodes_in(v, out)
    elif isinstance(value, list | tuple):
        for v in cast(Sequence[Any], value):
            _nodes_in(v, out)


def _with_nodes(value: Any, seen: Callable[[NodeRecord], NodeRecord]) -> Any:
    """``value`` with each node record it holds as ``seen`` gives it."""
    if isinstance(value, NodeRecord):
        return seen(value)
    if isinstance(value, Subgraph):
        return Subgraph(nodes=[seen(n) for n in value.nodes], edges=value.edges)
    if isinstance(value, Outline):
        return Outline([seen(n) for n in value.nodes], value.relations)
    if isinstance(value, ChainSpan):
        return replace(
            value,
            older=[replace(x, node=seen(x.node)) for x in value.older],
            newer=[replace(x, node=seen(x.node)) for x in value.newer],
        )
    if isinstance(value, dict):
        return {k: _with_nodes(v, seen) for k, v in cast(dict[Any, Any], value).items()}
    if isinstance(value, list):
        return [_with_nodes(v, seen) for v in cast(list[Any], value)]
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(_with_nodes(v, seen) for v in cast(tuple[Any, ...], value))
    return value


class GatedStore:
    """The memory's store as a gated caller sees it; everything else is the store's own.

    ``hidden_loci``: the sessions a reader face hides. Its text reads leave their nodes
    out as the store's own queries leave a withheld class's out (no candidate's place, no
    count in the statistics); the other reads leave them to the services (memory/reads.py),
    which walk a chain through a hidden version rather than end it there."""

    def __init__(
        self, inner: GraphStore, gate: Gate, hidden_loci: frozenset[str] = frozenset()
    ) -> None:
        self.inner = inner
        self.gate = gate
        self.hidden_loci = hidden_loci
        self._standing = HiddenStanding()  # HidingReads's, kept between reads
        self.backend = inner.backend

    def __getattr__(self, name: str) -> Any:
        # ledgers, meanings, baselines, infusion_log, set_owner_url...: bookkeeping the
        # services reach by protocol checks; none of them holds a node's text.
        return getattr(self.inner, name)

    def write(self, work: Callable[[WriteTx], T]) -> T:
        return self.inner.write(work)

    def read(self, work: Callable[[ReadTx], T]) -> T:
        gate = self.gate
        if self.hidden_loci:
            return self.inner.read(lambda tx: work(self._hiding(tx)))
        if gate.open:
            return self.inner.read(work)
        return self.inner.read(lambda tx: work(cast(ReadTx, GatedReads(tx, gate))))

    def _hiding(self, tx: ReadTx) -> ReadTx:
        """``tx`` as a reader hiding ``hidden_loci`` reads it: nodes with the standing
        the sessions shown gave them (``HidingReads``), then gated."""
        hiding = cast(ReadTx, HidingReads(tx, self.hidden_loci, self.gate.withheld, self._standing))
        return hiding if self.gate.open else cast(ReadTx, GatedReads(hiding, self.gate))

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
        loci = self.hidden_loci | hidden_loci
        if self.gate.open:
            return self.inner.fulltext(
                text,
                types=types,
                heads_only=heads_only,
                limit=limit,
                withheld=withheld,
                hidden_loci=loci,
            )
        return self.search_read(
            text,
            lambda _tx, hits, _stats: hits,
            types=types,
            heads_only=heads_only,
            limit=limit,
            withheld=withheld,
            hidden_loci=loci,
        )

    def fulltext_stats(
        self,
        terms: Iterable[str],
        *,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> TermStatsSnapshot:
        # Counted without the withheld documents: a ranking whose word weights counted
        # them would tell a caller which words what it may not see holds.
        return self.inner.fulltext_stats(
            terms,
            withheld=self.gate.withheld | withheld,
            hidden_loci=self.hidden_loci | hidden_loci,
        )

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
        """As ``fulltext`` gives hits: the withheld ones dropped, and a page that came up
        short asked again, larger, before ``work`` sees what is shown (in the same read),
        with statistics that count no withheld document. The store leaves the withheld
        documents out of its answer already (so they take no candidate's place); the
        gated read checks each hit again."""
        gate = self.gate
        loci = self.hidden_loci | hidden_loci
        if gate.open and self.hidden_loci:
            return self.inner.search_read(
                text,
                lambda tx, hits, stats_of: work(self._hiding(tx), hits, stats_of),
                types=types,
                heads_only=heads_only,
                limit=limit,
                withheld=withheld,
                hidden_loci=loci,
            )
        if gate.open:
            return self.inner.search_read(
                text,
                work,
                types=types,
                heads_only=heads_only,
                limit=limit,
                withheld=withheld,
                hidden_loci=loci,
            )
        kinds = None if types is None else list(types)
        hidden = gate.withheld | withheld
        ask = limit
        for round_ in range(_MORE):
            last = round_ == _MORE - 1

            def gated(
                tx: ReadTx,
                hits: list[SearchHit],
                stats_of: Callable[[], TermStatsSnapshot],
                ask: int = ask,
                last: bool = last,
            ) -> tuple[bool, T | None]:
                reads = self._hiding(tx) if self.hidden_loci else cast(ReadTx, GatedReads(tx, gate))
                shown = reads.get_nodes([h.id for h in hits])
                kept = [h for h in hits if h.id in shown]
                if len(kept) >= limit or len(hits) < ask or last:
                    return True, work(reads, kept[:limit], stats_of)
                return False, None  # short, and more there: asked again, larger

            done, result = self.inner.search_read(
                text,
                gated,
                types=kinds,
                heads_only=heads_only,
                limit=ask,
                withheld=hidden,
                hidden_loci=loci,
            )
            if done:
                return cast(T, result)
            ask *= 4
        raise AssertionError("unreachable: the last round always answers")

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
        gate = self.gate
        loci = self.hidden_loci | hidden_loci
        if gate.open and self.hidden_loci:
            return self.inner.read_text(
                text,
                terms,
                lambda tx, hits, stats_of: work(self._hiding(tx), hits, stats_of),
                limit=limit,
                withheld=withheld,
                hidden_loci=loci,
            )
        if gate.open:
            return self.inner.read_text(
                text, terms, work, limit=limit, withheld=withheld, hidden_loci=loci
            )

        def gated(
            tx: ReadTx, hits: list[SearchHit], stats_of: Callable[[], TermStatsSnapshot]
        ) -> T:
            reads = self._hiding(tx) if self.hidden_loci else cast(ReadTx, GatedReads(tx, gate))
            shown = reads.get_nodes([h.id for h in hits])
            return work(reads, [h for h in hits if h.id in shown], stats_of)

        # The store's query leaves the withheld nodes out (they take no candidate's place,
        # as in ``search_read``); the gated read checks each hit again.
        return self.inner.read_text(
            text, terms, gated, limit=limit, withheld=gate.withheld | withheld, hidden_loci=loci
        )

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
        return self.inner.read_cypher(
            query,
            params,
            row_cap=row_cap,
            char_cap=char_cap,
            timeout_s=timeout_s,
            withheld=self.gate.withheld | withheld,
        )

    def analytics_executor(self) -> Any:
        # The engine projects the arrays it is handed (analytics/gds.py), and those come
        # from a gated read of the authored graph: it never reads a node itself.
        return self.inner.analytics_executor()

    def info(self) -> dict[str, Any]:
        return {**self.inner.info(), "withheld_classes": sorted(self.gate.withheld)}

    def close(self) -> None:
        self.inner.close()


def gated(
    store: GraphStore, granted: Iterable[str], hidden_loci: frozenset[str] = frozenset()
) -> GraphStore:
    """The store every read of this server goes through (memory/service.py)."""
    return cast(GraphStore, GatedStore(store, Gate(granted), hidden_loci))


def hiding(store: GraphStore, hidden_loci: frozenset[str]) -> GraphStore:
    """``store`` with its text reads leaving ``hidden_loci``'s nodes out (``GatedStore``),
    for a service handed a store and the loci apart (the infuser): as is when it already
    does, or there are none."""
    if not hidden_loci or (isinstance(store, GatedStore) and hidden_loci <= store.hidden_loci):
        return store
    return cast(GraphStore, GatedStore(store, Gate(CLASSIFICATIONS), hidden_loci))


def view(store: GraphStore, tx: ReadTx) -> ReadTx:
    """A write unit's reads as the store's gate shows them, for what a write hands back
    beyond what it wrote (the re-entry payload); the write itself keeps the whole view."""
    if isinstance(store, GatedStore) and not store.gate.open:
        return cast(ReadTx, GatedReads(tx, store.gate))
    return tx


def withholds(tx: ReadTx) -> bool:
    """Whether ``tx`` reads through a gate that withholds a class the memory's nodes have
    carried (``GatedReads.withheld_in_use``): where not, every status reads as stored."""
    return isinstance(tx, GatedReads) and tx.withheld_in_use()


def moved_unseen(tx: ReadTx, ids: Iterable[str]) -> set[str]:
    """Which of ``ids`` a relation from a node ``tx``'s gate withholds runs into, of a kind
    that moves a status, among the relations the read has asked for (or one a session the
    reader hides wrote): asof.Past reads the statuses of these as the gate reads the
    present's (the rest as the store records)."""
    return tx.moved_unseen(ids) if isinstance(tx, GatedReads | HidingReads) else set()


def hides_relations(tx: ReadTx) -> bool:
    """Whether ``tx`` leaves out relations a session its reader hides wrote: asof.Past then
    replays the statuses those moved, as under a gate (``moved_unseen``)."""
    return isinstance(tx, GatedReads | HidingReads) and tx.hides_relations()


def withheld_among(tx: ReadTx, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` name a node the read's gate withholds (not one gone): a page that
    lists ids it kept elsewhere (the inspector's infusion log) leaves these out too."""
    if not isinstance(tx, GatedReads):
        return set()
    return tx.withheld_among(ids)


def hides(store: GraphStore, node: NodeRecord) -> bool:
    """Whether ``store``'s gate withholds ``node``: a write, which reads the whole memory,
    asks before it names the node in an answer or an error (memory/writes.py)."""
    return isinstance(store, GatedStore) and store.gate.hides(node)
