"""MCP sessions over HTTP: kept in the process (stateful, the default), or none at all
(stateless), so that any replica behind a load balancer can answer any request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.e2e.conftest import SESSION, call_ok, run_server

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _rpc(method: str, params: dict[str, Any], ident: int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def _initialize() -> dict[str, Any]:
    return _rpc(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "lb-test", "version": "0"},
        },
    )


def test_a_stateless_server_answers_a_request_that_carries_no_session(tmp_path: Path) -> None:
    with run_server(tmp_path / "m", "--http-sessions", "stateless") as running:
        init = httpx.post(running.url, json=_initialize(), headers=HEADERS, timeout=10)
        assert init.status_code == 200 and "mcp-session-id" not in init.headers
        call = httpx.post(
            running.url,
            json=_rpc("tools/call", {"name": "list_vocabulary", "arguments": {}}, 2),
            headers=HEADERS,
            timeout=10,
        )
        assert call.status_code == 200, call.text
        assert '"isError":false' in call.text.replace(" ", "")


def test_a_stateful_server_wants_the_session_it_handed_out(tmp_path: Path) -> None:
    with run_server(tmp_path / "m") as running:
        init = httpx.post(running.url, json=_initialize(), headers=HEADERS, timeout=10)
        assert init.status_code == 200 and init.headers.get("mcp-session-id")
        call = httpx.post(
            running.url,
            json=_rpc("tools/call", {"name": "list_vocabulary", "arguments": {}}, 2),
            headers=HEADERS,
            timeout=10,
        )
        assert call.status_code == 400  # another replica would answer like this
        stranger = {**HEADERS, "mcp-session-id": "not-one-of-ours"}
        other = httpx.post(
            running.url,
            json=_rpc("tools/call", {"name": "list_vocabulary", "arguments": {}}, 3),
            headers=stranger,
            timeout=10,
        )
        assert other.status_code == 404


async def test_a_real_client_works_the_encounter_cycle_on_a_stateless_server(
    tmp_path: Path,
) -> None:
    with run_server(tmp_path / "m", "--http-sessions", "stateless") as running:
        async with Client(running.url) as client:
            opened = await call_ok(
                client, "advance_encounter", {"session_id": SESSION, "purpose": "lb"}
            )
            assert opened["encounter"]["name"] == "E1"
            made = await call_ok(
                client,
                "create_entities",
                {"session_id": SESSION, "entities": [{"type": "Note", "name": "n1"}]},
            )
            assert made["created"][0]["name"] == "n1"


def test_the_log_shows_a_session_id_cut_to_its_first_characters(tmp_path: Path) -> None:
    # The id is what lets a client act in the session over HTTP; the SDK logs it at INFO
    # when the session opens and when it ends.
    with run_server(tmp_path / "m") as running:
        init = httpx.post(running.url, json=_initialize(), headers=HEADERS, timeout=10)
        sid = init.headers["mcp-session-id"]
        ended = httpx.delete(running.url, headers={**HEADERS, "mcp-session-id": sid}, timeout=10)
        assert ended.status_code == 200, ended.text
        running.proc.terminate()
        running.proc.wait(15)
    told = [line for line in running.lines if sid[:6] + "…" in line]
    assert len(told) >= 2, running.stderr  # opened, ended: the operator still sees both
    assert sid not in running.stderr, "a session id was logged whole"
