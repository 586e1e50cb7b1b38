"""Which hits bring their encounter neighbours: the lexical path's own reading of them.

The text index scores every word of its query alike (the previous turns' words and
the prompt's own, a name heading a record and a word it says), so its top can hold
nothing of what the prompt asks. The records beside the hits the ranking itself rates
strongest are the ones worth reading: an answer often shares no word with the question
and only sits next to the record that does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.lexical import (
    Candidate,
    CorpusStats,
    GraphContext,
    extract_terms,
    lexical_evidence,
    node_tokens,
    rank_candidates,
)
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.records import NodeRecord

FRUIT = [
    "apple",
    "pear",
    "plum",
    "fig",
    "lime",
    "kiwi",
    "melon",
    "grape",
    "lemon",
    "mango",
    "peach",
    "cherry",
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore.open(tmp_path / "memory")
    try:
        yield opened
    finally:
        opened.close()


def _session(memory: Memory, session: str, lines: list[str]) -> list[str]:
    memory.advance_encounter(session, "talk")
    made = memory.create_entities(
        session,
        [
            {"type": "Observation", "name": f"{session}-{i}", "description": text}
            for i, text in enumerate(lines)
        ],
    )
    memory.close_encounter(session, "done")
    return [c.id for c in made.created]


def test_the_reply_beside_the_prompt_s_own_match_joins_when_the_index_top_is_elsewhere(
    store: EmbeddedStore,
) -> None:
    memory = Memory(store)
    _session(memory, "s-0", [f"Erin: item {w} noted." for w in FRUIT])
    earlier_topic = ("again", "still", "slow", "paused", "resumed", "done")
    _session(memory, "s-1", [f"Dana: the database migration, {w}." for w in earlier_topic])
    match, reply = _session(
        memory,
        "s-2",
        [
            "Bob: The greyhound from the rescue shelter came home with us after a very long "
            "drive through the hills, the rain, the traffic and the roadworks.",
            "Carol: That was in the spring, right after the move.",
        ],
    )
    store.flush_index()
    around = 3
    # The index's strongest hits are the previous turn's short records, all of them.
    top = store.fulltext("greyhound database migration", limit=around + 4)
    assert match not in [h.id for h in top[:around]]
    assert match in [h.id for h in top]

    infuser = Infuser(store, InfusionConfig(neighbour_hits=around))
    answer = infuser.infuse("s-q", "And the greyhound?", ["How is the database migration going?"])
    ranked = answer["meta"]["ranked"]
    assert match in ranked
    assert reply in ranked  # read beside the match, though the index rated it fourth or lower


def _node(name: str, description: str) -> NodeRecord:
    return NodeRecord(
        id=name,
        type="Observation",
        name=name,
        description=description,
        tick=1,
        created_at="2026-01-01T00:00:00Z",
    )


def test_lexical_evidence_weighs_the_prompt_over_earlier_turns_and_skips_the_label() -> None:
    nodes = [
        _node("a", "Alice: ok."),  # the name only heads it
        _node("b", "Dana: the migration went on."),  # a word of the earlier turn
        _node("c", "Bob: the greyhound came home."),  # a word of the prompt, as rare
        *(_node(f"f{i}", f"Erin: {w}.") for i, w in enumerate(FRUIT)),
    ]
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    query = extract_terms("What about Alice and the greyhound?", ["How is the migration going?"])
    candidates = [Candidate(n) for n in nodes[:3]]
    read = lexical_evidence(query, candidates, stats)
    label_only, earlier, own = (read[n.id].lexical for n in nodes[:3])
    assert label_only == 0.0
    assert own > earlier > 0.0
    # Evidence read once is the ranking's own: handed back, the ranking is unchanged.
    context = GraphContext(stats, {})
    again = rank_candidates(query, candidates, context, 3, known=read)
    assert again == rank_candidates(query, candidates, context, 3)
    # ... and taken as it is, not read anew: evidence said stronger leads.
    said = {**read, nodes[1].id: dataclasses.replace(read[nodes[1].id], lexical=own * 10)}
    assert rank_candidates(query, candidates, context, 3, known=said)[0].node.id == nodes[1].id
