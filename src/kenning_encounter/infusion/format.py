"""The signed, budgeted payload.

Order: a header saying which channel selected and why; load-bearing conflicts
at full amplitude; the neighbourhood (bodies); the STANDING register of
handles for what this session was told earlier; open threads; peripheral
conflicts in a brief register last. The header and the load-bearing conflicts
never yield to the budget (only the hard cap cuts them); everything else is
added whole or not at all, in order, while it fits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from kenning_encounter.infusion.config import HARD_CAP_CHARS
from kenning_encounter.infusion.rank import Ranked
from kenning_encounter.memory.contested import CONTESTED_REVISION, Conflict
from kenning_encounter.plaintext import one_line, quoted
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc_time import written_time


@dataclass(frozen=True, slots=True)
class Body:
    item: Ranked
    renewal: str  # why the body goes out again (first sight, changed, stale)


@dataclass(frozen=True, slots=True)
class Handle:
    item: Ranked
    told_at_turn: int


@dataclass
class Rendered:
    text: str
    bodies: list[str] = field(default_factory=list[str])  # node ids whose body went out
    handles: list[str] = field(default_factory=list[str])
    dropped: list[str] = field(default_factory=list[str])  # cut by the budget


def _clip(text: str, limit: int) -> str:
    text = one_line(text)
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# What the model reads is the payload as a JSON string (Claude Code hands it the
# structured result), where a newline, a quote and a backslash take two characters.
_SEP = 2


def _sent(text: str) -> int:
    """Characters ``text`` takes inside a JSON string."""
    return len(text) + sum(text.count(c) for c in '\n"\\\t\r')


def _as_of(node: NodeRecord) -> str:
    """The node's time as ranking reads it, each date as written: the span it states
    true, else when it was observed, else when it was recorded."""
    where = f" · {node.encounter}" if node.encounter else ""
    basis, start, end = written_time(node)
    if basis == "valid":
        return (
            f"true {start[:10]} to {end[:10]}{where}" if end else f"true from {start[:10]}{where}"
        )
    return f"as of {start[:10]}{where}"


def _status(node: NodeRecord) -> str:
    return f" [{node.status}]" if node.status else ""


def body_text(item: Ranked, renewal: str, description_chars: int) -> str:
    n = item.node
    # Each line is made one line (plaintext.one_line): stored text, an imported memory's
    # too, cannot add a line of its own to the payload, nor a name close its quote.
    lines = [one_line(f"◆ {n.type} {quoted(n.name)}{_status(n)} · {_as_of(n)} · id {n.id}")]
    if n.description:
        lines.append(f"  {_clip(n.description, description_chars)}")
    note = f"why: {item.why}"  # the matcher's reason too: a model's words
    if renewal != "first sight":
        note += f" · again: {renewal}"
    lines.append(f"  {one_line(note)}")
    return "\n".join(lines)


def conflict_text(c: Conflict, description_chars: int, *, brief: bool) -> str:
    head = one_line(
        f"⚡ {quoted(c.source.name)} ({c.source.type}) CHALLENGES "
        f"{quoted(c.target.name)} ({c.target.type})"
    )
    if c.kind == CONTESTED_REVISION:
        head += " — a revision under challenge"
    if brief:
        return f"- {head[2:]}"
    lines = [head]
    for n in (c.source, c.target):
        if n.description:
            lines.append(
                f"  {quoted(n.name)}{_status(n)}: {_clip(n.description, description_chars // 2)}"
            )
    return "\n".join(lines)


def render(
    header: str,
    bodies: list[Body],
    handles: list[Handle],
    conflicts: list[Conflict],
    threads: list[Ranked],
    *,
    budget: int,
    description_chars: int,
) -> Rendered:
    cap = min(max(budget, 0), HARD_CAP_CHARS)
    out = Rendered("")
    parts: list[str] = [header]
    used = _sent(header)

    def fits(block: str) -> bool:
        return used + _SEP + _sent(block) <= cap

    # Load-bearing conflicts: they do not yield to the budget, only to the hard cap.
    bearing = [c for c in conflicts if c.load_bearing]
    if bearing:
        block = "LOAD-BEARING CONFLICTS"
        for c in bearing:
            block += "\n" + conflict_text(c, description_chars, brief=False)
        if used + _SEP + _sent(block) > HARD_CAP_CHARS:
            block = _clip(block, HARD_CAP_CHARS - used - 2)
        parts.append(block)
        used += _SEP + _sent(block)

    section_open = False
    for b in bodies:
        text = body_text(b.item, b.renewal, description_chars)
        block = text if section_open else f"NEIGHBOURHOOD\n{text}"
        if fits(block):
            parts.append(block)
            used += _SEP + _sent(block)
            section_open = True
            out.bodies.append(b.item.node.id)
        else:
            out.dropped.append(b.item.node.id)

    if handles:
        block = "STANDING (told earlier this session; the body is above in your context)"
        kept: list[str] = []
        for h in handles:
            n = h.item.node
            line = one_line(f"· {quoted(n.name)} ({n.type}, id {n.id}, prompt {h.told_at_turn})")
            if fits(block + "\n" + line):
                block += "\n" + line
                kept.append(n.id)
        if kept:
            parts.append(block)
            used += _SEP + _sent(block)
            out.handles = kept

    open_threads = [t for t in threads if t.node.id not in out.bodies]
    if open_threads:
        block = "OPEN THREADS"
        for t in open_threads:
            node = t.node
            head = one_line(f"? {node.type} {quoted(node.name)}{_status(node)}:")
            line = f"{head} {_clip(node.description, 160)}"
            if fits(block + "\n" + line):
                block += "\n" + line
        if block != "OPEN THREADS":
            parts.append(block)
            used += _SEP + _sent(block)

    peripheral = [c for c in conflicts if not c.load_bearing]
    if peripheral:
        block = "PERIPHERAL CONFLICTS (parked)"
        for c in peripheral:
            line = conflict_text(c, description_chars, brief=True)
            if fits(block + "\n" + line):
                block += "\n" + line
        if block != "PERIPHERAL CONFLICTS (parked)":
            parts.append(block)
    out.text = "\n".join(parts)
    return out
