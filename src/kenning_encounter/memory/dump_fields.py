"""One line of a dump read field by field: the exact set of fields, each one's type.

A refusal names the line and the field (``line N: kind.field``) and says what to do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from kenning_encounter.errors import InvalidInput
from kenning_encounter.textproc_time import utc_instant

FIX: Final = "the dump is damaged or was edited; export it again from the source memory"


class Fields:
    """One line's fields, each read once with its type checked; the field named in a
    refusal is ``line N: kind.field``."""

    def __init__(self, data: Mapping[str, Any], where: str, expected: frozenset[str]) -> None:
        self._data = data
        self.where = where
        unknown = sorted(set(data) - expected)
        missing = sorted(expected - set(data))
        if unknown or missing:
            parts = [f"unknown field(s) {', '.join(unknown)}"] if unknown else []
            parts += [f"missing field(s) {', '.join(missing)}"] if missing else []
            raise InvalidInput(where, f"{'; '.join(parts)}; {FIX}")

    def refuse(self, name: str, message: str) -> InvalidInput:
        return InvalidInput(f"{self.where}.{name}", f"{message}; {FIX}")

    def text(self, name: str, *, optional: bool = False, empty: bool = True) -> Any:
        value = self._data[name]
        if value is None and optional:
            return None
        if not isinstance(value, str) or (not empty and not value):
            kind = "a non-empty string" if not empty else "a string"
            raise self.refuse(
                name, f"must be {kind}{' or null' if optional else ''}, not {value!r}"
            )
        return value

    def time(self, name: str, *, optional: bool = False) -> Any:
        """A time the server stamped: ISO-8601, or empty. It is shown as it is (the
        re-entry note a session starts with, tool texts, an operator's plan), so text
        here could add a line of its own to them."""
        value = self.text(name, optional=optional)
        if value:
            try:
                utc_instant(value)
            except ValueError:  # OffCalendar too
                raise self.refuse(
                    name, f"{value!r} is not an ISO-8601 time (2026-03-01T14:30:00.000Z)"
                ) from None
        return value

    def int(self, name: str, *, optional: bool = False, low: int = 0) -> Any:
        value = self._data[name]
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.refuse(name, f"must be an integer of at least {low}, not {value!r}")
        return value

    def mapping(self, name: str) -> dict[str, Any]:
        value = self._data[name]
        if not isinstance(value, dict):
            raise self.refuse(name, f"must be an object, not {value!r}")
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]

    def strings(self, name: str) -> dict[str, str]:
        """An object whose every value is a string (a node's properties)."""
        found = self.mapping(name)
        for key, value in found.items():
            if not isinstance(value, str):
                raise self.refuse(f"{name}.{key}", f"must be a string, not {value!r}")
        return found
