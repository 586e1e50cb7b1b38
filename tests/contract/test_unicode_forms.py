"""A word or a name is the same however Unicode spells it: composed or decomposed
("café" as é or as e + U+0301, the form macOS file names take), a ligature, full-width
letters. Search, the infusion and every lookup by name find it (both backends)."""

from __future__ import annotations

import unicodedata

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory

S = "unicode-forms"


def _decomposed(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def _recorded(memory: Memory) -> dict[str, str]:
    memory.advance_encounter(S, "the café's menu")
    created = memory.create_entities(
        S,
        [
            {"type": "Concept", "name": "café menu", "description": "The café serves crêpes."},
            # A description written decomposed is kept as written and read as the same words.
            {
                "type": "Observation",
                "name": "rosé stock",
                "description": _decomposed("Rosé ran out."),
            },
        ],
    ).created
    return {c.name: c.id for c in created}


def test_search_and_the_infusion_read_any_spelling(memory: Memory) -> None:
    ids = _recorded(memory)
    assert ids["café menu"] in {h.id for h in memory.search(_decomposed("crêpes café")).hits}
    assert ids["rosé stock"] in {h.id for h in memory.search("rosé ran out").hits}
    result = Infuser(memory.store, InfusionConfig()).infuse(
        "forms", _decomposed("What crêpes does the café serve?")
    )
    assert ids["café menu"] in result["meta"]["ranked"]


def test_a_name_asked_for_decomposed_finds_its_node(memory: Memory) -> None:
    ids = _recorded(memory)
    asked = _decomposed("café menu")
    assert asked != "café menu"
    assert memory.find_by_name(asked).node.id == ids["café menu"]
    assert memory.trace_provenance(asked).node.id == ids["café menu"]
    link = {"source": _decomposed("rosé stock"), "type": "INFORMS", "target": asked}
    made = memory.create_relations(S, [link]).created
    assert [(r.source, r.target) for r in made] == [(ids["rosé stock"], ids["café menu"])]


def test_a_revision_may_name_what_it_revises_decomposed(memory: Memory) -> None:
    ids = _recorded(memory)
    revised = {
        "type": "Concept",
        "name": "café menu",
        "description": "The café serves crêpes and galettes.",
        "supersedes": _decomposed("café menu"),
        "revision_why": "galettes were added",
    }
    [made] = memory.create_entities(S, [revised]).created
    assert memory.find_by_name("café menu").node.id == made.id != ids["café menu"]


def test_a_past_name_asked_for_decomposed_finds_the_node_that_held_it(memory: Memory) -> None:
    ids = _recorded(memory)
    then = memory.find_by_name("café menu").node.tick
    revised = {"type": "Concept", "name": "café menu", "description": "Now galettes too."}
    memory.create_entities(S, [{**revised, "supersedes": "café menu", "revision_why": "new"}])
    assert memory.find_by_name(_decomposed("café menu"), as_of=then).node.id == ids["café menu"]
