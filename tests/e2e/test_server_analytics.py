"""orient, the focused projection tools and infuse through a real MCP client session."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import SESSION, call_ok, call_refused, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]


def _client(data_dir: Path) -> Client:
    settings = make_settings(data_dir)
    return Client(build_server(settings, Runtime(settings)))


async def _record(client: Client) -> None:
    await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "deploys"})
    await call_ok(
        client,
        "create_entities",
        {
            "session_id": SESSION,
            "entities": [
                {
                    "type": "Observation",
                    "name": "retry storm",
                    "description": "Deploys set off a retry storm.",
                },
                {
                    "type": "Observation",
                    "name": "cpu spike",
                    "description": "CPU spikes during the storm.",
                },
                {
                    "type": "Concept",
                    "name": "lockstep retries",
                    "description": "Clients retry in lockstep.",
                },
                {
                    "type": "Question",
                    "name": "why deploys",
                    "description": "Why do deploys trigger it?",
                },
                {
                    "type": "Hypothesis",
                    "name": "cache flush",
                    "description": "Deploys flush the cache.",
                },
            ],
        },
    )
    await call_ok(
        client,
        "create_relations",
        {
            "session_id": SESSION,
            "relations": [
                {"source": "retry storm", "type": "GROUNDS", "target": "lockstep retries"},
                {"source": "cpu spike", "type": "GROUNDS", "target": "lockstep retries"},
                {"source": "lockstep retries", "type": "RAISES", "target": "why deploys"},
                {"source": "retry storm", "type": "SUPPORTS", "target": "cache flush"},
            ],
        },
    )


async def test_orient_on_an_empty_memory_is_a_useful_answer(tmp_path: Path) -> None:
    async with _client(tmp_path / "m") as client:
        result = await call_ok(client, "orient", {})
        text = result["guide"]
        assert "advance_encounter" in text or "nothing" in text.lower()


async def test_orient_on_a_small_memory(tmp_path: Path) -> None:
    async with _client(tmp_path / "m") as client:
        await _record(client)
        panel = await call_ok(client, "orient", {"session_id": SESSION})
        sent = json.dumps(panel, separators=(",", ":"), ensure_ascii=False)
        assert "lockstep retries" in sent
        assert len(sent) <= 8_000
        assert "why deploys" in json.dumps(panel["frontier"])  # the frontier is always shown


async def test_two_orient_calls_at_once(tmp_path: Path) -> None:
    async with _client(tmp_path / "m") as client:
        await _record(client)
        results: list[str] = []

        async def one() -> None:
            results.append(json.dumps(await call_ok(client, "orient", {}), sort_keys=True))

        async with anyio.create_task_group() as tg:
            tg.start_soon(one)
            tg.start_soon(one)
        assert len(results) == 2 and results[0] == results[1]


async def test_focused_projection_lifecycle(tmp_path: Path) -> None:
    async with _client(tmp_path / "m") as client:
        refused = await call_refused(client, "gds_create_projection", {"name": "empty"})
        assert "no nodes yet" in refused and "create_entities" in refused
        await _record(client)
        info = await call_ok(client, "gds_create_projection", {"name": "work"})
        assert info["nodes"] == 5 and info["edges"] == 4
        for algorithm in ("pagerank", "articlerank", "betweenness", "leiden", "wcc"):
            report = await call_ok(client, f"gds_{algorithm}", {"name": "work", "top_k": 3})
            assert report["algorithm"] == algorithm and report["engine"]
        await call_ok(client, "gds_drop_projection", {"name": "work"})
        assert "work" in await call_refused(client, "gds_pagerank", {"name": "work"})


async def test_infuse_through_mcp(tmp_path: Path) -> None:
    async with _client(tmp_path / "m") as client:
        await _record(client)
        first = await call_ok(
            client, "infuse", {"session_id": "reader", "prompt": "the retry storm after deploys"}
        )
        assert "retry storm" in first["payload"]
        assert first["meta"]["channel"] == "lexical"
        second = await call_ok(
            client, "infuse", {"session_id": "reader", "prompt": "the retry storm after deploys"}
        )
        assert "STANDING" in second["payload"].upper()
        silent = await call_ok(
            client, "infuse", {"session_id": "reader", "prompt": "rename this variable"}
        )
        assert silent["payload"] == ""
        diag = await call_ok(client, "infuse_meaning", {"prompt": "the retry storm"})
        assert diag["available"] is False and "off" in diag["reason"]
