"""Read LoCoMo conversations into the shape of a memory: encounters of observations.

Mapping (one memory per conversation):
- each session becomes one encounter, in session order, opened at the session's
  date ("1:56 pm on 8 May, 2023");
- each dialog turn becomes one Observation recorded in that encounter, one tick
  per turn in dialog order: name = the turn's dia_id, description =
  "Speaker: text", t_observed = the session's date (so a real store, which
  stamps creation with its own clock, still knows when each turn was said).
  When the speaker shared an image, the dataset's caption of it is appended as
  "[shared an image: caption]": an agent present in the conversation would
  have seen the image, and several questions are about what it showed. The
  dataset's image-search ``query`` field is construction metadata nobody in
  the conversation saw, so it is left out;
- each question becomes a prompt; its evidence ids are normalized (see
  ``normalize_evidence``) and resolved against the conversation's turns.

Only the dialog itself is read: the dataset's generated summaries and
observations would hand the retriever text that the memory never held.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kenning_encounter.store.records import EncounterRecord, NodeRecord
from kenning_encounter.textproc import MONTH_NAMES

_SESSION_KEY = re.compile(r"^session_(\d+)$")
_SESSION_TIME = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})\s*$", re.I
)
_MONTHS = {name: number for number, name in enumerate(MONTH_NAMES, start=1)}
_EVIDENCE_ID = re.compile(r"^D:?0*(\d+):0*(\d+)$")
_EVIDENCE_SPLIT = re.compile(r"[;,\s]+")


@dataclass(frozen=True, slots=True)
class Question:
    index: int  # position in the conversation's qa list
    text: str
    category: int
    evidence: tuple[str, ...]  # normalized, resolvable dia_ids
    unresolved: tuple[str, ...]  # raw ids that did not resolve to a turn


@dataclass(frozen=True, slots=True)
class DroppedQuestion:
    conversation: str
    index: int
    category: int
    text: str
    evidence: tuple[str, ...]  # as written in the dataset
    reason: str


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    speakers: tuple[str, ...]
    encounters: tuple[EncounterRecord, ...]  # in session order
    observations: tuple[NodeRecord, ...]  # in tick order
    questions: tuple[Question, ...]
    dropped: tuple[DroppedQuestion, ...]

    def by_dia_id(self) -> dict[str, NodeRecord]:
        return {o.name: o for o in self.observations}


def parse_session_time(raw: str) -> datetime:
    """Parse LoCoMo's "1:56 pm on 8 May, 2023" into an aware UTC datetime."""
    match = _SESSION_TIME.match(raw)
    if match is None:
        raise ValueError(
            f"unrecognized session time {raw!r}; expected e.g. '1:56 pm on 8 May, 2023'"
        )
    hour, minute, half, day, month_name, year = match.groups()
    month = _MONTHS.get(month_name.lower())
    if month is None:
        raise ValueError(f"unrecognized month {month_name!r} in session time {raw!r}")
    hour_24 = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)


def normalize_evidence(raw: list[str] | tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Split and repair evidence ids; return (well-formed ids, pieces that are not ids).

    The dataset holds a few malformed entries: two ids in one string
    ("D8:6; D9:17"), a stray colon ("D:11:26"), zero-padded turn numbers
    ("D30:05"). Duplicates are dropped, order kept.
    """
    ids: list[str] = []
    bad: list[str] = []
    for entry in raw:
        for piece in _EVIDENCE_SPLIT.split(entry.strip()):
            if not piece:
                continue
            match = _EVIDENCE_ID.match(piece)
            if match is None:
                bad.append(piece)
                continue
            dia_id = f"D{int(match.group(1))}:{int(match.group(2))}"
            if dia_id not in ids:
                ids.append(dia_id)
    return ids, bad


def _session_numbers(conv: dict[str, Any]) -> list[int]:
    numbers = [int(m.group(1)) for key in conv if (m := _SESSION_KEY.match(key))]
    return sorted(n for n in numbers if conv[f"session_{n}"])


def _description(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn.get('text', '')}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [shared an image: {caption}]"
    return text


def _conversation(sample: dict[str, Any]) -> Conversation:
    sample_id = str(sample["sample_id"])
    conv: dict[str, Any] = sample["conversation"]
    encounters: list[EncounterRecord] = []
    observations: list[NodeRecord] = []
    tick = 0
    for number in _session_numbers(conv):
        opened = parse_session_time(conv[f"session_{number}_date_time"]).isoformat()
        tick += 1
        name = f"{sample_id}/session_{number}"
        turns: list[dict[str, Any]] = conv[f"session_{number}"]
        encounters.append(
            EncounterRecord(
                name=name,
                locus=sample_id,
                purpose=f"conversation session {number}",
                opened_tick=tick,
                opened_at=opened,
                sealed_tick=tick + len(turns) + 1,
                sealed_at=opened,
            )
        )
        for turn in turns:
            tick += 1
            observations.append(
                NodeRecord(
                    id=f"{sample_id}/{turn['dia_id']}",
                    type="Observation",
                    name=str(turn["dia_id"]),
                    description=_description(turn),
                    tick=tick,
                    created_at=opened,
                    props={"t_observed": opened},
                    encounter=name,
                    locus=sample_id,
                )
            )
        tick += 1  # the seal takes a tick of its own
    known = {o.name for o in observations}
    questions: list[Question] = []
    dropped: list[DroppedQuestion] = []
    for index, qa in enumerate(sample.get("qa", [])):
        raw = tuple(str(e) for e in qa.get("evidence", []))
        ids, bad = normalize_evidence(raw)
        resolved = tuple(i for i in ids if i in known)
        unresolved = tuple(bad) + tuple(i for i in ids if i not in known)
        if not resolved:
            reason = "no evidence listed" if not raw else "evidence ids do not resolve to a turn"
            dropped.append(
                DroppedQuestion(
                    sample_id, index, int(qa["category"]), str(qa["question"]), raw, reason
                )
            )
            continue
        questions.append(
            Question(index, str(qa["question"]), int(qa["category"]), resolved, unresolved)
        )
    speakers = tuple(str(conv[k]) for k in ("speaker_a", "speaker_b") if k in conv)
    return Conversation(
        sample_id,
        speakers,
        tuple(encounters),
        tuple(observations),
        tuple(questions),
        tuple(dropped),
    )


def load(path: Path, *, limit: int | None = None) -> list[Conversation]:
    """Load the conversations of a LoCoMo file (the first ``limit`` when given)."""
    with path.open(encoding="utf-8") as handle:
        samples: list[dict[str, Any]] = json.load(handle)
    if limit is not None:
        samples = samples[:limit]
    return [_conversation(s) for s in samples]
