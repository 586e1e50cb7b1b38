"""Classification and retention values: what is sensitive in a node, and how long to keep it.

``classification`` is a set drawn from the closed vocabulary (pii, phi, pci, secret),
stored sorted and comma-joined ("phi,pii") so both backends hold one plain string and a
reader can test a class with a substring-free split. No value means unclassified; there
is deliberately no "public" word, so a forgotten field can never read as a grant.

``retention`` is either an ISO-8601 duration, counted from the node's record time, or an
absolute date/time. The instant it runs out (``retain_until``) is computed once, when the
node is written, in the store's own time format, so "due" is one comparison of strings.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from datetime import UTC, date, datetime, timedelta
from typing import Final

from kenning_encounter.errors import InvalidInput
from kenning_encounter.textproc_time import OffCalendar, utc_instant
from kenning_encounter.vocabulary import CLASSIFICATIONS

# ISO 8601's digits are ASCII ("P٣D" is no duration), and a part's digits are bounded
# (64: far past any 200 years; int() refuses 4,300 of them).
_DURATION: Final = re.compile(
    r"P(?:(?P<y>[0-9]{1,64})Y)?(?:(?P<mo>[0-9]{1,64})M)?(?:(?P<w>[0-9]{1,64})W)?"
    r"(?:(?P<d>[0-9]{1,64})D)?"
    r"(?:T(?:(?P<h>[0-9]{1,64})H)?(?:(?P<mi>[0-9]{1,64})M)?(?:(?P<s>[0-9]{1,64})S)?)?"
)
_DATE_ONLY: Final = re.compile(r"\d{4}-\d{2}-\d{2}")
MAX_YEARS: Final = 200
_YEAR_S: Final = 31_556_952  # the Gregorian mean year, 365.2425 days


def classes(value: object, field: str) -> str:
    """The stored form of a classification given as a list or a comma-separated string."""
    if isinstance(value, str):
        parts = [p.strip().lower() for p in value.split(",")]
    elif isinstance(value, list):
        parts = []
        for item in value:  # pyright: ignore[reportUnknownVariableType]
            if not isinstance(item, str):
                raise _bad_class(field, repr(item))  # pyright: ignore[reportUnknownArgumentType]
            parts.append(item.strip().lower())
    else:
        raise _bad_class(field, type(value).__name__)
    chosen = {p for p in parts if p}
    if not chosen:
        raise InvalidInput(
            field,
            "is empty; name at least one of: "
            + ", ".join(CLASSIFICATIONS)
            + " (or leave classification out for an unclassified node)",
        )
    unknown = sorted(chosen - set(CLASSIFICATIONS))
    if unknown:
        raise _bad_class(field, repr(unknown[0]))
    return ",".join(sorted(chosen))


def _bad_class(field: str, got: str) -> InvalidInput:
    return InvalidInput(
        field,
        f"{got} is not a classification; use some of: {', '.join(CLASSIFICATIONS)}, as a list "
        "(['pii', 'phi']) or a comma-separated string ('pii,phi'); omit it when nothing in the "
        "node is sensitive",
    )


def split(stored: object) -> frozenset[str]:
    """The classes a stored classification names (none for an unclassified node)."""
    if not isinstance(stored, str) or not stored:
        return frozenset()
    return frozenset(p for p in stored.split(",") if p)


def retention(value: object, field: str) -> str:
    """A retention as given, checked: a duration (upper-cased) or a date/time."""
    if not isinstance(value, str) or not value.strip():
        raise _bad_retention(field, value)
    raw = value.strip()
    if raw[:1] in ("P", "p"):
        raw = raw.upper()
        found = _DURATION.fullmatch(raw)
        if found is None or raw in ("P", "PT") or raw.endswith("T"):
            raise _bad_retention(field, value)
        if _seconds(found) > MAX_YEARS * _YEAR_S:
            # Counted whole, not by its years: "P3000000D" is as long as "P8213Y".
            raise InvalidInput(field, f"{raw!r} is longer than {MAX_YEARS} years", value=raw)
        return raw
    try:
        _absolute(raw)
    except OffCalendar:
        raise InvalidInput(
            field,
            f"{raw!r} falls outside the years 1 to 9999 once read in UTC; give the date it "
            "runs out in UTC (ending in Z) or as a duration ('P30D')",
            value=raw,
        ) from None
    except ValueError:
        raise _bad_retention(field, value) from None
    return raw


def _seconds(found: re.Match[str]) -> int:
    """How long a duration is, in seconds, a year the Gregorian mean (365.2425 days) and a
    month a twelfth of it; integers, so no part of any size can overflow the count."""
    n = {k: int(v or 0) for k, v in found.groupdict().items()}
    return (
        n["y"] * _YEAR_S
        + n["mo"] * (_YEAR_S // 12)
        + n["w"] * 604_800
        + n["d"] * 86_400
        + n["h"] * 3_600
        + n["mi"] * 60
        + n["s"]
    )


def _bad_retention(field: str, value: object) -> InvalidInput:
    got = repr(value)
    if isinstance(value, str) and len(got) > 80:
        got = f"{value[:60]!r}… ({len(value)} characters)"
    return InvalidInput(
        field,
        f"{got} is not a retention; give an ISO-8601 duration counted from now ('P30D', "
        "'P1Y6M', 'PT12H', 'P2W') or the date it runs out ('2027-01-31' or "
        "'2027-01-31T12:00:00Z')",
    )


def _absolute(raw: str) -> datetime:
    if _DATE_ONLY.fullmatch(raw):
        day = date.fromisoformat(raw)
        return datetime(day.year, day.month, day.day, tzinfo=UTC)
    return utc_instant(raw)


def _add_months(at: datetime, months: int) -> datetime:
    total = at.month - 1 + months
    year, month = at.year + total // 12, total % 12 + 1
    day = min(at.day, calendar.monthrange(year, month)[1])
    return at.replace(year=year, month=month, day=day)


def _stamp(at: datetime) -> str:
    return at.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def retain_until(stored_retention: str, created_at: str) -> str:
    """When a retention runs out, in the store's time format (created_at's)."""
    found = _DURATION.fullmatch(stored_retention)
    if found is None:
        return _stamp(_absolute(stored_retention))
    start = datetime.fromisoformat(created_at.replace("Z", "+00:00"))
    n = {k: int(v or 0) for k, v in found.groupdict().items()}
    at = _add_months(start, n["y"] * 12 + n["mo"])
    at += timedelta(weeks=n["w"], days=n["d"], hours=n["h"], minutes=n["mi"], seconds=n["s"])
    return _stamp(at)


def with_expiry(props: dict[str, str], created_at: str) -> dict[str, str]:
    """A node's properties with ``retain_until`` filled from its retention."""
    if "retention" not in props:
        return props
    return {**props, "retain_until": retain_until(props["retention"], created_at)}


def gated(stored: object, granted: Iterable[str]) -> bool:
    """True when a node of this classification carries a class not granted."""
    return bool(split(stored) - set(granted))
