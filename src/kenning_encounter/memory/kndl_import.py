"""KNDL facts into a memory (``kenning-encounter kndl import``).

The facts are checked, and resolved against the memory, before anything is written;
then one import session writes them through the memory service like any agent: one
encounter, Citations and subject Components first, the facts in waves (a revision
after what it revises), the relations last.

A second import of facts the memory holds is refused, not skipped: KNDL files are
immutable, so a fact arriving again is either a mistake or a changed file, and the
memory keeps no identity for a fact beyond its name to tell the two apart safely.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

from kenning_encounter.errors import InvalidInput, StoreError, SupersessionRule
from kenning_encounter.memory import validate
from kenning_encounter.memory.kndl import FACT_TYPES, ID_TAIL, SUBJECT_KIND, SUBJECT_LABEL
from kenning_encounter.memory.kndl_facts import Fact, read_facts
from kenning_encounter.memory.service import Memory
from kenning_encounter.plaintext import one_line
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.vocabulary import NODE_TYPES

T = TypeVar("T")
_ABOUT_ENDS: Final = ("Concept", "Component")
FACTS_BATCH_FLOOR: Final = 500


@dataclass
class Imported:
    encounter: str
    facts: int
    citations: int
    subjects: int
    relations: int
    not_held: dict[str, int] = field(default_factory=dict[str, int])


@dataclass
class _Plan:
    facts: list[Fact]
    names: dict[str, str]  # fact id -> node name
    types: dict[str, str]  # fact id -> node type
    waves: list[list[Fact]]
    held: dict[str, NodeRecord]  # reference -> node of the memory it names
    # source -> (the Citation held, or None to create one; its name), and the same for
    # each subject's Component
    citations: dict[str, tuple[str | None, str]]
    subjects: dict[str, tuple[str | None, str]]
    # Subjects that are themselves Concepts: a fact of this import (its id), or a node
    # of this memory named by its IRI; ABOUT points at them, no Component stands in.
    about: dict[str, str] = field(default_factory=dict[str, str])


def _resolve_held(tx: ReadTx, refs: Sequence[str], memory: str) -> dict[str, NodeRecord]:
    """References to nodes the memory holds already: our IRIs, ids or live names."""
    ids: dict[str, str] = {}
    for ref in refs:
        m = ID_TAIL.fullmatch(ref)
        if m is not None and m["memory"] == memory:
            ids[ref] = m["id"]
    names = tx.head_ids_by_names([r for r in refs if r not in ids])
    ids.update(names)
    nodes = tx.get_nodes(sorted(set(ids.values())))
    return {ref: nodes[i] for ref, i in ids.items() if i in nodes}


def _chain_types(facts: Sequence[Fact], held: dict[str, NodeRecord]) -> dict[str, str]:
    """A supersession keeps its type, so a whole chain is a Concept when any fact in it
    is one (derived, or typed Concept), and takes the type of a held node it revises."""
    parent = {f.id: f.id for f in facts}

    def root(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for f in facts:
        if f.supersedes in parent:
            parent[root(f.id)] = root(f.supersedes)
    concept = {root(f.id) for f in facts if f.concept or f.derived_from}
    anchored: dict[str, tuple[Fact, NodeRecord]] = {}
    for f in facts:
        old = held.get(f.supersedes) if f.supersedes and f.supersedes not in parent else None
        if old is not None:
            anchored[root(f.id)] = (f, old)
    types: dict[str, str] = {}
    for f in facts:
        r = root(f.id)
        kind = "Concept" if r in concept else "Observation"
        if r in anchored:
            first, old = anchored[r]
            if old.type != kind and not (kind == "Observation" and old.type == "Concept"):
                raise SupersessionRule(
                    first.field("supersedes"),
                    f"it revises the {old.type} {old.name!r}, but its chain holds derived "
                    "facts (a Concept); a revision keeps its type",
                )
            kind = old.type
        types[f.id] = kind
    return types


def _waves(facts: Sequence[Fact]) -> list[list[Fact]]:
    by_id = {f.id: f for f in facts}
    successor: dict[str, Fact] = {}
    for f in facts:
        if f.supersedes is None:
            continue
        other = successor.get(f.supersedes)
        if other is not None:
            raise SupersessionRule(
                f.field("supersedes"),
                f"{f.supersedes} is superseded by {other.id} ({other.where}) too; a chain is "
                "a line: supersede the newest fact",
            )
        successor[f.supersedes] = f
    depth: dict[str, int] = {}
    for f in facts:
        chain: list[Fact] = []
        on_chain: set[str] = set()
        at: Fact | None = f
        while at is not None and at.id not in depth:
            if at.id in on_chain:
                raise SupersessionRule(f.field("supersedes"), "the supersedes chain is a cycle")
            chain.append(at)
            on_chain.add(at.id)
            at = by_id.get(at.supersedes) if at.supersedes else None
        base = depth[at.id] + 1 if at is not None else 0
        for i, item in enumerate(reversed(chain)):
            depth[item.id] = base + i
    waves: list[list[Fact]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for f in facts:
        waves[depth[f.id]].append(f)
    return waves


def _entity(f: Fact, plan: _Plan) -> dict[str, Any]:
    kind = plan.types[f.id]
    entity: dict[str, Any] = {
        "type": kind,
        "name": plan.names[f.id],
        "description": f.statement,
        "valid_from": f.valid_from,
        "valid_until": f.valid_until,
    }
    if kind == "Observation":
        entity["t_observed"] = f.observed_at
    entity["predicate"] = f.predicate
    if f.object is not None:
        entity["object"], object_type = f.object
        entity["object_type"] = None if object_type == "string" else object_type
    props = NODE_TYPES[kind].prop_names()
    for key, value in (
        ("classification", list(f.classification) or None),
        ("retention", f.retention),
    ):
        if value is None:
            continue
        if key not in props:
            # Dropping it would ungate what its author marked sensitive.
            raise InvalidInput(
                f.field(key),
                f"this memory does not hold {key} yet, so the fact would lose its gate; "
                "leave the fact out or upgrade kenning-encounter",
            )
        entity[key] = value
    if f.supersedes is not None:
        entity["supersedes"] = f.supersedes
        entity["revision_why"] = f.revision_why or f"KNDL fact {f.id} supersedes {f.supersedes}"
    return entity


_KNDL_FIELD: Final = {
    "name": "label",
    "description": "statement",
    "valid_from": "validFrom",
    "valid_until": "validUntil",
    "t_observed": "observedAt",
    "revision_why": "revisionWhy",
    "object_type": "object",
}


def _checked(entity: dict[str, Any], f: Fact) -> None:
    """The service's own checks on the node the fact becomes, reported in KNDL's words."""
    try:
        validate.entity({k: v for k, v in entity.items() if v is not None}, "node")
    except InvalidInput as exc:
        ours = exc.field.removeprefix("node.")
        message = str(exc).split(": ", 1)[-1]
        if ours == "name" and f.label is None:
            # The name came from the @id: say so, and how to keep the @id as it is.
            raise InvalidInput(
                f.field("@id"),
                f"{message} (a fact without a label is named by its @id: give it a label "
                "that is a name)",
            ) from None
        raise InvalidInput(f.field(_KNDL_FIELD.get(ours, ours)), message) from None


def plan(store: GraphStore | None, facts: list[Fact], memory: str) -> _Plan:
    """Everything an import will do, checked against the memory; raises before any write.
    ``store`` None: against a memory that holds nothing yet (none is made to check)."""
    ids = {f.id for f in facts}
    outside = sorted(
        {f.supersedes for f in facts if f.supersedes and f.supersedes not in ids}
        | {d for f in facts for d in f.derived_from if d not in ids}
    )
    names = {f.id: f.label or f.id for f in facts}
    sources = sorted({s for f in facts for s in f.sources})
    subjects = sorted({s for f in facts for s in f.subjects})

    def look(
        tx: ReadTx,
    ) -> tuple[dict[str, NodeRecord], dict[str, NodeRecord], dict[str, str | None], dict[str, str]]:
        held = _resolve_held(tx, outside, memory)
        wanted = {*names.values(), *sources, *subjects}
        wanted |= {f"source: {s}" for s in sources} | {f"subject: {s}" for s in subjects}
        taken = tx.head_ids_by_names(sorted(wanted))
        nodes = tx.get_nodes(sorted(set(taken.values())))
        holders = {n: nodes[i] for n, i in taken.items() if i in nodes}
        comps = {s: tx.component_id_by_source(SUBJECT_KIND, SUBJECT_LABEL, s) for s in subjects}
        ours = {
            s: m["id"] for s in subjects if (m := ID_TAIL.fullmatch(s)) and m["memory"] == memory
        }
        found = tx.get_nodes(sorted(set(ours.values())))
        about = {s: i for s, i in ours.items() if i in found and found[i].type in _ABOUT_ENDS}
        return held, holders, comps, about

    held, holders, comps, about = (
        store.read(look) if store is not None else ({}, {}, dict.fromkeys(subjects), {})
    )
    for f in facts:
        for ref, what in [
            (f.supersedes, "supersedes"),
            *((d, "derivedFrom") for d in f.derived_from),
        ]:
            if ref is None or ref in ids:
                continue
            node = held.get(ref)
            if node is None:
                raise InvalidInput(
                    f.field(what),
                    f"{ref} is neither a fact of this import nor a node of this memory; "
                    "import the fact it names first, or in the same run",
                )
            if node.type not in FACT_TYPES:
                raise InvalidInput(
                    f.field(what),
                    f"{ref} is a {node.type}; facts come from Observations and Concepts",
                )
            if what == "supersedes" and node.superseded_by is not None:
                raise SupersessionRule(
                    f.field(what), f"{ref} is superseded already (by {node.superseded_by})"
                )
    revisers: dict[str, Fact] = {}
    for f in facts:
        old = held.get(f.supersedes) if f.supersedes and f.supersedes not in ids else None
        if old is None:
            continue
        if old.id in revisers:  # the same node named two ways (name, IRI)
            raise SupersessionRule(
                f.field("supersedes"),
                f"{old.id} is revised by {revisers[old.id].id} too; a chain is a line",
            )
        revisers[old.id] = f
    waves = _waves(facts)
    types = _chain_types(facts, held)
    _names_free([f for wave in waves for f in wave], names, holders, held)
    taken = set(names.values())
    # The first fact naming each source and subject, the one a refusal names (found in
    # one pass: a search per value would make a large import quadratic).
    source_user: dict[str, Fact] = {}
    subject_user: dict[str, Fact] = {}
    for f in facts:
        for s in f.sources:
            source_user.setdefault(s, f)
        for s in f.subjects:
            subject_user.setdefault(s, f)
    citations: dict[str, tuple[str | None, str]] = {}
    for s in sources:
        citations[s] = _pick(
            s,
            "source",
            holders,
            taken,
            lambda n, s=s: n.type == "Citation" and n.props.get("uri") == s,
            source_user[s],
        )
    about.update({s: s for s in subjects if types.get(s) == "Concept"})
    subject_ids: dict[str, tuple[str | None, str]] = {}
    for s in subjects:
        if s in about:
            continue
        existing = comps[s]
        subject_ids[s] = (
            (existing, s)
            if existing is not None
            else _pick(
                s,
                "subject",
                holders,
                taken,
                lambda _: False,
                subject_user[s],
            )
        )
    the_plan = _Plan(facts, names, types, waves, held, citations, subject_ids, about)
    for f in facts:
        _checked(_entity(f, the_plan), f)
    for ref in _references(the_plan):
        what, value = (
            ("source", ref["uri"]) if ref["type"] == "Citation" else ("subject", ref["source_key"])
        )
        try:
            validate.entity(ref, what)
        except InvalidInput as exc:
            user = (source_user if what == "source" else subject_user)[value]
            raise InvalidInput(user.field(what), str(exc).split(": ", 1)[-1]) from None
    return the_plan


def _pick(
    value: str,
    kind: str,
    holders: dict[str, NodeRecord],
    taken: set[str],
    fits: Callable[[NodeRecord], bool],
    user: Fact,
) -> tuple[str | None, str]:
    """The node a source or subject reuses, or the free name it is created under: its own
    text, else prefixed with its kind (a fact's @id may well be spelt the same)."""
    for name in (value, f"{kind}: {value}"):
        node = holders.get(name)
        if node is not None and fits(node):
            return node.id, name
        if node is None and name not in taken:
            taken.add(name)
            return None, name
    raise InvalidInput(
        user.field(kind),
        f"{value!r} and {kind + ': ' + value!r} both name other nodes; rename one of them",
    )


def _names_free(
    facts: Sequence[Fact],
    names: dict[str, str],
    holders: dict[str, NodeRecord],
    held: dict[str, NodeRecord],
) -> None:
    """Each fact's node name is free, or held by the very node it revises (a revision may
    keep its name); otherwise the facts were imported before, or the name is someone's."""
    by_name: dict[str, Fact] = {}
    for f in facts:
        n = names[f.id]
        first = by_name.get(n)
        if first is not None and f.supersedes != first.id:
            raise InvalidInput(
                f.field("label"), f"{n!r} names the fact {first.id} ({first.where}) too"
            )
        by_name[n] = f
        holder = holders.get(n)
        revised = held.get(f.supersedes) if f.supersedes else None
        if holder is None or (revised is not None and holder.id == revised.id):
            continue
        if first is not None and f.supersedes == first.id:
            continue
        again = holder.description == f.statement
        raise InvalidInput(
            f.field("@id" if f.label is None else "label"),
            (
                f"this fact was imported before: {holder.type} {holder.id} holds it "
                f"(recorded in {holder.encounter}); a second import is refused, nothing written"
            )
            if again
            else f"the name {n!r} is held by {holder.type} {holder.id}; give the fact another label",
        )


def run(memory: Memory, source: Path, memory_name: str) -> Imported:
    """Import the facts under ``source`` as one encounter of an import session."""
    # The plan reads past the classification gate: a name or source held by a
    # classified node is taken all the same, and the write would refuse it.
    return write(memory, plan(memory.backend, read_facts(source), memory_name), source)


def _references(p: _Plan) -> list[dict[str, Any]]:
    """The Citations and subject Components the import creates."""
    return [
        *(
            {"type": "Citation", "name": name, "kind": _kind(s), "uri": s}
            for s, (i, name) in p.citations.items()
            if i is None
        ),
        *(
            {
                "type": "Component",
                "name": name,
                "source_kind": SUBJECT_KIND,
                "source_label": SUBJECT_LABEL,
                "source_key": s,
            }
            for s, (i, name) in p.subjects.items()
            if i is None
        ),
    ]


def session_of(facts: list[Fact]) -> str:
    """The session an import of these facts writes as: one per set of facts."""
    digest = hashlib.sha256("\n".join(sorted(f.id for f in facts)).encode()).hexdigest()[:16]
    return f"kndl-import-{digest}"


def clear_cut_short(memory: Memory, facts: list[Fact], source: Path) -> int | None:
    """Undo an earlier import of these facts that was cut short where nothing could undo
    it (the process killed): its encounter is still open, neither sealed by a finished
    import nor by an undone one. The number of nodes it had written, or None when there
    was no such import. Without this, every later run found those facts held."""
    memory = memory.as_operator()
    session = session_of(facts)

    def left(tx: ReadTx) -> int | None:
        encounter = tx.open_encounter_of(session)
        return None if encounter is None else len(tx.recorded_ids(encounter.name))

    count = memory.backend.read(left)
    if count is None:
        return None
    problem = _undo(memory, session, source)
    if problem is not None:
        raise StoreError(
            f"an earlier import of these facts was cut short, and what it wrote could not "
            f"be removed ({problem}); remove it with 'kenning-encounter forget', then import "
            "again"
        )
    return count


def write(
    memory: Memory, p: _Plan, source: Path, progress: Callable[[int], None] | None = None
) -> Imported:
    """Carry out a plan through the memory service (writes only what ``plan`` checked),
    as the operator: every class the facts carry is granted to the import's own writes.

    The writes are many calls, so one that fails (a store error, a name taken since the
    plan, an interruption) would leave part of the import behind, and a second run
    would find those facts held. What the import's encounter recorded is deleted again
    before the error goes on; if that fails too, the error carries a note saying so."""
    memory = memory.as_operator()
    facts = p.facts
    session = session_of(facts)
    try:
        # The file's name is shown, not kept as written (a path may hold any character).
        opened = memory.advance_encounter(
            session, f"import {len(facts)} KNDL facts from {one_line(source.name)}"
        )
        relations = _write_nodes_and_relations(memory, session, p, progress)
        memory.close_encounter(
            session, f"imported {len(facts)} KNDL facts from {one_line(str(source))}"
        )
    except BaseException as exc:
        left = _undo(memory, session, source)
        if left:
            exc.add_note(
                f"undoing the import failed too ({left}): its encounter holds part of it; "
                "remove those nodes with 'kenning-encounter forget' before running the "
                "import again"
            )
        raise
    not_held = Counter(n for f in facts for n in f.not_held)
    # A Concept holds no observation time (vocabulary): say so rather than drop it unseen.
    not_held.update("observedAt" for f in facts if f.observed_at and p.types[f.id] == "Concept")
    return Imported(
        encounter=opened.encounter.name,
        facts=len(facts),
        citations=sum(i is None for i, _ in p.citations.values()),
        subjects=sum(i is None for i, _ in p.subjects.values()),
        relations=len(relations),
        not_held=dict(sorted(not_held.items())),
    )


def _write_nodes_and_relations(
    memory: Memory, session: str, p: _Plan, progress: Callable[[int], None] | None
) -> list[dict[str, str]]:
    """Citations and subjects, the facts wave by wave (``progress`` is told how many
    are written after each batch), then the relations."""
    # A source, a subject and a fact's @id may be spelt alike: each kind has its own map.
    cite_of = {s: i for s, (i, _) in p.citations.items() if i is not None}
    subject_of = {s: i for s, (i, _) in p.subjects.items() if i is not None}
    for chunk in _chunks(_references(p)):
        for ref, rec in zip(chunk, memory.create_entities(session, chunk).created, strict=True):
            if ref["type"] == "Citation":
                cite_of[ref["uri"]] = rec.id
            else:
                subject_of[ref["source_key"]] = rec.id
    node_of = {ref: n.id for ref, n in p.held.items()}  # fact id -> node id
    written = 0
    # About a tenth of the facts a batch, so progress is told as often and an interrupt
    # is heard soon; never so small that the batches' own cost shows.
    tenth = min(validate.MAX_BATCH, max(FACTS_BATCH_FLOOR, -(-len(p.facts) // 10)))
    for wave in p.waves:
        for chunk in _chunks(wave, tenth):
            entities = [_entity(f, p) for f in chunk]
            for f, e in zip(chunk, entities, strict=True):
                if f.supersedes is not None:
                    e["supersedes"] = node_of[f.supersedes]
            created = memory.create_entities(
                session, [{k: v for k, v in e.items() if v is not None} for e in entities]
            )
            written += len(chunk)
            if progress is not None:
                progress(written)
            for f, rec in zip(chunk, created.created, strict=True):
                node_of[f.id] = rec.id
    relations: list[dict[str, str]] = []
    for f in p.facts:
        me = node_of[f.id]
        concept = p.types[f.id] == "Concept"
        for s in f.sources:
            relations.append(
                {"source": cite_of[s], "type": "GROUNDS", "target": me}
                if concept
                else {"source": me, "type": "OBSERVED_AT", "target": cite_of[s]}
            )
        for s in f.subjects:
            to = p.about.get(s)
            target = subject_of[s] if to is None else node_of.get(to, to)
            relations.append({"source": me, "type": "ABOUT", "target": target})
        for d in f.derived_from:
            kind = p.types.get(d) or p.held[d].type
            rel = "GROUNDS" if kind == "Observation" else "SUPPORTS"
            relations.append({"source": node_of[d], "type": rel, "target": me})
    for chunk in _chunks(relations):
        memory.create_relations(session, chunk)
    return relations


def _undo(memory: Memory, session: str, source: Path) -> str | None:
    """Delete what the import's open encounter recorded and seal it; None when done (or
    nothing was opened), else why not. The store is asked what was recorded: a write
    interrupted as it returned has committed nodes the import never saw."""
    try:

        def recorded(tx: ReadTx) -> list[NodeRecord] | None:
            encounter = tx.open_encounter_of(session)
            if encounter is None:
                return None
            return list(tx.get_nodes(tx.recorded_ids(encounter.name)).values())

        nodes = memory.backend.read(recorded)
        if nodes is None:  # stopped before its encounter was opened
            return None
        # Newest first, so each call holds the newest of any chain it touches.
        newest = [n.id for n in sorted(nodes, key=lambda n: (n.tick, n.ord), reverse=True)]
        for chunk in _chunks(newest):
            memory.delete_entities(session, chunk)
        memory.close_encounter(
            session,
            f"a KNDL import from {one_line(str(source))} failed; the {len(nodes)} nodes it "
            "wrote were deleted again",
        )
    except Exception as exc:  # the error that stopped the import is the one to raise
        return f"{type(exc).__name__}: {exc}"
    return None


def _kind(source: str) -> str:
    scheme = source.split(":", 1)[0].lower()
    return "web" if scheme in ("http", "https") else "conversation" if scheme == "human" else "kndl"


def _chunks(items: Sequence[T], size: int = validate.MAX_BATCH) -> Iterable[list[T]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])
