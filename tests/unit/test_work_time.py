"""Standing's clock (memory/activation.py): ages count the memory's working time, a
pause in its work counting for at most ``pause_ages_days``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from kenning_encounter.memory.activation import DAY_S, Present

T0 = datetime(2026, 3, 2, tzinfo=UTC)


def _day(n: float) -> datetime:
    return T0 + timedelta(days=n)


def _spans(*pairs: tuple[float, float]) -> list[tuple[float, float]]:
    return [(_day(a).timestamp(), _day(b).timestamp()) for a, b in pairs]


def _age_days(present: Present, since: float) -> float:
    return round(present.age_s(_day(since)) / DAY_S, 6)


def test_a_pause_counts_for_at_most_its_allowance() -> None:
    # Work on days 0-2 and 30-31; read on day 31. The 28-day pause counts one day.
    present = Present.of(_spans((0, 2), (30, 31)), _day(31), DAY_S)
    assert _age_days(present, 0) == 31 - 27
    assert _age_days(present, 2) == 2  # one day of the pause and the day of work after it
    assert _age_days(present, 2.5) == 1.5  # inside the pause's counted day
    assert _age_days(present, 10) == 1  # inside its idle part: only the work after it
    assert _age_days(present, 30.5) == 0.5


def test_the_time_since_the_last_work_is_a_pause_too() -> None:
    present = Present.of(_spans((0, 1)), _day(400), DAY_S)
    assert _age_days(present, 0) == 2  # the day of work and one day of the 399 away
    assert _age_days(present, 500) == 0  # a use after the moment read: no age


def test_short_gaps_count_whole_and_the_wall_clock_counts_everything() -> None:
    present = Present.of(_spans((0, 1), (1.5, 2), (2.9, 3)), _day(3), DAY_S)
    assert _age_days(present, 0) == 3
    assert _age_days(Present.wall(_day(100)), 0) == 100
    assert _age_days(Present.of([], _day(100), DAY_S), 0) == 100  # no work known
