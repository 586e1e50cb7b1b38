"""A reader face hiding a session, over a real MCP client session: what that session did to
a node the reader shows (pinned it, linked it, consulted it) does not move the node's
standing as the reader reads it; a reader face hiding nothing sees it
(tests/contract/test_hidden_loci_standing.py holds every read and kind of use, in time)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ALICE, BOB = "session-alice-hidden", "session-bob-shown"


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def _standing(data: Path, **values: Any) -> dict[str, Any]:
    """Bob's lamp as a reader face configured so reads it: by name (tier, last use, pin)
    and by search (tier, score)."""
    async with Client(server_for(data, face="reader", **values)) as reader:
        found = (await call_ok(reader, "find_by_name", {"name": "bob lamp"}))["node"]
        hits = (await call_ok(reader, "search", {"query": "lamp", "include_cold": True}))["hits"]
    searched = {h["name"]: (h["tier"], h["score"]) for h in hits}
    return {
        "find": (found["tier"], found["last_used_at"], found["pinned"]),
        "search": searched.get("bob lamp"),
    }


async def test_a_hidden_session_s_pin_link_and_consultation_move_no_standing_shown(
    tmp_path: Path,
) -> None:
    data = tmp_path / "memory"
    async with Client(server_for(data)) as full:
        await call_ok(full, "advance_encounter", {"session_id": BOB, "purpose": "lamps"})
        lamp = {"type": "Concept", "name": "bob lamp", "description": "a lamp by the door"}
        await call_ok(full, "create_entities", {"session_id": BOB, "entities": [lamp]})
    before = await _standing(data, hide_loci=[ALICE])
    created = before["find"][1]
    assert before["find"] == ("hot", created, False) and before["search"][0] == "hot"
    async with Client(server_for(data)) as full:
        await call_ok(full, "advance_encounter", {"session_id": ALICE, "purpose": "hers"})
        wick = {"type": "Observation", "name": "alice wick", "description": "a wick"}
        await call_ok(full, "create_entities", {"session_id": ALICE, "entities": [wick]})
        await call_ok(
            full,
            "create_relations",
            {
                "session_id": ALICE,
                "relations": [{"source": "alice wick", "type": "GROUNDS", "target": "bob lamp"}],
            },
        )
        await call_ok(full, "find_by_name", {"name": "bob lamp", "session_id": ALICE})
        await call_ok(full, "pin_entities", {"session_id": ALICE, "refs": ["bob lamp"]})
    assert await _standing(data, hide_loci=[ALICE]) == before
    shown = await _standing(data)
    assert shown["find"][2] is True and shown["find"][1] > created
    assert shown["search"][0] == "hot"
