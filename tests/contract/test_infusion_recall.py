"""What a question asks of its answer, through the real pipeline on every backend.

A question asking when lifts the record that says when; a derived word in the prompt
("mentorship") reaches records of the word it comes from ("mentored") through the
store's own index; the reply after a question is lifted by the question's words.
"""

from __future__ import annotations

from datetime import UTC, datetime

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore

ASKED = datetime(2023, 8, 1, tzinfo=UTC)


def _record(memory: Memory, session: str, texts: list[tuple[str, str]]) -> dict[str, str]:
    memory.advance_encounter(session, "notes")
    memory.create_entities(
        session,
        [
            {
                "type": "Observation",
                "name": name,
                "description": text,
                "t_observed": "2023-07-20T10:00:00Z",
            }
            for name, text in texts
        ],
    )
    memory.close_encounter(session, "notes recorded")
    return {name: memory.find_by_name(name).node.id for name, _ in texts}


def _ranked(store: GraphStore, prompt: str) -> tuple[list[str], str]:
    result = Infuser(store, InfusionConfig()).infuse("asker", prompt, now=ASKED)
    return result["meta"]["ranked"], result["payload"]


def test_a_question_asking_when_lifts_the_record_that_says_when(
    memory: Memory, store: GraphStore
) -> None:
    ids = _record(
        memory,
        "s-bikes",
        [
            ("sold, dated", "Joanna sold the old bike to a neighbour last Friday."),
            ("sold", "Joanna sold the old bike to a neighbour."),
        ],
    )
    # Equal words: the newer record leads, unless the question asks when.
    plain, _ = _ranked(store, "Why did Joanna sell the old bike?")
    assert plain.index(ids["sold"]) < plain.index(ids["sold, dated"])
    ranked, payload = _ranked(store, "When did Joanna sell the old bike?")
    assert ranked.index(ids["sold, dated"]) < ranked.index(ids["sold"])
    assert "says when" in payload


def test_a_derived_word_reaches_the_word_it_comes_from_in_the_store(
    memory: Memory, store: GraphStore
) -> None:
    ids = _record(
        memory,
        "s-founders",
        [
            ("mentored", "Got mentored by a founder at the fair."),
            ("weather", "The weather held all week."),
            ("lunch", "Lunch was pasta again."),
            ("printer", "The printer jammed twice."),
            ("traffic", "Traffic was slow on the bridge."),
            ("coffee", "The office ran out of coffee."),
        ],
    )
    # "mentorship" occurs nowhere: only its kin "mentor" ("mentored") finds the record.
    ranked, payload = _ranked(store, "who gave the mentorship?")
    assert ranked[:1] == [ids["mentored"]]
    assert "“mentorship”" in payload


def test_the_reply_after_a_question_rises_with_the_question(
    memory: Memory, store: GraphStore
) -> None:
    ids = _record(
        memory,
        "s-swim",
        [
            ("before", "She swims, mostly."),
            ("asked", "How often do you swim laps?"),
            ("answer", "Three times a week, before work."),
            ("after", "The pool closes early on Sundays."),
            ("lunch", "Lunch was pasta again."),
            ("printer", "The printer jammed twice."),
        ],
    )
    ranked, _ = _ranked(store, "How often does she swim laps?")
    # The answer shares no word with the prompt, yet it leads the question that does
    # (a record that ends by asking puts the question, it does not answer it) and the
    # record before the question, which shares one: it is what the question was
    # answered with.
    assert ranked[:2] == [ids["answer"], ids["asked"]]
    assert ranked.index(ids["answer"]) < ranked.index(ids["before"])
