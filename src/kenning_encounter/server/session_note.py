"""The context a SessionStart hook injects: the agent's session id and a brief re-entry note.

It opens nothing: the agent opens its encounter itself with advance_encounter,
which returns the full re-entry payload. This note only says what is waiting.
"""

from __future__ import annotations

from dataclasses import dataclass

from kenning_encounter.config import Settings
from kenning_encounter.memory.models import shown_session
from kenning_encounter.memory.service import Memory
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
    purpose = " ".join(e.purpose.split())[:120]
    # Listed only for other sessions, whose ids are never shown whole.
    who = shown_session(e.locus, None)
    return f"  - {e.name} (session {who}, {_state(e)}, last activity {when}): {purpose}"


def session_start_context(memory: Memory, settings: Settings, session_id: str) -> str:
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
    else:
        lines = [
            f"Your kenning-encounter session_id is {session_id}: pass it as session_id to "
            f"{n('advance_encounter')}, {n('close_encounter')} and every write tool.",
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
