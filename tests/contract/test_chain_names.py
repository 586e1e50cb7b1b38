"""A name a chain once had stays its chain's: it still finds the chain, another node may not
take it, and a revision of that chain may take it back.

Before, renaming a chain back to an earlier name of its own was refused, with the earlier
version called "a live node".
"""

from __future__ import annotations

import pytest

from kenning_encounter.errors import NameTaken, Withheld
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.snapshot import snapshot

S = "chain-names"
READER = "chain-names-reader"


def _revise(memory: Memory, old: str, name: str, why: str) -> str:
    revision = {
        "type": "Concept",
        "name": name,
        "description": why,
        "supersedes": old,
        "revision_why": why,
    }
    return memory.create_entities(S, [revision]).created[0].id


@pytest.fixture
def renamed(memory: Memory) -> list[str]:
    """A chain named "retry policy", renamed "backoff policy", then renamed back."""
    memory.advance_encounter(S, "a concept renamed and renamed back")
    first = memory.create_entities(S, [{"type": "Concept", "name": "retry policy"}])
    ids = [first.created[0].id]
    ids.append(_revise(memory, ids[0], "backoff policy", "the team says backoff"))
    ids.append(_revise(memory, ids[1], "retry policy", "the old name is the one people use"))
    return ids


def test_a_chain_takes_back_a_name_it_had(memory: Memory, renamed: list[str]) -> None:
    for ref in ("retry policy", "backoff policy", *renamed):
        assert memory.find_by_name(ref).node.id == renamed[-1], ref
    history = memory.chain_history("retry policy")
    assert [v.id for v in history.versions] == renamed
    assert [v.name for v in history.versions] == [
        "retry policy",
        "backoff policy",
        "retry policy",
    ]


def test_a_chain_renamed_back_and_forth_keeps_every_name(
    memory: Memory, renamed: list[str]
) -> None:
    # Renamed away again and back once more: each name goes with the live version.
    ids = [*renamed, _revise(memory, renamed[-1], "backoff policy", "again")]
    ids.append(_revise(memory, ids[-1], "retry policy", "and back"))
    assert memory.find_by_name("retry policy").node.id == ids[-1]
    assert memory.find_by_name("backoff policy").node.id == ids[-1]


def test_another_node_may_not_take_a_chains_earlier_name(
    memory: Memory, store: GraphStore, renamed: list[str]
) -> None:
    before = snapshot(store)
    with pytest.raises(NameTaken) as info:
        memory.create_entities(S, [{"type": "Concept", "name": "backoff policy"}])
    assert snapshot(store) == before
    message = str(info.value)
    # Not "a live node": an earlier version, and the live one to revise instead.
    assert "a live node" not in message, message
    assert renamed[1] in message and renamed[-1] in message, message
    assert info.value.field == "entities[0].name"


def test_another_chain_may_not_take_it_by_a_revision(
    memory: Memory, store: GraphStore, renamed: list[str]
) -> None:
    other = memory.create_entities(S, [{"type": "Concept", "name": "jitter"}]).created[0].id
    before = snapshot(store)
    with pytest.raises(NameTaken):
        _revise(memory, other, "backoff policy", "a name another chain had")
    assert snapshot(store) == before
    assert memory.find_by_name("backoff policy").node.id == renamed[-1]


def test_a_live_name_is_refused_as_before(memory: Memory, renamed: list[str]) -> None:
    with pytest.raises(NameTaken, match="a live node named 'retry policy'"):
        memory.create_entities(S, [{"type": "Concept", "name": "retry policy"}])


def test_a_name_kept_by_a_chain_gone_on_in_a_withheld_version_names_no_id(
    memory: Memory, store: GraphStore
) -> None:
    writer = Memory(store, granted=tuple(CLASSIFICATIONS))
    writer.advance_encounter(S, "a public concept revised into a classified one")
    first = writer.create_entities(S, [{"type": "Concept", "name": "triage rule"}]).created[0]
    secret = {
        "type": "Concept",
        "name": "ward triage rule",
        "description": "kept from readers",
        "supersedes": first.id,
        "revision_why": "it now names a ward",
        "classification": ["phi"],
    }
    head = writer.create_entities(S, [secret]).created[0].id
    memory.advance_encounter(READER, "a reader not granted phi")
    before = snapshot(store)
    with pytest.raises(Withheld) as info:
        memory.create_entities(READER, [{"type": "Concept", "name": "triage rule"}])
    assert snapshot(store) == before
    assert head not in str(info.value) and "ward" not in str(info.value), info.value
    assert info.value.field == "entities[0].name"


def test_as_of_each_name_finds_the_chain_as_it_was(memory: Memory, renamed: list[str]) -> None:
    ticks = [v.tick for v in memory.chain_history("retry policy").versions]
    assert memory.find_by_name("retry policy", as_of=ticks[0]).node.id == renamed[0]
    for at, live in zip(ticks[1:], renamed[1:], strict=True):
        for name in ("retry policy", "backoff policy"):
            assert memory.find_by_name(name, as_of=at).node.id == live, (name, at)
