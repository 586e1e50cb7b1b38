"""An operator's hard deletion withdraws the free text written where the deleted node was
drawn on, by the rule the erasure already follows (memory/erasure.py): by link, never by
matching words. An encounter that recorded, confirmed, consulted or pinned a node erased,
or made a relation to one (the record of the past included: a relation to it since
taken back, a node about it since undone), loses its purpose and summary, as an infusion-log entry that delivered it loses its prompt;
an encounter that drew on nothing erased keeps its words. Afterwards no read shows the
withdrawn words: the encounters as read, the re-entry payload (now and as of a tick before
the erasure), read_cypher, search, orient's panel and an export."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from kenning_encounter.analytics import build_panel
from kenning_encounter.memory import asof, dump, erasure, operator, scrub
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore

GONE = "Zqxmira Vantorp"
WORD = "zqxmira"  # her name's distinctive part: in no text but what is about her


def _written(memory: Memory) -> None:
    memory.advance_encounter("recorder", f"find out where {GONE} lives")
    memory.create_entities(
        "recorder",
        [
            {"type": "Concept", "name": GONE, "description": "a person asked about"},
            {"type": "Note", "name": "kettle", "description": "the kettle is blue"},
        ],
    )
    memory.close_encounter("recorder", f"{GONE} lives by the harbour")
    # Encounters that drew on her without recording her, left open.
    memory.advance_encounter("reader", f"check on {GONE} again")
    memory.find_by_name(GONE, session_id="reader")  # a consultation
    memory.advance_encounter("confirmer", f"is {GONE} still by the harbour?")
    memory.confirm_entities("confirmer", [GONE], why="seen there today")
    memory.advance_encounter("pinner", f"keep {GONE} in view")
    memory.pin_entities("pinner", [GONE], why="asked about often")
    memory.advance_encounter("linker", f"the kettle was a gift from {GONE}")
    memory.create_relations("linker", [{"source": "kettle", "type": "ABOUT", "target": GONE}])
    # What the record of the past says drew on her: a note about her an agent undid, and
    # a relation to her an agent took back.
    memory.advance_encounter("undoer", f"note what {GONE} said")
    memory.create_entities("undoer", [{"type": "Note", "name": "said", "description": "words"}])
    memory.create_relations("undoer", [{"source": "said", "type": "ABOUT", "target": GONE}])
    memory.delete_entities("undoer", ["said"])
    memory.advance_encounter("unlinker", f"is the mug {GONE}'s?")
    memory.create_entities("unlinker", [{"type": "Note", "name": "mug", "description": "a mug"}])
    link = {"source": "mug", "type": "ABOUT", "target": GONE}
    memory.create_relations("unlinker", [link])
    memory.delete_relations("unlinker", [link])
    # One that never drew on her keeps its words.
    memory.advance_encounter("bystander", "tidy the kettle notes")
    memory.create_entities("bystander", [{"type": "Note", "name": "cup", "description": "a cup"}])
    memory.close_encounter("bystander", "kettle notes tidied")


def _encounters(store: GraphStore) -> dict[str, tuple[str, str | None]]:
    found = store.read(lambda tx: tx.encounters(limit=50))
    return {e.locus: (e.purpose, e.summary) for e in found}


@pytest.mark.parametrize("how", ["erase", "forget"])
def test_an_erasure_withdraws_the_words_of_the_encounters_that_drew_on_it(
    store: GraphStore, memory: Memory, how: str
) -> None:
    _written(memory)
    before = store.read(lambda tx: tx.clock())
    assert WORD in str(_encounters(store)).lower()  # there to be found
    shown: tuple[str, ...] = ()
    if how == "erase":
        plan = erasure.plan(store, [GONE])
        shown = plan.withdrawn
        withdrawn = erasure.erase(store, plan).withdrawn
        scrub.beside_store(store, Path("unused"), plan.ids)
    else:
        withdrawn = operator.forget(store, [GONE]).withdrawn

    held = _encounters(store)
    names = store.read(lambda tx: {e.locus: e.name for e in tx.encounters(limit=50)})
    drew = ("recorder", "reader", "confirmer", "pinner", "linker", "undoer", "unlinker")
    assert withdrawn == tuple(sorted(names[locus] for locus in drew)), "the report is wrong"
    if how == "erase":
        assert shown == withdrawn, "the plan did not show the operator what goes"
    gone = erasure.WITHDRAWN
    assert held["recorder"] == (gone, gone)
    for locus in ("reader", "confirmer", "pinner", "linker", "undoer", "unlinker"):
        assert held[locus] == (gone, None), f"the {locus}'s words were kept"
    assert held["bystander"] == ("tidy the kettle notes", "kettle notes tidied")

    reentry = memory.advance_encounter("next", "carry on")
    seen = [reentry.model_dump_json()]
    then = store.read(lambda tx: asof.moment(tx, before))
    seen.append(asof.reentry_then(store, reentry, "next", then).model_dump_json())
    assert "kettle notes tidied" in seen[0]  # the payload does show encounters' words
    for query in (
        "MATCH (e:Encounter) RETURN e.purpose, e.summary",
        "MATCH (n) RETURN n",
    ):
        seen.append(repr(memory.read_cypher(query).rows))
    seen.append(repr(memory.search(WORD).hits))
    seen.append(repr(memory.search(WORD, as_of=before).hits))
    graph = store.read(lambda tx: tx.authored_graph())
    seen.append(build_panel(graph.nodes, graph.edges).text)
    out = io.BytesIO()
    dump.export(store, out, app_version="test")
    seen.append(out.getvalue().decode())
    assert [i for i, text in enumerate(seen) if WORD in text.lower()] == []
    if store.backend == "neo4j":
        from tests.contract.test_erasure import _found_on_neo4j

        assert _found_on_neo4j(WORD) == []
