"""A whole encounter through a real MCP client, over every transport.

in-memory: mcp.Client drives the server object in process. stdio: the CLI as
a subprocess speaking JSON-RPC on its stdin/stdout. streamable-http: the CLI
as a subprocess on a free loopback port. Each lists the tools and runs
advance -> record -> link -> supersede -> search -> trace -> close on a real
embedded store.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.manual import HOWTO_URI
from tests.e2e.conftest import (
    ALL_TOOLS,
    SESSION,
    call_ok,
    call_refused,
    clean_environ,
    make_settings,
    run_server,
    server_command,
)

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]


@asynccontextmanager
async def connect(transport: str, data_dir: Path) -> AsyncGenerator[Client]:
    if transport == "in-memory":
        settings = make_settings(data_dir)
        async with Client(build_server(settings, Runtime(settings))) as client:
            yield client
    elif transport == "stdio":
        cmd = server_command(
            "serve", "--transport", "stdio", "--data-dir", str(data_dir), "--matcher", "off"
        )
        params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=clean_environ())
        async with Client(params) as client:
            yield client
    elif transport == "sse":
        with run_server(data_dir, "--transport", "sse") as running:
            assert running.url.endswith("/mcp/sse")
            async with Client(sse_client(running.url)) as client:
                yield client
    else:
        with run_server(data_dir) as running:
            # The announcement a user copies from: where, which data, the exact claude line.
            assert running.url.startswith("http://127.0.0.1:") and running.url.endswith("/mcp/")
            assert f"data directory: {data_dir}" in running.stderr
            assert (
                f"claude mcp add --transport http kenning-encounter {running.url}" in running.stderr
            )
            async with Client(running.url) as client:
                yield client


@pytest.mark.parametrize("transport", ["in-memory", "stdio", "streamable-http", "sse"])
async def test_a_whole_encounter(transport: str, tmp_path: Path) -> None:
    async with connect(transport, tmp_path / "memory") as client:
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
        assert "kenning-encounter://howto" in (client.instructions or "")
        howto = await client.read_resource(HOWTO_URI)
        assert "<howto" in getattr(howto.contents[0], "text", "")

        opened = await call_ok(
            client, "advance_encounter", {"session_id": SESSION, "purpose": "why do deploys fail"}
        )
        encounter = opened["encounter"]["name"]
        assert opened["encounter"]["state"] == "open"
        assert opened.get("previous") is None

        created = await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {
                        "type": "Observation",
                        "name": "retry storm",
                        "description": "Deploys at nine set off a retry storm against auth.",
                        "t_observed": "2026-11-02T09:00:00Z",
                    },
                    {
                        "type": "Hypothesis",
                        "name": "cron overlap",
                        "description": "A cron job overlaps the deploy window.",
                    },
                    {
                        "type": "Question",
                        "name": "why nine",
                        "description": "Why do the storms start at nine?",
                    },
                    {
                        "type": "Concept",
                        "name": "backoff",
                        "description": "Clients retry in lockstep without backoff.",
                    },
                    {
                        "type": "Component",
                        "name": "retry.py",
                        "source_kind": "file",
                        "source_label": "auth-service",
                        "source_key": "src/retry.py",
                    },
                ],
            },
        )
        assert created["encounter"] == encounter
        assert {n["name"] for n in created["created"]} == {
            "retry storm",
            "cron overlap",
            "why nine",
            "backoff",
            "retry.py",
        }
        old_backoff = next(n["id"] for n in created["created"] if n["name"] == "backoff")

        related = await call_ok(
            client,
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [
                    {"source": "retry storm", "type": "SUPPORTS", "target": "cron overlap"},
                    {"source": "retry storm", "type": "GROUNDS", "target": "backoff"},
                    {"source": "retry storm", "type": "RAISES", "target": "why nine"},
                    {"source": "retry storm", "type": "OBSERVED_AT", "target": "retry.py"},
                ],
            },
        )
        assert len(related["created"]) == 4
        assert [(c["name"], c["from"], c["to"]) for c in related["status_changes"]] == [
            ("cron overlap", "untested", "supported")
        ]

        revised = await call_ok(
            client,
            "create_entities",
            {
                "session_id": SESSION,
                "entities": [
                    {
                        "type": "Concept",
                        "name": "backoff",
                        "description": "Clients retry in lockstep: no jitter in their backoff.",
                        "supersedes": "backoff",
                        "revision_why": "it is the jitter that is missing",
                    }
                ],
            },
        )
        new_backoff = revised["created"][0]["id"]
        assert new_backoff != old_backoff

        lookup = await call_ok(client, "find_by_name", {"name": "backoff"})
        assert lookup["node"]["id"] == new_backoff
        assert [h["id"] for h in lookup["history"]] == [old_backoff]

        found = await call_ok(client, "search", {"query": "retry storm"})
        assert found["hits"][0]["name"] == "retry storm"
        heads = await call_ok(client, "search", {"query": "lockstep", "types": ["Concept"]})
        assert [h["id"] for h in heads["hits"]] == [new_backoff]

        trace = await call_ok(client, "trace_provenance", {"ref": "backoff"})
        assert trace["node"]["id"] == new_backoff
        assert "retry storm" in {n["name"] for n in trace["grounding"]}
        assert [r["id"] for r in trace["revisions"]] == [old_backoff]
        assert trace["recorded_in"]["name"] == encounter

        rows = await call_ok(
            client,
            "read_cypher",
            {
                "query": "MATCH (q:Question) WHERE q.name = $n RETURN q.status",
                "params": {"n": "why nine"},
            },
        )
        assert rows["rows"] == [["open"]]

        closed = await call_ok(
            client, "close_encounter", {"session_id": SESSION, "summary": "cron overlap supported"}
        )
        assert closed["encounter"]["name"] == encounter
        assert closed["encounter"]["state"] == "sealed"

        refusal = await call_refused(
            client,
            "create_entities",
            {"session_id": SESSION, "entities": [{"type": "Note", "name": "late"}]},
        )
        assert "sealed" in refusal and "advance_encounter" in refusal

        again = await call_ok(
            client,
            "advance_encounter",
            {"session_id": SESSION, "purpose": "the nine o'clock spike"},
        )
        assert again["previous"] == encounter
        assert "why nine" in {q["name"] for q in again["open_questions"]}


def test_stdio_announces_the_desktop_snippet_and_keeps_stdout_clean(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    done = subprocess.run(
        server_command(
            "serve", "--transport", "stdio", "--data-dir", str(data_dir), "--matcher", "off"
        ),
        input="",
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    start = done.stderr.index("{")
    snippet = json.JSONDecoder().raw_decode(done.stderr[start:])[0]
    entry = snippet["mcpServers"]["kenning-encounter"]
    assert entry["args"][-2:] == ["--data-dir", str(data_dir)]
    assert "--transport" in entry["args"] and "stdio" in entry["args"]
    assert sys.executable in entry["command"] or entry["command"].endswith("kenning-encounter")
