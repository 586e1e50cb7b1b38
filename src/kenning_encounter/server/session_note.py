"""The context a SessionStart hook injects: the agent's session id and a brief re-entry note.

It opens nothing: the agent opens its encounter itself with advance_encounter,
which returns the full re-entry payload. This note only says what is waiting.
"""

from __future__ import annotations

from dataclasses import dataclass

from kenning_encounter.config import Settings
from kenning_encounter.memory.models import shown_session
from kenning_encounter.memory.service import Memory
from kenning_encounter.plaintext import one_line
from kenning_encounter.server.manual import HOWTO_URI
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EncounterRecord

UNSEALED_SHOWN = 8


@dataclass(frozen=True)
class _Standing:
    last: EncounterRecord | None
    unsealed: list[EncounterRecord]


def _state(e: EncounterRecord) -> str:
    if e.sealed_at:
        return "sealed"
    return f"dissolved at {e.dissolved_at}" if e.dissolved_at else "open"


def _line(e: EncounterRecord) -> str:
    when = e.last_activity_at or e.opened_at
    purpose = one_line(e.purpose)[:120]
    # Listed only for other sessions, whose ids are never shown whole.
    who = shown_session(e.locus, None)
    return f"  - {e.name} (session {who}, {_state(e)}, last activity {when}): {purpose}"


def session_start_context(
    memory: Memory, settings: Settings, session_id: str, handle: str | None
) -> str:
    """``handle`` is None when the session is held by a handle its caller lacks."""
    n = settings.tool_name
    hidden = memory.hidden_loci

    def read(tx: ReadTx) -> _Standing:
        return _Standing(
            last=tx.last_encounter_of(session_id),
            unsealed=tx.encounters(
                unsealed_only=True, limit=UNSEALED_SHOWN + len(hidden), exclude_locus=session_id
            ),
        )

    standing = memory.store.read(read)
    if settings.face == "reader":
        lines = [
            "kenning-encounter memory is connected read-only (reader face): "
            f"use {n('search')}, {n('find_by_name')} and {n('trace_provenance')} to consult it."
        ]
    elif handle is None:
        lines = [
            f"kenning-encounter session {session_id!r} is held by another client: this "
            "machine lacks its handle, so the memory tools can read the memory but not write "
            "as this session. Start a new session to record, or pass the session's handle "
            "as session_id if you have it (an operator can recover it: kenning-encounter "
            f"handle {session_id} --keep-for-hook, then resume the session)."
        ]
    else:
        lines = [
            f"Your kenning-encounter session_id is {handle}: pass it as session_id to "
            f"{n('advance_encounter')}, {n('close_encounter')} and every write tool. It is "
            "this session's handle: whoever has it may write as this session, so do not "
            "copy it into the memory or share it.",
            f"Before recording, call {n('advance_encounter')} with this session_id and a purpose; "
            f"read the manual at {HOWTO_URI} once.",
        ]
        last = standing.last
        if last is not None and last.sealed_at is None:
            if last.dissolved_at:
                lines.append(
                    f"Your last encounter {last.name} was dissolved (no activity for the idle "
                    f"horizon); seal it with {n('close_encounter')}(session_id, summary, "
                    f"encounter='{last.name}') if you know what it did."
                )
            else:
                lines.append(
                    f"Your encounter {last.name} is still open; {n('advance_encounter')} will ask "
                    "for its close_summary."
                )
    unsealed = [e for e in standing.unsealed if e.locus not in hidden][:UNSEALED_SHOWN]
    if unsealed:
        lines.append("Encounters other sessions left unsealed:")
        lines += map(_line, unsealed)
    return "\n".join(lines)
