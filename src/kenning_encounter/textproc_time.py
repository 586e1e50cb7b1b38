"""Time in text: the windows a prompt (or a record) points at, and the time a node holds.

``find_times(text, now=...)`` reads English time expressions left to right and
turns each into a ``TimeWindow``: a span [start, end) with how sure the reading
is. Absolute forms ("2023-05-07", "7 May 2023", "May 2023", "in 2022", "Q3
2023", "early June 2023") need no clock; relative ones ("yesterday", "last
week", "two days ago", "last Friday", "in May", "recently") are read against
``now``, the moment the text was written, and are skipped without it. Composite
forms take one of those inside: "before 7 May 2023", "since last month", "the
week before 16 November 2023", "between August 11 and August 15 2023".

What is deliberately not a time: "May I ask" (a bare month needs a preposition
and a capital when it is also a verb), "a week-long job" and "for two days"
(durations point at no moment), numbers that are not years ("port 2022", "in
2000 files": a year must stand where a year can end a phrase), and events
("before the migration": the reader knows dates, not what happened when).

``node_time(node)`` is the one place that says which time a node has: its world
time where it states one (``valid_from``/``valid_until`` when nodes carry them,
else an Observation's ``t_observed``), else its record time. Ranking and
filtering ask only this, so a richer node model plugs in here.
"""

from __future__ import annotations

import bisect
import contextlib
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Final

from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc import MONTH_NAMES, STOPWORDS, stem, tokenize, words


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """A span of time a text points at: [start, end), either end open when None.

    ``month`` alone (start and end None) is a month of any year: a prompt that
    named a month with no year and no clock to place it. ``slack`` reaches past
    the end because knowledge of an event is recorded at or after it.
    """

    start: datetime | None
    end: datetime | None
    slack: timedelta
    certainty: float  # how sure the reading is, in (0, 1]
    label: str  # the time in short, for a "why"
    span: tuple[int, int]  # where the text names it
    month: int | None = None

    def contains(self, when: datetime) -> bool:
        """Strictly inside (no slack): the ``when`` filter's test."""
        when = utc(when)
        if self.month is not None and self.start is None and self.end is None:
            return when.month == self.month
        return (self.start is None or when >= self.start) and (self.end is None or when < self.end)

    def match(self, when: datetime) -> float:
        """1.0 inside the window, fading to 0.0 across the slack after its end."""
        when = utc(when)
        if self.contains(when):
            return 1.0
        if self.end is None or when < self.end or self.slack <= timedelta(0):
            return 0.0
        late = when - self.end
        return 0.0 if late >= self.slack else 1.0 - late / self.slack

    def fit(self, span: NodeTime) -> float:
        """How well a node's time falls in the window: a span counts where it overlaps."""
        if span.end is None or self.month is not None:
            return self.match(span.start)
        overlaps = (self.end is None or span.start < self.end) and (
            self.start is None or span.end > self.start
        )
        return 1.0 if overlaps else self.match(span.start)


@dataclass(frozen=True, slots=True)
class NodeTime:
    """The time a node holds: a moment (end None) or a span, and which kind it is."""

    start: datetime
    end: datetime | None
    basis: str  # "valid" (stated span) | "observed" (t_observed) | "recorded"


def utc(when: datetime) -> datetime:
    # Records keep UTC; a time without an offset is read as UTC, never as local.
    return when if when.tzinfo is not None else when.replace(tzinfo=UTC)


class OffCalendar(ValueError):
    """An ISO-8601 time whose UTC reading falls before year 1 or after year 9999
    ("0001-01-01T00:00:00+14:00"): written as it may be, no instant can hold it."""


def utc_instant(raw: str) -> datetime:
    """An ISO-8601 time as an aware UTC instant (one without an offset is UTC). ValueError
    for what is no ISO time; ``OffCalendar`` for one that is, off the calendar in UTC."""
    parsed = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        return parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:
        raise OffCalendar(raw) from None


def parse_instant(raw: object) -> datetime | None:
    """An ISO-8601 string as an aware datetime; None for anything else."""
    if not isinstance(raw, str) or not raw:
        return None
    try:
        return utc(datetime.fromisoformat(raw.replace("Z", "+00:00")))
    except ValueError:
        return None


def node_time(node: NodeRecord, fallback: datetime | None = None) -> NodeTime | None:
    """World time where the node states it, else record time, else ``fallback``."""
    start = parse_instant(node.props.get("valid_from"))
    if start is not None:
        return NodeTime(start, parse_instant(node.props.get("valid_until")), "valid")
    observed = parse_instant(node.props.get("t_observed"))
    if observed is not None:
        return NodeTime(observed, None, "observed")
    recorded = parse_instant(node.created_at)
    if recorded is not None:
        return NodeTime(recorded, None, "recorded")
    return NodeTime(utc(fallback), None, "recorded") if fallback is not None else None


def written_time(node: NodeRecord) -> tuple[str, str, str]:
    """``node_time``'s reading with each end as the record has it (no offset moved):
    (basis, from, until); until is empty but for a stated span."""
    start = node.props.get("valid_from")
    if start:
        return "valid", str(start), str(node.props.get("valid_until") or "")
    observed = node.props.get("t_observed")
    if observed:
        return "observed", str(observed), ""
    return "recorded", node.created_at, ""


# --- vocabulary --------------------------------------------------------------
_MONTHS: Final = {m: i for i, m in enumerate(MONTH_NAMES, start=1)}
_MONTH_ALT: Final = "|".join(
    sorted({*MONTH_NAMES, *(m[:3] for m in MONTH_NAMES), "sept"}, key=len, reverse=True)
)
# A month's name is a whole word: "of Maria" is not "of Mar(ch)", nor "in Decatur" December.
_M: Final = rf"(?P<mon>{_MONTH_ALT})(?![a-z])\.?"
_D: Final = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR_OF: Final = r"(?:19|20)\d\d"  # a year as a text names one
_Y: Final = rf"(?P<year>{_YEAR_OF})"
_NUMBERS: Final = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,  # "the last couple of days"
    "couple": 2,
    "a few": 3,
    "few": 3,
    "several": 4,
}
_VAGUE: Final = frozenset(
    {"a couple of", "a couple", "couple of", "couple", "a few", "few", "several"}
)
_COUNT: Final = r"\d{1,3}|" + "|".join(sorted(_NUMBERS, key=len, reverse=True))
_N: Final = rf"(?P<n>{_COUNT})"
_UNIT: Final = r"(?P<unit>minute|hour|day|weekend|week|fortnight|month|quarter|year)s?"
_UNIT_DAYS: Final[dict[str, float]] = {"minute": 1 / 1440, "hour": 1 / 24, "day": 1, "week": 7}
_UNIT_DAYS.update({"weekend": 7, "fortnight": 14, "month": 30, "quarter": 91, "year": 365})
_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_SEASONS: Final = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
_ORDINALS: Final = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2}
_ORDINALS.update({"fourth": 3, "4th": 3})
# A bare "may" or "march" is a verb as often as a month: only the capitalized form counts.
_VERB_MONTHS: Final = frozenset({"may", "march"})
_YEAR_TAIL: Final = re.compile(r"\s*([A-Za-z]+)")


class _Pattern:
    """A regular expression compiled the first time it is used. The time rules are long
    case-blind alternations, about 10 ms to compile in all: a sixtieth of a server's
    start, which reads no time before its first search, and most text holds none."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source = source
        self._flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        compiled = self._compiled
        if compiled is None:  # two threads may both compile it; either result serves
            compiled = self._compiled = re.compile(self._source, self._flags)
        return compiled

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def search(self, text: str) -> re.Match[str] | None:
        return self.compiled.search(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)


def _month_of(name: str) -> int:
    key = name.lower().rstrip(".")
    return next(i for m, i in _MONTHS.items() if m.startswith(key[:3]))


def _day_start(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _add_months(year: int, month: int, n: int) -> tuple[int, int]:
    index = year * 12 + (month - 1) + n
    return index // 12, index % 12 + 1


def _months(year: int, month: int, count: int = 1) -> tuple[datetime, datetime]:
    end_y, end_m = _add_months(year, month, count)
    return datetime(year, month, 1, tzinfo=UTC), datetime(end_y, end_m, 1, tzinfo=UTC)


def _years(year: int) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class _Ctx:
    text: str
    now: datetime | None
    inner: bool  # read after "before", "since", ...: a bare year or month is a time there
    # The whole text is meant as a time (a ``when`` value): "2025", "December", "Tuesday"
    # and "in two weeks" are times there, and a lower-case "may" is the month.
    whole: bool = False


_Build = Callable[[re.Match[str], _Ctx], "TimeWindow | None"]
# A rule runs only on text holding a word of each of its ``needs`` (DIGIT: a digit):
# Python's regex engine is slow on long case-blind alternations, and most text
# holds no time at all.
DIGIT: Final = "0"
_MONTH_WORDS: Final = frozenset(_MONTH_ALT.split("|"))
_RULES: list[tuple[_Pattern, _Build, tuple[frozenset[str], ...]]] = []


def _rule(pattern: str, *needs: Iterable[str]) -> Callable[[_Build], _Build]:
    lazy = _Pattern(pattern, re.I)
    required = tuple(frozenset(n) for n in needs)

    def register(build: _Build) -> _Build:
        _RULES.append((lazy, build, required))
        return build

    return register


_WORD: Final = re.compile(r"[a-z]+|\d")


def _words(text: str) -> frozenset[str]:
    found = set(_WORD.findall(text.lower()))
    found.update([w[:-1] for w in found if w.endswith("s")])
    return frozenset(DIGIT if w.isdigit() else w for w in found)


def _runs(needs: tuple[frozenset[str], ...], present: frozenset[str]) -> bool:
    return all(not need.isdisjoint(present) for need in needs)


def _window(
    start: datetime | None,
    end: datetime | None,
    m: re.Match[str],
    label: str,
    certainty: float,
    slack_days: float,
) -> TimeWindow:
    return TimeWindow(start, end, timedelta(days=slack_days), certainty, label, m.span())


def _day_window(
    year: int, month: int, day: int, m: re.Match[str], sure: float
) -> TimeWindow | None:
    try:
        start = datetime(year, month, day, tzinfo=UTC)
    except ValueError:
        return None
    return _window(start, start + timedelta(days=1), m, start.date().isoformat(), sure, 7)


def _latest(now: datetime, month: int, day: int = 1) -> int | None:
    """The year of the latest (month, day) not after ``now``."""
    for year in (now.year, now.year - 1, now.year - 2, now.year - 3, now.year - 4):
        try:
            if datetime(year, month, day, tzinfo=UTC) <= now:
                return year
        except ValueError:
            continue
    return None


# Words that point a sentence forward, so that a time it names with no year is the one to
# come: the future's own ("we'll ship in May"), or a plan's for a time it is made for ("the
# plan for December"; "what did we plan over Christmas" is a planning that took place).
_FUTURE: Final = _Pattern(
    r"\b(?:will|shall|going\s+to|gonna|upcoming|coming\s+up"
    r"|(?:plan|hope|intend|aim|expect)(?:s|ing)?\s+to|planning\s+to)\b|\b\w+['’]ll\b",
    re.I,
)
_PLANNED: Final = _Pattern(
    r"\b(?:plan(?:s|ned|ning)?|schedul(?:e|es|ed|ing)|due|expect(?:s|ed|ing)?"
    r"|intend(?:s|ed|ing)?|hop(?:e|es|ing)\s+to|aim(?:s|ing)?\s+to|deadline)\b",
    re.I,
)
_FOR: Final = _Pattern(r"\b(?:for|by|until|till|before)\s+(?:the\s+)?\Z", re.I)
_FOR_LEAD: Final = _Pattern(r"(?:for|by|until|till|before)\s", re.I)
_SENTENCE_ENDS: Final = ".!?\n"
# How far a sentence is read each side of a time: a text with no sentence end (a pasted
# log) is not one sentence, and reading it whole for every time in it cost its length
# squared (20,000 characters of dates: 4 s).
_SENTENCE_REACH: Final = 300


def _points_ahead(text: str, m: re.Match[str]) -> bool:
    """Whether the sentence holding ``m`` points forward."""
    first, last = max(0, m.start() - _SENTENCE_REACH), min(len(text), m.end() + _SENTENCE_REACH)
    start = max(max(text.rfind(c, first, m.start()) for c in _SENTENCE_ENDS) + 1, first)
    ends = [i for c in _SENTENCE_ENDS if (i := text.find(c, m.end(), last)) >= 0]
    end = min(ends or [last])
    if _FUTURE.compiled.search(text, start, end) is not None:
        return True
    # "For" before the time, or the first of its words ("for May" as one match).
    before = _FOR.compiled.search(text, max(start, m.start() - 12), m.start()) is not None
    made_for = before or _FOR_LEAD.match(m.group(0)) is not None
    return made_for and _PLANNED.compiled.search(text, start, end) is not None


def _to_come(ctx: _Ctx, m: re.Match[str], year: int, end: Callable[[int], datetime]) -> int:
    """``year``, the latest occurrence begun of a time named with no year, or the next
    one when that is over and its sentence points forward ("the plan for December",
    written in November, is this December's)."""
    if ctx.now is not None and end(year) <= ctx.now and _points_ahead(ctx.text, m):
        return year + 1
    return year


# --- absolute forms ------------------------------------------------------------
@_rule(
    r"\b(?P<y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)(?:[T ](?P<t>\d\d:\d\d(?::\d\d(?:\.\d+)?)?)(?P<z>Z|[+-]\d\d:?\d\d)?)?\b",
    {DIGIT},
)
def _iso(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    if m.group("t"):
        instant = parse_instant(m.group(0))
        if instant is None:
            return None
        return _window(instant, instant + timedelta(minutes=1), m, instant.isoformat(), 1.0, 7)
    return _day_window(int(m["y"]), int(m["m"]), int(m["d"]), m, 1.0)


@_rule(rf"\b(?P<y>{_YEAR_OF})-(?P<m>0[1-9]|1[0-2])\b(?!-\d)", {DIGIT})
def _iso_month(m: re.Match[str], ctx: _Ctx) -> TimeWindow:
    start, end = _months(int(m["y"]), int(m["m"]))
    return _window(start, end, m, f"{m['y']}-{m['m']}", 1.0, 10)


def _dated(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    surface = m["mon"]
    if not m.group("year") and surface.lower() in _VERB_MONTHS and not surface[0].isupper():
        return None
    month = _month_of(surface)
    day = int(m["day"])
    if m.group("year"):
        return _day_window(int(m["year"]), month, day, m, 1.0)
    if ctx.now is None:
        return _month_any(month, m, 0.5)
    year = _latest(ctx.now, month, day)
    if year is None:
        return None
    year = _to_come(ctx, m, year, lambda y: datetime(y, month, day, tzinfo=UTC) + timedelta(1))
    return _day_window(year, month, day, m, 0.8)


_rule(rf"\b{_D}(?:\s+of)?\s+{_M}(?:,?\s*{_Y})?\b", {DIGIT}, _MONTH_WORDS)(_dated)
_rule(rf"\b{_M}\s+(?:the\s+)?{_D}(?!\d)(?:,?\s*{_Y})?\b(?!:)", {DIGIT}, _MONTH_WORDS)(_dated)


# "2026/12/03": a year first says which of the two numbers is the month.
@_rule(r"\b(?P<y>(?:19|20)\d\d)/(?P<m>[01]?\d)/(?P<d>[0-3]?\d)\b(?!/)", {DIGIT})
def _slashed(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    return _day_window(int(m["y"]), int(m["m"]), int(m["d"]), m, 1.0)


@_rule(
    r"\b(?P<on>on\s+)?(?P<a>[0-3]?\d)/(?P<b>[0-3]?\d)(?:/(?P<y>(?:19|20)?\d\d))?\b(?![/:.]\d)",
    {DIGIT},
)
def _numbered(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "On 25/11", "11/25/2026": a day and a month in numbers, read only where one of
    them cannot be a month. "05/11" is 5 November where it was written day first and
    May 11 where month first, and nothing in the text says which, so it is not read.
    With no year it is a date only after "on", "since", ... ("3/4 of them" is not)."""
    a, b = int(m["a"]), int(m["b"])
    if min(a, b) < 1 or max(a, b) > 31 or (a != b and (a > 12) == (b > 12)):
        return None
    month, day = (b, a) if a > 12 else (a, b)
    if m.group("y"):
        year = int(m["y"]) + (2000 if len(m["y"]) == 2 else 0)
        return _day_window(year, month, day, m, 0.9)
    if ctx.now is None or not (m.group("on") or ctx.inner) or not _ends_phrase(ctx.text, m.end()):
        return None
    if (a, b) == (24, 7):  # round the clock, not 24 July
        return None
    latest = _latest(ctx.now, month, day)
    if latest is None:
        return None
    year = _to_come(ctx, m, latest, lambda y: datetime(y, month, day, tzinfo=UTC) + timedelta(1))
    return _day_window(year, month, day, m, 0.7)


_NUMBERED_WHOLE = _Pattern(r"\s*(?P<a>[01]?\d)/(?P<b>[01]?\d)(?:/(?P<y>(?:19|20)?\d\d))?\s*\Z")


def swappable_date(text: str, *, now: datetime) -> tuple[str, str] | None:
    """Both readings of a text that is only a date in numbers whose day and month could
    swap ("05/11"), day first and month first as ISO dates, for an error to offer."""
    m = _NUMBERED_WHOLE.match(text)
    if m is None:
        return None
    a, b = int(m["a"]), int(m["b"])
    if a == b or not (1 <= a <= 12 and 1 <= b <= 12):
        return None
    year = int(m["y"]) + (2000 if len(m["y"]) == 2 else 0) if m.group("y") else now.year
    return f"{year}-{b:02d}-{a:02d}", f"{year}-{a:02d}-{b:02d}"


# Days of one month joined: "3-5 November", "from the 3rd to the 5th of November",
# "between 3 and 5 Nov 2022", "November 3-5". The last day is placed as a date alone is
# (its month's year from the text or the clock); the first takes its month and year.
_THRU: Final = r"\s*(?:-|–|to|till|until|through|thru)\s*"
_FIRST_DAY: Final = r"(?:st|nd|rd|th)?"


def _day_range(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    last = _dated(m, ctx)
    if last is None or last.start is None or last.end is None:
        return None
    try:
        start = last.start.replace(day=int(m.groupdict().get("b1") or m["f1"]))
    except ValueError:
        return None
    if start >= last.start:
        return None  # "5-3 November" is no range; the dates alone still read
    label = f"{start.date().isoformat()} to {last.start.date().isoformat()}"
    return _window(start, last.end, m, label, last.certainty, 7)


_rule(
    rf"\b(?:between\s+(?:the\s+)?(?P<b1>[0-3]?\d){_FIRST_DAY}\s+and\s+"
    rf"|(?:from\s+)?(?:the\s+)?(?P<f1>[0-3]?\d){_FIRST_DAY}{_THRU})"
    rf"(?:the\s+)?{_D}(?:\s+of)?\s+{_M}(?:,?\s*{_Y})?\b",
    {DIGIT},
    _MONTH_WORDS,
)(_day_range)
_rule(
    rf"\b{_M}\s+(?:the\s+)?(?P<f1>[0-3]?\d){_FIRST_DAY}{_THRU}(?:the\s+)?{_D}(?!\d)"
    rf"(?:,?\s*{_Y})?\b(?!:)",
    {DIGIT},
    _MONTH_WORDS,
)(_day_range)


@_rule(rf"\b{_M}{_THRU}(?P<mon2>{_MONTH_ALT})(?![a-z])\.?(?:,?\s+{_Y})?\b", _MONTH_WORDS)
def _month_range(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """Months joined: "May-July 2025", "Sept to Nov". The last month is placed as a month
    alone is; the first is the latest of its name before it ("Nov-Jan" crosses a year)."""
    names = (m["mon"], m["mon2"])
    if not ctx.whole and any(n.lower() in _VERB_MONTHS and not n[0].isupper() for n in names):
        return None
    first, last = (_month_of(n) for n in names)
    if first == last:
        return None
    if m.group("year"):
        year, sure = int(m["year"]), 1.0
    elif ctx.now is None:
        return None
    else:
        latest = _latest(ctx.now, last)
        if latest is None:
            return None
        year = _to_come(ctx, m, latest, lambda y: _months(y, last)[1])
        sure = 0.8
    opening = year if first < last else year - 1
    start, end = _months(opening, first)[0], _months(year, last)[1]
    return _window(start, end, m, f"{opening}-{first:02d} to {year}-{last:02d}", sure, 10)


def _month_any(month: int, m: re.Match[str], sure: float) -> TimeWindow:
    label = MONTH_NAMES[month - 1].capitalize()
    return TimeWindow(None, None, timedelta(0), sure, label, m.span(), month)


# "May 2023", "May of 2023", "June '23" (a year cut to its last two digits, after a month).
@_rule(rf"\b{_M},?\s+(?:of\s+)?(?:{_Y}|['’](?P<yy>\d\d))\b", {DIGIT}, _MONTH_WORDS)
def _month_year(m: re.Match[str], ctx: _Ctx) -> TimeWindow:
    month = _month_of(m["mon"])
    year = int(m["year"]) if m.group("year") else 2000 + int(m["yy"])
    start, end = _months(year, month)
    return _window(start, end, m, f"{year}-{month:02d}", 1.0 if m.group("year") else 0.9, 10)


def _named_month(m: re.Match[str], ctx: _Ctx) -> tuple[datetime, datetime] | None:
    """The month a rule's ``mon`` (and ``year``) name: of that year, else the latest by now."""
    month = _month_of(m["mon"])
    year = int(m["year"]) if m.group("year") else (_latest(ctx.now, month) if ctx.now else None)
    return None if year is None else _months(year, month)


_PART = r"(?P<part>early|mid|late|the\s+(?:beginning|start|middle|end)\s+of|(?:beginning|start|middle|end)\s+of)"


@_rule(
    rf"\b{_PART}[\s-]+(?:{_M}(?:,?\s+{_Y})?|(?P<only>{_YEAR_OF})"
    r"|(?P<rel>the|this|last|next)\s+(?P<unit>week|month|quarter|year)(?!-))\b",
    {"early", "mid", "late", "beginning", "start", "middle", "end"},
)
def _part_of(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    part = m["part"].lower().split()[-2 if m["part"].lower().endswith("of") else -1]
    third = {"early": 0, "beginning": 0, "start": 0, "mid": 1, "middle": 1}.get(part, 2)
    if m.group("unit"):
        # "the start of the year", "late last month": a third of a unit read against now.
        if ctx.now is None:
            return None
        rel, unit = m["rel"].lower(), m["unit"].lower()
        start, end = _calendar(unit, ctx.now, _SHIFTS.get(rel, 0))
        lo = start + (end - start) / 3 * third
        label = f"{part} {'this' if rel == 'the' else rel} {unit}"
        return _window(lo, lo + (end - start) / 3, m, label, 0.8, _UNIT_SLACK[unit])
    if m.group("mon"):
        named = _named_month(m, ctx)
        if named is None:
            return None
        start, end = named
    else:
        start, end = _years(int(m["only"]))
    length = (end - start) / 3
    lo = start + length * third
    label = f"{part} {m.group('mon') or ''} {start.year}".replace("  ", " ")
    return _window(lo, lo + length, m, label.strip(), 0.8, 10)


@_rule(
    rf"\b(?P<ord>first|second|third|fourth|1st|2nd|3rd|4th|last)\s+week\s+of\s+{_M}(?:,?\s+{_Y})?\b",
    {"week"},
    _MONTH_WORDS,
)
def _week_of(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    named = _named_month(m, ctx)
    if named is None:
        return None
    start, end = named
    ordinal = m["ord"].lower()
    lo = (
        end - timedelta(days=7)
        if ordinal == "last"
        else start + timedelta(days=7 * _ORDINALS[ordinal])
    )
    return _window(lo, lo + timedelta(days=7), m, f"{ordinal} week of {start:%Y-%m}", 0.8, 7)


def _quarter(m: re.Match[str], ctx: _Ctx) -> TimeWindow:
    quarter = int(m["q"])
    start, end = _months(int(m["year"]), 3 * quarter - 2, 3)
    return _window(start, end, m, f"Q{quarter} {m['year']}", 1.0, 14)


_rule(rf"\bQ(?P<q>[1-4])\s*{_Y}\b", {DIGIT}, {"q"})(_quarter)
_rule(rf"\b{_Y}\s*Q(?P<q>[1-4])\b", {DIGIT}, {"q"})(_quarter)


@_rule(r"\bQ(?P<q>[1-4])\b", {DIGIT}, {"q"})
def _quarter_alone(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "In Q2" with no year: the latest second quarter begun, as "in May" is the latest
    May. Written capitalized only ("q2" is as likely a name)."""
    if not m.group(0).startswith("Q") or ctx.now is None:
        return None
    quarter = int(m["q"])
    year = _latest(ctx.now, 3 * quarter - 2)
    if year is None:
        return None
    year = _to_come(ctx, m, year, lambda y: _months(y, 3 * quarter - 2, 3)[1])
    start, end = _months(year, 3 * quarter - 2, 3)
    return _window(start, end, m, f"Q{quarter} {year}", 0.7, 14)


@_rule(
    r"\b(?:(?P<rel>last|this|next)\s+|(?P<the>in|during|over|throughout)\s+the\s+|the\s+)?"
    r"(?P<season>spring|summer|autumn|fall|winter)"
    rf"(?:(?P<before>\s+before\s+last)|\s+(?:of\s+)?{_Y})?\b",
    _SEASONS,
)
def _season(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    first = _SEASONS[m["season"].lower()]
    if m.group("year"):
        year = int(m["year"])
    elif (m.group("rel") or m.group("before")) and ctx.now is not None:
        year = _latest(ctx.now, first) or ctx.now.year
        if m.group("before") or m["rel"].lower() == "last":
            # "last summer" in the middle of summer is the one before this one; "the
            # summer before last" is the one before that.
            start, end = _months(year, first, 3)
            year -= (1 if start <= ctx.now < end else 0) + (1 if m.group("before") else 0)
        elif m["rel"].lower() == "next":
            year += 1
    elif m.group("the") and ctx.now is not None:
        # "during the summer": the latest one begun, as "in May" is the latest May. Less
        # sure than "this summer": "in the summer we swim" may be every summer.
        year = _latest(ctx.now, first) or ctx.now.year
        year = _to_come(ctx, m, year, lambda y: _months(y, first, 3)[1])
        start, end = _months(year, first, 3)
        return _window(start, end, m, f"{m['season'].lower()} {year}", 0.6, 14)
    else:
        return None  # "summer" alone is a word, not a date
    start, end = _months(year, first, 3)
    return _window(start, end, m, f"{m['season'].lower()} {year}", 0.7, 14)


@_rule(r"\b(?P<prep>in|during|of|throughout|year)\s+" + _Y, {DIGIT})
def _year(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    if not _ends_phrase(ctx.text, m.end()):
        return None
    start, end = _years(int(m["year"]))
    return _window(start, end, m, m["year"], 1.0, 30)


def _ends_phrase(text: str, at: int) -> bool:
    # A year ends its phrase; "in 2000 files" is a count.
    tail = _YEAR_TAIL.match(text, at)
    return tail is None or tail.group(1).lower() in STOPWORDS or tail.start(1) > at + 1


@_rule(rf"\b(?P<prep>in|during|throughout|of|for)\s+{_M}(?!\s*\d)", _MONTH_WORDS)
def _month_alone(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    surface = m["mon"]
    if surface.lower() in _VERB_MONTHS and not surface[0].isupper() and not ctx.whole:
        return None
    prep = m.groupdict().get("prep")
    if prep is not None and prep.lower() == "for" and not _points_ahead(ctx.text, m):
        return None  # "asked for June" is a person; "the plan for June", a month
    month = _month_of(surface)
    if ctx.now is None:
        return _month_any(month, m, 0.5)
    year = _latest(ctx.now, month)
    if year is None:
        return None
    year = _to_come(ctx, m, year, lambda y: _months(y, month)[1])
    start, end = _months(year, month)
    return _window(start, end, m, f"{year}-{month:02d}", 0.7, 10)


@_rule(rf"\b{_Y}\b", {DIGIT})
def _bare_year(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    # Only after "before", "since", ...: anywhere else a bare number is as likely a count.
    if not ctx.inner or not _ends_phrase(ctx.text, m.end()):
        return None
    start, end = _years(int(m["year"]))
    return _window(start, end, m, m["year"], 1.0, 30)


@_rule(rf"\b{_M}(?!\s*\d)", _MONTH_WORDS)
def _bare_month(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    if not ctx.inner:
        return None
    return _month_alone(m, ctx)


# --- relative forms (read against ``now``) ----------------------------------------
def _relative_ctx(
    build: Callable[[re.Match[str], _Ctx, datetime], TimeWindow | None],
) -> _Build:
    """A rule read against ``now`` (none without it) that also asks how the text is read."""

    def wrapped(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
        return build(m, ctx, ctx.now) if ctx.now is not None else None

    return wrapped


def _relative(build: Callable[[re.Match[str], datetime], TimeWindow | None]) -> _Build:
    return _relative_ctx(lambda m, _ctx, now: build(m, now))


_DAYS: Final = {
    "today": (0, 0.9),
    "tonight": (0, 0.9),
    "this morning": (0, 0.9),
    "this afternoon": (0, 0.9),
    "this evening": (0, 0.9),
    "yesterday": (-1, 0.9),
    "last night": (-1, 0.9),
    "the day before yesterday": (-2, 0.9),
    "the night before last": (-2, 0.9),
    "tomorrow": (1, 0.9),
    "the day after tomorrow": (2, 0.9),
}
_DAYS.update(
    {
        f"{day} {part}": (offset, 0.9)
        for day, offset in (("yesterday", -1), ("tomorrow", 1))
        for part in ("morning", "afternoon", "evening", "night")
    }
)


@_rule(
    r"\b(?P<w>" + "|".join(sorted(_DAYS, key=len, reverse=True)) + r")\b",
    {"today", "tonight", "morning", "afternoon", "evening", "yesterday", "night", "tomorrow"},
)
@_relative
def _named_day(m: re.Match[str], now: datetime) -> TimeWindow:
    offset, sure = _DAYS[" ".join(m["w"].lower().split())]
    start = _day_start(now) + timedelta(days=offset)
    return _window(start, start + timedelta(days=1), m, m["w"].lower(), sure, 2)


def _calendar(unit: str, now: datetime, shift: int) -> tuple[datetime, datetime]:
    day = _day_start(now)
    if unit in ("week", "weekend"):
        monday = day - timedelta(days=now.weekday()) + timedelta(days=7 * shift)
        if unit == "weekend":
            saturday = monday + timedelta(days=5)
            return saturday, saturday + timedelta(days=2)
        return monday, monday + timedelta(days=7)
    if unit in ("month", "quarter"):
        size = 3 if unit == "quarter" else 1
        opening = now.month - (now.month - 1) % size  # the first month of this one
        year, month = _add_months(now.year, opening, shift * size)
        first = day.replace(year=year, month=month, day=1)
        end_year, end_month = _add_months(year, month, size)
        return first, first.replace(year=end_year, month=end_month)
    first = day.replace(year=now.year + shift, month=1, day=1)
    return first, first.replace(year=first.year + 1)


_SHIFTS: Final = {"last": -1, "this": 0, "next": 1, "previous": -1, "prior": -1}
_UNIT_SLACK: Final = {"week": 3, "weekend": 3, "month": 7, "quarter": 14, "year": 30}


@_rule(
    r"\b(?P<rel>last|this|next|(?:the\s+)?(?:previous|prior))\s+"
    r"(?P<unit>week|weekend|month|quarter|year)\b(?!-)",
    {"last", "this", "next", "previous", "prior"},
    _UNIT_DAYS,
)
@_relative
def _this_unit(m: re.Match[str], now: datetime) -> TimeWindow:
    rel, unit = m["rel"].lower().split()[-1], m["unit"].lower()
    # Calendar units: "last week" is the Monday-to-Sunday before this one, and on a
    # Sunday "last weekend" is the one before the weekend under way. "The previous week"
    # may count from another moment than now: as "last week", less sure.
    start, end = _calendar(unit, now, _SHIFTS[rel])
    sure = 0.9 if rel in ("last", "this", "next") else 0.7
    return _window(start, end, m, f"{rel} {unit}", sure, _UNIT_SLACK[unit])


@_rule(
    r"\bthe\s+(?P<unit>week|weekend|month|quarter|year)\s+(?:before|prior\s+to)\s+last\b",
    {"last"},
    _UNIT_DAYS,
)
@_relative
def _before_last(m: re.Match[str], now: datetime) -> TimeWindow:
    unit = m["unit"].lower()
    start, end = _calendar(unit, now, -2)
    return _window(start, end, m, f"the {unit} before last", 0.9, _UNIT_SLACK[unit])


def _count(raw: str) -> tuple[int, bool]:
    key = " ".join(raw.lower().split())
    return (int(key), False) if key.isdigit() else (_NUMBERS[key], key in _VAGUE)


# Units as chat shortens them: "2 yrs ago", "3wks back", "5 mins ago".
_UNIT_SHORT: Final = {
    "min": "minute",
    "hr": "hour",
    "wk": "week",
    "mo": "month",
    "yr": "year",
}


@_rule(rf"\b{_N}\s+{_UNIT}\s+(?:ago|back|earlier)\b", {"ago", "back", "earlier"})
@_rule(
    rf"\b{_N}\s*(?P<short>{'|'.join(_UNIT_SHORT)})s?\.?\s+(?:ago|back|earlier)\b",
    {"ago", "back", "earlier"},
    _UNIT_SHORT,
)
@_relative
def _ago(m: re.Match[str], now: datetime) -> TimeWindow | None:
    n, vague = _count(m["n"])
    short = m.groupdict().get("short")
    unit = _UNIT_SHORT[short.lower()] if short else m["unit"].lower()
    if unit == "day":
        start = _day_start(now) - timedelta(days=n)
        length = timedelta(days=1)
    elif unit == "weekend" and not vague:
        # "Two weekends ago" is a weekend on the calendar: counted back from the latest
        # begun ("last weekend" is one ago).
        latest, _ = _calendar("weekend", now, 0 if now.weekday() >= 5 else -1)
        start = latest - timedelta(days=7 * (n - 1))
        return _window(
            start, start + timedelta(days=2), m, f"{m['n'].lower()} weekend(s) ago", 0.8, 2
        )
    else:
        length = timedelta(days=_UNIT_DAYS[unit])
        start = now - length * n - length / 2
    sure = 0.5 if vague else 0.8
    spread = length * (2 if vague else 0)  # "a few weeks ago" is a wide guess
    label = f"{m['n'].lower()} {unit}s ago" if n != 1 or vague else f"{m['n'].lower()} {unit} ago"
    # A time ago is over by now, however wide the guess around it.
    end = min(start + length + spread, now)
    return _window(start - spread, end, m, label, sure, _UNIT_DAYS[unit] / 2)


@_rule(
    rf"\b(?:(?:in|over|within|during)\s+)?(?:the\s+(?:past|last)|past|last(?=\s+fortnight))"
    rf"\s+(?:{_N}\s+)?{_UNIT}\b",
    {"past", "last"},
)
@_relative
def _past(m: re.Match[str], now: datetime) -> TimeWindow:
    n, vague = _count(m["n"]) if m.group("n") else (1, False)
    unit = m["unit"].lower()
    if unit == "weekend":
        # "The past weekend" is the latest begun (on a Saturday, this one), not a week;
        # "the past two weekends" reaches back to the Saturday of the one before it.
        saturday, end = _calendar("weekend", now, 0 if now.weekday() >= 5 else -1)
        start = saturday - timedelta(days=7 * (n - 1))
        return _window(start, end, m, f"the past {n} weekend(s)", 0.6 if vague else 0.9, 2)
    return _window(_back(now, unit, n), now, m, f"the past {n} {unit}(s)", 0.6 if vague else 0.9, 1)


_CALENDAR_MONTHS: Final = {"month": 1, "quarter": 3, "year": 12}


def _back(now: datetime, unit: str, n: int) -> datetime:
    """``now`` ``n`` units back: months, quarters and years on the calendar ("the past 6
    months" from 22 November begins on 22 May, not 180 days back), the rest by length."""
    months = _CALENDAR_MONTHS.get(unit)
    if months is None:
        return now - timedelta(days=_UNIT_DAYS[unit] * n)
    year, month = _add_months(now.year, now.month, -months * n)
    return now.replace(year=year, month=month, day=min(now.day, _month_days(year, month)))


@_rule(
    rf"\b(?:(?:in|over|within|during)\s+)?the\s+(?:next|coming)\s+{_N}\s+{_UNIT}\b",
    {"next", "coming"},
)
@_relative
def _coming(m: re.Match[str], now: datetime) -> TimeWindow:
    # A count is required: "the next day" is the day after some other moment, not now.
    n, vague = _count(m["n"])
    unit = m["unit"].lower()
    end = now + timedelta(days=_UNIT_DAYS[unit] * n)
    return _window(now, end, m, f"the next {n} {unit}(s)", 0.6 if vague else 0.9, 1)


# Short names of the days, written capitalized ("last Fri", "on Thu"): lower case, "sat" or
# "sun" after "on" is as likely a word.
_WEEKDAY_SHORT: Final = {
    short: day
    for day in _WEEKDAYS
    for short in (day[:3], *((day[:4],) if day in ("tuesday", "thursday") else ()))
} | {"thur": "thursday"}


def _day_named(surface: str) -> str | None:
    """The weekday a word names: its full name in any case, its short name capitalized."""
    word = surface.lower()
    if word in _WEEKDAYS:
        return word
    return _WEEKDAY_SHORT.get(word) if surface[:1].isupper() else None


_WEEKDAY_ALT: Final = "|".join([*_WEEKDAYS, *sorted(_WEEKDAY_SHORT, key=len, reverse=True)])


def _latest_weekday(now: datetime, name: str) -> datetime:
    """The start of the latest day named ``name`` begun by ``now`` (today, if it is)."""
    return _day_start(now) - timedelta(days=(now.weekday() - _WEEKDAYS.index(name)) % 7)


@_rule(
    rf"\b(?P<rel>last|this\s+past|this|next|on|(?:the\s+)?(?:previous|prior))\s+"
    rf"(?P<wd>{_WEEKDAY_ALT})s?\b",
    [*_WEEKDAYS, *_WEEKDAY_SHORT],
)
def _weekday(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    name = _day_named(m["wd"])
    if name is None or ctx.now is None:
        return None
    now = ctx.now
    rel, target = m["rel"].lower().split()[-1], _WEEKDAYS.index(name)
    today = _day_start(now)
    back = (now.weekday() - target) % 7
    # "The previous Friday" may count from another moment than now: as "last", less sure.
    sure = 0.7 if rel in ("previous", "prior") else 0.8
    if rel in ("last", "past", "previous", "prior"):  # "this past Monday" is last Monday
        back = back or 7
        day = today - timedelta(days=back)
    elif rel == "on":
        day = _latest_weekday(now, name)
    else:
        day = today + timedelta(days=(target - now.weekday()) % 7 or (7 if rel == "next" else 0))
    said = "last" if rel == "past" else rel
    return _window(day, day + timedelta(days=1), m, f"{said} {name.capitalize()}", sure, 3)


@_rule(rf"\b(?P<wd>{'|'.join(_WEEKDAYS)})['’]s\b", _WEEKDAYS)
def _weekday_owned(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Friday's deploy": the latest Friday begun, less sure than "on Friday" ("Tuesday
    meeting" without the 's may be every Tuesday's, and is not read). Full names only:
    "the Sun's light" is no Sunday."""
    if ctx.now is None:
        return None
    name = m["wd"].lower()
    day = _latest_weekday(ctx.now, name)
    return _window(day, day + timedelta(days=1), m, f"{name.capitalize()}'s", 0.6, 3)


@_rule(
    rf"\b(?:{_N}\s+(?P<wd>{'|'.join(_WEEKDAYS)})s\s+ago"
    rf"|the\s+(?P<wd2>{'|'.join(_WEEKDAYS)})\s+(?:before|prior\s+to)\s+last)\b",
    _WEEKDAYS,
)
@_relative
def _weekdays_back(m: re.Match[str], now: datetime) -> TimeWindow | None:
    """ "Two Tuesdays ago", "the Monday before last": counted back from "last Monday"
    (never today). A vague count ("a few Mondays ago") names no day."""
    n, vague = _count(m["n"]) if m.group("n") else (2, False)
    if vague:
        return None
    name = (m.group("wd") or m["wd2"]).lower()
    back = (now.weekday() - _WEEKDAYS.index(name)) % 7 or 7
    day = _day_start(now) - timedelta(days=back + 7 * (n - 1))
    return _window(day, day + timedelta(days=1), m, day.date().isoformat(), 0.8, 3)


@_rule(
    rf"\b{_N}\s+(?P<unit>day|week|month|year)s?\s+ago\s+(?P<from>today|yesterday|tomorrow)\b",
    {"ago"},
    {"today", "yesterday", "tomorrow"},
)
@_relative
def _ago_from_day(m: re.Match[str], now: datetime) -> TimeWindow | None:
    """ "A week ago today", "a month ago yesterday": that one day, counted back from the
    day named."""
    n, vague = _count(m["n"])
    if vague:
        return None
    shift = {"today": 0, "yesterday": -1, "tomorrow": 1}[m["from"].lower()]
    unit = m["unit"].lower()
    day = _back(_day_start(now) + timedelta(days=shift), unit, n)
    return _window(day, day + timedelta(days=1), m, day.date().isoformat(), 0.8, 2)


_THEN_SPREAD: Final = {"week": 0, "month": 3, "year": 14}  # days either side of the moment


@_rule(r"\bthis\s+time\s+last\s+(?P<unit>week|month|year)\b", {"time"}, {"last"})
@_relative
def _this_time_last(m: re.Match[str], now: datetime) -> TimeWindow | None:
    """ "This time last year": the days around the same date a unit back, not that year."""
    unit = m["unit"].lower()
    day = _day_start(now)
    if unit == "week":
        then = day - timedelta(days=7)
    else:
        year, month = _add_months(now.year, now.month, -12 if unit == "year" else -1)
        then = day.replace(year=year, month=month, day=min(now.day, _month_days(year, month)))
    spread = timedelta(days=_THEN_SPREAD[unit])
    return _window(
        then - spread, then + timedelta(days=1) + spread, m, f"this time last {unit}", 0.8, 3
    )


def _month_days(year: int, month: int) -> int:
    start, end = _months(year, month)
    return (end - start).days


@_rule(
    r"\b(?:on\s+)?the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)?\s+of\s+"
    r"(?P<rel>last|this|next|the\s+previous)\s+month\b",
    {DIGIT},
    {"month"},
)
@_relative
def _day_of_named_month(m: re.Match[str], now: datetime) -> TimeWindow | None:
    """ "The 14th of last month": that day, not the whole month around it."""
    first, _ = _calendar("month", now, _SHIFTS[m["rel"].lower().split()[-1]])
    try:
        day = first.replace(day=int(m["day"]))
    except ValueError:
        return None
    return _window(day, day + timedelta(days=1), m, day.date().isoformat(), 0.8, 3)


# A part of a day, named with its day: "Tuesday night", "the morning of the 3rd".
_DAY_PART: Final = r"(?:morning|afternoon|evening|night)"


@_rule(
    rf"\b(?:(?P<on>(?:on|around|about)\s+)|(?P<part>(?:(?:on\s+)?the\s+)?{_DAY_PART}\s+of\s+))?"
    r"the\s+(?P<day>[0-3]?\d)(?:st|nd|rd|th)\b",
    {DIGIT},
)
def _day_of_month(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    # "The 3rd" alone is a date only after "on", "since", "before", ... or "the morning
    # of" ("the 3rd time" is not).
    lead = "" if m.group("part") is None else " ".join(m["part"].lower().split()[-3:]) + " "
    if lead.startswith("on "):
        lead = lead[3:]
    if (
        ctx.now is None
        or not (m.group("on") or m.group("part") or ctx.inner)
        or not _ends_phrase(ctx.text, m.end())
    ):
        return None
    now = ctx.now
    for back in range(3):
        year, month = _add_months(now.year, now.month, -back)
        try:
            day = _day_start(now).replace(year=year, month=month, day=int(m["day"]))
        except ValueError:
            continue
        if day <= now:
            label = f"{lead}the {_ordinal(int(m['day']))}"
            return _window(day, day + timedelta(days=1), m, label, 0.6, 3)
    return None


def _ordinal(n: int) -> str:
    """ "1st", "2nd", "3rd", "11th", "22nd"."""
    if 10 <= n % 100 <= 20:
        return f"{n}th"
    suffix = {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _easter(year: int) -> tuple[int, int]:
    """Western Easter Sunday of ``year`` as (month, day): the Gregorian computus."""
    golden = year % 19
    century, rest = divmod(year, 100)
    leap_skip, leap_left = divmod(century, 4)
    moon_fix = (century + 8) // 25
    moon = (19 * golden + century - leap_skip - (century - moon_fix + 1) // 3 + 15) % 30
    weekday = (32 + 2 * leap_left + 2 * (rest // 4) - moon - rest % 4) % 7
    shift = (golden + 11 * moon + 22 * weekday) // 451
    month, day = divmod(moon + weekday - 7 * shift + 114, 31)
    return month, day + 1


def _thanksgiving(year: int) -> tuple[int, int]:
    """The fourth Thursday of November (the United States' Thanksgiving)."""
    first = datetime(year, 11, 1).weekday()
    return 11, 1 + (3 - first) % 7 + 21


# Days a year keeps by name, each as it may be written: a fixed (month, day), or the
# rule that finds it in a year.
_HOLIDAYS: Final[dict[str, tuple[str, tuple[int, int] | Callable[[int], tuple[int, int]]]]] = {
    "christmas eve": (r"christmas\s+eve", (12, 24)),
    "christmas": (r"christmas(?:\s+day)?|xmas", (12, 25)),
    "new year's eve": (r"new\s+year['’]?s?\s+eve", (12, 31)),
    # "The new year" is the one to come, not a day: the day is written with its "'s".
    "new year's day": (r"new\s+year(?:['’]?s(?:\s+day)?|\s+day)", (1, 1)),
    "halloween": (r"halloween", (10, 31)),
    "valentine's day": (r"valentine['’]?s?(?:\s+day)?", (2, 14)),
    "st patrick's day": (r"(?:st\.?|saint)\s+patrick['’]?s?(?:\s+day)?", (3, 17)),
    "independence day": (r"independence\s+day|fourth\s+of\s+july", (7, 4)),
    "thanksgiving": (r"thanksgiving(?:\s+day)?", _thanksgiving),
    # Not an "Easter egg" (a hidden feature, in a memory of software) nor the island.
    "easter": (r"easter(?:\s+sunday)?(?!\s+(?:eggs?|island)\b)", _easter),
}
_HOLIDAY_NAMES: Final = tuple(_HOLIDAYS)


def _holiday_on(name: str, year: int) -> datetime:
    rule = _HOLIDAYS[name][1]
    month, day = rule(year) if callable(rule) else rule
    return datetime(year, month, day, tzinfo=UTC)


@_rule(
    r"\b(?:(?P<rel>last|this|next)\s+|the\s+)?(?P<h>"
    + "|".join(f"(?P<h{i}>{form})" for i, (form, _) in enumerate(_HOLIDAYS.values()))
    + rf")(?:(?P<before>\s+before\s+last)|,?\s+(?:of\s+)?{_Y})?\b",
    {
        "christmas",
        "xmas",
        "year",
        "halloween",
        "valentine",
        "patrick",
        "independence",
        "july",
        "thanksgiving",
        "easter",
    },
)
def _holiday(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """A holiday by name ("over Christmas", "last Thanksgiving", "Easter 2023"): its day,
    with a week's slack for the days around it that the phrase often means. With no
    year: the latest one begun by now ("next" the first after it)."""
    name = next(n for i, n in enumerate(_HOLIDAY_NAMES) if m.group(f"h{i}"))
    if name == "easter" and not m["h"][0].isupper():
        return None  # lower-case "easter" is as likely a word of some other kind
    if m.group("year"):
        day, sure = _holiday_on(name, int(m["year"])), 1.0
    elif ctx.now is None:
        return None
    else:
        today = _day_start(ctx.now)
        rel = (m["rel"] or "").lower()
        year = ctx.now.year
        day = _holiday_on(name, year)
        if rel == "next":
            day = day if day > today else _holiday_on(name, year + 1)
        elif rel == "this":
            pass
        elif rel == "last" or m.group("before"):
            day = day if day < today else _holiday_on(name, year - 1)
            if m.group("before"):  # "the Christmas before last": the one before that
                day = _holiday_on(name, day.year - 1)
        else:
            if day > today:
                day = _holiday_on(name, year - 1)
            day = _holiday_on(
                name, _to_come(ctx, m, day.year, lambda y: _holiday_on(name, y) + timedelta(1))
            )
        sure = 0.8
    label = f"{name} {day.year}"
    return _window(day, day + timedelta(days=1), m, label, sure, 7)


def _day_named_after(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """The one day a rule's match is followed by ("the week of May 8"), or None when what
    follows is no time or more than a day; "the 14th" is read with its article."""
    day = _at(ctx.text, m.end(), ctx.now, nested=True)
    if day is None and m.group("the"):
        day = _at(ctx.text, m.start("the"), ctx.now, nested=True)
    if day is None or day.start is None or day.end is None:
        return None
    return day if day.end - day.start <= timedelta(days=1) else None


@_rule(r"\b(?:the\s+)?week\s+of\s+(?P<the>the\s+)?", {"week"})
def _week_around(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "The week of May 8", "the week of the 14th": the Monday-to-Sunday week holding
    that day."""
    day = _day_named_after(m, ctx)
    if day is None or day.start is None:
        return None  # "the week of May" is "the first week of May"'s to read
    monday = _day_start(day.start) - timedelta(days=day.start.weekday())
    return TimeWindow(
        monday,
        monday + timedelta(days=7),
        timedelta(days=3),
        day.certainty,
        f"the week of {day.label}",
        (m.start(), day.span[1]),
    )


@_rule(r"\b(?:the\s+)?weekend\s+of\s+(?P<the>the\s+)?", {"weekend"})
def _weekend_around(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "The weekend of the 14th", "the weekend of May 8": the Saturday and Sunday holding
    that day, or, for a weekday, the weekend nearest it (Monday and Tuesday look back,
    Wednesday to Friday ahead)."""
    day = _day_named_after(m, ctx)
    if day is None or day.start is None:
        return None  # "the weekend of May" names no one weekend
    start = _day_start(day.start)
    weekday = start.weekday()
    if weekday >= 5:
        saturday = start - timedelta(days=weekday - 5)
    elif weekday <= 1:
        saturday = start - timedelta(days=weekday + 2)
    else:
        saturday = start + timedelta(days=5 - weekday)
    return TimeWindow(
        saturday,
        saturday + timedelta(days=2),
        timedelta(days=1),
        day.certainty * (1.0 if weekday >= 5 else 0.8),
        f"the weekend of {day.label}",
        (m.start(), day.span[1]),
    )


@_rule(
    r"\b(?:(?P<rel>last|this|next)\s+)?mid[\s-]?week(?:\s+(?P<after>last|this|next)\s+week)?\b",
    {"midweek", "mid"},
)
@_relative_ctx
def _midweek(m: re.Match[str], ctx: _Ctx, now: datetime) -> TimeWindow | None:
    """ "Midweek", "mid-week last week", "last midweek": the Tuesday to Thursday of that
    week; alone, the latest begun, or this week's when the sentence points ahead."""
    rel = (m["after"] or m["rel"] or "").lower()
    if rel:
        shift = _SHIFTS[rel]
    else:
        monday = _day_start(now) - timedelta(days=now.weekday())
        begun = now >= monday + timedelta(days=1)
        shift = 0 if begun or _points_ahead(ctx.text, m) else -1
    start, _ = _calendar("week", now, shift)
    lo = start + timedelta(days=1)
    label = f"midweek {'this' if shift == 0 else rel or 'last'} week"
    return _window(lo, lo + timedelta(days=3), m, label, 0.7, 2)


@_rule(
    r"\b(?P<w>recently|lately|the\s+other\s+(?:day|week)|these\s+days)\b",
    {"recently", "lately", "other", "these"},
)
@_relative
def _recently(m: re.Match[str], now: datetime) -> TimeWindow:
    said = " ".join(m["w"].lower().split())
    # "The other week": a week or few ago, not this one.
    days, until = {"the other day": (7, 0), "the other week": (28, 4)}.get(said, (30, 0))
    return _window(now - timedelta(days=days), now - timedelta(days=until), m, said, 0.4, 1)


@_rule(rf"\b(?P<wd>{_WEEKDAY_ALT})\b", [*_WEEKDAYS, *_WEEKDAY_SHORT])
def _bare_weekday(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Tuesday" where a time is meant ("since Monday", a ``when`` of "Friday"): the
    latest such day begun, as "on Tuesday" reads."""
    name = _day_named(m["wd"])
    if not ctx.inner or name is None or ctx.now is None:
        return None
    day = _latest_weekday(ctx.now, name)
    return _window(day, day + timedelta(days=1), m, name.capitalize(), 0.7, 3)


def _day_in(window: TimeWindow, name: str) -> datetime | None:
    """The day named ``name`` inside ``window`` (a week at most): of two that each
    overlap a week not begun at midnight ("two weeks ago"), the one nearer its middle."""
    if window.start is None or window.end is None:
        return None
    if window.end - window.start > timedelta(days=8):
        return None
    middle = window.start + (window.end - window.start) / 2
    target = _WEEKDAYS.index(name)
    days = [
        day
        for k in range(9)
        if (day := _day_start(window.start) + timedelta(days=k)) < window.end
        and day.weekday() == target
    ]
    return min(days, key=lambda d: abs(d + timedelta(hours=12) - middle), default=None)


def _days_named_in(m: re.Match[str], week: TimeWindow | None) -> tuple[datetime, datetime] | None:
    """The day ``m``'s weekday (``wd``) names in ``week``, or the days from it to the one
    ``wd2`` names there: [start, end)."""
    first = _day_named(m["wd"])
    last = _day_named(m["wd2"]) if m.group("wd2") else None
    if week is None or first is None or (m.group("wd2") and last is None):
        return None
    start = _day_in(week, first)
    end = start if last is None or start is None else _day_in(week, last)
    if start is None or end is None or end < start:
        return None
    return start, end + timedelta(days=1)


def _days_label(first: datetime, end: datetime) -> str:
    last = end - timedelta(days=1)
    if last == first:
        return first.date().isoformat()
    return f"{first.date().isoformat()} to {last.date().isoformat()}"


@_rule(
    rf"\b(?:on\s+)?(?P<wd>{_WEEKDAY_ALT})(?:{_THRU}(?P<wd2>{_WEEKDAY_ALT}))?"
    rf"(?:\s+{_DAY_PART})?,?\s+(?:of\s+|in\s+)?"
    # only where a week can follow: each reading on tries every rule there
    rf"(?=(?:last|this|next|the|previous|prior|{_COUNT})\b)",
    [*_WEEKDAYS, *_WEEKDAY_SHORT],
    {"week", "weekend"},
)
def _weekday_of_week(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Tuesday last week", "on Friday of the week before last", "Wednesday two weeks
    ago", "Monday to Wednesday next week": the day (or days) of that week, not the
    latest Tuesday and the whole week beside it."""
    week = _at(ctx.text, m.end(), ctx.now, nested=True)
    days = _days_named_in(m, week)
    if week is None or days is None:
        return None
    start, end = days
    return TimeWindow(
        start,
        end,
        timedelta(days=2),
        min(week.certainty, 0.8),
        _days_label(start, end),
        (m.start(), week.span[1]),
    )


@_rule(
    rf"\b(?:(?:last|this|next|(?:the\s+)?(?:previous|prior))\s+week"
    rf"|the\s+week\s+(?:before|prior\s+to)\s+last|{_N}\s+weeks?\s+ago)"
    rf"(?P<join>['’]s\s+|,?\s+on\s+)(?P<wd>{_WEEKDAY_ALT})(?:{_THRU}(?P<wd2>{_WEEKDAY_ALT}))?\b",
    [*_WEEKDAYS, *_WEEKDAY_SHORT],
    {"week"},
)
def _week_then_weekday(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Last week on Tuesday", "next week's Friday": as "Tuesday last week"."""
    week = _at(ctx.text, m.start(), ctx.now, nested=True)
    days = _days_named_in(m, week)
    if week is None or days is None or week.span[1] != m.start("join"):
        return None
    start, end = days
    return _window(start, end, m, _days_label(start, end), min(week.certainty, 0.8), 2)


_NTH: Final = _ORDINALS | {"last": -1}


@_rule(
    rf"\b(?:on\s+)?the\s+(?P<nth>{'|'.join(_NTH)})\s+(?P<wd>{'|'.join(_WEEKDAYS)})\s+"
    r"(?:of|in)\s+(?P<this>the\s+month\b)?",
    _WEEKDAYS,
)
def _weekday_of_month(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "The second Tuesday of November", "the last Friday of last month", "the first
    Monday in December": that day of the month read after it."""
    if m.group("this"):  # "of the month": the one under way
        if ctx.now is None:
            return None
        start, end = _calendar("month", ctx.now, 0)
        month = _window(start, end, m, "this month", 0.8, 7)
    else:
        month = _at(ctx.text, m.end(), ctx.now, nested=True)
    if month is None or month.start is None or month.end is None:
        return None
    if not timedelta(days=28) <= month.end - month.start <= timedelta(days=31):
        return None
    target = _WEEKDAYS.index(m["wd"].lower())
    first = month.start + timedelta(days=(target - month.start.weekday()) % 7)
    days = [first + timedelta(days=7 * k) for k in range(5)]
    days = [d for d in days if d < month.end]
    day = days[_NTH[m["nth"].lower()]] if _NTH[m["nth"].lower()] < len(days) else None
    if day is None:
        return None
    return TimeWindow(
        day,
        day + timedelta(days=1),
        timedelta(days=3),
        min(month.certainty, 0.8),
        day.date().isoformat(),
        (m.start(), month.span[1]),
    )


@_rule(
    rf"\b(?P<wd>{_WEEKDAY_ALT}){_THRU}(?P<wd2>{_WEEKDAY_ALT})\b",
    [*_WEEKDAYS, *_WEEKDAY_SHORT],
)
def _weekday_span(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Monday through Wednesday", "Mon-Wed": the latest such days, ending with the
    latest of the last day begun."""
    first, last = _day_named(m["wd"]), _day_named(m["wd2"])
    if first is None or last is None or first == last or ctx.now is None:
        return None
    end = _latest_weekday(ctx.now, last) + timedelta(days=1)
    start = end - timedelta(days=(_WEEKDAYS.index(last) - _WEEKDAYS.index(first)) % 7 + 1)
    return _window(start, end, m, _days_label(start, end), 0.7, 2)


@_rule(rf"\b(?:on\s+)?(?P<wd>{'|'.join(_WEEKDAYS)})\s+(?P<part>{_DAY_PART})\b", _WEEKDAYS)
def _weekday_part(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Tuesday night", "Friday morning": the latest such day begun (full names only)."""
    if ctx.now is None:
        return None
    name = m["wd"].lower()
    day = _latest_weekday(ctx.now, name)
    label = f"{name.capitalize()} {m['part'].lower()}"
    return _window(day, day + timedelta(days=1), m, label, 0.7, 3)


@_rule(rf"\b(?P<rel>last|this|next)\s+{_M}(?!\s*\d)", {"last", "this", "next"}, _MONTH_WORDS)
def _month_named(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "Last December" is the latest December over by now, "this December" the one of
    this year, "next December" the first not yet begun."""
    surface = m["mon"]
    verb = surface.lower() in _VERB_MONTHS and not surface[0].isupper() and not ctx.whole
    if verb or ctx.now is None:
        return None  # "this may help", "the next march"
    month, now, rel = _month_of(surface), ctx.now, m["rel"].lower()
    year = now.year
    if rel == "last":
        year = year if _months(year, month)[1] <= now else year - 1
    elif rel == "next":
        year = year if _months(year, month)[0] > now else year + 1
    start, end = _months(year, month)
    return _window(start, end, m, f"{rel} {surface.capitalize()} ({year}-{month:02d})", 0.8, 10)


@_rule(rf"\b{_N}\s+{_UNIT}\s+from\s+now\b", {"now"}, _UNIT_DAYS)
@_rule(rf"\b(?P<in>in)\s+{_N}\s+{_UNIT}\b", {"in"}, _UNIT_DAYS)
@_relative_ctx
def _ahead(m: re.Match[str], ctx: _Ctx, now: datetime) -> TimeWindow | None:
    """ "Two weeks from now"; "in two weeks" only where a time is meant (elsewhere it is
    as often how long something took)."""
    if "in" in m.groupdict() and not (ctx.whole or ctx.inner):
        return None
    n, vague = _count(m["n"])
    unit = m["unit"].lower()
    length = timedelta(days=_UNIT_DAYS[unit])
    # A count of days names a day; of other units, a unit wide around that moment.
    day = unit == "day"
    start = _day_start(now) + timedelta(days=n) if day else now + length * n - length / 2
    spread = length * (2 if vague else 0)
    label = f"{m['n'].lower()} {unit}(s) from now"
    return _window(max(start - spread, now), start + length + spread, m, label, 0.8, 0)


@_rule(
    r"\b(?:(?P<p>over|on|at|during|throughout)\s+)?the\s+weekend\b(?!\s+(?:before|of|after)\b)",
    {"weekend"},
)
@_relative_ctx
def _the_weekend(m: re.Match[str], ctx: _Ctx, now: datetime) -> TimeWindow | None:
    """ "Over the weekend": the latest weekend begun (this one on a Saturday or Sunday)."""
    if not (m.group("p") or ctx.whole):
        return None
    start, end = _calendar("weekend", now, 0 if now.weekday() >= 5 else -1)
    return _window(start, end, m, "the weekend", 0.8, 3)


@_rule(
    r"\b(?:(?P<side>earlier|later)\s+this|so\s+far\s+this)\s+(?P<unit>week|month|quarter|year)\b"
    r"|\b(?P<unit2>week|month|quarter|year)[\s-]+to[\s-]+date\b|\b(?P<abbr>[WMQY]TD)\b",
    {"earlier", "later", "far", "date", "wtd", "mtd", "qtd", "ytd"},
)
@_relative_ctx
def _so_far(m: re.Match[str], ctx: _Ctx, now: datetime) -> TimeWindow | None:
    """ "Earlier this week", "so far this year", "year to date" (YTD): from the unit's
    start to now; "later this month": from now to its end."""
    abbr = m.group("abbr")
    if abbr is not None and not abbr.isupper():
        return None  # "ytd" in lower case may be anything
    key = abbr[0] if abbr else (m.group("unit") or m.group("unit2")).lower()
    unit = {"W": "week", "M": "month", "Q": "quarter", "Y": "year"}.get(key, key)
    start, end = _calendar(unit, now, 0)
    if (m.group("side") or "").lower() == "later":
        return _window(now, end, m, f"later this {unit}", 0.8, 1)
    if start >= now:
        return None  # at the unit's first instant nothing of it is over yet
    return _window(start, now, m, f"{unit} to date", 0.9, 1)


@_rule(
    rf"\bH(?P<h>[12])\s*(?P<ya>{_YEAR_OF})\b|\b(?P<yb>{_YEAR_OF})\s*H(?P<hh>[12])\b"
    r"|\b(?:the\s+)?(?P<ord>first|second|1st|2nd|latter)\s+half\s+of\s+"
    rf"(?:(?P<yc>{_YEAR_OF})|(?P<rel>the|this|last|next)\s+year)\b",
    {DIGIT, "half"},
)
def _half(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """A half year: "H1 2024", "2024 H2", "the second half of last year"."""
    if m.group("ord") is None:
        if "H" not in m.group(0):
            return None  # "h1" in lower case: a heading, a hash
        half = int(m.group("h") or m.group("hh")) - 1
        year = int(m.group("ya") or m.group("yb"))
    else:
        half = 0 if m["ord"].lower() in ("first", "1st") else 1
        if m.group("yc"):
            year = int(m["yc"])
        elif ctx.now is None:
            return None
        else:
            year = ctx.now.year + _SHIFTS.get(m["rel"].lower(), 0)
    start, end = _months(year, 1 + 6 * half, 6)
    return _window(start, end, m, f"H{half + 1} {year}", 1.0, 14)


@_rule(
    r"\b(?:the\s+)?(?P<ord>first|second|1st|2nd|latter)\s+half\s+of\s+"
    rf"(?:{_M}(?:,?\s+{_Y})?|(?P<rel>the|this|last|next)\s+month)\b",
    {"half"},
)
def _half_month(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "The second half of November", "the first half of last month": the days to the
    15th, or from the 16th on."""
    if m.group("mon"):
        named = _named_month(m, ctx)
        if named is None:
            return None
        start, end = named
    elif ctx.now is None:
        return None
    else:
        start, end = _calendar("month", ctx.now, _SHIFTS.get(m["rel"].lower(), 0))
    middle = start.replace(day=16)
    first = m["ord"].lower() in ("first", "1st")
    lo, hi = (start, middle) if first else (middle, end)
    label = f"{'first' if first else 'second'} half of {start:%Y-%m}"
    return _window(lo, hi, m, label, 0.8, 4)


@_rule(
    r"\b(?:(?P<the>the\s+)?(?P<cent>1[89]|20)(?P<d>\d)0s|the\s+['’]?(?P<short>\d)0s)\b",
    {DIGIT},
)
def _decade(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """ "The 1990s", "the '90s", "the 2010s". Two digits only after "the", and less
    sure: "in the 90s" may be a temperature or an age."""
    if m.group("cent"):
        first = int(m["cent"] + m["d"] + "0")
        sure = 0.9
    else:
        this_year = ctx.now.year if ctx.now is not None else 2000
        first = 1900 + int(m["short"]) * 10
        first += 100 if first + 100 <= this_year else 0
        sure = 0.5
    start = datetime(first, 1, 1, tzinfo=UTC)
    return _window(start, start.replace(year=first + 10), m, f"the {first}s", sure, 60)


@_rule(rf"\b(?P<y>{_YEAR_OF})-?W(?P<w>[0-5]\d)\b", {DIGIT})
def _iso_week(m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    """An ISO week, "2025-W12": Monday to Sunday."""
    if "W" not in m.group(0):
        return None  # "2025-w12" in lower case is more likely a name
    try:
        start = datetime.fromisocalendar(int(m["y"]), int(m["w"]), 1).replace(tzinfo=UTC)
    except ValueError:
        return None
    label = f"{m['y']}-W{m['w']}"
    return _window(start, start + timedelta(days=7), m, label, 1.0, 3)


# --- composite forms: an operator and a time after it ----------------------------
_OPERATOR = _Pattern(
    r"\b(?:(?:(?P<k>the\s+(?:day|week|month|weekend)\s+)"
    rf"|(?P<count>{_COUNT})\s+(?P<units>day|week|weekend|month|year)s?\s+)?(?P<op>before|after)"
    r"|(?P<op2>prior\s+to|until|till|up\s+to|since|from|between))\s+",
    re.I,
)
_OPERATOR_WORDS: Final = frozenset(
    {"before", "after", "prior", "until", "till", "up", "since", "from", "between"}
)
_JOIN = _Pattern(r"\s*(?:and|to|until|till|through|-|–)\s*", re.I)


def _built(build: _Build, m: re.Match[str], ctx: _Ctx) -> TimeWindow | None:
    # A record may be anchored anywhere a datetime can be (year 1, year 9999): a reading
    # that would step off the calendar is no reading, never an error in a turn.
    try:
        return build(m, ctx)
    except (OverflowError, ValueError):
        return None


_REACH: Final = 200  # characters: longer than any one time expression reads
# The rules that read another time where their own words end ("the week of" a day).
_READS_ON: Final = frozenset(
    {_week_around, _weekday_of_week, _week_then_weekday, _weekday_of_month}
)


def _at(text: str, pos: int, now: datetime | None, *, nested: bool = False) -> TimeWindow | None:
    """The longest time expression starting exactly at ``pos``. ``nested``: read for a
    rule that reads a time at its own end; no such rule is tried then, so "the week of
    the week of ..." repeated is read once, not once a repetition, each deeper than the
    last (the interpreter's stack ran out at a few hundred)."""
    ctx = _Ctx(text, now, inner=True)
    # Words of what follows, as far as one expression reaches: the whole rest of a long
    # text, read again for every operator in it, made a prompt cost its length squared.
    present = _words(text[pos : pos + _REACH])
    best: TimeWindow | None = None
    for pattern, build, needs in _RULES:
        if not _runs(needs, present) or (nested and build in _READS_ON):
            continue
        m = pattern.match(text, pos)
        if m is None:
            continue
        window = _built(build, m, ctx)
        if window is not None and (best is None or window.span[1] > best.span[1]):
            best = window
    return best


def _composite(text: str, now: datetime | None) -> Iterator[TimeWindow]:
    for m in _OPERATOR.finditer(text):
        first = _at(text, m.end(), now)
        if first is None:
            continue
        op = (m.group("op") or m.group("op2")).lower().split()[0]
        if op in ("from", "between"):
            join = _JOIN.match(text, first.span[1])
            # The second end anchors the first: "August 11 and August 15 2023".
            second = _at(text, join.end(), now) if join else None
            if second is None or join is None:
                continue
            anchor = second.end or second.start
            again = _at(text, m.end(), anchor) if anchor is not None else None
            first = again if again is not None and again.start is not None else first
            if first.start is None or second.end is None or first.start >= second.end:
                continue
            sure = min(first.certainty, second.certainty)
            yield TimeWindow(
                first.start,
                second.end,
                timedelta(days=3),
                sure,
                f"{first.label} to {second.label}",
                (m.start(), second.span[1]),
            )
            continue
        if first.start is None and first.end is None:
            continue  # "before May" of no year: nothing to be before
        if m.group("count") and first.start is not None:
            yield _counted_from(m, first, first.start, before=op == "before")
            continue
        k = (m.group("k") or "").split()
        length = timedelta(days=_UNIT_DAYS[k[1].lower()]) if k else None
        start, end, slack = None, None, timedelta(0)
        if op in ("before", "prior"):
            end = first.start
            start = end - length if length and end else None
        elif op == "after":
            start = first.end
            end = start + length if length and start else None
            slack = first.slack if length else timedelta(0)
        elif op == "since":
            start, end = first.start, now
            if start is not None and end is not None and start >= end:
                continue  # "since next Easter": nothing lies between it and now
        else:  # until, till, up to
            end = first.end
        label = f"{' '.join(k).lower() + ' ' if k else ''}{op} {first.label}"
        yield TimeWindow(start, end, slack, first.certainty, label, (m.start(), first.span[1]))


def _counted_from(
    m: re.Match[str], first: TimeWindow, anchor: datetime, *, before: bool
) -> TimeWindow:
    """A count of units before or after a time ("two weeks before 11 August"): the
    moment that far from it, a unit wide as "two weeks ago" is, not all time before it."""
    n, vague = _count(m["count"])
    unit = m["units"].lower()
    length = timedelta(days=_UNIT_DAYS[unit])
    moment = anchor + (-n if before else n) * length
    # A count of days names a day; a count of longer units is a guess around a moment.
    start = moment if unit == "day" else moment - length / 2
    spread = length * (2 if vague else 0)
    sure = min(first.certainty, 0.5 if vague else 0.8)
    op = "before" if before else "after"
    label = f"{m['count'].lower()} {unit}(s) {op} {first.label}"
    return TimeWindow(
        start - spread,
        start + length + spread,
        length / 2,
        sure,
        label,
        (m.start(), first.span[1]),
    )


_ANY_NEED: Final = frozenset(w for _, _, needs in _RULES for need in needs for w in need)


# --- public reading -------------------------------------------------------------
def find_times(text: str, *, now: datetime | None = None) -> list[TimeWindow]:
    """Every time expression in ``text``, left to right, none overlapping another.

    Where two readings overlap, the longer one stands ("the week before 16
    November 2023" over "16 November 2023"), then the surer one.
    """
    return _find(text, now, whole=False)


def _find(text: str, now: datetime | None, *, whole: bool) -> list[TimeWindow]:
    present = _words(text)
    if present.isdisjoint(_ANY_NEED):
        return []
    if now is not None:
        now = utc(now)
    ctx = _Ctx(text, now, inner=whole, whole=whole)
    found: list[TimeWindow] = []
    for pattern, build, needs in _RULES:
        if not _runs(needs, present):
            continue
        for m in pattern.finditer(text):
            window = _built(build, m, ctx)
            if window is not None:
                found.append(window)
    if not _OPERATOR_WORDS.isdisjoint(present):
        # A composite reaching past the calendar's ends reads as no time.
        with contextlib.suppress(OverflowError, ValueError):
            found.extend(_composite(text, now))
    found.sort(key=lambda w: (-(w.span[1] - w.span[0]), -w.certainty, w.span[0]))
    # The kept readings never overlap, so in order of their starts their ends are in
    # order too: one bisection finds the only kept reading a new one could overlap.
    kept: list[TimeWindow] = []
    starts: list[int] = []
    ends: list[int] = []
    for window in found:
        start, end = window.span
        at = bisect.bisect_right(ends, start)
        if at < len(starts) and starts[at] < end:
            continue
        starts.insert(at, start)
        ends.insert(at, end)
        kept.insert(at, window)
    return kept


def _width(window: TimeWindow) -> float:
    if window.start is None or window.end is None:
        return float("inf") if window.month is None else 31 * 86_400.0
    return (window.end - window.start).total_seconds()


def read_time(text: str, *, now: datetime | None = None) -> TimeWindow | None:
    """The time a prompt asks about: its surest reading, the narrowest of equals."""
    found = find_times(text, now=now)
    return max(found, key=lambda w: (w.certainty, -_width(w))) if found else None


def read_range(value: str, *, now: datetime | None = None) -> TimeWindow | None:
    """A ``when`` value: "START..END" (ISO dates or times, either end empty for open),
    one ISO date or time, or a phrase that is nothing but a time ("last week")."""
    text = value.strip()
    if ".." in text:
        lo_raw, _, hi_raw = text.partition("..")
        try:
            lo = _iso_end(lo_raw.strip(), first=True)
            hi = _iso_end(hi_raw.strip(), first=False)
        except ValueError:
            return None
        if not (lo_raw.strip() or hi_raw.strip()) or (
            lo is not None and hi is not None and lo >= hi
        ):
            return None
        return TimeWindow(lo, hi, timedelta(0), 1.0, text, (0, len(value)))
    # The whole value is meant as a time: "2025", "December", "Friday" read there. Two
    # times joined ("March to May 2025") are a range, as if "from" led them.
    for lead in ("", "from "):
        found = _find(lead + text, now, whole=True)
        if len(found) != 1:
            continue
        window = found[0]
        start, end = window.span
        rest = f"{(lead + text)[:start]} {(lead + text)[end:]}".strip(" ,.")
        # A phrase may bring its preposition ("in May 2023"), nothing else.
        if not rest or rest.lower() in _LEADS:
            return replace(window, slack=timedelta(0))
    return None


_LEADS: Final = frozenset(
    {"in", "on", "during", "at", "of", "over", "throughout", "around", "about", "circa"}
)


def _iso_end(raw: str, *, first: bool) -> datetime | None:
    """One end of an ISO range, None when left empty. A bare date closing a range
    includes that whole day."""
    if not raw:
        return None
    instant = parse_instant(raw)
    if instant is None:
        raise ValueError(raw)
    if not first and len(raw) == 10:
        try:
            instant += timedelta(days=1)
        except OverflowError:  # through 9999-12-31: to the calendar's end, open
            return None
    return instant


_ASKS_TIME = _Pattern(
    r"(?:^|[.!?;:,]\s*|\b(?:and|remember|know|tell\s+me|recall)\s+)"
    r"(?:when\b|since\s+when\b|how\s+long\s+ago\b"
    r"|(?:what|which)\s+(?:time|date|day|week|month|year|season)\b"
    r"|(?:in|on)\s+(?:what|which)\s+(?:date|day|week|month|year)\b)",
    re.I,
)


def asks_time(text: str) -> bool:
    """Whether a question asks for a time ("When did ...", "What year ...")."""
    return _ASKS_TIME.search(text.strip()) is not None


_ASKS_SPAN = _Pattern(
    r"(?:^|[.!?;:,]\s*|\b(?:and|remember|know|tell\s+me|recall)\s+)"
    r"(?:(?:for\s+)?how\s+long\b(?!\s+ago)"
    r"|(?:for\s+)?how\s+many\s+(?:day|week|weekend|month|year|decade)s\b)",
    re.I,
)
# A length of time stated: "for 4 years", "a few months now", "since I was 17".
_STATES_SPAN = _Pattern(rf"\b{_N}\s+(?:{_UNIT}|decades?)\b|\bsince\b", re.I)


def asks_span(text: str) -> bool:
    """Whether a question asks how long ("How long has ...", "How many years ...")."""
    return _ASKS_SPAN.search(text.strip()) is not None


def states_span(text: str) -> bool:
    """Whether a text states a length of time or where one began ("for two years",
    "since college"): what a question asking how long is answered by."""
    return _STATES_SPAN.search(text) is not None


# News placed since the speakers last talked: "since we last spoke", "since last time".
_SINCE_LAST_TALK = _Pattern(
    r"\bsince\s+(?:we|i|you)\s+(?:last\s+)?"
    r"(?:spoke|talked|chatted|met|caught\s+up|saw\s+(?:each\s+other|you|me))\b"
    r"|\bsince\s+(?:our\s+)?last\s+(?:time|talk|chat|call|conversation|meeting)\b",
    re.I,
)


def tells_since_last_talk(text: str) -> bool:
    """Whether a text places its news since the speakers last talked ("since we last
    spoke, I ..."): it says when, though not a date the text alone can give: between
    the previous conversation and this one."""
    return _SINCE_LAST_TALK.search(text) is not None


def states_time(text: str, anchor: datetime) -> list[TimeWindow]:
    """The times a record's text states, relative ones read against when it was recorded."""
    return [w for w in find_times(text, now=anchor) if w.certainty >= 0.5]


# --- times named by an event -------------------------------------------------------
# "before the migration", "after our move", "since Gina's launch": a relation, a
# determiner, and up to four words, ending where the sentence or its clause does.
_EVENT_DET: Final = r"(?:the|our|my|his|her|their|your|its|that|this|[a-z]+'s)"
_EVENT_WHAT: Final = r"[a-z][\w-]*(?:\s+[a-z][\w-]*){0,3}?"
# Where an event's words end: the sentence or its clause.
_EVENT_END: Final = (
    r"(?=\s*(?:[?.!,;:)]|$)|\s+(?:and|or|but|when|while|where|as|if|did|do|does|was|were|is|"
    r"are|had|has|have|will|would|with|to|in|on|at|for|from|by|of|so|because|then|"
    r"we|i|you|he|she|they)\b)"
)
_EVENT_AT = _Pattern(
    r"\b(?P<rel>before|after|since|until|till|prior\s+to|following|ahead\s+of|during)\s+"
    rf"(?P<det>{_EVENT_DET})\s+(?P<what>{_EVENT_WHAT}){_EVENT_END}",
    re.I,
)
# "Between the migration and the launch": two events, each named as above. Most "between"s
# are no time ("the difference between the old parser and the new one"), so in a prompt
# it is read only after words that ask for what lay between in time ("what happened
# between", "the weeks between"); a ``when`` value is meant as a time whole.
_BETWEEN_CUE = _Pattern(
    r"\b(?:happen(?:ed|s)?|went\s+on|go\s+on|time|period|days|weeks|months|years|gap|stretch)"
    r"\s+(?:in\s+)?\Z",
    re.I,
)
_EVENT_BETWEEN = _Pattern(
    rf"\bbetween\s+(?P<det>{_EVENT_DET})\s+(?P<what>{_EVENT_WHAT})"
    rf"\s+and\s+(?P<det2>{_EVENT_DET})\s+(?P<what2>{_EVENT_WHAT}){_EVENT_END}",
    re.I,
)
_BEFORE: Final = frozenset({"before", "until", "till", "prior to", "ahead of"})
_DURING_SLACK: Final = timedelta(days=1)  # around the first and last record of an event
# Spans of the calendar, not events: "after the weekend" is no record's to place.
_NOT_EVENTS: Final = frozenset(
    {
        "day",
        "days",
        "week",
        "weeks",
        "weekend",
        "weekends",
        "month",
        "months",
        "year",
        "years",
        "morning",
        "afternoon",
        "evening",
        "night",
        "time",
        "moment",
        "end",
        "start",
        "beginning",
        "while",
        "break",
        "season",
        "holiday",
        "holidays",
    }
)
_EVENT_WORDS: Final = frozenset(
    {"before", "after", "since", "until", "till", "prior", "following", "ahead", "during"}
    | {"between"}
)
EVENT_CERTAINTY: Final = 0.6  # the memory's own record of the event, read for its time


@dataclass(frozen=True, slots=True)
class EventRef:
    """A time named by an event rather than a date ("before the migration"): which side
    of it, and the words naming it. What happened when is the memory's to say (the
    records of the event, ``event_window``); the calendar reader knows dates only."""

    side: str  # "before" | "after" | "during" | "between"
    phrase: str  # as written: "the migration"
    keys: tuple[str, ...]  # the event's own words, stemmed
    span: tuple[int, int]
    # "Between" two events: this one begins the time, ``then`` (a "before") ends it.
    then: EventRef | None = None

    @property
    def phrases(self) -> tuple[str, ...]:
        """The words naming each event, to look their records up by."""
        return (self.phrase,) if self.then is None else (self.phrase, self.then.phrase)


def _event_keys(det: str, what: str) -> tuple[str, ...] | None:
    """An event's words, stemmed; None where they name a span of the calendar."""
    named = [w for w in words(what) if w not in STOPWORDS]
    if not named or all(w in _NOT_EVENTS for w in named):
        return None
    owner = det[:-2] if det.endswith("'s") else ""  # "Gina's launch"
    keys = tuple(dict.fromkeys(stem(w) for w in [*named, *words(owner)]))
    return keys or None


def find_event(text: str, *, now: datetime | None = None, whole: bool = False) -> EventRef | None:
    """The first event a text places a time by, where no date is named there. ``whole``:
    the text is meant as a time (a ``when`` value), so "between" needs no cue."""
    if _words(text).isdisjoint(_EVENT_WORDS):
        return None
    dated = [w.span for w in find_times(text, now=now)]  # in order, none overlapping
    dated_ends = [end for _, end in dated]

    def undated(m: re.Match[str]) -> bool:
        at = bisect.bisect_right(dated_ends, m.start())  # the first date ending after it starts
        return not (at < len(dated) and dated[at][0] < m.end())

    found: list[EventRef] = []
    for m in _EVENT_BETWEEN.finditer(text):
        cued = whole or _BETWEEN_CUE.compiled.search(text, max(0, m.start() - 30), m.start())
        keys, until = _event_keys(m["det"], m["what"]), _event_keys(m["det2"], m["what2"])
        if cued and keys and until and undated(m):
            then = EventRef("before", f"{m['det2']} {m['what2']}", until, m.span())
            found.append(EventRef("between", f"{m['det']} {m['what']}", keys, m.span(), then))
            break
    for m in _EVENT_AT.finditer(text):
        keys = _event_keys(m["det"], m["what"])
        if keys and undated(m):
            rel = " ".join(m["rel"].lower().split())
            side = "before" if rel in _BEFORE else "during" if rel == "during" else "after"
            found.append(EventRef(side, f"{m['det']} {m['what']}", keys, m.span()))
            break
    return min(found, key=lambda ref: ref.span[0], default=None)


def record_keys(node: NodeRecord) -> tuple[str, ...]:
    """The word keys a record is matched by: its name and description tokenized (as the
    store keeps them, when it does: the same tokenizer made them)."""
    if node.terms is not None:
        return tuple(node.terms.split())
    return tuple(tokenize(f"{node.name}\n{node.description}"))


def event_window(
    ref: EventRef,
    records: Iterable[NodeRecord],
    tokens: Callable[[NodeRecord], Iterable[str]] = record_keys,
    weight: Callable[[str], float] = lambda key: 1.0,
) -> TimeWindow | None:
    """The time ``ref`` names, read from the records of the event among ``records``: those
    whose words cover the event's best (weighed by ``weight``, at least half), each placed
    where its text says the event was ("last weekend") or else at its own time. "before"
    ends at the latest of them and "after" starts at the earliest (among equals, the wider
    window: one too narrow leaves the answer out); "during" runs from the earliest to the
    latest, a day wider each side. None when no record names it."""
    if ref.then is not None:  # between two events: after the first, before the second
        records = list(records)
        first = event_window(replace(ref, side="after", then=None), records, tokens, weight)
        last = event_window(ref.then, records, tokens, weight)
        if first is None or last is None or first.start is None or last.end is None:
            return None
        if first.start >= last.end:
            return None  # the second came first: no time lies between them
        label = (
            f"between {ref.phrase} ({first.start.date().isoformat()}) and "
            f"{ref.then.phrase} ({last.end.date().isoformat()})"
        )
        return TimeWindow(first.start, last.end, timedelta(0), EVENT_CERTAINTY, label, ref.span)
    total = sum(weight(k) for k in ref.keys)
    if total <= 0:
        return None
    best = 0.0
    times: list[datetime] = []
    for node in records:
        held = set(tokens(node))
        share = sum(weight(k) for k in ref.keys if k in held) / total
        if share < 0.5 or share < best:
            continue
        when = _event_time(node)
        if when is None:
            continue
        if share > best:
            best, times = share, []
        times.append(when)
    if not times:
        return None
    first, last = min(times), max(times)
    if ref.side == "before":
        return TimeWindow(None, last, timedelta(0), EVENT_CERTAINTY, _label(ref, last), ref.span)
    if ref.side == "after":
        return TimeWindow(first, None, timedelta(0), EVENT_CERTAINTY, _label(ref, first), ref.span)
    start, end = _moved(first, -_DURING_SLACK), _moved(last, _DURING_SLACK)
    return TimeWindow(start, end, timedelta(0), EVENT_CERTAINTY, _label(ref, first, last), ref.span)


def _moved(when: datetime, by: timedelta) -> datetime | None:
    """``when`` moved by ``by``; None (an open end) past the calendar's ends, where a
    record may be placed (year 1, year 9999)."""
    try:
        return when + by
    except OverflowError:
        return None


def _label(ref: EventRef, at: datetime, until: datetime | None = None) -> str:
    dates = at.date().isoformat()
    if until is not None and until.date() != at.date():
        dates = f"{dates} to {until.date().isoformat()}"
    return f"{ref.side} {ref.phrase} ({dates})"


def _event_time(node: NodeRecord) -> datetime | None:
    """When a record places what it tells: the first time its text states, else its own."""
    own = node_time(node)
    if own is None:
        return None
    stated = states_time(node.description, own.start)
    first = stated[0] if stated else None
    return first.start if first is not None and first.start is not None else own.start
