"""Times named by an event ("before the migration"), placed by the records of the event."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc_time import event_window, find_event

NOW = datetime(2026, 8, 1, 12, tzinfo=UTC)


def _observed(node_id: str, text: str, when: str) -> NodeRecord:
    """Observed (and recorded) at ``when``: a day (at 09:00) or a whole time."""
    stamp = when if "T" in when else f"{when}T09:00:00Z"
    return NodeRecord(node_id, "Observation", node_id, text, 1, stamp, props={"t_observed": stamp})


@pytest.mark.parametrize(
    ("text", "side", "keys"),
    [
        ("What did we decide before the migration?", "before", ("migration",)),
        ("anything after the database migration to Postgres", "after", ("databas", "migration")),
        ("since our move, what broke", "after", ("mov",)),
        ("until the outage, and then?", "before", ("outag",)),
        ("prior to the launch", "before", ("launch",)),
        ("What did Melanie realize after Caroline's talk?", "after", ("talk", "carolin")),
        ("what broke during the migration?", "during", ("migration",)),
    ],
)
def test_an_event_is_read_with_its_side_and_words(
    text: str, side: str, keys: tuple[str, ...]
) -> None:
    found = find_event(text, now=NOW)
    assert found is not None
    assert (found.side, found.keys) == (side, keys)


@pytest.mark.parametrize(
    "text",
    [
        "before 7 May 2026",  # a date: the calendar's
        "after last week's review",  # a date inside: the calendar's
        "during the summer",
        "after the weekend",  # a span of the calendar, no event
        "before that",
        "after the",
        "the migration went fine",
        "",
    ],
)
def test_what_names_no_event(text: str) -> None:
    assert find_event(text, now=NOW) is None


def test_the_record_that_names_the_event_best_places_it() -> None:
    ref = find_event("what did we decide after the database migration?")
    assert ref is not None
    records = [
        _observed("plan", "We should plan a migration some day", "2026-02-01"),
        _observed("done", "The database migration to Postgres finished", "2026-05-10"),
        _observed("other", "Decided to shard the orders tables", "2026-07-01"),
    ]
    window = event_window(ref, records)
    assert window is not None
    assert (window.start, window.end) == (datetime(2026, 5, 10, 9, tzinfo=UTC), None)
    assert "after the database migration" in window.label


def test_among_equal_records_the_wider_window_stands() -> None:
    """The earliest record of the event for "after", the latest for "before": a window
    too wide lifts too much; one too narrow leaves the answer out."""
    records = [
        _observed("early", "the launch is on", "2026-03-01"),
        _observed("late", "the launch went well", "2026-06-01"),
    ]
    after = event_window(find_event("after the launch") or pytest.fail(), records)
    before = event_window(find_event("before the launch") or pytest.fail(), records)
    assert after is not None and before is not None
    assert after.start == datetime(2026, 3, 1, 9, tzinfo=UTC)
    assert before.end == datetime(2026, 6, 1, 9, tzinfo=UTC)


def test_a_record_places_the_event_where_its_text_says_it_was() -> None:
    told = _observed("told", "the roadtrip last weekend was wild", "2026-07-20")  # a Monday
    window = event_window(find_event("after the roadtrip") or pytest.fail(), [told])
    assert window is not None and window.start is not None
    assert window.start < datetime(2026, 7, 20, tzinfo=UTC)


def test_no_record_of_the_event_names_no_time() -> None:
    records = [_observed("a", "we talked about lunch", "2026-05-01")]
    assert event_window(find_event("before the migration") or pytest.fail(), records) is None


def test_during_an_event_runs_from_its_first_record_to_its_last() -> None:
    records = [
        _observed("begun", "The migration started", "2026-05-01"),
        _observed("done", "The migration finished", "2026-05-10"),
        _observed("other", "Lunch at noon", "2026-05-20"),
    ]
    window = event_window(find_event("what broke during the migration?") or pytest.fail(), records)
    assert window is not None
    assert (window.start, window.end) == (
        datetime(2026, 4, 30, 9, tzinfo=UTC),
        datetime(2026, 5, 11, 9, tzinfo=UTC),
    )
    assert window.label == "during the migration (2026-05-01 to 2026-05-10)"


@pytest.mark.parametrize(
    "text",
    [
        "what happened between the migration and the launch?",
        "in the weeks between the migration and the launch, what broke",
        "what went on between our migration and Gina's launch",
    ],
)
def test_between_two_events_is_read_where_it_asks_for_the_time_between(text: str) -> None:
    found = find_event(text, now=NOW)
    assert found is not None and found.then is not None
    assert (found.side, found.keys[0], found.then.side) == ("between", "migration", "before")
    assert found.then.keys[0] == "launch"


@pytest.mark.parametrize(
    "text",
    [
        "the difference between the old parser and the new parser",
        "choose between the red button and the blue one",
        "what happened between May 3 and the launch",  # a date: not two events
    ],
)
def test_a_between_that_asks_for_no_time_names_no_event(text: str) -> None:
    assert find_event(text, now=NOW) is None


def test_between_two_events_runs_from_the_first_to_the_last_record_of_the_second() -> None:
    records = [
        _observed("moved", "The migration finished", "2026-05-10"),
        _observed("early", "the launch is on", "2026-06-01"),
        _observed("late", "the launch went well", "2026-06-20"),
    ]
    ref = find_event("between the migration and the launch", now=NOW, whole=True)
    assert ref is not None
    window = event_window(ref, records)
    assert window is not None
    assert (window.start, window.end) == (
        datetime(2026, 5, 10, 9, tzinfo=UTC),
        datetime(2026, 6, 20, 9, tzinfo=UTC),
    )
    assert window.label == "between the migration (2026-05-10) and the launch (2026-06-20)"
    # Either event unrecorded, or recorded in the other order: no time lies between.
    assert event_window(ref, records[:1]) is None
    backwards = find_event("between the launch and the migration", now=NOW, whole=True)
    assert backwards is not None and event_window(backwards, records) is None


_SIDES = ("before", "after", "during")


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(_SIDES),
    st.sampled_from(("t_observed", "valid_from", "valid_until")),
    st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59))
    | st.sampled_from([datetime(1, 1, 1), datetime(9999, 12, 31, 23, 59, 59)]),
    st.sampled_from(("The migration finished.", "The migration finished last week.")),
)
def test_an_event_recorded_anywhere_on_the_calendar_places_a_time(
    side: str, key: str, when: datetime, text: str
) -> None:
    # A record may be placed at year 1 or year 9999: the window then stays open where
    # it would step off the calendar, and never raises (a prompt's turn would fail).
    stamp = when.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    record = NodeRecord(
        "m", "Observation", "m", text, 1, "2026-05-01T09:00:00Z", props={key: stamp}
    )
    window = event_window(find_event(f"what broke {side} the migration") or pytest.fail(), [record])
    assert window is not None
    assert window.start is None or window.end is None or window.start < window.end


@pytest.mark.parametrize("side", _SIDES)
def test_during_at_the_calendar_ends_is_open_there(side: str) -> None:
    records = [
        _observed("first", "The migration started", "0001-01-01T00:00:00Z"),
        _observed("last", "The migration finished", "9999-12-31T23:59:59Z"),
    ]
    window = event_window(find_event(f"{side} the migration") or pytest.fail(), records)
    assert window is not None
    if side == "during":
        assert (window.start, window.end) == (None, None)
    elif side == "before":
        assert window.end == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    else:
        assert window.start == datetime(1, 1, 1, tzinfo=UTC)
