"""A gated search fills its page past what it withholds, on both backends: the hits it
may not show are dropped inside the read (GatedStore.search_read), and a page that came
up short is asked again, larger, so the hits that follow them still come."""

from __future__ import annotations

from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS

WRITER = "page-writer"
WORD = "zqxlamp"


def _lamps(store: GraphStore) -> tuple[Memory, list[dict[str, Any]], list[dict[str, Any]]]:
    """A writer granted every class, twelve withheld notes that rank first for WORD, and
    five a caller granted nothing may see."""
    writer = Memory(store, granted=tuple(CLASSIFICATIONS))
    writer.advance_encounter(WRITER, "lamps")
    hidden = [
        {"type": "Note", "name": f"{WORD} {i}", "description": f"{WORD} {WORD} {WORD} lit",
         "classification": ["phi"]}
        for i in range(12)
    ]  # fmt: skip
    shown = [
        {"type": "Note", "name": f"plain lamp {i}", "description": f"one {WORD} among other words"}
        for i in range(5)
    ]
    return writer, hidden, shown


def test_a_gated_page_is_filled_with_what_it_may_show(store: GraphStore) -> None:
    writer, hidden, shown = _lamps(store)
    writer.create_entities(WRITER, [*hidden, *shown])
    granted = writer.search(WORD, limit=3)
    assert all(h.name.startswith(WORD) for h in granted.hits)  # the withheld rank first
    gated = Memory(store).search(WORD, limit=3)
    assert [h.name.startswith("plain lamp") for h in gated.hits] == [True, True, True]
    wide = Memory(store).search(WORD, limit=20)
    assert sorted(h.name for h in wide.hits) == sorted(s["name"] for s in shown)


def test_the_infusion_read_is_filled_with_what_it_may_show(store: GraphStore) -> None:
    """Infusion's one read of the text (``read_text``) asks the index for its candidates
    without the withheld nodes, as search does: a withheld node takes no candidate's
    place, so the lexical channel is not left with fewer than it asked for."""
    writer, hidden, shown = _lamps(store)
    made = writer.create_entities(WRITER, [*hidden, *shown]).created
    public = {m.id for m in made if m.name.startswith("plain lamp")}

    def candidates(memory: Memory) -> list[str]:
        return memory.store.read_text(
            WORD, [WORD], lambda _tx, hits, _stats: [h.id for h in hits], limit=3
        )

    assert not set(candidates(writer)) & public  # the withheld rank first
    gated = candidates(Memory(store))
    assert len(gated) == 3 and set(gated) <= public
