"""chain_history and conflicts through a real MCP client: their answers, their refusals (in
our words, nothing written), the reader face serving both, and a hidden locus leaking
through neither."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import call_ok, call_refused, make_settings
from tests.e2e.test_tool_results import nulls, repeats
from tests.support.snapshot import snapshot

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

ALICE, BOB = "session-alice-history", "session-bob-history"


def server_for(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    return build_server(settings, Runtime(settings))


async def _revise(client: Client, session: str, name: str, text: str, why: str) -> str:
    created = await call_ok(
        client,
        "create_entities",
        {
            "session_id": session,
            "entities": [
                {
                    "type": "Hypothesis",
                    "name": name,
                    "description": text,
                    "supersedes": name,
                    "revision_why": why,
                }
            ],
        },
    )
    return str(created["created"][0]["id"])


async def _record(data_dir: Path) -> dict[str, str]:
    """Bob writes a hypothesis and revises it; Alice revises it once more (her secret
    reason) and challenges it; a question gets two answers from Bob. The ids by role."""
    ids: dict[str, str] = {}
    async with Client(server_for(data_dir)) as client:
        await call_ok(client, "advance_encounter", {"session_id": BOB, "purpose": "bob"})
        made = await call_ok(
            client,
            "create_entities",
            {
                "session_id": BOB,
                "entities": [
                    {"type": "Hypothesis", "name": "lantern oil", "description": "whale oil"},
                    {"type": "Observation", "name": "soot marks", "description": "black soot"},
                    {"type": "Question", "name": "which oil", "description": "which one?"},
                    {"type": "Observation", "name": "oil receipt", "description": "a receipt"},
                    {"type": "Concept", "name": "lantern trade", "description": "the trade"},
                ],
            },
        )
        ids["v1"] = made["created"][0]["id"]
        ids["v2"] = await _revise(client, BOB, "lantern oil", "olive oil", "bob's soot test")
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": BOB,
                "relations": [
                    {"source": "soot marks", "type": "RESOLVES", "target": "which oil"},
                    {"source": "oil receipt", "type": "RESOLVES", "target": "which oil"},
                    {"source": "lantern oil", "type": "INFORMS", "target": "lantern trade"},
                    {"source": "soot marks", "type": "SUPPORTS", "target": "lantern oil"},
                ],
            },
        )
        await call_ok(client, "advance_encounter", {"session_id": ALICE, "purpose": "alice"})
        ids["v3"] = await _revise(
            client, ALICE, "lantern oil", "alice secret tallow", "alice secret reason"
        )
        await call_ok(
            client,
            "create_entities",
            {
                "session_id": ALICE,
                "entities": [
                    {"type": "Observation", "name": "alice secret smell", "description": "x"}
                ],
            },
        )
        await call_ok(
            client,
            "create_relations",
            {
                "session_id": ALICE,
                "relations": [
                    {"source": "alice secret smell", "type": "CHALLENGES", "target": ids["v2"]},
                ],
            },
        )
    return ids


async def test_chain_history_and_conflicts_answer_through_a_client(tmp_path: Path) -> None:
    ids = await _record(tmp_path / "memory")
    async with Client(server_for(tmp_path / "memory")) as client:
        result = await client.call_tool("chain_history", {"node": ids["v2"]})
        assert not result.is_error
        h = result.structured_content
        assert isinstance(h, dict)
        assert [v["id"] for v in h["versions"]] == [ids["v1"], ids["v2"], ids["v3"]]
        assert h["head"] == ids["v3"] and h["asked"] == ids["v2"]
        assert [v.get("revision_why") for v in h["versions"]] == [
            None,
            "bob's soot test",
            "alice secret reason",
        ]
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert ids["v1"] in text and "bob's soot test" in text and "[head]" in text

        found = await call_ok(client, "conflicts", {})
        by_name = {c["name"]: c for c in found["conflicts"]}
        # v2 is no head any more: Alice's challenge of it is no open conflict; but her
        # revision v3 left behind the support v2 had.
        assert set(by_name) == {"which oil", "lantern oil"}
        assert by_name["which oil"]["kinds"] == ["competing answers"]
        oil = by_name["lantern oil"]
        assert (oil["id"], oil["kinds"], oil["revises"]) == (
            ids["v3"],
            ["revision lost support"],
            ids["v2"],
        )
        assert [p["name"] for p in oil["lost_support"]] == ["soot marks"]
        # What the model reads says nothing twice and sends no null (as every tool's result).
        for sent in (h, found):
            assert repeats(sent) == [] and nulls(sent) == []
        listed = " ".join(
            getattr(c, "text", "") for c in (await client.call_tool("conflicts", {})).content
        )
        assert "competing answers" in listed and "lost support of" in listed


async def test_refusals_name_the_field_and_write_nothing(tmp_path: Path) -> None:
    await _record(tmp_path / "memory")
    before = snapshot_of(tmp_path)
    async with Client(server_for(tmp_path / "memory")) as client:
        cases = [
            ("chain_history", {}, "node"),
            ("chain_history", {"node": ""}, "node"),
            ("chain_history", {"node": "no such lantern"}, "node must name or id"),
            ("chain_history", {"node": "lantern oil", "depth": 3}, "depth"),
            ("conflicts", {"kinds": ["rivalry"]}, "kinds[0]"),
            ("conflicts", {"types": ["Lantern"]}, "types[0]"),
            ("conflicts", {"limit": 0}, "limit"),
            ("conflicts", {"about": "no such lantern"}, "about must name or id"),
            ("conflicts", {"kind": ["challenges"]}, "kind"),
        ]
        for tool, arguments, field in cases:
            message = await call_refused(client, tool, arguments)
            assert field in message, (tool, arguments, message)
            assert "validation error" not in message and "pydantic" not in message
    assert snapshot_of(tmp_path) == before


def snapshot_of(tmp_path: Path) -> Any:
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    store = EmbeddedStore.open(tmp_path / "memory")
    try:
        return snapshot(store)
    finally:
        store.close()


async def test_the_reader_face_serves_both_and_hides_a_hidden_locus(tmp_path: Path) -> None:
    ids = await _record(tmp_path / "memory")
    async with Client(server_for(tmp_path / "memory", face="reader", hide_loci=[ALICE])) as reader:
        # The registry gives the name to Alice's head; to this reader it names Bob's newest
        # version, which carries it, as find_by_name reads it: the same chain as by its id.
        for ref in ("lantern oil", ids["v2"]):
            h = await call_ok(reader, "chain_history", {"node": ref})
            sent = json.dumps(h)
            assert [v["id"] for v in h["versions"]] == [ids["v1"], ids["v2"]]
            assert "alice secret" not in sent and ids["v3"] not in sent and "head" not in h
        result = await reader.call_tool("chain_history", {"node": ids["v1"]})
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert "alice secret" not in text and ids["v3"] not in text
        assert "no node" in await call_refused(reader, "chain_history", {"node": ids["v3"]})
        found = await call_ok(reader, "conflicts", {})
        assert [c["name"] for c in found["conflicts"]] == ["which oil"]
        assert "alice secret" not in json.dumps(found)
    async with Client(server_for(tmp_path / "memory", face="reader")) as unhidden:
        h = await call_ok(unhidden, "chain_history", {"node": "lantern oil"})
        assert "alice secret" in json.dumps(h)  # hiding, not absence, kept it out above
