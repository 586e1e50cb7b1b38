"""Spans made one (store/uses.py ``merged_spans``): the memory's work time and where a
hidden session's uses can be (``Reach``) both read sorted, disjoint spans, and sessions
work at once, so their encounters overlap and nest."""

from __future__ import annotations

from kenning_encounter.store.port import LociUses
from kenning_encounter.store.uses import Reach, merged_spans


def test_overlapping_touching_and_nested_spans_are_made_one() -> None:
    assert merged_spans([(5.0, 9.0), (1.0, 3.0), (3.0, 4.0), (2.0, 2.5), (8.0, 12.0)]) == [
        (1.0, 4.0),
        (5.0, 12.0),
    ]
    assert merged_spans([("b", "c"), ("a", "z")]) == [("a", "z")]
    assert merged_spans([(4.0, 2.0)]) == [(4.0, 4.0)]  # an end before its start
    assert merged_spans([]) == []


def test_a_use_during_a_long_encounter_with_a_short_one_inside_is_within_reach() -> None:
    # One hidden encounter from the 1st to the 10th, another on the 2nd alone: a use on
    # the 5th falls in the first, whichever began last before it.
    reach = Reach(
        LociUses(
            [("2026-01-01T00:00:00Z", "2026-01-10T00:00:00Z"), ("2026-01-02T00:00:00Z", None)],
            frozenset(),
        )
    )
    assert reach.during("2026-01-05T00:00:00Z")
    assert reach.during("2026-03-01T00:00:00Z")  # the second is still open
    closed = Reach(
        LociUses(
            [
                ("2026-01-01T00:00:00Z", "2026-01-10T00:00:00Z"),
                ("2026-01-02T00:00:00Z", "2026-01-03T00:00:00Z"),
            ],
            frozenset(),
        )
    )
    assert closed.during("2026-01-05T00:00:00Z")
    assert not closed.during("2026-01-11T00:00:00Z")
    assert not closed.during("2025-12-31T00:00:00Z")
