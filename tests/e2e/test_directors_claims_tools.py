"""Directors, referent claims and confirmations through a real MCP client (#17): two
directors in two sessions, a referent claimed the same and then distinct, a node
confirmed without change, and the refusals (in our words, nothing written)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, call_refused, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ADA, GRACE = "session-ada-directors", "session-grace-directors"


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def test_two_directors_a_claim_revised_and_a_confirmation(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path)) as client:
        a = await call_ok(
            client,
            "advance_encounter",
            {"session_id": ADA, "purpose": "billing", "director": "Ada", "director_key": "ada@x"},
        )
        assert a["encounter"]["director"]["name"] == "Ada"
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": ADA,
                "entities": [
                    {"type": "Concept", "name": "billing alice", "description": "pays invoices"}
                ],
            },
        )
        g = await call_ok(
            client,
            "advance_encounter",
            {"session_id": GRACE, "purpose": "infra", "director": "Grace", "director_key": "g@x"},
        )
        assert g["encounter"]["director"]["name"] == "Grace"
        assert [s["director"]["name"] for s in g["recent_sessions"]] == ["Ada"]
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": GRACE,
                "entities": [
                    {"type": "Concept", "name": "infra alice", "description": "runs invoices db"}
                ],
            },
        )
        traced = await call_ok(client, "trace_provenance", {"ref": "billing alice"})
        assert traced["node"]["director"]["name"] == "Ada"
        same = {"source": "billing alice", "target": "infra alice", "resolution": "confirmed"}
        await call_ok(client, "claim_referents", {"session_id": GRACE, "claims": [same]})
        joined = await call_ok(client, "search", {"query": "pays", "same_as": True})
        assert [h["name"] for h in joined["hits"]] == ["billing alice", "infra alice"]
        plain = await call_ok(client, "search", {"query": "pays"})
        assert [h["name"] for h in plain["hits"]] == ["billing alice"]
        apart = {**same, "resolution": "distinct", "why": "two people"}
        revised = await call_ok(client, "claim_referents", {"session_id": ADA, "claims": [apart]})
        assert revised["claims"][0]["revises"] == "confirmed"
        after = await call_ok(client, "search", {"query": "pays", "same_as": True})
        assert [h["name"] for h in after["hits"]] == ["billing alice"]
        before = await call_ok(client, "find_by_name", {"name": "billing alice"})
        done = await call_ok(
            client, "confirm_entities", {"session_id": GRACE, "refs": ["billing alice"]}
        )
        assert done["confirmed"][0]["name"] == "billing alice"
        after = await call_ok(client, "find_by_name", {"name": "billing alice"})
        # Unchanged but for its standing: a confirmation is a use (memory/activation.py).
        assert after["node"].pop("last_used_at") > before["node"].pop("last_used_at")
        assert after == before


async def test_bad_claims_and_confirmations_are_refused_naming_the_field(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path)) as client:
        await call_ok(client, "advance_encounter", {"session_id": ADA, "purpose": "w"})
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": ADA,
                "entities": [
                    {"type": "Concept", "name": "c", "description": "an idea"},
                    {"type": "Observation", "name": "o", "description": "a sighting"},
                ],
            },
        )
        wrong = {"source": "c", "target": "o", "resolution": "confirmed"}
        text = await call_refused(client, "claim_referents", {"session_id": ADA, "claims": [wrong]})
        assert "claims[0].target" in text and "one type" in text
        text = await call_refused(
            client,
            "claim_referents",
            {"session_id": ADA, "claims": [{**wrong, "target": "c", "resolution": "maybe"}]},
        )
        assert "resolution" in text and "confirmed" in text
        text = await call_refused(
            client, "confirm_entities", {"session_id": ADA, "refs": ["nothing like it"]}
        )
        assert "nothing like it" in text
        text = await call_refused(
            client,
            "create_relations",
            {
                "session_id": ADA,
                "relations": [{"source": "c", "type": "REFERENT_CLAIM", "target": "c"}],
            },
        )
        assert "claim_referents" in text


async def test_a_server_requiring_a_director_refuses_a_session_without_one(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path, director="")) as client:
        text = await call_refused(client, "advance_encounter", {"session_id": ADA, "purpose": "w"})
        assert "director" in text and "KENNING_ENCOUNTER_DIRECTOR" in text
        ok = await call_ok(
            client,
            "advance_encounter",
            {"session_id": ADA, "purpose": "w", "director": "Ada", "director_key": "ada@x"},
        )
        assert ok["encounter"]["director"]["key"] == "ada@x"


async def test_a_re_entry_as_of_a_past_tick_names_the_directors(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path)) as client:
        await call_ok(
            client,
            "advance_encounter",
            {"session_id": ADA, "purpose": "w", "director": "Ada", "director_key": "ada@x"},
        )
        made = await call_ok(
            client,
            "create_entities",
            {
                "session_id": ADA,
                "entities": [{"type": "Question", "name": "why", "description": "why so?"}],
            },
        )
        then = await call_ok(
            client,
            "advance_encounter",
            {"session_id": GRACE, "purpose": "w", "as_of": made["tick"]},
        )
        assert [s["director"]["name"] for s in then["recent_sessions"]] == ["Ada"]
        assert [q["director"]["name"] for q in then["open_questions"]] == ["Ada"]
