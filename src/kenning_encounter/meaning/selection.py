"""The per-prompt job: the selection prompt and the strict reading of its answer.

Items appear in the prompt under short numeric handles (the sidecar ``seq``),
not under their node ids: ``"4711: ..."`` costs a fraction of the tokens of
``"obs_1a2b3c4d5e6f: ..."``, and a handle never changes for the life of the
entry, so the listing stays byte-identical from call to call (a warm prefix
cache). The answer names handles; they are mapped back to node ids here, and
a handle the prompt did not show is dropped and counted.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.sidecar import MeaningEntry

_INTRO = (
    "You choose which items of an AI agent's long-term memory bear on the moment at "
    "hand. Each memory item is one line: a number, a colon, then the item's meaning in "
    "one sentence. After the items come the user's recent turns (oldest first) and the "
    "current prompt. Pick the items the agent should have in mind to answer the current "
    "prompt well: items about the same subject or the same thing under other words, "
    "items that would change or contest the answer, and open questions the moment could "
    "settle. When nothing bears on it, pick nothing: an empty answer is correct and "
    "common. An item may begin with a date in brackets: when what it holds was true or "
    "seen, else when it was recorded. NOW is the moment of the prompt: read the times it "
    "names ('last week', 'in May', 'before the migration') against NOW and those dates. "
    "Pick at most {max_picks} items, the most relevant first. Answer with JSON only, "
    "exactly in this form: "
)
_IDS_FORMAT = '{"ids": [<item number>, ...]}'
_PICKS_FORMAT = '{"picks": [{"id": <item number>, "why": "<a few words>"}, ...]}'

_FENCE = re.compile(r"^```(?:json|JSON)?[ \t]*\n(.*?)\n?```\n?\Z", re.DOTALL)


def select_system(*, max_picks: int, reasons: bool) -> str:
    return _INTRO.format(max_picks=max_picks) + (_PICKS_FORMAT if reasons else _IDS_FORMAT)


# A listed line is "<seq>: <meaning>\n": the handle and meaning plus these.
LINE_OVERHEAD = 3
# A dated line: "<seq>: [2023-05-07] <meaning>\n", these more.
DATE_CHARS = len("[2023-05-07] ")


def render_line(entry: MeaningEntry, when: str = "") -> str:
    """``when``: the node's date (ISO), or empty where it has none."""
    if when:
        return f"{entry.seq}: [{when}] {entry.meaning}\n"
    return f"{entry.seq}: {entry.meaning}\n"


def render_block(entries: Iterable[MeaningEntry], dates: Mapping[str, str] | None = None) -> str:
    held = dates or {}
    return "".join([render_line(e, held.get(e.id, "")) for e in entries])


def render_moment(prompt: str, trajectory: Sequence[str], now: datetime | None = None) -> str:
    """The turns and the prompt, after the listing (which stays the same from prompt to
    prompt); ``now``, the prompt's moment, with them."""
    parts = ["\nRECENT USER TURNS (oldest first)\n"]
    if trajectory:
        parts.extend(f"- {turn}\n" for turn in trajectory)
    else:
        parts.append("(none)\n")
    if now is not None:
        at = now.astimezone(UTC)
        parts.append(f"\nNOW\n{at:%Y-%m-%d %H:%M} UTC, a {at:%A}\n")
    parts.append(f"\nCURRENT PROMPT\n{prompt}\n")
    return "".join(parts)


MEMORY_HEADER = "MEMORY ITEMS\n"


@dataclass(frozen=True, slots=True)
class ParsedSelection:
    ids: tuple[str, ...]
    reasons: dict[str, str] | None
    unknown_dropped: int  # handles the prompt did not show
    over_limit_dropped: int  # valid picks beyond max_picks


def _strip_fence(text: str) -> str:
    body = text.strip()
    fenced = _FENCE.match(body)
    return fenced.group(1).strip() if fenced else body


def _handle_of(value: object) -> int | None:
    """The handle a pick names; None for a well-typed value that is no handle."""
    if isinstance(value, bool):
        raise MatcherError("malformed_output", "an id is a boolean")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        # ASCII digits, and few: "²" and a 5,000-digit string are digits to str.isdigit
        # that int() refuses, and a model's answer is no trusted input.
        digits = value.strip()
        return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 18 else None
    raise MatcherError("malformed_output", f"an id is a {type(value).__name__}")


def parse_selection(
    text: str, handles: Mapping[int, str], *, reasons: bool, max_picks: int
) -> ParsedSelection:
    """Read the model's answer strictly.

    The whole answer must be one JSON object of the expected shape, optionally
    inside a ```json fence; anything else is ``malformed_output``. Handles the
    prompt did not show are dropped and counted, duplicates collapse.
    """
    try:
        data = json.loads(_strip_fence(text))
    except ValueError as exc:
        raise MatcherError("malformed_output", "the answer is not JSON") from exc
    except RecursionError:  # a model's answer is no trusted input
        raise MatcherError("malformed_output", "the answer nests deeper than any answer") from None
    if not isinstance(data, dict):
        raise MatcherError("malformed_output", "the answer is not a JSON object")
    picks: list[tuple[object, str | None]] = []
    if reasons:
        raw_picks = data.get("picks")
        if not isinstance(raw_picks, list):
            raise MatcherError("malformed_output", 'the answer has no "picks" list')
        for item in raw_picks:
            if not isinstance(item, dict) or "id" not in item:
                raise MatcherError("malformed_output", 'a pick is not {"id": ..., "why": ...}')
            why = item.get("why", "")
            if not isinstance(why, str):
                raise MatcherError("malformed_output", 'a pick\'s "why" is not a string')
            picks.append((item["id"], why))
    else:
        raw_ids = data.get("ids")
        if not isinstance(raw_ids, list):
            raise MatcherError("malformed_output", 'the answer has no "ids" list')
        picks = [(value, None) for value in raw_ids]

    ids: list[str] = []
    seen: set[str] = set()
    why_by_id: dict[str, str] = {}
    unknown = 0
    over = 0
    for value, why in picks:
        handle = _handle_of(value)
        node_id = handles.get(handle) if handle is not None else None
        if node_id is None:
            unknown += 1
            continue
        if node_id in seen:
            continue
        seen.add(node_id)
        if len(ids) >= max_picks:
            over += 1
            continue
        ids.append(node_id)
        if why is not None:
            why_by_id[node_id] = why.strip()
    return ParsedSelection(tuple(ids), why_by_id if reasons else None, unknown, over)
