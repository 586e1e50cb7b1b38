"""What the lines of a dump must agree on, checked in one pass before anything is written.

Each record is checked against the records before it (a dump names only what came
earlier: ``dump_format.KINDS``) and against DESIGN §3: types and relations from the
vocabulary, endpoint rules, ids whose prefix names their type, each tick at most the
dumped clock, encounters opened at distinct ticks, one OPENED per encounter and a
fork-free spine, supersession chains that stay lines; each locus directed by a Person
of the dump, claims joining two stored referents of one type, confirmations of stored
nodes, consultations and pins of stored nodes from encounters that were open (each
pinned node's mirror naming the encounter of its latest pin), a record of the past
whose ids, types and statuses the vocabulary allows, and the gate's marks (store/uses.py)
in the form a write keeps: classes of the vocabulary, times, counts within the tombstones.
What the pass keeps is small: the ids, the encounters, the supersession links; never
the records themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Final

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import classification, validate
from kenning_encounter.memory.dump_format import FIX, Record
from kenning_encounter.store.endpoints import check_relation
from kenning_encounter.store.ids import type_of_id
from kenning_encounter.store.persons import ClaimRecord, PersonRecord
from kenning_encounter.store.port import (
    ConfirmationRecord,
    ConsultationRecord,
    DumpedEdge,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    DumpedNode,
    LocusRecord,
    PinRecord,
    SpineEdge,
)
from kenning_encounter.store.records import EncounterRecord, NodeRecord
from kenning_encounter.textproc_time import utc_instant
from kenning_encounter.vocabulary import (
    CLASSIFICATIONS,
    NODE_TYPES,
    REFERENT_RESOLUTIONS,
    REFERENT_TYPES,
    RELATION_TYPES,
)

_ID: Final = re.compile(r"[a-z]{3}_[0-9a-f]{12}")
_PERSON_ID: Final = re.compile(r"per_[0-9a-f]{16}")
_OWN_PROPS: Final = frozenset({"name", "description", "status"})
_PIN_STATES: Final = ("pinned", "unpinned")


def _refuse(where: str, message: str) -> InvalidInput:
    return InvalidInput(where, f"{message}; {FIX}")


_SOURCE: Final = ("source_kind", "source_label", "source_key")
_COUNT: Final = re.compile(r"[0-9]{1,18}")
# An encounter's name as the server makes it (E and the tick it opened at): it is shown
# as it is (the re-entry note a session starts with, tool texts, an operator's plan).
_ENCOUNTER_NAME: Final = re.compile(r"E[1-9][0-9]{0,17}")
_MARKS_FORM: Final = "key=value pairs joined by ';'"


def _marks(text: str, field: str, *, bare: bool) -> dict[str, str]:
    """A stored ``key=value;...`` (store/uses.py) as a map: each key once, a classification
    as a write keeps it (sorted, comma-joined, of the vocabulary), or with ``bare`` the
    empty key too (the uses by no classified node)."""
    found: dict[str, str] = {}
    for part in text.split(";"):
        key, eq, value = part.partition("=")
        if not eq:
            raise _refuse(field, f"{part!r} is no key=value pair; the marks are {_MARKS_FORM}")
        if key in found:
            raise _refuse(field, f"names {key!r} twice; each key appears once")
        if key or not bare:
            try:
                kept = classification.classes(key, field)
            except InvalidInput:
                also = " or nothing (the uses by no classified node)" if bare else ""
                raise _refuse(
                    field,
                    f"{key!r} is not a classification; a key is some of: "
                    f"{', '.join(CLASSIFICATIONS)}, comma-joined{also}",
                ) from None
            if kept != key:
                raise _refuse(field, f"{key!r} is not as a write keeps it ({kept!r})")
        found[key] = value
    return found


def _used_marks(n: NodeRecord, where: str) -> None:
    """A node's uses by classified nodes: times on the calendar, held only while the
    node's ``used_at`` is one of them (a reader's is read off them by equality)."""
    if n.used_marks is None:
        return
    field = f"{where}.used_marks"
    marks = _marks(n.used_marks, field, bare=True)
    for key, at in marks.items():
        try:
            utc_instant(at)
        except ValueError:  # OffCalendar too
            raise _refuse(
                field,
                f"{at!r} (under {key!r}) is not an ISO-8601 time; each value is one "
                "(2026-03-01T14:30:00.000Z)",
            ) from None
    if n.used_at not in {at for key, at in marks.items() if key}:
        raise _refuse(
            field,
            f"the node's used_at {n.used_at!r} is none of its uses by a classified node; a "
            "node carries marks only while its latest use is one of them",
        )


def _tombstones_marked(r: EncounterRecord, where: str) -> None:
    """An encounter's erased nodes by class: counts, which together are some of its
    tombstones."""
    if r.tombstones_marked is None:
        return
    field = f"{where}.tombstones_marked"
    counts = _marks(r.tombstones_marked, field, bare=False)
    for key, n in counts.items():
        if not _COUNT.fullmatch(n):
            raise _refuse(
                field,
                f"{n!r} (under {key!r}) is not a count; each value is a whole number, 0 or more",
            )
    total = sum(int(n) for n in counts.values())
    if total > r.tombstones:
        raise _refuse(
            field,
            f"counts {total} erased classified nodes, more than the encounter's "
            f"{r.tombstones} tombstones",
        )


def _props_as_a_write_keeps(n: NodeRecord, where: str) -> None:
    """A node's properties pass the checks a write's do: times that are times on the
    calendar, a span that ends after it starts, classes and retentions the vocabulary
    knows, each in the form a write keeps. Text (names, descriptions, text properties)
    is taken as it comes: a dump from before a check on text still imports, and readers
    show such text one line per line (plaintext.py)."""
    try:
        checked = validate.props_of(NODE_TYPES[n.type], n.props, f"{where}.props", check_text=False)
    except InvalidInput as exc:
        raise _refuse(exc.field, str(exc).removeprefix(f"{exc.field}: ")) from None
    for key, value in checked.items():
        if n.props.get(key) != value:
            raise _refuse(
                f"{where}.props.{key}",
                f"{n.props.get(key)!r} is not as a write keeps it ({value!r})",
            )


@dataclass
class Checks:
    clock: int
    loci: dict[str, int] = field(default_factory=dict[str, int])
    encounters: dict[str, EncounterRecord] = field(default_factory=dict[str, EncounterRecord])
    opened_ticks: set[int] = field(default_factory=set[int])
    opened: set[str] = field(default_factory=set[str])
    next_out: set[str] = field(default_factory=set[str])
    next_in: set[str] = field(default_factory=set[str])
    anchored: set[str] = field(default_factory=set[str])
    nodes: set[str] = field(default_factory=set[str])
    successor: dict[str, str] = field(default_factory=dict[str, str])  # revised -> reviser
    revises: set[str] = field(default_factory=set[str])
    persons: set[str] = field(default_factory=set[str])
    claims: set[tuple[str, str, int]] = field(default_factory=set[tuple[str, str, int]])
    confirmed: set[tuple[str, str, int]] = field(default_factory=set[tuple[str, str, int]])
    consulted: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])
    pins: set[tuple[str, str, int]] = field(default_factory=set[tuple[str, str, int]])
    pinned_by: dict[str, str] = field(default_factory=dict[str, str])  # node -> its mirror
    last_pin: dict[str, tuple[int, str, str]] = field(
        default_factory=dict[str, tuple[int, str, str]]
    )  # node -> (tick, state, encounter) of its latest pin or unpin
    gone: set[str] = field(default_factory=set[str])  # the deleted nodes of the past
    # Each node's name and, for a Component, its source triple, with the line naming it:
    # what only the heads must hold once (the chains are known at the end).
    named: dict[str, tuple[str, str]] = field(default_factory=dict[str, tuple[str, str]])
    sourced: dict[str, tuple[tuple[str, ...], str]] = field(
        default_factory=dict[str, tuple[tuple[str, ...], str]]
    )
    past: set[tuple[str, ...]] = field(default_factory=set[tuple[str, ...]])  # its other rows

    def record(self, record: Record, where: str) -> None:
        if isinstance(record, PersonRecord):
            self._person(record, where)
        elif isinstance(record, LocusRecord):
            self._locus(record, where)
        elif isinstance(record, EncounterRecord):
            self._encounter(record, where)
        elif isinstance(record, SpineEdge):
            self._spine(record, where)
        elif isinstance(record, DumpedNode):
            self._node(record, where)
        elif isinstance(record, DumpedEdge):
            self._relation(record, where)
        elif isinstance(record, ClaimRecord):
            self._claim(record, where)
        elif isinstance(record, ConfirmationRecord):
            self._confirmation(record, where)
        elif isinstance(record, ConsultationRecord):
            self._consultation(record, where)
        elif isinstance(record, PinRecord):
            self._pin(record, where)
        elif isinstance(record, DumpedEndedNode):
            self._ended_node(record, where)
        elif isinstance(record, DumpedEndedEdge):
            self._ended_edge(record, where)
        else:
            self._move(record, where)

    def _tick(self, tick: int, where: str) -> None:
        if tick > self.clock:
            raise _refuse(where, f"tick {tick} is past the dumped clock {self.clock}")

    def _within(self, encounter: str, tick: int, where: str) -> None:
        """Written by a known encounter while it was open (invariants 2 and 5)."""
        self._tick(tick, f"{where}.tick")
        e = self.encounters.get(encounter)
        if e is None:
            raise _refuse(f"{where}.encounter", f"names no encounter of the dump: {encounter!r}")
        if tick < e.opened_tick or (e.sealed_tick is not None and tick > e.sealed_tick):
            raise _refuse(f"{where}.tick", f"tick {tick} is outside encounter {encounter!r}")

    def _person(self, r: PersonRecord, where: str) -> None:
        self._tick(r.tick, f"{where}.tick")
        if not _PERSON_ID.fullmatch(r.id):
            raise _refuse(f"{where}.id", f"{r.id!r} is not the id of a Person")
        if r.id in self.persons:
            raise _refuse(f"{where}.id", f"person {r.id!r} appears twice")
        self.persons.add(r.id)

    def _locus(self, r: LocusRecord, where: str) -> None:
        self._tick(r.tick, f"{where}.tick")
        if r.id in self.loci:
            raise _refuse(f"{where}.id", f"locus {r.id!r} appears twice")
        if r.director is not None:
            if r.director not in self.persons:
                raise _refuse(f"{where}.director", f"names no person of the dump: {r.director!r}")
            self._tick(r.directed_tick or 0, f"{where}.directed_tick")
        self.loci[r.id] = r.tick

    def _encounter(self, r: EncounterRecord, where: str) -> None:
        self._tick(r.opened_tick, f"{where}.opened_tick")
        if not _ENCOUNTER_NAME.fullmatch(r.name):
            raise _refuse(
                f"{where}.name", f"{r.name!r} is not an encounter's name (E and a tick: E12)"
            )
        if r.name in self.encounters:
            raise _refuse(f"{where}.name", f"encounter {r.name!r} appears twice")
        if r.locus not in self.loci:
            raise _refuse(f"{where}.locus", f"names no locus of the dump: {r.locus!r}")
        if r.opened_tick in self.opened_ticks:
            raise _refuse(f"{where}.opened_tick", f"another encounter opened at {r.opened_tick}")
        if (r.sealed_tick is None) != (r.sealed_at is None):
            raise _refuse(f"{where}.sealed_tick", "sealed_tick and sealed_at go together")
        if r.sealed_tick is not None:
            self._tick(r.sealed_tick, f"{where}.sealed_tick")
            if r.sealed_tick < r.opened_tick:
                raise _refuse(f"{where}.sealed_tick", "an encounter is sealed after it opens")
        if r.dissolved_tick is not None:  # None also where it was dissolved before ticks
            if r.dissolved_at is None:
                raise _refuse(f"{where}.dissolved_tick", "a dissolved_tick needs a dissolved_at")
            self._tick(r.dissolved_tick, f"{where}.dissolved_tick")
            if r.dissolved_tick <= r.opened_tick:
                raise _refuse(f"{where}.dissolved_tick", "an encounter is dissolved after it opens")
        _tombstones_marked(r, where)
        self.opened_ticks.add(r.opened_tick)
        self.encounters[r.name] = r

    def _spine(self, r: SpineEdge, where: str) -> None:
        self._tick(r.tick, f"{where}.tick")
        if r.type == "OPENED":
            e = self.encounters.get(r.target)
            if r.source not in self.loci or e is None or e.locus != r.source:
                raise _refuse(where, "OPENED goes from an encounter's own locus to it")
            if r.target in self.opened:
                raise _refuse(f"{where}.target", f"{r.target!r} is opened twice")
            self.opened.add(r.target)
            return
        a, b = self.encounters.get(r.source), self.encounters.get(r.target)
        if a is None or b is None:
            raise _refuse(where, f"{r.type} links two encounters of the dump")
        if r.type == "NEXT_ENCOUNTER":
            if a.locus != b.locus or a.opened_tick >= b.opened_tick:
                raise _refuse(where, "NEXT_ENCOUNTER goes to a later encounter of one locus")
            if r.source in self.next_out or r.target in self.next_in or r.target in self.anchored:
                raise _refuse(where, "a locus's encounters form one path without forks")
            self.next_out.add(r.source)
            self.next_in.add(r.target)
        elif r.type == "INSTANTIATED_AFTER":
            if b.opened_tick >= a.opened_tick:
                raise _refuse(where, "INSTANTIATED_AFTER anchors to an earlier encounter")
            if r.source in self.anchored or r.source in self.next_in:
                raise _refuse(where, "only a locus's first encounter is anchored, once")
            self.anchored.add(r.source)
        else:
            raise _refuse(f"{where}.type", "use one of: INSTANTIATED_AFTER, NEXT_ENCOUNTER, OPENED")

    def _node(self, r: DumpedNode, where: str) -> None:
        n = r.node
        spec = NODE_TYPES.get(n.type)
        if spec is None or not spec.authored:
            raise _refuse(f"{where}.type", f"{n.type!r} is not an authored node type")
        if not _ID.fullmatch(n.id) or type_of_id(n.id) != n.type:
            raise _refuse(f"{where}.id", f"{n.id!r} is not the id of a {n.type}")
        if n.id in self.nodes:
            raise _refuse(f"{where}.id", f"node {n.id!r} appears twice")
        allowed = spec.prop_names() - _OWN_PROPS
        unknown = sorted(set(n.props) - allowed)
        if unknown:
            raise _refuse(f"{where}.props", f"{n.type} has no property {', '.join(unknown)}")
        missing = [p.name for p in spec.props if p.required and p.name in allowed]
        if any(p not in n.props for p in missing):
            raise _refuse(f"{where}.props", f"a {n.type} carries {', '.join(missing)}")
        if (n.status is None) != (not spec.statuses) or (
            n.status is not None and n.status not in spec.statuses
        ):
            allowed_statuses = ", ".join(spec.statuses) or "none (null)"
            raise _refuse(f"{where}.status", f"a {n.type}'s status is one of: {allowed_statuses}")
        _props_as_a_write_keeps(n, where)
        self.named[n.id] = (n.name, where)
        if n.type == "Component":
            self.sourced[n.id] = (tuple(str(n.props.get(k)) for k in _SOURCE), where)
        assert n.encounter is not None
        self._within(n.encounter, n.tick, where)
        if r.recorded_tick is not None:
            self._tick(r.recorded_tick, f"{where}.recorded_tick")
        if n.pinned is not None:
            if n.pinned not in self.encounters:
                raise _refuse(f"{where}.pinned", f"names no encounter of the dump: {n.pinned!r}")
            self.pinned_by[n.id] = n.pinned
        _used_marks(n, where)
        self.nodes.add(n.id)

    def _relation(self, r: DumpedEdge, where: str) -> None:
        e = r.edge
        spec = RELATION_TYPES.get(e.type)
        for end, node_id in (("source", e.source), ("target", e.target)):
            if node_id not in self.nodes:
                raise _refuse(f"{where}.{end}", f"names no node of the dump: {node_id!r}")
        s_type, t_type = type_of_id(e.source), type_of_id(e.target)
        assert s_type is not None and t_type is not None
        check_relation(e.type, s_type, t_type, where)
        assert spec is not None
        if e.source == e.target:
            raise _refuse(f"{where}.target", "a node is never linked to itself")
        assert e.encounter is not None
        self._within(e.encounter, e.tick, where)
        if e.type != "SUPERSEDES":
            if e.revision_why is not None:
                raise _refuse(f"{where}.revision_why", "only SUPERSEDES carries a reason")
            return
        if not e.revision_why:
            raise _refuse(f"{where}.revision_why", "a revision carries its reason")
        if e.target in self.successor:
            raise _refuse(f"{where}.target", f"{e.target!r} has a successor already")
        if e.source in self.revises:
            raise _refuse(f"{where}.source", f"{e.source!r} revises another node already")
        self.successor[e.target] = e.source
        self.revises.add(e.source)

    def _claim(self, r: ClaimRecord, where: str) -> None:
        for end, node_id in (("source", r.source), ("target", r.target)):
            if node_id not in self.nodes:
                raise _refuse(f"{where}.{end}", f"names no node of the dump: {node_id!r}")
        label = type_of_id(r.source)
        if label not in REFERENT_TYPES or type_of_id(r.target) != label:
            raise _refuse(
                f"{where}.target",
                f"a claim joins two referents of one type ({', '.join(REFERENT_TYPES)})",
            )
        if r.source == r.target:
            raise _refuse(f"{where}.target", "a node is never claimed against itself")
        if r.resolution not in REFERENT_RESOLUTIONS:
            raise _refuse(f"{where}.resolution", f"is one of: {', '.join(REFERENT_RESOLUTIONS)}")
        self._within(r.encounter, r.tick, where)
        if (r.source, r.target, r.tick) in self.claims:
            raise _refuse(where, "the same claim appears twice")
        self.claims.add((r.source, r.target, r.tick))

    def _confirmation(self, r: ConfirmationRecord, where: str) -> None:
        if r.node not in self.nodes:
            raise _refuse(f"{where}.node", f"names no node of the dump: {r.node!r}")
        self._within(r.encounter, r.tick, where)
        if (r.node, r.encounter, r.tick) in self.confirmed:
            raise _refuse(where, "the same confirmation appears twice")
        self.confirmed.add((r.node, r.encounter, r.tick))

    def _consultation(self, r: ConsultationRecord, where: str) -> None:
        if r.node not in self.nodes:
            raise _refuse(f"{where}.node", f"names no node of the dump: {r.node!r}")
        self._within(r.encounter, r.tick, where)
        if (r.node, r.encounter) in self.consulted:  # one edge per encounter and node
            raise _refuse(where, "the same consultation appears twice")
        self.consulted.add((r.node, r.encounter))

    def _pin(self, r: PinRecord, where: str) -> None:
        if r.node not in self.nodes:
            raise _refuse(f"{where}.node", f"names no node of the dump: {r.node!r}")
        if r.state not in _PIN_STATES:
            raise _refuse(f"{where}.state", f"is one of: {', '.join(_PIN_STATES)}")
        self._within(r.encounter, r.tick, where)
        if (r.node, r.encounter, r.tick) in self.pins:
            raise _refuse(where, "the same pin appears twice")
        self.pins.add((r.node, r.encounter, r.tick))
        latest = self.last_pin.get(r.node)
        if latest is None or r.tick > latest[0]:
            self.last_pin[r.node] = (r.tick, r.state, r.encounter)

    def _ended(self, tick: int, ended: int, where: str) -> None:
        self._tick(ended, f"{where}.ended")
        if ended < tick:
            raise _refuse(f"{where}.ended", f"ends at {ended}, before it began at {tick}")

    def _typed(self, node_id: str, where: str) -> str:
        label = type_of_id(node_id)
        spec = NODE_TYPES.get(label or "")
        if spec is None or not spec.authored or not _ID.fullmatch(node_id):
            raise _refuse(where, f"{node_id!r} is not the id of an authored node")
        return spec.name

    def _ended_node(self, r: DumpedEndedNode, where: str) -> None:
        n: NodeRecord = r.node
        if self._typed(n.id, f"{where}.id") != n.type:
            raise _refuse(f"{where}.id", f"{n.id!r} is not the id of a {n.type}")
        if n.id in self.nodes or n.id in self.gone:
            raise _refuse(f"{where}.id", f"node {n.id!r} appears twice")
        self._tick(n.tick, f"{where}.tick")
        self._ended(n.tick, r.ended, where)
        _used_marks(n, where)
        self.gone.add(n.id)

    def _ended_edge(self, r: DumpedEndedEdge, where: str) -> None:
        e = r.edge
        s_type = self._typed(e.source, f"{where}.source")
        t_type = self._typed(e.target, f"{where}.target")
        if e.type not in RELATION_TYPES or not RELATION_TYPES[e.type].authored:
            raise _refuse(f"{where}.type", f"{e.type!r} is not an authored relation type")
        check_relation(e.type, s_type, t_type, where)
        self._tick(e.tick, f"{where}.tick")
        self._ended(e.tick, r.ended, where)
        key = ("edge", e.source, e.type, e.target, str(r.ended))
        if key in self.past:
            raise _refuse(where, "the same deleted relation appears twice")
        self.past.add(key)

    def _move(self, r: DumpedMove, where: str) -> None:
        m = r.move
        spec = NODE_TYPES[self._typed(m.node, f"{where}.node")]
        for name, status in (("before", m.before), ("after", m.after)):
            if status is not None and status not in spec.statuses:
                allowed = ", ".join(spec.statuses) or "none"
                raise _refuse(f"{where}.{name}", f"a {spec.name}'s status is one of: {allowed}")
        self._tick(m.tick, f"{where}.tick")
        key = ("status", m.node, str(m.tick), str(m.seq))
        if key in self.past:
            raise _refuse(where, "the same status move appears twice")
        self.past.add(key)

    def finish(self) -> None:
        """What only the whole dump can show: every encounter opened, chains acyclic, each
        pin in force mirrored on its node."""
        unopened = sorted(set(self.encounters) - self.opened)
        if unopened:
            raise _refuse("spine", f"encounter {unopened[0]!r} has no OPENED edge")
        for node in sorted(set(self.pinned_by) | set(self.last_pin)):
            _, state, encounter = self.last_pin.get(node, (0, "unpinned", ""))
            if self.pinned_by.get(node) != (encounter if state == "pinned" else None):
                raise _refuse(
                    "pins", f"node {node!r}: its pinned field disagrees with its latest pin"
                )
        # Each node has at most one reviser and revises at most one: walking back from
        # each chain's newest node reaches every link of a line; a link never reached
        # lies on a cycle.
        older = {reviser: revised for revised, reviser in self.successor.items()}
        reached: set[str] = set()
        for head in set(older) - set(self.successor):
            node = head
            while node in older:
                reached.add(node)
                node = older[node]
        looped = sorted(set(older) - reached)
        if looped:
            raise _refuse("relations", f"the revisions through {looped[0]!r} close a cycle")
        self._once_among_heads()

    def _once_among_heads(self) -> None:
        """A live name names one head, and a source triple one Component head, as the
        write path holds them (it refuses a second): a node revised is no head."""
        for keyed, what in (
            ({i: name for i, (name, _) in self.named.items()}, "name"),
            ({i: triple for i, (triple, _) in self.sourced.items()}, "source triple"),
        ):
            held: dict[object, str] = {}
            for node_id in keyed:  # in the dump's order: the second one named is refused
                if node_id in self.successor:
                    continue
                first = held.setdefault(keyed[node_id], node_id)
                if first != node_id:
                    where = self.named[node_id][1]
                    raise _refuse(
                        f"{where}.name" if what == "name" else f"{where}.props",
                        f"{what} {keyed[node_id]!r} names the live node {first!r} already; "
                        f"a live {what} names one node",
                    )
