"""Relevance over time through a real MCP client (#16 items 5-6): a deliberate read with
the session renews a node, a search hit does not, pins hold and lift, a reader face
records nothing, and bad arguments are refused with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, call_refused, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ME = "session-standing-tools"


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def _uses(client: Any) -> list[Any]:
    """Every CONSULTED and PINNED edge, with its time."""
    query = (
        "MATCH (e:Encounter)-[r]->(n:Note) WHERE label(r) IN ['CONSULTED', 'PINNED'] "
        "RETURN label(r), e.id, n.name, r.created_at ORDER BY r.created_at"
    )
    return list((await call_ok(client, "read_cypher", {"query": query}))["rows"])


async def _last_used(client: Any) -> str:
    found = await call_ok(client, "find_by_name", {"name": "deploy runbook"})
    return str(found["node"]["last_used_at"])


async def test_reads_renew_searches_do_not_and_pins_hold(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path / "m")) as client:
        await call_ok(client, "advance_encounter", {"session_id": ME, "purpose": "standing"})
        note = {"type": "Note", "name": "deploy runbook", "description": "Steps to deploy."}
        await call_ok(client, "create_entities", {"session_id": ME, "entities": [note]})
        first = await call_ok(client, "find_by_name", {"name": "deploy runbook"})
        assert first["node"]["tier"] == "hot" and first["node"]["pinned"] is False
        created = first["node"]["last_used_at"]
        found = await call_ok(client, "search", {"query": "deploy", "include_cold": True})
        assert [(h["name"], h["tier"]) for h in found["hits"]] == [("deploy runbook", "hot")]
        await call_ok(client, "trace_provenance", {"ref": "deploy runbook"})  # no session
        assert await _uses(client) == [] and await _last_used(client) == created
        await call_ok(client, "find_by_name", {"name": "deploy runbook", "session_id": ME})
        assert await _last_used(client) > created
        await call_ok(client, "chain_history", {"node": "deploy runbook", "session_id": ME})
        await call_ok(client, "trace_provenance", {"ref": "deploy runbook", "session_id": ME})
        consulted = await _uses(client)
        assert [r[0] for r in consulted] == ["CONSULTED"]  # one edge per encounter and node
        assert consulted[0][3] == await _last_used(client)  # dated by the latest read
        pinned = await call_ok(
            client, "pin_entities", {"session_id": ME, "refs": ["deploy runbook"], "why": "ops"}
        )
        assert pinned["pinned"] is True
        assert (await call_ok(client, "find_by_name", {"name": "deploy runbook"}))["node"][
            "pinned"
        ] is True
        await call_ok(
            client, "pin_entities", {"session_id": ME, "refs": ["deploy runbook"], "unpin": True}
        )
        assert (await call_ok(client, "find_by_name", {"name": "deploy runbook"}))["node"][
            "pinned"
        ] is False
        before = await _uses(client)
        assert [r[0] for r in before] == ["CONSULTED", "PINNED", "PINNED"]
        refused = await call_refused(
            client, "pin_entities", {"session_id": ME, "refs": ["no such node"]}
        )
        assert "refs[0]" in refused
        wrong = await call_refused(client, "search", {"query": "deploy", "include_cold": "lots"})
        assert "include_cold" in wrong
        assert await _uses(client) == before


async def test_a_reader_face_records_no_consultation(tmp_path: Path) -> None:
    async with Client(server_for(tmp_path / "m")) as writer:
        await call_ok(writer, "advance_encounter", {"session_id": ME, "purpose": "standing"})
        note = {"type": "Note", "name": "deploy runbook", "description": "Steps to deploy."}
        await call_ok(writer, "create_entities", {"session_id": ME, "entities": [note]})
    async with Client(server_for(tmp_path / "m", face="reader")) as reader:
        names = [t.name for t in (await reader.list_tools()).tools]
        assert "pin_entities" not in names
        await call_ok(reader, "find_by_name", {"name": "deploy runbook", "session_id": ME})
        assert await _uses(reader) == []


def _seed_cold(data_dir: Path) -> None:
    """A note recorded 45 days ago, and other work every day since: with a 10-day
    half-life it is cold (4.5 half-lives of work), out of default recall."""
    from datetime import UTC, datetime, timedelta

    from kenning_encounter.memory.service import Memory
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    start = datetime.now(UTC) - timedelta(days=45)
    at = {"now": start}
    store = EmbeddedStore.open(
        data_dir, clock=lambda: at["now"].isoformat(timespec="milliseconds").replace("+00:00", "Z")
    )
    try:
        memory = Memory(store)
        memory.advance_encounter("seed", "the rollback")
        note = {
            "type": "Note",
            "name": "canary rollback",
            "description": "The canary rolled back after a latency spike in the payment gateway.",
        }
        memory.create_entities("seed", [note])
        memory.close_encounter("seed", "noted")
        for day in range(1, 46):
            at["now"] = start + timedelta(days=day)
            memory.advance_encounter("daily", f"day {day}")
            memory.close_encounter("daily", "worked")
    finally:
        store.close()


async def test_infuse_leaves_cold_nodes_out_unless_asked(tmp_path: Path) -> None:
    _seed_cold(tmp_path / "m")
    prompt = "why did the canary roll back after the latency spike?"
    async with Client(server_for(tmp_path / "m", activation_half_life_days=10)) as client:
        plain = await call_ok(client, "infuse", {"session_id": "asker-1", "prompt": prompt})
        assert plain["status"] == "silent" and "canary rollback" not in plain["payload"]
        asked = {"session_id": "asker-2", "prompt": prompt, "include_cold": True}
        cold = await call_ok(client, "infuse", asked)
        assert cold["status"] == "infused" and "canary rollback" in cold["payload"]
        wrong = await call_refused(client, "infuse", {**asked, "include_cold": "lots"})
        assert "include_cold" in wrong
