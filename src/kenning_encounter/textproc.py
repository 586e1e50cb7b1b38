"""The one tokenizer the lexical path uses, for queries and node text alike.

Lowercased word tokens, English function words dropped, and a light suffix
stemmer so that "researched", "researching" and "research" meet. The stemmer
is deliberately conservative: it only folds inflections (plural, past, gerund,
a final silent e), never derivations, because over-folding merges unrelated
words and a lexical fallback has nothing else to tell them apart.

Whatever indexes node text for the lexical path must tokenize with these same
functions, or query terms and document terms will not meet.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

# Bump whenever ``tokenize`` can give different tokens for the same text: every
# index built from its output (embedded and Neo4j) is rebuilt when it changes.
TOKENIZER_VERSION: Final = 2

# Words that carry grammar, not subject: dropped from queries and documents.
_STOPWORD_LIST: Final = """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing done down
    during each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no nor
    not now of off on once only or other our ours ourselves out over own same she
    should so some such than that the their theirs them themselves then there these
    they this those through to too under until up very was we were what when where
    which while who whom whose why will with would you your yours yourself yourselves
    also ever get got getting gets let lets may might must shall us oh yeah yes hey hi
    wow really ca wo sha
"""
STOPWORDS: Final = frozenset(_STOPWORD_LIST.split())

# Letters and digits (any script) plus inner apostrophes, so "don't" stays one token.
_TOKEN = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
_CLITICS: Final = frozenset(("s", "ll", "re", "ve", "d", "m"))
_VOWEL = re.compile(r"[aeiouy]")
# Final consonant pairs that a dropped "-ing"/"-ed" doubled: "running" -> "run".
_DOUBLED = frozenset("bdfgkmnprtvz")


def _has_vowel(stem: str) -> bool:
    return _VOWEL.search(stem) is not None


def _undouble(stem: str) -> str:
    if len(stem) >= 3 and stem[-1] == stem[-2] and stem[-1] in _DOUBLED:
        return stem[:-1]
    return stem


@functools.lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """Fold inflected forms of a lowercase word onto one key (pure, so remembered)."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("eed"):
        pass
    elif word.endswith("ed") and len(word) > 4 and _has_vowel(word[:-2]):
        word = _undouble(word[:-2])
    elif word.endswith("ing") and len(word) > 5 and _has_vowel(word[:-3]):
        word = _undouble(word[:-3])
    if word.endswith("y") and len(word) > 3 and word[-2] not in "aeiou":
        word = word[:-1] + "i"
    if word.endswith("e") and len(word) > 3 and not word.endswith("ee"):
        word = word[:-1]
    return word


def surface_words(text: str) -> Iterator[tuple[str, str]]:
    """(as written, normalized) word pairs; contractions and possessives cut to their head."""
    for match in _TOKEN.finditer(text.replace("’", "'")):
        surface = match.group()
        token = surface.lower()
        head, _, tail = token.partition("'")
        if not tail:
            yield surface, token
        elif tail == "t" and head.endswith("n"):
            yield surface, head[:-1]  # "didn't" -> "did"
        elif tail in _CLITICS:
            yield surface[: len(head)], head
        else:
            yield surface, head + tail.replace("'", "")


def words(text: str) -> Iterator[str]:
    """Normalized (lowercase) word tokens, nothing dropped."""
    for _, token in surface_words(text):
        yield token


# "Caroline: ..." or "Decision: ...": a short capitalized label before a colon.
_LABEL = re.compile(r"^\s*([A-Z][\w.'’-]*(?: [A-Z][\w.'’-]*){0,2}):\s+")


def split_label(text: str) -> tuple[str | None, str]:
    """Split a leading attribution label ("Speaker: ...") from the text it heads."""
    match = _LABEL.match(text)
    if match is None:
        return None, text
    return match.group(1), text[match.end() :]


def tokenize(text: str) -> list[str]:
    """Stemmed content tokens of a text, in order, stopwords removed."""
    return [stem(w) for w in words(text) if w not in STOPWORDS]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A span of time a prompt points at: [start, end), or a month of any year.

    ``slack`` reaches past the end because knowledge of an event is recorded
    at or after it: a session on the 25th tells of what happened on the 21st.
    """

    start: datetime | None
    end: datetime | None
    slack: timedelta
    month: int | None  # set alone when the prompt named a month without a year
    label: str  # the time in short, for the payload's "why"
    span: tuple[int, int]  # where the prompt names it

    def match(self, when: datetime) -> float:
        """1.0 inside the window, fading to 0.0 across the slack after it."""
        if self.start is None or self.end is None:
            return 1.0 if self.month is not None and when.month == self.month else 0.0
        if when < self.start:
            return 0.0
        if when < self.end:
            return 1.0
        late = when - self.end
        if late >= self.slack:
            return 0.0
        return 1.0 - late / self.slack


MONTH_NAMES: Final = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH_RE: Final = r"(" + "|".join(m[:3] + r"(?:" + m[3:] + r")?" for m in MONTH_NAMES) + r")\.?"
_DAY_RE: Final = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY_RE}(?:\s+of)?\s+{_MONTH_RE},?\s*(\d{{4}})\b", re.I)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH_RE}\s+{_DAY_RE},?\s*(\d{{4}})\b", re.I)
_MONTH_YEAR = re.compile(rf"\b{_MONTH_RE},?\s+(\d{{4}})\b", re.I)
_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_YEAR = re.compile(r"\b(?:in|of|during|since|by)\s+((?:19|20)\d{2})\b", re.I)
# A bare month name only counts after a preposition: "may" is also a verb.
_MONTH_ALONE = re.compile(rf"\b(?:in|during|of|since|early|late|mid)\s+{_MONTH_RE}\b", re.I)
_RELATIVE: Final = {
    "yesterday": (timedelta(days=2), timedelta(days=1)),
    "last week": (timedelta(days=14), timedelta(days=3)),
    "last month": (timedelta(days=62), timedelta(days=7)),
    "last year": (timedelta(days=550), timedelta(days=30)),
}


def _month_number(name: str) -> int:
    return next(i + 1 for i, m in enumerate(MONTH_NAMES) if m.startswith(name.lower()[:3]))


def _day(year: int, month: int, day: int, span: tuple[int, int]) -> TimeWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return TimeWindow(
        start, start + timedelta(days=1), timedelta(days=7), None, start.date().isoformat(), span
    )


def _month(year: int, month: int, span: tuple[int, int]) -> TimeWindow:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return TimeWindow(start, end, timedelta(days=10), None, f"{year}-{month:02d}", span)


def time_window(prompt: str, *, now: datetime | None = None) -> TimeWindow | None:
    """The time a prompt names, most precise form first; None when it names none.

    Absolute dates are read in the forms people write ("13 October, 2023",
    "October 13, 2023", "8th December 2023", "2023-10-13"), then month and
    year, a month alone (any year), a year; relative phrases ("yesterday",
    "last week") only when ``now`` is known.
    """
    if (m := _ISO_DATE.search(prompt)) and (
        window := _day(int(m.group(1)), int(m.group(2)), int(m.group(3)), m.span())
    ):
        return window
    if (m := _DAY_MONTH_YEAR.search(prompt)) and (
        window := _day(int(m.group(3)), _month_number(m.group(2)), int(m.group(1)), m.span())
    ):
        return window
    if (m := _MONTH_DAY_YEAR.search(prompt)) and (
        window := _day(int(m.group(3)), _month_number(m.group(1)), int(m.group(2)), m.span())
    ):
        return window
    if m := _MONTH_YEAR.search(prompt):
        return _month(int(m.group(2)), _month_number(m.group(1)), m.span())
    if m := _MONTH_ALONE.search(prompt):
        number = _month_number(m.group(1))
        return TimeWindow(None, None, timedelta(0), number, MONTH_NAMES[number - 1], m.span())
    if m := _YEAR.search(prompt):
        year = int(m.group(1))
        start = datetime(year, 1, 1, tzinfo=UTC)
        end = datetime(year + 1, 1, 1, tzinfo=UTC)
        return TimeWindow(start, end, timedelta(days=30), None, str(year), m.span())
    if now is not None:
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
        lowered = prompt.lower()
        for phrase, (back, slack) in _RELATIVE.items():
            if (pos := lowered.find(phrase)) >= 0:
                return TimeWindow(now - back, now, slack, None, phrase, (pos, pos + len(phrase)))
    return None
