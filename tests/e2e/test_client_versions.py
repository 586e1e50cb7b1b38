"""The server as clients pinned to each protocol version see it, over stdio and HTTP.

The official TypeScript client proposes its latest version; a host built on an older
release proposes an older one, which the client's driver here stands in for
(tests/clients/drive.mjs, ``version``). The Python SDK's ``Client`` connects in the
handshake era or the 2026 one (``mode``). Each lists, reads the manual and searches;
over stdio each launch is made twice, so the second is answered by the quick start
from what the first kept for that version (server/front.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.e2e.conftest import clean_environ, run_server, server_command
from tests.e2e.test_ts_client import drive, of, one, require_client, stdio_config

pytestmark = [pytest.mark.usefixtures("clean_env")]

# What the TypeScript client 1.32.2 knows, and what the server answers each with.
PROPOSED = {
    "2024-10-07": "2025-11-25",  # a version the server does not speak: it offers its latest
    "2024-11-05": "2024-11-05",
    "2025-03-26": "2025-03-26",
    "2025-06-18": "2025-06-18",
    "2025-11-25": "2025-11-25",
}


def _served(records: list[dict[str, Any]], negotiated: str) -> list[str]:
    """The tools listed, once every step went well at ``negotiated``."""
    assert one(records, "connected")["protocol"] == negotiated
    listed = {r["kind"]: r for r in of(records, "listed")}
    assert all(r["ok"] for r in listed.values()), listed
    assert listed["resources"]["read"][0]["chars"] > 1000
    assert not [r for r in of(records, "schema") if not r["ok"]]
    search = one(records, "call")
    assert search["ok"] and search["validated"], search
    assert one(records, "done")["errors"] == []
    return listed["tools"]["names"]


def test_the_typescript_client_at_each_version_over_stdio(tmp_path: Path) -> None:
    require_client()
    home = tmp_path / "home"
    tools: set[tuple[str, ...]] = set()
    for launch in ("first", "quick start"):
        for proposed, negotiated in PROPOSED.items():
            config = stdio_config(tmp_path / "memory", "versions", only="listings")
            records = drive({**config, "version": proposed}, home=home)
            tools.add(tuple(_served(records, negotiated)))
            assert one(records, "done")["exit"] == {"code": 0, "signal": None}, (launch, proposed)
    assert len(tools) == 1
    [kept] = (home / ".cache" / "kenning-encounter" / "quick-start").glob("*.json")
    answers = json.loads(kept.read_text(encoding="utf-8"))["answers"]
    assert len([k for k in answers if k.startswith("legacy initialize ")]) == len(PROPOSED)


def test_the_typescript_client_at_each_version_over_http(tmp_path: Path) -> None:
    require_client()
    with run_server(tmp_path / "memory") as server:
        tools = {
            tuple(
                _served(
                    drive(
                        {
                            "transport": "http",
                            "url": server.url,
                            "session": "v",
                            "only": "listings",
                            "version": proposed,
                        }
                    ),
                    negotiated,
                )
            )
            for proposed, negotiated in PROPOSED.items()
        }
    assert len(tools) == 1


async def _python_client(target: Any, mode: str) -> tuple[str | None, list[str]]:
    async with Client(target, mode=mode) as client:
        tools = [t.name for t in (await client.list_tools()).tools]
        manual = await client.read_resource("kenning-encounter://howto")
        assert sum(len(getattr(c, "text", "")) for c in manual.contents) > 1000
        found = await client.call_tool("search", {"query": "retry"})
        assert not found.is_error, found
        return client.session.protocol_version, tools


MODES = {"legacy": "2025-11-25", "auto": "2026-07-28", "2026-07-28": "2026-07-28"}


@pytest.mark.anyio
async def test_the_python_client_in_each_era_over_stdio_and_http(tmp_path: Path) -> None:
    from mcp import StdioServerParameters

    command = server_command(
        "serve", "--transport", "stdio", "--data-dir", str(tmp_path / "stdio"), "--matcher", "off"
    )
    env = clean_environ(KENNING_ENCOUNTER_CACHE_DIR=str(tmp_path / "cache"))
    stdio = StdioServerParameters(command=command[0], args=command[1:], env=env)
    tools: set[tuple[str, ...]] = set()
    for _ in ("first", "quick start"):
        for mode, version in MODES.items():
            spoken, listed = await _python_client(stdio, mode)
            assert spoken == version, mode
            tools.add(tuple(listed))
    with run_server(tmp_path / "http") as server:
        for mode, version in MODES.items():
            spoken, listed = await _python_client(server.url, mode)
            assert spoken == version, mode
            tools.add(tuple(listed))
    assert len(tools) == 1
