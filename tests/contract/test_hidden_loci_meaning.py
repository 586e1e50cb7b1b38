"""The meaning channel of a reader hiding sessions, on every backend: their nodes'
meanings go to no matcher, so the model is never shown them, never picks one, and
infuse_meaning (a read tool of the reader face) never lists one. Before, the matcher's
pool held every meaning and the pipeline dropped a hidden pick only after the fact;
infuse_meaning showed it, id and meaning."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.meaning_bridge import MeaningRuntime
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.meaning import MatcherOptions, make_provider
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from tests.support.fake_llm import FakeGemini, Seen, echo_meaning, handle_of, listed_handles

pytest.importorskip("google.genai")

SECRET = "secret-session"
OPEN = "open-session"
shown_to_model: list[str] = []


def _picks_what_it_can(seen: Seen) -> str:
    """The hidden note if it is listed, else the visible one."""
    if "MEMORY ITEMS" not in seen.user:
        return echo_meaning(seen)
    shown_to_model.append(seen.user)
    listed = listed_handles(seen.user)
    want = "zqxsecret" if any("zqxsecret" in line for line in seen.user.splitlines()) else "noon"
    return json.dumps({"ids": [handle_of(seen.user, want)] if listed else []})


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    shown_to_model.clear()
    with FakeGemini(_picks_what_it_can) as server:
        yield server


def test_a_hidden_session_s_meanings_reach_no_matcher(
    store: GraphStore, tmp_path: Path, fake: FakeGemini
) -> None:
    writer = Memory(store)
    writer.advance_encounter(SECRET, "pay")
    hidden = writer.create_entities(
        SECRET, [{"type": "Note", "name": "hush", "description": "the zqxsecret salary list"}]
    ).created[0]
    writer.advance_encounter(OPEN, "lunch")
    shown = writer.create_entities(
        OPEN, [{"type": "Note", "name": "lunch", "description": "The team eats at noon."}]
    ).created[0]
    reader = Memory(store, hidden_loci=frozenset({SECRET}))
    provider = make_provider(
        "gemini", api_key="test-key", base_url=fake.url, timeout_s=2.0, max_attempts=1
    )
    runtime = MeaningRuntime(
        reader.store,
        tmp_path / "sidecar",
        provider,
        MatcherOptions(),
        hidden_loci=reader.hidden_loci,
    )
    runtime.start()
    try:
        assert runtime.maintainer.wait_idle(10) and len(runtime.sidecar) == 2
        diagnosis = runtime.diagnose("anything about pay or lunch?", [])
        assert [c["id"] for c in diagnosis["chose"]] == [shown.id]
        infuser = Infuser(
            reader.store, InfusionConfig(), matcher=runtime, hidden_loci=reader.hidden_loci
        )
        result = infuser.infuse("viewer", "anything about pay or lunch?")
        assert set(result["meta"]["delivered"]) == {shown.id}
        everything = json.dumps([diagnosis, result], default=str)
        assert hidden.id not in everything and "zqxsecret" not in everything
        assert shown_to_model and not any("zqxsecret" in text for text in shown_to_model)
        # A session's later writes are hidden too: what it recorded is read again after a write.
        later = writer.create_entities(
            SECRET, [{"type": "Note", "name": "hush two", "description": "the zqxsecret bonus"}]
        ).created[0]
        made = store.read(lambda tx: tx.get_node(later.id))
        assert made is not None
        runtime.maintainer.enqueue(made)  # as the memory's listener would (not added here)
        assert runtime.maintainer.wait_idle(10) and len(runtime.sidecar) == 3
        again = runtime.diagnose("anything about pay or lunch?", [])
        assert [c["id"] for c in again["chose"]] == [shown.id]
    finally:
        runtime.close()
