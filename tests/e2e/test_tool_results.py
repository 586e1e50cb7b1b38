"""What the model reads: every tool's structured result, through a real MCP client.

Claude Code hands the model a tool's structuredContent as JSON, not its text
block, so that JSON is what the size limits must bound and what must carry no
repetition. Measured as ``bench.tool_chars`` measures it: compact JSON.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from bench.keyring import Keyring
from bench.tool_chars import calls, seed, wire_json
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from tests.e2e.conftest import ALL_TOOLS, call_ok, make_settings

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

NODES = 150


@asynccontextmanager
async def seeded(tmp_path: Path, **settings: Any) -> AsyncGenerator[tuple[Client, list[str]]]:
    config = make_settings(tmp_path / "memory", **settings)
    async with Client(build_server(config, Runtime(config))) as client:
        yield client, await seed(client, NODES)


def repeats(value: Any, inherited: dict[str, str] | None = None, path: str = "") -> list[str]:
    """Places where the JSON says one thing twice: two fields of one object with the
    same text, or a nested object repeating a field its parent already holds."""
    found: list[str] = []
    inherited = inherited or {}
    if isinstance(value, dict):
        obj = cast(dict[str, Any], value)
        texts = {k: v for k, v in obj.items() if isinstance(v, str) and len(v) >= 8}
        seen: dict[str, str] = {}
        for key, text in texts.items():
            if text in seen:
                found.append(f"{path}: {key} repeats {seen[text]}")
            seen[text] = key
        for key, text in obj.items():
            if isinstance(text, str) and inherited.get(key) == text:
                found.append(f"{path}.{key} repeats its parent's {key}")
        scalars = {k: v for k, v in obj.items() if isinstance(v, str)}
        for key, child in obj.items():
            found += repeats(child, scalars, f"{path}.{key}")
    elif isinstance(value, list):
        for i, item in enumerate(cast(list[Any], value)):
            found += repeats(item, inherited, f"{path}[{i}]")
    return found


def nulls(value: Any, path: str = "") -> list[str]:
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in cast(dict[str, Any], value).items() for p in nulls(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(cast(list[Any], value)) for p in nulls(v, f"{path}[{i}]")]
    return []


async def every_result(client: Client, names: list[str]) -> dict[str, tuple[str, Any]]:
    results: dict[str, tuple[str, Any]] = {}
    keyring = Keyring()
    for tool, arguments in calls(names):
        result = await keyring.call(client, tool, arguments)
        text = "".join(getattr(c, "text", "") for c in result.content)
        assert not result.is_error, f"{tool} failed: {text}"
        assert text.strip(), f"{tool} lost its text view"
        results[tool] = (text, result.structured_content)
    return results


async def test_no_result_says_a_thing_twice_or_sends_an_empty_field(tmp_path: Path) -> None:
    async with seeded(tmp_path) as (client, names):
        results = await every_result(client, names)
    assert set(results) == ALL_TOOLS
    for tool, (text, sent) in results.items():
        assert isinstance(sent, dict), tool
        assert repeats(sent) == [], tool
        if len(text) > 200:  # a text view kept on the result would be sent twice
            assert text not in wire_json(sent), f"{tool} sends its text view inside the JSON"
        # A null is sent only where it means something of its own (drift: "unranked").
        allowed = ("drift",) if tool == "orient" else ()
        assert [p for p in nulls(sent) if not p.startswith(tuple(f".{a}" for a in allowed))] == []
        assert "" not in sent.values() or tool == "infuse", f"{tool} sends an empty default"


async def test_the_limits_bound_the_json_the_model_reads(tmp_path: Path) -> None:
    async with seeded(tmp_path, cypher_char_cap=1_000) as (client, names):
        for budget in (8_000, 2_000):
            panel = await call_ok(client, "orient", {"budget_chars": budget})
            assert len(wire_json(panel)) <= budget
        assert "text" not in panel
        trace = await call_ok(client, "trace_provenance", {"ref": names[0], "depth": 10})
        assert len(wire_json(trace)) <= 8_000
        if "grounding_total" in trace:  # cut: it says so, and shows no dangling edge
            shown = {trace["node"]["id"], *(n["id"] for n in trace["grounding"])}
            assert all(e["source"] in shown and e["target"] in shown for e in trace["edges"])
            assert trace["grounding_total"] > len(trace["grounding"])
        rows = await call_ok(
            client, "read_cypher", {"query": "MATCH (n) RETURN n.name, n.description LIMIT 400"}
        )
        assert len(wire_json(rows)) <= 1_000
        assert rows["truncated"] is True and rows["char_cap"] == 1_000 and rows["note"]
        infused = await call_ok(
            client, "infuse", {"session_id": "reader", "prompt": "retry storm at the gateway"}
        )
        assert len(wire_json(infused)) <= 4_000  # the default infusion budget
        assert set(infused) == {"payload", "status", "meta"}
