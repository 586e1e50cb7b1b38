"""A write keeps its integrity checks over the whole memory, and says nothing of a node
its caller may not see: a name clash, a link, a revision, a confirmation or a bookmark
that meets a withheld node is refused, naming the field and the fix, never the node's id
or text; nothing is written. A caller granted the class gets the usual answers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kenning_encounter.errors import Conflict, NameTaken, Withheld
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support import classified as plan
from tests.support.classified import MARK

ALL = tuple(CLASSIFICATIONS)
WARD = f"ward note {MARK}"
WARD_TEXT = "patient record"  # a word of the withheld node's description
SESSION = "second-writer"


@pytest.fixture
def planted(store: GraphStore) -> dict[str, str]:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(plan.WRITER, "lanterns and patients")
    made = writer.create_entities(plan.WRITER, plan.entities()).created
    writer.create_entities(
        plan.WRITER,
        [
            {
                "type": "Component",
                "name": f"chart {MARK}",
                "source_kind": "file",
                "source_label": "ward",
                "source_key": "charts/7.md",
                "classification": ["phi"],
            }
        ],
    )
    writer.create_relations(plan.WRITER, plan.relations())
    return {m.name: m.id for m in made}


def _note(name: str) -> dict[str, Any]:
    return {"type": "Note", "name": name, "description": "written beside"}


WRITES: dict[str, Callable[[Memory, dict[str, str]], Any]] = {
    "a name held by a withheld node": lambda m, ids: m.create_entities(SESSION, [_note(WARD)]),
    "a link to a withheld node by name": lambda m, ids: m.create_relations(
        SESSION, [{"source": "plain lantern", "type": "GROUNDS", "target": WARD}]
    ),
    "a link from a withheld node by id": lambda m, ids: m.create_relations(
        SESSION, [{"source": ids[WARD], "type": "GROUNDS", "target": "lantern finding"}]
    ),
    "a revision of a withheld node": lambda m, ids: m.create_entities(
        SESSION,
        [
            {
                "type": "Observation",
                "name": "ward note, public",
                "supersedes": ids[WARD],
                "revision_why": "a public version",
            }
        ],
    ),
    "a confirmation of a withheld node": lambda m, ids: m.confirm_entities(SESSION, [ids[WARD]]),
    "a bookmark of a source a withheld Component holds": lambda m, ids: m.create_entities(
        SESSION,
        [
            {
                "type": "Component",
                "name": "another chart",
                "source_kind": "file",
                "source_label": "ward",
                "source_key": "charts/7.md",
            }
        ],
    ),
    "an unlinking of a withheld node": lambda m, ids: m.delete_relations(
        SESSION, [{"source": ids[WARD], "type": "GROUNDS", "target": "lantern finding"}]
    ),
    # Found by hunting: pin_entities resolved its refs past the gate, so it pinned a
    # withheld node and answered with its name.
    "a pin of a withheld node by id": lambda m, ids: m.pin_entities(SESSION, [ids[WARD]]),
    "a pin of a withheld node by name": lambda m, ids: m.pin_entities(
        SESSION, ["plain lantern", WARD]
    ),
    "an unpinning of a withheld node": lambda m, ids: m.pin_entities(
        SESSION, [ids[WARD]], pinned=False
    ),
}


NAMED_BY_ID = {
    "a link from a withheld node by id",
    "a revision of a withheld node",
    "a confirmation of a withheld node",
    "an unlinking of a withheld node",
    "a pin of a withheld node by id",
    "an unpinning of a withheld node",
}


@pytest.mark.parametrize("write", list(WRITES), ids=list(WRITES))
def test_a_write_meeting_a_withheld_node_is_refused_without_naming_it(
    store: GraphStore, planted: dict[str, str], write: str
) -> None:
    gated = Memory(store)
    gated.advance_encounter(SESSION, "writing beside")
    before = store.read(lambda tx: tx.clock())
    with pytest.raises(Withheld) as info:
        WRITES[write](gated, planted)
    # An id the caller gave is its own words echoed back, not something learnt.
    given = planted[WARD] if write in NAMED_BY_ID else "\0"
    message = str(info.value).replace(given, "<the ref given>")
    assert "not granted to see" in message and "[" in message.split(":", 1)[0]
    withheld_ids = {planted[name] for name in plan.CLASSIFIED}
    assert not any(i in message for i in withheld_ids), message
    assert WARD_TEXT not in message and "card" not in message
    assert store.read(lambda tx: tx.clock()) == before  # nothing written


def test_a_granted_writer_is_told_which_node_holds_the_name(
    store: GraphStore, planted: dict[str, str]
) -> None:
    granted = Memory(store, granted=ALL)
    granted.advance_encounter(SESSION, "writing beside")
    with pytest.raises(NameTaken) as info:
        granted.create_entities(SESSION, [_note(WARD)])
    assert planted[WARD] in str(info.value)


def test_a_partial_grant_is_refused_only_for_what_it_lacks(
    store: GraphStore, planted: dict[str, str]
) -> None:
    partial = Memory(store, granted=("phi",))
    partial.advance_encounter(SESSION, "writing beside")
    with pytest.raises(Conflict) as seen:
        partial.create_entities(SESSION, [_note(WARD)])  # phi: granted, so named
    assert isinstance(seen.value, NameTaken)
    with pytest.raises(Withheld):
        partial.create_entities(SESSION, [_note(f"open ask {MARK}")])  # pii: not granted
