"""Guarded writes: every check runs inside the same write transaction as the write.

A refusal raises before anything is written, and the transaction rolls back,
so a batch is recorded whole or not at all.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from kenning_encounter.errors import (
    EndpointRule,
    InvalidInput,
    KenningError,
    NameTaken,
    NotFound,
    NotYourEncounter,
    SupersessionRule,
    Withheld,
)
from kenning_encounter.memory import classification, status, validate
from kenning_encounter.memory.gates import hides, view, withholds
from kenning_encounter.memory.models import (
    Created,
    Deleted,
    EdgeOut,
    EntityIn,
    RecordedNode,
    Related,
    RelationIn,
)
from kenning_encounter.memory.spine import ensure_open, require_open
from kenning_encounter.store import uses
from kenning_encounter.store.ids import type_of_id
from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.port import BatchStart, GraphStore, ReadTx, WriteTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord
from kenning_encounter.vocabulary import (
    AUTHORED_RELATION_TYPES,
    NODE_TYPES,
    RELATION_TYPES,
    STATUS_EFFECTS,
)

_ID = re.compile(r"[a-z]{3}_[0-9a-f]{12}")
# What an encounter does to a node that is its own work on it (an undo keeps off it).
_STANDING = ("CONFIRMED", "PINNED")
_DONE_BY = {
    "CONFIRMED": "was confirmed",
    "PINNED": "was pinned (or unpinned)",
    "REFERENT_CLAIM": "is named in a referent claim made",
}


def new_id(node_type: str) -> str:
    return f"{NODE_TYPES[node_type].id_prefix}_{uuid.uuid4().hex[:12]}"


def is_node_id(ref: str) -> bool:
    return _ID.fullmatch(ref) is not None


def resolve(tx: ReadTx, ref: str, field: str) -> NodeRecord:
    """A node by id, or the live node that holds a name."""
    node_id = ref if is_node_id(ref) else tx.head_id_by_name(ref)
    node = tx.get_node(node_id) if node_id else None
    if node is None:
        raise NotFound("node", ref, f"{field} must name or id an existing node; try search")
    return node


def resolve_shown(store: GraphStore, tx: ReadTx, ref: str, field: str) -> NodeRecord:
    """``resolve`` for a write: a node the caller may not see is refused without a word of
    its id or text (the write reads the whole memory, so it must ask: memory/gates.py)."""
    return shown(store, resolve(tx, ref, field), ref, field)


def shown(store: GraphStore, node: NodeRecord, ref: str, field: str) -> NodeRecord:
    """``node`` if the caller may see it; else refused, naming neither its id nor its text.
    A name is the registry's, read over the whole memory as every write reads it: held by a
    version the caller may not see, it is refused, though a read stands at an older version
    of that chain the caller sees (memory/seen.py), which the write then takes by its id."""
    if hides(store, node):
        by_name = (
            ""
            if is_node_id(ref)
            else (
                " (find_by_name gives the id of the version of its chain this server shows, "
                "if any: name that version by its id)"
            )
        )
        raise Withheld(
            field,
            f"{ref!r} names",
            f"name another node{by_name}, or have a server granted its classes make this change",
        )
    return node


UNSEEN_SUCCESSOR = "a version this server may not see"


def successor_named(store: GraphStore | None, tx: ReadTx, node: NodeRecord) -> str:
    """The id of the version that revised ``node``, for a refusal; a version the caller may
    not see is named by no id (memory/gates.py). No ``store``: nothing is withheld."""
    successor = (
        tx.get_node(node.superseded_by) if node.superseded_by and store is not None else None
    )
    if store is not None and successor is not None and hides(store, successor):
        return UNSEEN_SUCCESSOR
    return str(node.superseded_by)


def _resolved(
    ref: str, holders: Mapping[str, str], nodes: Mapping[str, NodeRecord], field: str
) -> NodeRecord:
    """``resolve`` over names and nodes looked up beforehand."""
    node_id = ref if is_node_id(ref) else holders.get(ref)
    node = nodes.get(node_id) if node_id else None
    if node is None:
        raise NotFound("node", ref, f"{field} must name or id an existing node; try search")
    return node


def _chain_head(tx: ReadTx, node: NodeRecord) -> str:
    """The live version of ``node``'s chain (``node`` itself when it is live)."""
    if node.superseded_by is None:
        return node.id
    return tx.chain(node.id, older=0, newer=0).head


def _check_chain_link(
    tx: ReadTx,
    new: NodeRecord | None,
    old: NodeRecord,
    field: str,
    *,
    store: GraphStore | None = None,
) -> None:
    """A supersession keeps the chain a line: one successor, same type, no cycle."""
    if old.superseded_by is not None:
        successor = successor_named(store, tx, old)
        # The head of a chain a withheld version goes on in is one this server cannot name.
        fix = (
            "revise the head of its chain from a server granted its classes"
            if successor == UNSEEN_SUCCESSOR
            else "revise the head of its chain instead"
        )
        raise SupersessionRule(field, f"{old.name!r} is already superseded by {successor}; {fix}")
    if new is None:
        return
    if new.type != old.type:
        raise SupersessionRule(
            field, f"a {new.type} cannot supersede a {old.type}; revisions keep their type"
        )
    if new.id == old.id:
        raise SupersessionRule(field, "a node cannot supersede itself")
    if tx.predecessors(new.id):
        raise SupersessionRule(
            field, f"{new.name!r} already revises another node; a chain is a line"
        )
    # new has no predecessor and old has no successor: a cycle means new is in old's past.
    seen = {old.id}
    frontier = [old.id]
    while frontier:
        step = [pid for nid in frontier for pid, _ in tx.predecessors(nid)]
        if new.id in step:
            raise SupersessionRule(field, "that revision would close a cycle in the chain")
        frontier = [p for p in step if p not in seen]
        seen.update(frontier)


def create_entities(
    store: GraphStore, session_id: str, entities: Sequence[EntityIn | Mapping[str, Any]]
) -> tuple[Created, list[NodeRecord]]:
    session = validate.session_id(session_id)
    items = validate.batch(list(entities), "entities")
    drafts = [validate.entity(raw, f"entities[{i}]") for i, raw in enumerate(items)]
    seen_names: dict[str, str] = {}
    for d in drafts:
        if d.name in seen_names:
            raise InvalidInput(
                f"{d.field}.name", f"{d.name!r} appears twice in this batch ({seen_names[d.name]})"
            )
        seen_names[d.name] = d.field

    def work(tx: WriteTx) -> tuple[Created, list[NodeRecord]]:
        # The open encounter, the batch's names and the nodes it revises, asked together:
        # a few round trips for the whole batch (one on Neo4j), not two per revision.
        revised_refs = [d.supersedes for d in drafts if d.supersedes is not None]
        by_name = [r for r in revised_refs if not is_node_id(r)]
        names = list(dict.fromkeys([d.name for d in drafts] + by_name))
        by_id = [r for r in revised_refs if is_node_id(r)]
        start = tx.begin_batch(session, names, by_id, by_name)
        encounter = ensure_open(tx, session, start.encounter)
        # Activity keeps the encounter from the idle sweep (spine.dissolve_idle).
        tx.touch_encounter(encounter.name)
        holders, revisable = start.heads, start.nodes
        records: list[NodeRecord] = []
        links: list[tuple[NodeRecord, NodeRecord, str]] = []
        seen_sources: set[tuple[str, str, str]] = set()
        for d in drafts:
            old: NodeRecord | None = None
            if d.supersedes is not None:
                old = _resolved(d.supersedes, holders, revisable, f"{d.field}.supersedes")
                if hides(store, old):
                    raise Withheld(
                        f"{d.field}.supersedes",
                        f"{d.supersedes!r} names",
                        "revise it from a server granted its classes",
                    )
                if old.type != d.type:
                    raise SupersessionRule(
                        f"{d.field}.supersedes",
                        f"a {d.type} cannot supersede a {old.type}; revisions keep their type",
                    )
                _check_chain_link(tx, None, old, f"{d.field}.supersedes", store=store)
                if any(o.id == old.id for _, o, _ in links):
                    raise SupersessionRule(
                        f"{d.field}.supersedes", f"{old.name!r} is revised twice in this batch"
                    )
            holder = holders.get(d.name)
            if holder is not None and (old is None or holder != old.id):
                held = tx.get_node(holder)
                if held is not None and hides(store, held):
                    raise Withheld(
                        f"{d.field}.name",
                        f"the name {d.name!r} is held by",
                        "choose another name (names are unique among live nodes)",
                    )
                # A name a chain's earlier version had stays its chain's (the old name
                # still finds the chain): a revision of that chain may take it back.
                head = _chain_head(tx, held) if held is not None else None
                if old is None or head != old.id:
                    live = tx.get_node(head) if head is not None and held is not None else None
                    if live is not None and live.id != holder and hides(store, live):
                        raise Withheld(
                            f"{d.field}.name",
                            f"the name {d.name!r} is kept by a chain whose live version is",
                            "choose another name",
                        )
                    raise NameTaken(f"{d.field}.name", d.name, holder, head=head)
            if d.type == "Component":
                triple = (d.props["source_kind"], d.props["source_label"], d.props["source_key"])
                existing = tx.component_id_by_source(*triple)
                taken = existing is not None and (old is None or existing != old.id)
                bookmark = tx.get_node(existing) if taken and existing else None
                if bookmark is not None and hides(store, bookmark):
                    raise Withheld(
                        f"{d.field}.source_key",
                        f"the source {'/'.join(triple)} is bookmarked by",
                        "bookmark it from a server granted its classes",
                    )
                if taken or triple in seen_sources:
                    raise InvalidInput(
                        f"{d.field}.source_key",
                        f"a Component for {'/'.join(triple)} exists already"
                        + (f" ({existing})" if existing else " in this batch")
                        + "; link to it instead of bookmarking the source twice",
                    )
                seen_sources.add(triple)
            record = NodeRecord(
                ord=len(records),
                id=new_id(d.type),
                type=d.type,
                name=d.name,
                description=d.description,
                tick=tx.tick,
                created_at=tx.now,
                status=d.status,
                props=classification.with_expiry(d.props, tx.now),
                encounter=encounter.name,
                locus=session,
            )
            records.append(record)
            if old is not None:
                links.append((record, old, d.revision_why or ""))
        revises = [
            EdgeRecord(n.id, o.id, "SUPERSEDES", tx.tick, encounter.name, w) for n, o, w in links
        ]
        tx.create_nodes(records, encounter.name, held=holders, revises=revises)
        tx.touch_encounter(encounter.name)
        revised = {new.id: old.id for new, old, _ in links}
        created = Created(
            encounter=encounter.name,
            tick=tx.tick,
            created_at=tx.now,
            created=[RecordedNode.of(r, revised.get(r.id, "")) for r in records],
        )
        return created, records

    return store.write(work)


def create_relations(
    store: GraphStore, session_id: str, relations: Sequence[RelationIn | Mapping[str, Any]]
) -> Related:
    session = validate.session_id(session_id)
    items = validate.batch(list(relations), "relations")
    rels = [validate.relation(raw, f"relations[{i}]") for i, raw in enumerate(items)]

    def work(tx: WriteTx) -> Related:
        # Every end resolved in a read or two with the open encounter (``_ends``), not two
        # per end: names never move within the call (a relation registers none), and what
        # does change as the batch goes (a status, a successor) is written back into
        # ``nodes`` as it is made.
        start = _ends(tx, session, rels)
        encounter = ensure_open(tx, session, start.encounter)
        # Activity keeps the encounter from the idle sweep (spine.dissolve_idle).
        tx.touch_encounter(encounter.name)
        made: list[EdgeOut] = []
        links: list[EdgeRecord] = []  # made together once all are checked
        moves: list[tuple[str, str]] = []  # the same: status moves, in order
        unmoved: dict[str, NodeRecord] = {}  # each moved node as this write read it
        changes: list[dict[str, str]] = []
        planned: set[tuple[str, str, str]] = set()
        nodes, holders, existing = dict(start.nodes), start.heads, _existing(tx, rels, start)
        for i, rel in enumerate(rels):
            field = f"relations[{i}]"
            source = shown(
                store, _resolved(rel.source, holders, nodes, f"{field}.source"), rel.source,
                f"{field}.source",
            )  # fmt: skip
            target = shown(
                store, _resolved(rel.target, holders, nodes, f"{field}.target"), rel.target,
                f"{field}.target",
            )  # fmt: skip
            spec = RELATION_TYPES[rel.type]
            if source.id == target.id:
                raise InvalidInput(f"{field}.target", "a node cannot be linked to itself")
            if source.type not in spec.sources or (
                not spec.same_type and source.type == target.type == "Component"
            ):
                raise EndpointRule(f"{field}.source", rel.type, "source", source.type, spec.sources)
            if spec.same_type and source.type != target.type:
                raise SupersessionRule(
                    f"{field}.target",
                    f"a {source.type} cannot supersede a {target.type}; revisions keep their type",
                )
            if not spec.allows(source.type, target.type):
                allowed = [t for t in spec.targets if spec.allows(source.type, t)]
                raise EndpointRule(f"{field}.target", rel.type, "target", target.type, allowed)
            key = (source.id, target.id, rel.type)
            if key in planned or key in existing:
                raise InvalidInput(
                    field,
                    f"{source.name!r} -{rel.type}-> {target.name!r} exists already",
                )
            planned.add(key)
            if rel.type == "SUPERSEDES":
                _check_chain_link(tx, source, target, f"{field}.target", store=store)
            edge = EdgeRecord(
                source.id, target.id, rel.type, tx.tick, encounter.name, rel.revision_why
            )
            made.append(EdgeOut(**_edge_fields(edge)))
            if rel.type == "SUPERSEDES":
                # Made at once: the next relation's chain check reads the chain.
                tx.create_edge(edge)
                nodes[target.id] = replace(target, superseded_by=source.id)
            else:
                links.append(edge)
            effect = STATUS_EFFECTS.get(rel.type, {}).get(target.type)
            if effect is not None and target.status in effect[0]:
                moves.append((target.id, effect[1]))
                unmoved.setdefault(target.id, target)  # as read, before this call moved it
                nodes[target.id] = replace(nodes[target.id], status=effect[1])
                changes.append(
                    {
                        "node": target.id,
                        "name": target.name,
                        "from": str(target.status),
                        "to": effect[1],
                    }
                )
        tx.set_statuses(moves, known=unmoved)
        tx.create_edges(links)
        marks = _uses_marked(links, nodes, tx.now)
        if marks:
            tx.mark_uses(marks)
        tx.touch_encounter(encounter.name)
        changes = _changes_shown(view(store, tx), tx, changes, unmoved)
        return Related(encounter=encounter.name, tick=tx.tick, created=made, status_changes=changes)

    return store.write(work)


def _uses_marked(
    links: Sequence[EdgeRecord], nodes: Mapping[str, NodeRecord], at: str
) -> dict[str, str]:
    """The ``used_marks`` of each end these links give a use by a classified node
    (store/uses.py), from the ends as the write read them: none in a memory that holds
    no classified node, so such a write sends nothing more."""
    others: dict[str, list[str | None]] = {}
    for edge in links:
        for end, other in ((edge.source, edge.target), (edge.target, edge.source)):
            others.setdefault(end, []).append(nodes[other].props.get("classification"))
    out: dict[str, str] = {}
    for end, classes in others.items():
        marks = uses.after_links(nodes[end], classes, at)
        if marks is not None:
            out[end] = marks
    return out


def _changes_shown(
    seen: ReadTx, tx: WriteTx, changes: list[dict[str, str]], before: Mapping[str, NodeRecord]
) -> list[dict[str, str]]:
    """The status moves a write made, as its caller's gate shows statuses (memory/gates.py):
    a node a withheld relation moved reads from and to what the relations shown give it
    before and after this write (none, when that is no move), never the stored status that
    would tell of the withheld relation. ``seen``: the write's reads through the gate."""
    if seen is tx or not changes:
        return changes
    # A status no relation had moved before this write was moved by none, withheld or
    # not: its move reads the same to every reader.
    ids = list(dict.fromkeys(c["node"] for c in changes))
    if not any(status.moved(before[i].type, before[i].status) for i in ids):
        return changes
    if not withholds(seen):  # no node the gate withholds was ever made: none moved one
        return changes
    # The relations into each, read as an unlink reads them (``_restore_status``), and
    # which of their sources the gate shows.
    into = {
        i: [e for e in tx.edges_of(i) if e.target == i and e.type in STATUS_EFFECTS] for i in ids
    }
    sources = sorted({e.source for edges in into.values() for e in edges})
    shown = set(seen.get_nodes(sources))
    unseen = {i for i, edges in into.items() if any(e.source not in shown for e in edges)}
    if not unseen:
        return changes
    moves: dict[str, list[StatusMove]] = {}
    for move in tx.moves_after(sorted(unseen), -1):
        moves.setdefault(move.node, []).append(move)
    out: list[dict[str, str]] = []
    for i in ids:
        kept = [c for c in changes if c["node"] == i]
        if i not in unseen:
            out += kept
            continue
        node = before[i]
        start = status.recorded(node.status, moves.get(i, []))
        evidence = [e for e in into[i] if e.source in shown]
        was = status.replayed(node.type, start, [e for e in evidence if e.tick < tx.tick])
        now = status.replayed(node.type, start, evidence)
        if was != now:
            out.append({**kept[0], "from": str(was), "to": str(now)})
    return out


def _ends(tx: WriteTx, session: str, rels: Sequence[RelationIn]) -> BatchStart:
    """The session's open encounter, the live names among the relations' ends, and the
    nodes every end names."""
    refs = [r for rel in rels for r in (rel.source, rel.target)]
    names = sorted({r for r in refs if not is_node_id(r)})
    return tx.begin_batch(session, names, sorted({r for r in refs if is_node_id(r)}), names)


def _existing(
    tx: ReadTx, rels: Sequence[RelationIn], ends: BatchStart
) -> set[tuple[str, str, str]]:
    """The relations of these types already out of the sources."""
    holders = ends.heads
    sources = {rel.source if is_node_id(rel.source) else holders.get(rel.source) for rel in rels}
    held = [i for i in sources if i in ends.nodes]
    types = sorted({rel.type for rel in rels})
    return {(e.source, e.target, e.type) for e in tx.edges_out_of(sorted(held), types)}


def _edge_fields(edge: EdgeRecord) -> dict[str, Any]:
    return {
        "source": edge.source,
        "type": edge.type,
        "target": edge.target,
        "tick": edge.tick,
        "encounter": edge.encounter,
        "revision_why": edge.revision_why,
    }


def _resolve_all(
    store: GraphStore, tx: ReadTx, refs: Sequence[str]
) -> tuple[list[NodeRecord], KenningError | None]:
    """``resolve_shown`` of each ref in order, in a few statements for them all: the
    nodes up to the first that fails, and that failure (None when none does)."""
    texts: list[str] = []
    stopped: KenningError | None = None
    for i, ref in enumerate(refs):
        try:
            texts.append(validate.text(ref, f"refs[{i}]", required=True))
        except KenningError as exc:
            stopped = exc
            break
    holders = tx.head_ids_by_names([t for t in texts if not is_node_id(t)])
    nodes = tx.get_nodes([*(t for t in texts if is_node_id(t)), *holders.values()])
    found: list[NodeRecord] = []
    for i, ref in enumerate(texts):
        field = f"refs[{i}]"
        try:
            found.append(shown(store, _resolved(ref, holders, nodes, field), ref, field))
        except KenningError as exc:
            return found, exc
    return found, stopped


def delete_entities(store: GraphStore, session_id: str, refs: Sequence[str]) -> Deleted:
    session = validate.session_id(session_id)
    items = validate.batch(list(refs), "refs")

    def work(tx: WriteTx) -> Deleted:
        encounter = require_open(tx, session)
        # Activity keeps the encounter from the idle sweep (spine.dissolve_idle).
        tx.touch_encounter(encounter.name)
        mine = set(tx.recorded_ids(encounter.name))
        # The refs' nodes and their relations are read for the whole batch, not ref by
        # ref; a refusal is still the one the first failing ref, in order, would give.
        resolved, stopped = _resolve_all(store, tx, items)
        ours = [n.id for n in resolved if n.id in mine]
        relations: dict[str, list[EdgeRecord]] = {}  # as edges_of lists them: out, then in
        for e in tx.edges_out_of(ours, AUTHORED_RELATION_TYPES):
            relations.setdefault(e.source, []).append(e)
        for e in tx.edges_into(ours, AUTHORED_RELATION_TYPES):
            relations.setdefault(e.target, []).append(e)
        # Another encounter's confirmation, pin or referent claim is its work, which an
        # undo may not delete (DESIGN §3 invariant 7); a read (CONSULTED) builds nothing.
        standing: dict[str, tuple[str, str]] = {}  # node -> (what, the other encounter)
        for e in tx.edges_into(ours, _STANDING):
            if e.source != encounter.name:
                standing.setdefault(e.target, (e.type, e.source))
        for c in tx.claims_of(ours) if ours else ():
            if c.encounter != encounter.name:
                for end in (c.source, c.target):
                    standing.setdefault(end, ("REFERENT_CLAIM", c.encounter))
        targets: list[NodeRecord] = []
        for i, node in enumerate(resolved):
            field = f"refs[{i}]"
            if node.id not in mine:
                raise NotYourEncounter(
                    f"{field}: {node.name!r} was recorded in {node.encounter!r}, not in your open "
                    f"encounter {encounter.name!r}; older knowledge is revised (supersedes) or "
                    "retired, never deleted by an agent"
                )
            foreign = [e for e in relations.get(node.id, ()) if e.encounter != encounter.name]
            if foreign:
                raise NotYourEncounter(
                    f"{field}: {node.name!r} is linked by {foreign[0].type} from encounter "
                    f"{foreign[0].encounter!r}; it is part of other work now and cannot be deleted"
                )
            if node.id in standing:
                what, other = standing[node.id]
                raise NotYourEncounter(
                    f"{field}: {node.name!r} {_DONE_BY[what]} in encounter {other!r}; it is "
                    "part of other work now and cannot be deleted: revise it (supersedes) "
                    "or retire it instead"
                )
            targets.append(node)
        if stopped is not None:
            raise stopped
        going = {n.id for n in targets}
        for i, node in enumerate(targets):
            # Gone from the middle of a chain, it would leave its predecessor a second
            # live head under the chain's name: the newer versions go first, or with it.
            if node.superseded_by is not None and node.superseded_by not in going:
                raise InvalidInput(
                    f"refs[{i}]",
                    f"{node.name!r} ({node.id}) was revised by "
                    f"{successor_named(store, tx, node)}; delete the newest version first, "
                    "or both in one call",
                    value=items[i],
                )
        # Newest first (delete_nodes): each leaves the one before it the chain's head. An
        # undo keeps the past: a read as of an earlier tick still finds the node.
        out = [e for n in targets for e in relations.get(n.id, ()) if e.source == n.id]
        delete_nodes(tx, [n.id for n in targets], keep_past=True, out=out)
        tx.touch_encounter(encounter.name)
        return Deleted(encounter=encounter.name, tick=tx.tick, deleted=[n.id for n in targets])

    return store.write(work)


def delete_nodes(
    tx: WriteTx,
    node_ids: Sequence[str],
    *,
    keep_past: bool = False,
    out: Sequence[EdgeRecord] | None = None,
) -> None:
    """Delete nodes with their relations (the store's ``delete_nodes``), and give each
    surviving end those relations could have moved (a question resolved, a hypothesis
    supported or challenged) the status its remaining evidence gives, as an unlinking
    does: a status never outlives every relation that set it. ``out``: the nodes'
    relations out, when the caller has read them already."""
    going = set(node_ids)
    if out is None:
        out = tx.edges_out_of(list(node_ids), sorted(STATUS_EFFECTS))
    moved = list(
        dict.fromkeys(
            e.target
            for e in out
            if e.source in going
            and e.target not in going
            and type_of_id(e.target) in STATUS_EFFECTS.get(e.type, {})
        )
    )
    tx.delete_nodes(node_ids, keep_past=keep_past)
    if not moved:
        return
    found = tx.get_nodes(moved)
    for node_id in moved:
        node = found.get(node_id)
        if node is not None:
            _restore_status(tx, node)


def _restore_status(tx: WriteTx, node: NodeRecord) -> None:
    """After an unlinking, the status the remaining evidence gives: the status the node
    was recorded with, moved by each relation still pointing at it in the order they were
    made, as they moved it when made. A status given at creation (a question recorded
    resolved, a hypothesis recorded supported, falsified or retired) is where that starts,
    never the type's default; the record of the past keeps it as the first move's
    ``before``."""
    if not status.moved(node.type, node.status):  # no relation set it, none can take it back
        return
    start = status.recorded(node.status, tx.moves_after([node.id], -1))
    evidence = [e for e in tx.edges_of(node.id) if e.target == node.id]
    then = status.replayed(node.type, start, evidence)
    if then is not None and then != node.status:
        tx.set_status(node.id, then)


def delete_relations(
    store: GraphStore, session_id: str, relations: Sequence[RelationIn | Mapping[str, Any]]
) -> Deleted:
    session = validate.session_id(session_id)
    items = validate.batch(list(relations), "relations")
    rels = [validate.relation(raw, f"relations[{i}]") for i, raw in enumerate(items)]

    def work(tx: WriteTx) -> Deleted:
        encounter = require_open(tx, session)
        # Activity keeps the encounter from the idle sweep (spine.dissolve_idle).
        tx.touch_encounter(encounter.name)
        removed: list[str] = []
        for i, rel in enumerate(rels):
            field = f"relations[{i}]"
            if rel.type == "SUPERSEDES":
                raise InvalidInput(
                    f"{field}.type",
                    "a revision is not undone by deleting its edge; delete the revising node "
                    "instead (if your open encounter recorded it)",
                )
            source = resolve_shown(store, tx, rel.source, f"{field}.source")
            target = resolve_shown(store, tx, rel.target, f"{field}.target")
            edge = next(
                (
                    e
                    for e in tx.edges_of(source.id)
                    if e.source == source.id and e.target == target.id and e.type == rel.type
                ),
                None,
            )
            if edge is None:
                raise NotFound("relation", f"{source.name} -{rel.type}-> {target.name}")
            if edge.encounter != encounter.name:
                raise NotYourEncounter(
                    f"{field}: that relation was recorded in {edge.encounter!r}, not in your open "
                    f"encounter {encounter.name!r}; only your own fresh mistakes can be deleted"
                )
            tx.delete_edge(source.id, target.id, rel.type)
            _restore_status(tx, target)
            removed.append(f"{source.id} -{rel.type}-> {target.id}")
        tx.touch_encounter(encounter.name)
        return Deleted(encounter=encounter.name, tick=tx.tick, deleted=removed)

    return store.write(work)
