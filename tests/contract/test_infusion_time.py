"""Time in retrieval on every backend: a time the prompt names lifts what held then, and
search's ``when`` keeps only that time.

Nodes here state their world time (``t_observed``); they are recorded now, years
later, so only the world time can put them in the time asked about.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

ASKED = datetime(2023, 8, 1, tzinfo=UTC)


def _record(
    memory: Memory,
    session: str,
    purpose: str,
    entities: list[dict[str, str]],
    clock: dict[str, str] | None,
) -> None:
    if clock is not None:
        clock["now"] = entities[0]["t_observed"].replace("Z", "+00:00")
    memory.advance_encounter(session, purpose)
    memory.create_entities(session, entities)
    memory.close_encounter(session, f"{purpose} recorded")


def _memory(memory: Memory, clock: dict[str, str] | None = None) -> dict[str, str]:
    """``clock``: when given, each encounter is recorded at its records' world time."""
    _record(
        memory,
        "s-may",
        "may deploys",
        [
            {
                "type": "Observation",
                "name": "may rollback",
                "description": "The deploy rolled back after the canary failed.",
                "t_observed": "2023-05-09T10:00:00Z",
            }
        ],
        clock,
    )
    _record(
        memory,
        "s-june",
        "june deploys",
        [
            {
                "type": "Observation",
                "name": "june rollback",
                "description": "The deploy rolled back; the rollback took the canary with it.",
                "t_observed": "2023-06-14T10:00:00Z",
            },
            {
                "type": "Observation",
                "name": "loves travel",
                "description": "Joanna: I love to travel, any trip at all.",
                "t_observed": "2023-06-14T11:00:00Z",
            },
        ],
        clock,
    )
    _record(
        memory,
        "s-july",
        "july",
        [
            {
                "type": "Observation",
                "name": "woodhaven",
                "description": "Joanna: I went to Woodhaven, a small town in the Midwest.",
                "t_observed": "2023-07-10T10:00:00Z",
            }
        ],
        clock,
    )
    _record(
        memory,
        "s-july-2",
        "july, later",
        [
            {
                "type": "Observation",
                "name": "the lakes",
                "description": "Drove up to the lakes for the weekend.",
                "t_observed": "2023-07-22T10:00:00Z",
            }
        ],
        clock,
    )
    return {
        name: memory.find_by_name(name).node.id
        for name in ("may rollback", "june rollback", "loves travel", "woodhaven", "the lakes")
    }


def _ranked(store: GraphStore, prompt: str) -> tuple[list[str], str]:
    result = Infuser(store, InfusionConfig()).infuse("asker", prompt, now=ASKED)
    return result["meta"]["ranked"], result["payload"]


def test_the_time_named_lifts_what_held_then(memory: Memory, store: GraphStore) -> None:
    ids = _memory(memory)
    # Without a time, the shorter May record leads; "in June" turns the order round.
    plain, _ = _ranked(store, "why did the deploy roll back?")
    assert plain.index(ids["may rollback"]) < plain.index(ids["june rollback"])
    ranked, payload = _ranked(store, "why did the deploy roll back in June?")
    assert ranked.index(ids["june rollback"]) < ranked.index(ids["may rollback"])
    assert "in the time asked about (2023-06)" in payload
    # Relative to the prompt's moment: a week after the June record, "last week" is June.
    result = Infuser(store, InfusionConfig()).infuse(
        "asker", "why did the deploy roll back last week?", now=datetime(2023, 6, 21, tzinfo=UTC)
    )
    ranked = result["meta"]["ranked"]
    assert ranked.index(ids["june rollback"]) < ranked.index(ids["may rollback"])


def test_what_held_then_surfaces_with_no_word_in_common(memory: Memory, store: GraphStore) -> None:
    ids = _memory(memory)
    ranked, payload = _ranked(store, "Where did Joanna travel to in July 2023?")
    # Woodhaven shares no word with the prompt: it is about Joanna, at the time named.
    assert ids["woodhaven"] in ranked
    assert "about the subject named; in the time asked about (2023-07)" in payload
    plain, _ = _ranked(store, "Where did Joanna travel to?")
    assert ids["woodhaven"] not in plain


def test_what_was_recorded_then_is_a_candidate_by_its_time_alone(tmp_path: Path) -> None:
    # Encounters recorded at the time asked about (a store whose clock is set, as the
    # LoCoMo bench records each session at its date): the lakes record shares no word
    # with the prompt, is about no one, and sits in an encounter of its own.
    at = {"now": "2023-05-09T10:00:00+00:00"}
    store = EmbeddedStore.open(tmp_path / "memory", clock=lambda: at["now"])
    try:
        memory = Memory(store)
        ids = _memory(memory, at)
        ranked, payload = _ranked(store, "Where did Joanna travel to in July 2023?")
        assert ids["the lakes"] in ranked
        assert "why: in the time asked about (2023-07)" in payload
        plain, _ = _ranked(store, "Where did Joanna travel to?")
        assert ids["the lakes"] not in plain
    finally:
        store.close()


def test_search_when_filters_by_world_time(memory: Memory, store: GraphStore) -> None:
    ids = _memory(memory)
    hits = memory.search("deploy rolled back", when="2023-05-01..2023-05-31", now=ASKED).hits
    assert [h.id for h in hits] == [ids["may rollback"]]
    hits = memory.search("deploy rolled back", when="last month", now=ASKED).hits
    assert [h.id for h in hits] == []  # July holds no rollback
    hits = memory.search("deploy rolled back in May 2023", now=ASKED).hits
    assert [h.id for h in hits][:2] == [ids["may rollback"], ids["june rollback"]]


def test_the_prompts_moment_is_now_when_the_caller_names_none(
    memory: Memory, store: GraphStore
) -> None:
    # The hook and the infuse tool pass no moment: "yesterday" is read against the clock.
    today = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    _record(
        memory,
        "s-recent",
        "recent deploys",
        [
            {
                "type": "Observation",
                "name": "old rollback",
                "description": "The deploy rolled back.",
                "t_observed": (today - timedelta(days=30)).isoformat(),
            },
            {
                "type": "Observation",
                "name": "fresh rollback",
                "description": "The deploy rolled back; the rollback took the canary with it.",
                "t_observed": (today - timedelta(hours=12)).isoformat(),
            },
        ],
        None,
    )
    old, fresh = (memory.find_by_name(n).node.id for n in ("old rollback", "fresh rollback"))
    plain = Infuser(store, InfusionConfig()).infuse("asker", "why did the deploy roll back?")
    assert plain["meta"]["ranked"].index(old) < plain["meta"]["ranked"].index(fresh)
    result = Infuser(store, InfusionConfig()).infuse(
        "asker", "why did the deploy roll back yesterday?"
    )
    assert result["meta"]["ranked"].index(fresh) < result["meta"]["ranked"].index(old)


def test_the_payload_shows_each_items_own_time(memory: Memory, store: GraphStore) -> None:
    """An item is shown at the time ranking reads for it: the span it states true, else
    when it was observed, else when it was recorded."""
    memory.advance_encounter("times", "rotations")
    memory.create_entities(
        "times",
        [
            {
                "type": "Concept",
                "name": "key rotation weekly",
                "description": "Signing keys rotate weekly.",
                "valid_from": "2023-02-01",
                "valid_until": "2023-04-01",
            },
            {
                "type": "Concept",
                "name": "key rotation daily",
                "description": "Signing keys rotate daily.",
                "valid_from": "2023-04-01",
            },
            {
                "type": "Observation",
                "name": "key rotation failed",
                "description": "A signing key rotation failed.",
                "t_observed": "2023-03-15T08:00:00Z",
            },
        ],
    )
    _, payload = _ranked(store, "how often do signing keys rotate?")
    lines = {line.split("«")[1].split("»")[0]: line for line in payload.splitlines() if "«" in line}
    assert "· true 2023-02-01 to 2023-04-01 ·" in lines["key rotation weekly"]
    assert "· true from 2023-04-01 ·" in lines["key rotation daily"]
    assert "· as of 2023-03-15 ·" in lines["key rotation failed"]
    # search says the same times, as written
    hits = {h.name: h.when for h in memory.search("signing key rotation", limit=10).hits}
    assert hits == {
        "key rotation weekly": "2023-02-01..2023-04-01",
        "key rotation daily": "2023-04-01..",
        "key rotation failed": "2023-03-15T08:00:00Z",
    }
