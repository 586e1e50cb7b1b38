"""Short text renderings of tool results, beside the structured content.

Some clients show a model only the text block, so each rendering carries what
the next step needs (ids, names, statuses, encounter names), one line per item
and descriptions clipped; the structured content holds everything.
"""

from __future__ import annotations

from collections.abc import Iterable

from kenning_encounter.memory.conflicts import ConflictsResult, Contested, Party
from kenning_encounter.memory.history import ChainHistory, Version
from kenning_encounter.memory.models import (
    Closed,
    Created,
    Deleted,
    EdgeOut,
    EncounterOut,
    NameLookup,
    NodeOut,
    Provenance,
    RecordedNode,
    ReEntry,
    Related,
    SearchResult,
)
from kenning_encounter.plaintext import json_shown, one_line, quoted
from kenning_encounter.server.outputs import (
    CypherRows,
    NodeTypeOut,
    NodeTypes,
    RelationTypeOut,
    RelationTypes,
    Schema,
    Vocabulary,
)
from kenning_encounter.store.records import WITHHELD_SUCCESSOR
from kenning_encounter.vocabulary import RELATION_TYPES

CLIP = 160
TEXT_CAP = 20_000


def clip(text: str, limit: int = CLIP) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def node_line(n: NodeOut) -> str:
    status = f" ({n.status})" if n.status else ""
    later = f" [superseded by {n.superseded_by}]" if n.superseded_by else ""
    if n.superseded_by == WITHHELD_SUCCESSOR:
        later = " [superseded, by a version of a class this server is not granted]"
    body = f" — {clip(n.description)}" if n.description else ""
    return f"- {n.type} {n.id} {n.name!r}{status}{later}{body}"


def encounter_line(e: EncounterOut) -> str:
    when = e.last_activity_at or e.opened_at
    return f"- {e.name} session {e.session_id!r}, {e.state}, last activity {when}: {clip(e.purpose, 100)}"


def edge_line(e: EdgeOut) -> str:
    why = f" (why: {clip(e.revision_why, 100)})" if e.revision_why else ""
    return f"- {e.source} -{e.type}-> {e.target}{why}"


def _section(title: str, lines: Iterable[str]) -> list[str]:
    items = list(lines)
    return [f"{title}: {len(items)}", *items] if items else [f"{title}: none"]


def _keyed(key: str | None) -> str:
    # Quoted as the name is: a key a dump carried from before the text checks can neither
    # add a line nor close the parenthesis.
    return f" ({key!r})" if key else ""


def reentry(r: ReEntry) -> str:
    e = r.encounter
    head = [f"Opened encounter {e.name} for session {e.session_id!r}: {clip(e.purpose, 200)}"]
    if e.director is not None:
        head.append(f"Directed by {e.director.name!r}{_keyed(e.director.key)}.")
    if r.closed_previous:
        head.append(f"Sealed {r.closed_previous} first.")
    if r.handle:
        head.append(
            f"Session handle: {r.handle} (pass it as session_id after a reconnect or from "
            "another client; keep it to yourself: it lets its holder write as this session)."
        )
    if r.previous:
        head.append(f"Previous encounter of this session: {r.previous}.")
    elif r.anchored_after:
        head.append(f"First encounter of this session, anchored after {r.anchored_after}.")
    lines = [
        *head,
        *_section("Open questions", map(node_line, r.open_questions)),
        *_section("Live hypotheses", map(node_line, r.live_hypotheses)),
        *_section("Recent concepts", map(node_line, r.recent_concepts)),
        *_section("Recent encounters", map(encounter_line, r.recent_sessions)),
        *_section("Unsealed encounters of other sessions", map(encounter_line, r.unsealed)),
    ]
    return "\n".join(lines)


def closed(c: Closed) -> str:
    e = c.encounter
    return f"Sealed encounter {e.name} of session {e.session_id!r} at {e.sealed_at}."


def recorded_line(n: RecordedNode) -> str:
    status = f" ({n.status})" if n.status else ""
    revises = f", revising {n.revises}" if n.revises else ""
    return f"- {n.type} {n.id} {n.name!r}{status}{revises}"


def created(c: Created) -> str:
    return "\n".join(
        [
            f"Recorded {len(c.created)} node(s) in {c.encounter} at tick {c.tick}:",
            *map(recorded_line, c.created),
        ]
    )


def related(r: Related) -> str:
    lines = [f"Linked {len(r.created)} relation(s) in {r.encounter} at tick {r.tick}:"]
    lines += map(edge_line, r.created)
    lines += [
        f"- status change: {', '.join(f'{k}={v}' for k, v in change.items())}"
        for change in r.status_changes
    ]
    return "\n".join(lines)


def deleted(d: Deleted) -> str:
    listed = ", ".join(d.deleted) if d.deleted else "nothing"
    return f"Deleted {len(d.deleted)} item(s) in {d.encounter} at tick {d.tick}: {listed}"


def search(s: SearchResult) -> str:
    lines = [f"{s.total_shown} hit(s) for {s.query!r}:"]
    lines += [
        f"- {h.type} {quoted(h.name)} {h.id}{f' [{h.status}]' if h.status else ''}: "
        f"{clip(h.description)} (score {h.score:.2f})"
        + (f" [confirmed same as {s.same_as[h.id]}]" if h.id in s.same_as else "")
        for h in s.hits
    ]
    if s.note:
        lines.append(s.note)
    return "\n".join(lines)


def name_lookup(n: NameLookup) -> str:
    lines = [node_line(n.node)]
    if n.resolved_from:
        lines.append(
            f"(the name led to {n.resolved_from}, an older revision; this is its successor)"
        )
    if n.history:
        lines.append(f"Older revisions: {', '.join(h.id for h in n.history)}")
    if n.history_left_out:
        lines.append(
            f"({n.history_left_out} older revision(s) left out; {n.history_next} reads them)"
        )
    return "\n".join(lines)


def provenance(p: Provenance) -> str:
    lines = [node_line(p.node)]
    if p.recorded_in is not None:
        lines.append(f"Recorded in {p.recorded_in.name} (session {p.recorded_in.session_id!r}).")
    if p.node.director is not None:
        lines.append(f"Directed by {p.node.director.name!r}{_keyed(p.node.director.key)}.")
    if p.same_as:
        lines += _section("Confirmed the same referent", map(node_line, p.same_as))
    lines += _section(f"Grounding (depth {p.depth})", map(node_line, p.grounding))
    lines += _section("Edges", map(edge_line, p.edges))
    lines += _section(
        "Revisions", (f"- {r.id} {r.name!r}: {clip(r.revision_why, 120)}" for r in p.revisions)
    )
    if p.grounding_total is not None:
        lines.append(
            f"(cut to fit: {len(p.grounding)} of {p.grounding_total} grounding nodes, "
            f"{len(p.edges)} of {p.edges_total} edges; trace a smaller depth or one of these)"
        )
    return "\n".join(lines)


def _version_line(v: Version) -> str:
    status = f" ({v.status})" if v.status else ""
    head = " [head]" if v.head else ""
    who = f" in {v.encounter}" if v.encounter else ""
    who += f", session {v.session!r}" if v.session else ""
    why = f"\n  why revised: {clip(v.revision_why, 200)}" if v.revision_why else ""
    body = f" — {clip(v.description)}" if v.description else ""
    return f"- {v.id} {v.name!r}{status}{head}, tick {v.tick}, {v.created_at}{who}{body}{why}"


def chain_history(h: ChainHistory) -> str:
    lines = [f"{h.type} chain of {len(h.versions)} version(s), oldest first:"]
    lines += map(_version_line, h.versions)
    if h.asked:
        lines.append(f"(you named {h.asked}, an older version)")
    if h.cut:
        lines.append(h.cut)
    lines += [
        f"encounter {t.encounter} had {t.removed} node(s) deleted (a deleted version leaves no "
        "other trace)"
        for t in h.tombstones
    ]
    return "\n".join(lines)


def _party(p: Party) -> str:
    return f"{p.id} {p.name!r}"


def _contest_lines(c: Contested) -> list[str]:
    status = f" ({c.status})" if c.status else ""
    weight = f"load-bearing, {c.leaning} lean on it" if c.load_bearing else "nothing leans on it"
    lines = [f"- {c.type} {c.id} {c.name!r}{status}: {', '.join(c.kinds)}; {weight}"]
    for label, parties in (
        ("challenged by", c.challengers),
        ("supported by", c.supporters),
        ("answered by", c.answers),
        ("lost support of", c.lost_support),
    ):
        if parties:
            lines.append(f"  {label}: {'; '.join(map(_party, parties))}")
    if c.revises is not None:
        lines.append(f"  revises: {c.revises}")
    return lines


def conflicts(r: ConflictsResult) -> str:
    total = f" of {r.total}" if r.total is not None else ""
    lines = [f"{len(r.conflicts)}{total} contested node(s), sharpest first:"]
    for c in r.conflicts:
        lines += _contest_lines(c)
    if r.note:
        lines.append(r.note)
    return "\n".join(lines)


def cypher(rows: CypherRows) -> str:
    lines = [f"{len(rows.rows)} row(s); columns: {', '.join(rows.columns)}"]
    size = len(lines[0])
    for row in rows.rows:
        line = json_shown(row, default=str)  # a row per line: no line separator raw in it
        size += len(line) + 1
        if size > TEXT_CAP:
            lines.append("… (text cut; the structured content holds every row returned)")
            break
        lines.append(line)
    if rows.note:
        lines.append(rows.note)
    return "\n".join(lines)


def _node_type_line(t: NodeTypeOut) -> str:
    props = ", ".join(p.name + ("*" if p.required else "") for p in t.properties)
    statuses = f"; statuses {'|'.join(t.statuses)}" if t.statuses else ""
    writable = "" if t.writable else " (process layer: not yours to write)"
    when = f" Use when {t.when}." if t.when else ""
    return (
        f"- {t.name} [{t.layer}]{writable}: {t.doc}.{when} Properties: {props or 'none'}{statuses}"
    )


def _relation_type_line(r: RelationTypeOut) -> str:
    tool = RELATION_TYPES[r.name].tool if r.name in RELATION_TYPES else ""
    kind = (
        ""
        if r.authored
        else f" (process: written by {tool})"
        if tool
        else " (process: not yours to write)"
    )
    ends = (
        "same type at both ends"
        if r.same_type
        else f"{'|'.join(r.sources)} -> {'|'.join(r.targets)}"
    )
    props = (
        f"; requires {', '.join(p.name for p in r.properties if p.required)}"
        if r.properties
        else ""
    )
    return f"- {r.name}{kind}: {r.doc}; {ends}{props}"


def node_types(t: NodeTypes) -> str:
    return "\n".join(["Node types (* = required):", *map(_node_type_line, t.node_types)])


def relation_types(t: RelationTypes) -> str:
    return "\n".join(["Relation types:", *map(_relation_type_line, t.relation_types)])


def vocabulary(v: Vocabulary) -> str:
    effects = [
        f"- {rel} on {target}: {'|'.join(e.from_)} -> {e.to}"
        for rel, targets in v.status_effects.items()
        for target, e in targets.items()
    ]
    return "\n".join(
        [
            node_types(NodeTypes(node_types=v.node_types)),
            relation_types(RelationTypes(relation_types=v.relation_types)),
            "Status effects of relations:",
            *effects,
        ]
    )


def schema(s: Schema) -> str:
    store = ", ".join(f"{k}={v}" for k, v in s.store.items() if not isinstance(v, list | dict))
    return f"Store: {store}\n{vocabulary(s)}"
