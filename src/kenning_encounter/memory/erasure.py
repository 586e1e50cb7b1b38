"""Governed erasure: an operator removes everything the memory holds about a referent.

What goes is decided by the graph, never by matching text:

- the referent itself, with every version of its supersession chain (older and newer);
- what is about it (an Observation ABOUT it, a Citation that GROUNDS it, a Question it
  RAISES; ``_DEPENDS`` says which end of each relation is about the other), and what is
  about those, outward; of these, the largest part none of whose relations touch a node
  that stays. An Observation ABOUT the referent and a project stays, and so does what
  is about it; the plan lists such neighbours, so the operator can name them too.

A chain is taken or left whole: deleting one version would leave the others naming it.

Free text written elsewhere about what goes follows the same rule, by link, never by
matching words: text written where an erased node was drawn on may speak of the same
subject, so it goes whole. An encounter that recorded, confirmed, consulted or pinned a
node erased, or made a relation to one, loses its purpose and summary (``WITHDRAWN``
stands in their place), as an infusion-log entry that delivered one loses its prompt
(scrub.py). Text that belongs to a node that stays (its description, the reason of its
revision) stays with it: such neighbours are listed in the plan as kept, for the
operator to name too. Words of the subject written where nothing erased was drawn on
are not searched for.

``plan`` only reads. ``erase`` computes the plan again inside its write, refuses when
it differs from the one the operator confirmed (the memory moved in between), and
deletes it in that one transaction, newest first, leaving on each recording encounter
a tombstone count. No separate erasure record is written: the counts already say where
something was removed and the tick says when, and a record of what was asked would
itself be data about the subject (the operator keeps the command's report instead).
What lies beside the graph (indexes, meanings, baselines, logs) is scrubbed afterwards
by ``memory/scrub.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kenning_encounter.errors import Conflict
from kenning_encounter.memory import validate
from kenning_encounter.memory.writes import delete_nodes, resolve
from kenning_encounter.store import uses
from kenning_encounter.store.port import GraphStore, ReadTx, WriteTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES

# A chain's own links say nothing about what the chain is about.
_CHAIN = "SUPERSEDES"
# What an encounter that drew on an erased node shows for its purpose and summary.
WITHDRAWN = "(withdrawn: this encounter drew on something an operator erased)"
# Which end of a relation is about the other: an Observation ABOUT a Concept, a Citation
# that GROUNDS it, a Question an Observation RAISES. COMPOSES and DECOMPOSES say neither.
_DEPENDS: dict[str, str] = {
    "ABOUT": "source",
    "OBSERVED_AT": "source",
    "GROUNDS": "source",
    "SUPPORTS": "source",
    "CHALLENGES": "source",
    "INFORMS": "source",
    "RESOLVES": "source",
    "RAISES": "target",
}


@dataclass(frozen=True, slots=True)
class Item:
    """One node the erasure removes, and why."""

    node: NodeRecord
    why: str


@dataclass(frozen=True, slots=True)
class Plan:
    refs: tuple[str, ...]
    items: tuple[Item, ...]  # in the order they were found: referents first
    kept: tuple[Item, ...] = ()  # neighbours that stay: they touch something staying
    withdrawn: tuple[str, ...] = ()  # encounters whose purpose and summary are withdrawn

    @property
    def ids(self) -> list[str]:
        return [i.node.id for i in self.items]

    @property
    def tombstones(self) -> dict[str, int]:
        """encounter -> how many of its nodes go."""
        counts: dict[str, int] = {}
        for item in self.items:
            if item.node.encounter:
                counts[item.node.encounter] = counts.get(item.node.encounter, 0) + 1
        return counts


@dataclass(frozen=True, slots=True)
class Erased:
    plan: Plan
    tick: int
    tombstones: dict[str, int] = field(default_factory=dict[str, int])
    withdrawn: tuple[str, ...] = ()  # encounters whose purpose and summary were withdrawn


def _chain(tx: ReadTx, node: NodeRecord) -> list[NodeRecord]:
    """Every version of the node's chain, the node first."""
    found: dict[str, NodeRecord] = {node.id: node}
    frontier = [node]
    while frontier:
        step: list[str] = []
        for n in frontier:
            step += [pid for pid, _ in tx.predecessors(n.id)]
            if n.superseded_by:
                step.append(n.superseded_by)
        fresh = [i for i in dict.fromkeys(step) if i not in found]
        got = tx.get_nodes(fresh)
        frontier = [got[i] for i in fresh if i in got]
        found.update((n.id, n) for n in frontier)
    return list(found.values())


def _other_end(edge: EdgeRecord, members: set[str]) -> str:
    return edge.target if edge.source in members else edge.source


def _describe(
    edges: Sequence[EdgeRecord],
    members: set[str],
    going: dict[str, Item],
    chains: dict[str, list[NodeRecord]],
) -> str:
    parts: list[str] = []
    for e in edges:
        other_id = _other_end(e, members)
        other = going[other_id].node if other_id in going else chains[other_id][0]
        if other_id in chains:
            other = next(n for n in chains[other_id] if n.id == other_id)
        arrow = f"{e.type} -> " if e.source in members else f"<- {e.type} "
        parts.append(f"{arrow}{other.name or other.id}")
    return "it is only about what is erased: " + ", ".join(dict.fromkeys(parts))


def _dependent(edge: EdgeRecord) -> str | None:
    """The end of the relation that is about the other one, if either is."""
    end = _DEPENDS.get(edge.type)
    return None if end is None else edge.source if end == "source" else edge.target


def _targets(tx: ReadTx, refs: Sequence[str]) -> tuple[list[Item], list[Item]]:
    """What goes (referents and their chains first), and the neighbours that stay."""
    going: dict[str, Item] = {}
    for i, ref in enumerate(refs):
        node = resolve(tx, validate.text(ref, f"refs[{i}]", required=True), f"refs[{i}]")
        for member in _chain(tx, node):
            if member.id not in going:
                why = (
                    f"the referent {ref!r}"
                    if member.id == node.id
                    else f"a version of {node.name or node.id}'s chain"
                )
                going[member.id] = Item(member, why)
    cache: dict[str, list[EdgeRecord]] = {}

    def edges(node_id: str) -> list[EdgeRecord]:
        if node_id not in cache:
            cache[node_id] = [e for e in tx.edges_of(node_id) if e.type != _CHAIN]
        return cache[node_id]

    # Candidates: whatever is about what goes, and so on outward, whole chains at once.
    chains: dict[str, list[NodeRecord]] = {}
    frontier = list(going)
    while frontier:
        step: list[str] = []
        for node_id in frontier:
            for e in edges(node_id):
                other = _other_end(e, {node_id})
                if _dependent(e) == other and other not in going and other not in chains:
                    step.append(other)
        frontier = []
        for node in tx.get_nodes(list(dict.fromkeys(step))).values():
            if node.id in chains:
                continue
            chain = _chain(tx, node)
            for member in chain:
                chains[member.id] = chain
                frontier.append(member.id)
    # Then the largest part of them that touches nothing staying.
    staying = True
    while staying:
        staying = False
        for node_id, chain in list(chains.items()):
            members = {n.id for n in chain}
            if node_id not in chains:
                continue
            links = [e for m in members for e in edges(m)]
            if any(
                _other_end(e, members) not in going and _other_end(e, members) not in chains
                for e in links
            ):
                for m in members:
                    chains.pop(m, None)
                staying = True
    for node_id, chain in chains.items():
        members = {n.id for n in chain}
        about = [e for m in members for e in edges(m) if _dependent(e) in members]
        node = next(n for n in chain if n.id == node_id)
        going[node_id] = Item(node, _describe(about, members, going, chains))
    kept: dict[str, Item] = {}
    for node_id in list(going):
        for e in edges(node_id):
            other = _other_end(e, {node_id})
            if other in going or other in kept:
                continue
            found = tx.get_node(other)
            if found is None:
                continue
            stays = [_other_end(x, {other}) for x in edges(other)]
            names = [
                n.name or n.id for n in tx.get_nodes([i for i in stays if i not in going]).values()
            ]
            kept[other] = Item(found, "also linked to what stays: " + ", ".join(sorted(set(names))))
    return list(going.values()), list(kept.values())


def drawing_on(tx: ReadTx, ids: Sequence[str]) -> list[str]:
    """The encounters that drew on these nodes: recorded, confirmed, consulted or pinned
    one, or made a relation to one; and, by the record of the past, the encounters that
    made a relation to one since deleted, or recorded a node an agent deleted that goes
    from the past with them. Sorted."""
    made = tx.edges_out_of(ids, AUTHORED_RELATION_TYPES) + tx.edges_into(
        ids, AUTHORED_RELATION_TYPES
    )
    drew = set(tx.encounters_drawing_on(ids)) | {e.encounter for e in made if e.encounter}
    drew.update(tx.encounters_in_the_past_of(ids))
    return sorted(drew)


def plan(store: GraphStore, refs: Sequence[str]) -> Plan:
    """What ``erase`` would remove, and why, for the operator to confirm. Reads only."""
    items = validate.batch(list(refs), "refs")

    def work(tx: ReadTx) -> Plan:
        going, kept = _targets(tx, items)
        drew = drawing_on(tx, [i.node.id for i in going])
        return Plan(tuple(items), tuple(going), tuple(kept), tuple(drew))

    return store.read(work)


def erase(store: GraphStore, confirmed: Plan) -> Erased:
    """Delete exactly the confirmed plan in one write, leaving tombstones on the spine."""

    def work(tx: WriteTx) -> Erased:
        going, kept = _targets(tx, confirmed.refs)
        now = Plan(confirmed.refs, tuple(going), tuple(kept))
        if sorted(now.ids) != sorted(confirmed.ids):
            raise Conflict(
                "the memory changed since the plan was shown (it now covers "
                f"{len(now.ids)} node(s), not {len(confirmed.ids)}); nothing was deleted: "
                "run the command again and confirm the new plan"
            )
        _counts, withdrawn = delete(tx, [i.node for i in now.items])
        return Erased(now, tx.tick, now.tombstones, tuple(withdrawn))

    return store.write(work)


def delete(tx: WriteTx, nodes: Sequence[NodeRecord]) -> tuple[dict[str, int], list[str]]:
    """Delete whole chains newest first (each deletion then leaves its predecessor the
    head for a moment, never a second head), adding the tombstone counts, and withdraw
    the purpose and summary of each encounter that drew on them (``drawing_on``, asked
    first: the links that say so go with the nodes). Every operator's hard deletion
    comes through here. The tombstone counts, and the encounters whose words went."""
    ids = [n.id for n in nodes]
    withdrawn = drawing_on(tx, ids)
    tx.withdraw_encounter_text(withdrawn, WITHDRAWN)
    delete_nodes(tx, ids)
    counts: dict[str, int] = {}
    classes: dict[str, list[str | None]] = {}
    for node in nodes:
        if node.encounter:
            counts[node.encounter] = counts.get(node.encounter, 0) + 1
            classes.setdefault(node.encounter, []).append(node.props.get("classification"))
    # Which of them a reader not granted a class would not have seen (store/uses.py): read
    # and written only where one was classified.
    marked = [e for e, found in classes.items() if any(found)]
    held = tx.get_encounters(marked) if marked else {}
    for encounter, n in counts.items():
        marks = uses.tombstones_after(held.get(encounter), classes[encounter])
        tx.add_tombstones(encounter, n, marks)
    # Servers still serving this memory drop what they cached of node text (caches.py).
    tx.count_erasure()
    return counts, withdrawn


def due(store: GraphStore, now: str) -> list[str]:
    """Ids of the nodes whose retention has run out by ``now`` (the store's time format:
    ``retain_until`` compares as a string). Reads every node: an operator's command,
    run now and then, not a hot path."""
    nodes = store.read(lambda tx: tx.authored_graph().nodes)
    return [
        n.id
        for n in sorted(nodes, key=lambda n: (n.tick, n.ord))
        if isinstance(n.props.get("retain_until"), str) and n.props["retain_until"] <= now
    ]
