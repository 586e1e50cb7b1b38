"""A version revised in a session the reader hides reads as revised, on every backend: no
head (search leaves it out as superseded), and where it is shown its ``superseded_by``
says ``hidden``, naming, counting and describing nothing of the hidden version. As a
version revised by a withheld class reads ``withheld`` (test_gates.py)."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import NotFound
from kenning_encounter.memory import history
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.store.records import HIDDEN_SUCCESSOR

OPEN = "open-session"
SECRET = "secret-session"


def _revise(memory: Memory, session: str, ref: str, name: str, description: str) -> str:
    node = memory.find_by_name(ref).node
    revision = {
        "type": node.type,
        "name": name,
        "description": description,
        "supersedes": node.id,
        "revision_why": f"hushed reason for {description}",
    }
    return memory.create_entities(session, [revision]).created[0].id


def _plant(store: GraphStore) -> dict[str, Any]:
    """plan v1 and v2 in the open session, v3 in the hidden one; a grounding note the
    hidden session revised too."""
    writer = Memory(store)
    writer.advance_encounter(OPEN, "plans")
    made = writer.create_entities(
        OPEN,
        [
            {"type": "Hypothesis", "name": "plan", "description": "ferry at dawn"},
            {"type": "Observation", "name": "tide table", "description": "low tide at six"},
        ],
    ).created
    writer.create_relations(OPEN, [{"source": "tide table", "type": "SUPPORTS", "target": "plan"}])
    v2 = _revise(writer, OPEN, "plan", "plan", "ferry at seven")
    before_v3 = store.read(lambda tx: tx.clock())
    writer.advance_encounter(SECRET, "private plans")
    v3 = _revise(writer, SECRET, "plan", "plan", "zqxsecret boat")
    tide2 = _revise(writer, SECRET, "tide table", "tide table", "zqxsecret tide")
    return {
        "v1": made[0].id,
        "v2": v2,
        "v3": v3,
        "tide": made[1].id,
        "tide2": tide2,
        "before_v3": before_v3,
    }


def test_a_version_a_hidden_session_revised_reads_as_revised(store: GraphStore) -> None:
    ids = _plant(store)
    reader = Memory(store, hidden_loci=frozenset({SECRET}))
    answers: list[str] = []
    for ref in ("plan", ids["v1"], ids["v2"]):
        found = reader.find_by_name(ref)
        assert (found.node.id, found.node.superseded_by) == (ids["v2"], HIDDEN_SUCCESSOR), ref
        assert [(v.id, v.superseded_by) for v in found.history] == [(ids["v1"], ids["v2"])]
        assert found.resolved_from in (None, ids["v1"])
        answers.append(found.model_dump_json())
    for ref in ("plan", ids["v2"]):
        traced = reader.trace_provenance(ref)
        assert (traced.node.id, traced.node.superseded_by) == (ids["v2"], HIDDEN_SUCCESSOR)
        assert [(g.id, g.superseded_by) for g in traced.grounding] == [
            (ids["tide"], HIDDEN_SUCCESSOR)
        ]
        answers.append(traced.model_dump_json())
    chain = reader.chain_history(ids["v1"])
    assert [v.id for v in chain.versions] == [ids["v1"], ids["v2"]] and chain.head is None
    assert not any(v.head for v in chain.versions)
    answers.append(chain.model_dump_json())
    # No head of anything: the default search leaves it out, as any superseded version.
    assert [h.id for h in reader.search("ferry plan").hits] == []
    wide = reader.search("ferry plan", include_superseded=True)
    assert sorted(h.id for h in wide.hits) == sorted([ids["v1"], ids["v2"]])
    answers.append(wide.model_dump_json())
    for text in answers:
        for hidden in (ids["v3"], ids["tide2"], "zqxsecret", "hushed reason for zqx"):
            assert hidden not in text, (hidden, text)
    # The hidden versions themselves are not there, by id.
    for gone in (ids["v3"], ids["tide2"]):
        with pytest.raises(NotFound):
            reader.find_by_name(gone)
        with pytest.raises(NotFound):
            reader.trace_provenance(gone)
        with pytest.raises(NotFound):
            history.chain_history(reader.store, gone, hidden_loci=reader.hidden_loci)
    # Read without hiding, the hidden session's version is the head.
    assert Memory(store).find_by_name("plan").node.id == ids["v3"]
    # Before the hidden session revised it, it was the head; as of now, revised.
    then = reader.find_by_name("plan", as_of=ids["before_v3"])
    assert (then.node.id, then.node.superseded_by) == (ids["v2"], None)
    now = reader.find_by_name("plan", as_of=store.read(lambda tx: tx.clock()))
    assert (now.node.id, now.node.superseded_by) == (ids["v2"], HIDDEN_SUCCESSOR)


def test_a_chain_wholly_in_a_hidden_session_is_not_there(store: GraphStore) -> None:
    writer = Memory(store)
    writer.advance_encounter(SECRET, "private")
    writer.create_entities(SECRET, [{"type": "Note", "name": "hush", "description": "one"}])
    first = writer.find_by_name("hush").node.id
    _revise(writer, SECRET, "hush", "hush", "two")
    reader = Memory(store, hidden_loci=frozenset({SECRET}))
    for ref in ("hush", first):
        with pytest.raises(NotFound):
            reader.find_by_name(ref)
        with pytest.raises(NotFound):
            reader.trace_provenance(ref)
