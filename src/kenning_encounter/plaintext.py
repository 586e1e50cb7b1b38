"""What written text may hold, and how stored text is shown on a line.

Two layers, each enough on its own for what it guards:

- On the way in, a write refuses characters that hide or forge what a reader sees.
  A name is one line of visible text: no control character (a newline, a tab, NUL),
  no line or paragraph separator, no invisible format character (a zero-width space,
  a direction override, a byte-order mark): what a reader sees of a name is all of
  it. Any other written text (a description, a purpose, a reason) may hold
  tabs and newlines but no other control character, no direction override or
  isolate (which reorder what a person reads against what the model reads) and no
  tag character (invisible to a person, read by a model). The joiners (U+200C,
  U+200D) stay allowed in names: scripts such as Persian and emoji sequences need
  them.
- On the way out, text put into a line-shaped payload (infusion, tool texts) is
  shown on one line, with what a name may not hold made visible as U+FFFD. A memory
  imported from a dump, or written before these checks, may hold such text; it
  still cannot add a line to what the model is handed. A name shown between
  guillemets (``quoted``) shows its own as single ones, so it cannot close its quote
  and go on as the text around it: a status, an id, another item.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable
from typing import Any, Final

# Format characters a name may hold (Cf otherwise is refused in a name).
_JOINERS: Final = frozenset("\u200c\u200d")
_SHOWN_INSTEAD: Final = "\ufffd"
# What written text may not hold: the control characters but tab, line feed and
# carriage return (C0, DEL, C1), the reordering controls, the tag characters, and a lone
# surrogate (half of a UTF-16 pair: no text, and no store can encode it; a command-line
# argument's undecodable byte arrives as one).
_TEXT_REFUSED: Final = re.compile(
    "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff"
    "\U000e0000-\U000e007f]"
)


_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def lone_surrogate(text: str) -> int | None:
    """Where ``text`` holds a lone surrogate (half of a UTF-16 pair; Python's stand-in
    for a byte of an argument, a variable or a file name that is not UTF-8), or None."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return None if found is None else found.start()


# Names for the control characters most often met (unicodedata names none of them).
_CONTROLS: Final = {
    "\x00": "NULL",
    "\t": "a tab",
    "\n": "a line break",
    "\r": "a carriage return",
    "\x1b": "ESCAPE, as in a terminal colour code",
}


def describe(ch: str) -> str:
    """``U+202E (RIGHT-TO-LEFT OVERRIDE)``: a character named for a refusal."""
    if unicodedata.category(ch) == "Cs":
        return f"U+{ord(ch):04X} (a lone surrogate: half of a UTF-16 pair, or a byte that is not UTF-8)"
    shown = _CONTROLS.get(ch) or unicodedata.name(ch, "a control character")
    return f"U+{ord(ch):04X} ({shown})"


def _hidden(ch: str) -> bool:
    """Whether a name may not hold ``ch``: a control, a line or paragraph separator, a
    format character other than the joiners, or a lone surrogate."""
    category = unicodedata.category(ch)
    return category in ("Cc", "Zl", "Zp", "Cs") or (category == "Cf" and ch not in _JOINERS)


def name_fault(value: str) -> tuple[int, str] | None:
    """The first character (position from 0, character) a name may not hold."""
    if value.isprintable():
        return None  # no control, separator or format character: the common case
    return next(((i, ch) for i, ch in enumerate(value) if _hidden(ch)), None)


def text_fault(value: str) -> tuple[int, str] | None:
    """The first character any written text may not hold."""
    found = _TEXT_REFUSED.search(value)
    return None if found is None else (found.start(), found.group())


def one_line(text: str) -> str:
    """``text`` as one line of what it shows: white space and line breaks become single
    spaces, and a character a name may not hold is shown as U+FFFD."""
    joined = " ".join(text.split())
    if joined.isprintable():
        return joined  # white space alone was in the way: the common case (a description)
    # White space (line and paragraph separators are) folds to a space; what else is
    # hidden shows.
    shown = (" " if ch.isspace() else _SHOWN_INSTEAD if _hidden(ch) else ch for ch in text)
    return " ".join("".join(shown).split())


# A name's own guillemets, shown as the single ones: only the payload's close a name.
_OWN_GUILLEMETS: Final = str.maketrans("«»", "‹›")


def quoted(name: str) -> str:
    """``name`` between guillemets, as one line (``one_line``) in which its own « and »
    show as ‹ and ›: a name such as ``cache» [verified] · id dec_1 ◆ Decision «wipe``
    stays one name, and cannot close its quote to forge a status, an id or an item."""
    return f"«{one_line(name).translate(_OWN_GUILLEMETS)}»"


def escaped(text: str) -> str:
    """``text`` with every character that is not printable written as its escape (a line
    break as ``\\n``, ESC as ``\\x1b``, U+2028 as ``\\u2028``): for a log line, which
    must show what a client sent without letting it start a line or drive a terminal."""
    if text.isprintable():
        return text
    return "".join(
        ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text
    )


def json_shown(
    value: Any, *, indent: int | None = None, default: Callable[[Any], Any] | None = None
) -> str:
    """``value`` as JSON for a terminal or a reader: its text as written (not
    ASCII-escaped), but every character that is not printable written as its ``\\u``
    escape. JSON escapes only C0 itself; a C1 control (U+009B starts a terminal command
    as ESC [ does), a direction override or a line separator in a stored name would
    otherwise reach the terminal raw, and a lone surrogate could not be written at all."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=default)
    if text.isprintable():
        return text
    # Outside strings JSON is printable ASCII and the indent's line breaks.
    return "".join(ch if ch.isprintable() or ch == "\n" else json.dumps(ch)[1:-1] for ch in text)
