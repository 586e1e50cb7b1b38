"""The clock the standing tests run on: a day counted from ``T0``, set by the test, and a
half-life of a month, so that a node is cold from its creation alone by day 100."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kenning_encounter.memory.activation import Activation

MONTH = Activation(30.0, pause_ages_days=15.0)
T0 = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)


def _written(when: datetime) -> str:
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def stamp(day: float) -> str:
    """The store's time ``day`` days after ``T0``."""
    return _written(T0 + timedelta(days=day))


class Clock:
    """The store's clock (called for the time), moved to a day by the test."""

    def __init__(self) -> None:
        self.at = T0

    def day(self, n: float) -> datetime:
        self.at = T0 + timedelta(days=n)
        return self.at

    def __call__(self) -> str:
        return _written(self.at)
