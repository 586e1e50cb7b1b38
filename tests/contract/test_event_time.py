"""A time named by an event, not a date ("before the migration"), placed by the memory's
own records of the event: search and the infusion rank the nodes of that side first and
leave nothing out. Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput
from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory

S = "event-time"
# Written newest first, so the order of writing favours neither side.
OBSERVED = [
    ("shard decided", "We decided to shard the orders tables by region.", "2026-07-01"),
    ("mysql kept", "We decided to keep the orders tables on MySQL.", "2026-03-02"),
    ("migration done", "The Postgres migration finished.", "2026-05-10"),
]


@pytest.fixture
def recorded(memory: Memory) -> dict[str, str]:
    memory.advance_encounter(S, "the orders database")
    entities: list[dict[str, Any]] = [
        {"type": "Observation", "name": name, "description": text, "t_observed": f"{day}T09:00:00Z"}
        for name, text, day in OBSERVED
    ]
    created = memory.create_entities(S, entities).created
    return {c.name: c.id for c in created}


def _first(order: list[str], names: dict[str, str]) -> str:
    shown = [n for n in ("mysql kept", "shard decided") if names[n] in order]
    assert len(shown) == 2, order  # nothing is left out
    return min(shown, key=lambda n: order.index(names[n]))


def test_search_ranks_the_side_of_the_event_asked_about(
    memory: Memory, recorded: dict[str, str]
) -> None:
    for side, first in (("before", "mysql kept"), ("after", "shard decided")):
        found = memory.search(f"what did we decide {side} the migration")
        assert _first([h.id for h in found.hits], recorded) == first, side
        assert f"{side} the migration (2026-05-10)" in found.note


def test_infusion_ranks_the_side_of_the_event_asked_about(
    memory: Memory, recorded: dict[str, str]
) -> None:
    infuser = Infuser(memory.store, InfusionConfig())
    for side, first in (("before", "mysql kept"), ("after", "shard decided")):
        result = infuser.infuse(
            f"event-{side}", f"What did we decide about the orders tables {side} the migration?"
        )
        assert _first(list(result["meta"]["ranked"]), recorded) == first, side


def test_an_event_the_memory_does_not_hold_moves_nothing(
    memory: Memory, recorded: dict[str, str]
) -> None:
    plain = memory.search("what did we decide")
    unheld = memory.search("what did we decide before the rewrite")
    assert [h.id for h in unheld.hits] == [h.id for h in plain.hits]
    assert "rewrite" not in unheld.note


def test_when_keeps_the_side_of_an_event_the_memory_records(
    memory: Memory, recorded: dict[str, str]
) -> None:
    before = memory.search("we decided", when="before the migration")
    assert [h.name for h in before.hits] == ["mysql kept"]
    assert "before the migration (2026-05-10)" in before.note
    after = {h.name for h in memory.search("we decided", when="after the migration").hits}
    assert after == {"shard decided"}


def test_when_naming_an_event_no_record_holds_is_refused(
    memory: Memory, recorded: dict[str, str]
) -> None:
    with pytest.raises(InvalidInput) as refused:
        memory.search("we decided", when="before the rewrite")
    assert refused.value.field == "when"
    assert "no record names 'the rewrite'" in str(refused.value)
    with pytest.raises(InvalidInput, match="could not read"):  # more than an event
        memory.search("we decided", when="before the migration or so")


def test_during_an_event_is_the_time_its_records_span(
    memory: Memory, recorded: dict[str, str]
) -> None:
    memory.create_entities(
        S,
        [
            {
                "type": "Observation",
                "name": f"errors {day}",
                "description": "The orders API errors spiked.",
                "t_observed": f"{day}T12:00:00Z",
            }
            for day in ("2026-05-10", "2026-06-20")
        ],
    )
    found = memory.search("orders API errors", when="during the migration")
    assert [h.name for h in found.hits] == ["errors 2026-05-10"]
    ranked = memory.search("what did the orders API errors do during the migration")
    names = [h.name for h in ranked.hits]
    assert names.index("errors 2026-05-10") < names.index("errors 2026-06-20")


def _launched(memory: Memory) -> None:
    """The launch, recorded on 2026-08-01: the second event of a span."""
    memory.create_entities(
        S,
        [
            {
                "type": "Observation",
                "name": "launch day",
                "description": "The storefront launch went live.",
                "t_observed": "2026-08-01T09:00:00Z",
            }
        ],
    )


def test_between_two_events_is_the_time_from_the_first_to_the_second(
    memory: Memory, recorded: dict[str, str]
) -> None:
    _launched(memory)
    found = memory.search("we decided", when="between the migration and the launch")
    assert [h.name for h in found.hits] == ["shard decided"]
    assert "between the migration (2026-05-10) and the launch (2026-08-01)" in found.note
    ranked = memory.search("what did we decide that happened between the migration and the launch")
    names = [h.name for h in ranked.hits]
    assert names.index("shard decided") < names.index("mysql kept"), names
    result = Infuser(memory.store, InfusionConfig()).infuse(
        "event-between",
        "What did we decide about the orders tables in the weeks between the migration and "
        "the launch?",
    )
    assert _first(list(result["meta"]["ranked"]), recorded) == "shard decided"
    with pytest.raises(InvalidInput) as refused:  # the launch came after: nothing between
        memory.search("we decided", when="between the launch and the migration")
    assert refused.value.field == "when"
    assert "do not place 'the launch' before 'the migration'" in str(refused.value)


def test_between_a_date_and_an_event_either_way_round(
    memory: Memory, recorded: dict[str, str]
) -> None:
    _launched(memory)
    found = memory.search("we decided", when="between June 1, 2026 and the launch")
    assert [h.name for h in found.hits] == ["shard decided"]
    assert "between 2026-06-01 and the launch (2026-08-01)" in found.note
    found = memory.search("we decided", when="from the migration until July 2026")
    assert [h.name for h in found.hits] == ["shard decided"]
    assert "between the migration (2026-05-10) and 2026-07 [" in found.note
    for when, why in (
        ("between 2026-09-01 and the launch", "runs backwards"),
        ("between 2026-06-01 and the festival", "no record names 'the festival'"),
    ):
        with pytest.raises(InvalidInput) as refused:
            memory.search("we decided", when=when)
        assert refused.value.field == "when" and why in str(refused.value), when


@pytest.mark.parametrize("day", ["0001-01-01T00:00:00Z", "9999-12-31T23:59:59Z"])
def test_an_event_recorded_at_the_calendar_ends_still_answers(memory: Memory, day: str) -> None:
    # "during" widens the event's records by a day each side; at year 1 or 9999 that
    # stepped off the calendar and failed the search, the when filter and the prompt.
    memory.advance_encounter(S, "the orders database")
    ran = {"name": "migration", "description": "The migration ran.", "t_observed": day}
    memory.create_entities(S, [{"type": "Observation", **ran}])
    infuser = Infuser(memory.store, InfusionConfig())
    for side in ("before", "after", "during"):
        assert memory.search(f"what ran {side} the migration").hits, side
        kept = [h.name for h in memory.search("ran", when=f"{side} the migration").hits]
        assert kept == ([] if side == "before" else ["migration"]), side  # not before itself
        result = infuser.infuse(f"ends-{side}", f"What ran {side} the migration?")
        assert not result["meta"].get("degraded"), result["meta"]
