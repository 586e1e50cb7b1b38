"""The infusion pipeline on small real graphs: renewal economy, tension, silence, budget."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import cast

import pytest

from kenning_encounter.errors import InvalidInput
from kenning_encounter.infusion.config import HARD_CAP_CHARS, InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

S = "agent-session"
PROMPT = "the deploy retry storm hit the auth service again"


def _memory(memory: Memory) -> None:
    memory.advance_encounter("writer", "deploy failures")
    memory.create_entities(
        "writer",
        [
            {
                "type": "Observation",
                "name": "retry storm",
                "description": "Deploys set off a retry storm against the auth service.",
            },
            {
                "type": "Concept",
                "name": "synchronised retries",
                "description": "Clients without jittered backoff retry in lockstep.",
            },
            {
                "type": "Concept",
                "name": "auth capacity",
                "description": "The auth service handles two thousand requests per second at most.",
            },
            {
                "type": "Question",
                "name": "storm timing",
                "description": "Why do the storms start right after a deploy?",
            },
            {
                "type": "Hypothesis",
                "name": "cache flush",
                "description": "Each deploy flushes the token cache, so every client reauthenticates.",
            },
            {
                "type": "Observation",
                "name": "cache metrics",
                "description": "Token cache hit rate stays flat across deploys.",
            },
            {"type": "Note", "name": "banana", "description": "Unrelated: bake at 180 degrees."},
        ],
    )
    memory.create_relations(
        "writer",
        [
            {"source": "retry storm", "type": "GROUNDS", "target": "synchronised retries"},
            {"source": "synchronised retries", "type": "INFORMS", "target": "auth capacity"},
            {"source": "retry storm", "type": "RAISES", "target": "storm timing"},
            {"source": "retry storm", "type": "SUPPORTS", "target": "cache flush"},
        ],
    )


def _ids(result: dict) -> set[str]:  # type: ignore[type-arg]
    return set(result["meta"]["delivered"])


def test_first_sight_gives_bodies_then_handles(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    infuser = Infuser(store, InfusionConfig())
    first = infuser.infuse(S, PROMPT)
    retry = memory.find_by_name("retry storm").node.id
    assert retry in _ids(first)
    assert "Deploys set off a retry storm" in first["payload"]
    assert first["meta"]["renewal"][retry] == "first sight"
    second = infuser.infuse(S, PROMPT)
    assert retry in second["meta"]["standing"] and retry not in _ids(second)
    assert "Deploys set off a retry storm" not in second["payload"]
    assert "STANDING" in second["payload"]
    # another session has its own ledger
    other = infuser.infuse("someone-else", PROMPT)
    assert retry in _ids(other)


def test_changed_fact_state_delivers_the_body_again(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    infuser = Infuser(store, InfusionConfig())
    first = infuser.infuse(S, "deploy flushes the token cache and clients reauthenticate")
    flush = memory.find_by_name("cache flush").node.id
    assert flush in _ids(first)
    memory.create_relations(
        "writer", [{"source": "cache metrics", "type": "CHALLENGES", "target": "cache flush"}]
    )
    again = infuser.infuse(S, "deploy flushes the token cache and clients reauthenticate")
    assert flush in _ids(again)
    assert again["meta"]["renewal"][flush] == "fact-state changed"


def test_supersession_delivers_the_new_body(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    infuser = Infuser(store, InfusionConfig())
    infuser.infuse(S, PROMPT)
    memory.create_entities(
        "writer",
        [
            {
                "type": "Concept",
                "name": "synchronised retries",
                "description": "Lockstep retries come from a shared retry timer in the client library.",
                "supersedes": "synchronised retries",
                "revision_why": "found the shared timer",
            }
        ],
    )
    again = infuser.infuse(S, PROMPT + " with lockstep retries")
    assert "shared retry timer" in again["payload"]


def test_the_horizon_renews_a_body(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    infuser = Infuser(store, InfusionConfig(horizon_turns=2))
    retry = memory.find_by_name("retry storm").node.id
    assert retry in _ids(infuser.infuse(S, PROMPT))
    assert retry not in _ids(infuser.infuse(S, PROMPT))
    third = infuser.infuse(S, PROMPT)
    assert retry in _ids(third) and third["meta"]["renewal"][retry] == "past the horizon"


def test_tension_comes_first(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    memory.create_relations(
        "writer", [{"source": "cache metrics", "type": "CHALLENGES", "target": "cache flush"}]
    )
    result = Infuser(store, InfusionConfig()).infuse(S, "does every deploy flush the token cache?")
    payload = result["payload"]
    assert payload.index("LOAD-BEARING CONFLICTS") < payload.index("NEIGHBOURHOOD")
    assert "«cache metrics» (Observation) CHALLENGES «cache flush» (Hypothesis)" in payload
    assert result["meta"]["counts"]["conflicts"] == 1


def test_silence_on_an_unrelated_prompt(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    result = Infuser(store, InfusionConfig()).infuse(
        S, "please rename the variables in this function"
    )
    assert result["payload"] == ""
    assert result["meta"]["delivered"] == []


def test_silence_on_an_empty_memory(memory: Memory, store: GraphStore) -> None:
    result = Infuser(store, InfusionConfig()).infuse(S, PROMPT)
    assert result["payload"] == ""


def test_the_header_signs_the_channel_and_the_reason(memory: Memory, store: GraphStore) -> None:
    _memory(memory)
    payload = Infuser(store, InfusionConfig()).infuse(S, PROMPT)["payload"]
    header = payload.splitlines()[0]
    assert "lexical" in header and "“retry”" in header
    assert re.search(r"why: matched “", payload)


def test_budget_never_cuts_an_item_and_the_cap_holds(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter("writer", "many")
    memory.create_entities(
        "writer",
        [
            {
                "type": "Observation",
                "name": f"storm report {i}",
                "description": f"Retry storm report {i}: "
                + "the deploy retried against auth. " * 12,
            }
            for i in range(30)
        ],
    )
    for budget in (600, 1_500, 4_000):
        result = Infuser(store, InfusionConfig(budget_chars=budget, items=30, seeds=30)).infuse(
            f"s{budget}", PROMPT
        )
        payload = result["payload"]
        # The budget bounds what the model reads: the payload as a JSON string.
        assert 0 < len(json.dumps(payload, ensure_ascii=False)) - 2 <= budget
        for block in payload.split("◆ ")[1:]:
            assert "why:" in block, "an item was cut mid-way"
        assert result["meta"]["suppressed"]["budget"], "the budget should have left items out"
    big = Infuser(store, InfusionConfig(budget_chars=HARD_CAP_CHARS, items=50, seeds=50)).infuse(
        "cap", PROMPT
    )
    assert len(json.dumps(big["payload"], ensure_ascii=False)) - 2 <= HARD_CAP_CHARS


def test_only_delivered_items_are_stamped(memory: Memory, store: GraphStore) -> None:
    memory.advance_encounter("writer", "many")
    memory.create_entities(
        "writer",
        [
            {
                "type": "Observation",
                "name": f"storm report {i}",
                "description": f"Retry storm report {i}: " + "deploy retries. " * 20,
            }
            for i in range(12)
        ],
    )
    infuser = Infuser(store, InfusionConfig(budget_chars=700, items=12, seeds=12))
    first = infuser.infuse(S, PROMPT)
    cut = first["meta"]["suppressed"]["budget"]
    assert cut
    wide = Infuser(store, InfusionConfig(budget_chars=9_000, items=12, seeds=12))
    wide._ledger = infuser._ledger  # same session history, more room
    second = wide.infuse(S, PROMPT)
    assert set(cut) <= set(second["meta"]["delivered"]), (
        "a node cut by the budget was marked as told"
    )


def test_bad_input_is_refused(memory: Memory, store: GraphStore) -> None:
    infuser = Infuser(store, InfusionConfig())
    with pytest.raises(InvalidInput, match="prompt"):
        infuser.infuse(S, "   ")
    with pytest.raises(InvalidInput, match="session_id"):
        infuser.infuse("", PROMPT)
    with pytest.raises(InvalidInput, match="trajectory"):
        infuser.infuse(S, PROMPT, "not a list")  # type: ignore[arg-type]


def test_a_failing_store_is_a_stated_failure_never_a_raise(tmp_path: Path) -> None:
    """Inside the pipeline any failure becomes status 'failed' with the reason; silence stays
    reserved for 'nothing bears'."""
    store = EmbeddedStore.open(tmp_path / "m")
    memory = Memory(store)
    memory.advance_encounter(S, "seed")
    memory.create_entities(S, [{"type": "Note", "name": "retry storm", "description": "deploys"}])
    infuser = Infuser(store, InfusionConfig())
    assert infuser.infuse(S, "retry storm")["status"] == "infused"
    assert infuser.infuse(S, "the lunch menu")["status"] == "silent"
    store.close()
    answer = infuser.infuse(S, "retry storm")
    assert answer["status"] == "failed" and answer["payload"] == ""
    assert answer["meta"]["degraded"] is True
    assert "infusion failed on the server" in answer["meta"]["degraded_reason"]


class _ReadsCounted:
    """The real store, every read it is asked for counted (the graph's reads only)."""

    def __init__(self, inner: GraphStore) -> None:
        self.inner = inner
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> object:
        found = getattr(self.inner, name)
        if name in ("read", "read_text", "search_read", "fulltext"):
            self.reads.append(name)
        return found


def test_a_lexical_infusion_selects_ranks_and_weighs_standing_in_one_read(
    memory: Memory, store: GraphStore
) -> None:
    """The lexical path's search, its statistics, the working time standing is measured
    in and the ranking share one read: every read is a round trip on a served store."""
    _memory(memory)
    counted = _ReadsCounted(store)
    infuser = Infuser(cast(GraphStore, counted), InfusionConfig())
    answer = infuser.infuse(S, PROMPT)
    assert memory.find_by_name("retry storm").node.id in _ids(answer)
    assert answer["meta"]["counts"]["graph_nodes"] > 1  # it ranked, in that read
    assert counted.reads == ["read_text"]
    # a prompt nothing bears on reads once too, and ranks nothing
    counted.reads.clear()
    silent = infuser.infuse(S, "zebra quartz violin")
    assert silent["status"] == "silent" and counted.reads == ["read_text"]


def test_the_tokens_a_store_keeps_are_the_tokens_of_the_text(memory: Memory) -> None:
    """Where the store hands over its own tokens of a node (Neo4j's), the lexical path
    matches by them: they must be exactly what tokenizing the text again gives."""
    from kenning_encounter.infusion.lexical import node_tokens
    from kenning_encounter.textproc import tokenize

    texts = [
        ("Ünïcode façade", "Straße, naïve café — 東京 and émigrés' résumés"),
        ("punctuation!", "a/b c-d e_f (g) [h] {i} 'j' \"k\" 3.14 v2.0 #tag @who"),
        ("empty description", ""),
        ("Stems and STOPWORDS", "The running runners ran; it is what it is."),
    ]
    memory.advance_encounter("writer", "tokens")
    made = memory.create_entities(
        "writer", [{"type": "Note", "name": n, "description": d} for n, d in texts]
    ).created
    nodes = memory.store.read(lambda tx: tx.get_nodes([m.id for m in made]))
    for (name, description), m in zip(texts, made, strict=True):
        node = nodes[m.id]
        assert node_tokens(node) == tuple(tokenize(f"{name}\n{description}"))
        assert (node.terms is not None) == (memory.store.backend == "neo4j")
