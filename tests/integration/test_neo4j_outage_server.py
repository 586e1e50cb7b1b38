"""A real ``kenning-encounter serve`` on Neo4j, through a relay that hangs (what SIGSTOP
does to the server) then recovers: every tool and the hook's endpoint answer in seconds,
naming the server, and the same process serves again once Neo4j answers."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from kenning_encounter.store.neo4j import Neo4jStore
from tests.e2e.conftest import SESSION, call_ok, run_server
from tests.integration.test_neo4j_outage import PROMPT_S, Relay, relay_to_test_server
from tests.support.backends import neo4j_target
from tests.support.handles import handle, signed

pytestmark = [pytest.mark.neo4j, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def relay(neo4j_store: Neo4jStore) -> Iterator[Relay]:
    """A relay to the (emptied) test server."""
    with relay_to_test_server() as relayed:
        yield relayed


async def _timed(client: Client, name: str, arguments: dict[str, Any]) -> tuple[float, str, bool]:
    started = time.monotonic()
    with anyio.fail_after(60):  # without the watch a write waits for ever: fail, never hang
        result = await client.call_tool(name, signed(arguments))
    text = " ".join(getattr(c, "text", "") for c in result.content)
    return time.monotonic() - started, text, result.is_error


def _infuse(base: str) -> tuple[float, dict[str, Any]]:
    started = time.monotonic()
    answer = httpx.post(
        f"{base}/infuse",
        json={"session_id": handle(SESSION), "prompt": "the retry storm", "trajectory": []},
        timeout=60,
    )
    assert answer.status_code == 200, answer.text
    return time.monotonic() - started, answer.json()


async def test_a_hung_neo4j_is_answered_in_seconds_by_every_call_and_then_served_again(
    relay: Relay, tmp_path: Path
) -> None:
    t = neo4j_target()
    args = ["--store", "neo4j", "--neo4j-uri", relay.uri]
    env = {"NEO4J_USERNAME": t.username, "NEO4J_PASSWORD": t.password}
    with run_server(tmp_path / "srv", *args, env=env, startup=60) as server:
        async with Client(server.url) as client:
            await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "x"})
            storm = {"type": "Observation", "name": "retry storm", "description": "It retries."}
            await call_ok(client, "create_entities", {"session_id": SESSION, "entities": [storm]})
            relay.freeze()
            try:
                during = {"type": "Note", "name": "during", "description": "lost"}
                for name, arguments, write in (
                    ("create_entities", {"session_id": SESSION, "entities": [during]}, True),
                    ("search", {"query": "retry storm"}, False),
                    ("find_by_name", {"name": "retry storm"}, False),
                    ("orient", {}, False),
                    ("read_cypher", {"query": "MATCH (n:Note) RETURN n.name"}, False),
                ):
                    took, text, failed = await _timed(client, name, arguments)
                    assert failed, f"{name} answered as if Neo4j were there: {text}"
                    assert took < PROMPT_S, f"{name} took {took:.1f} s on a hung Neo4j"
                    assert f"Neo4j at {relay.uri} is not answering" in text, text
                    assert ("Nothing of this write was applied" in text) == write, text
                    assert t.password not in text
                took, infused = _infuse(server.base)
                assert took < PROMPT_S, f"/infuse took {took:.1f} s on a hung Neo4j"
                assert infused["status"] == "failed" and infused["meta"]["degraded"]
                # The hook is told why, in the store's words; the log says it in one line.
                reason = infused["meta"]["degraded_reason"]
                assert f"Neo4j at {relay.uri} is not answering" in reason, reason
                assert "Traceback" not in server.stderr, server.stderr
            finally:
                relay.thaw()
            # The same process, unrestarted.
            after = {"type": "Note", "name": "after", "description": "kept"}
            await call_ok(client, "create_entities", {"session_id": SESSION, "entities": [after]})
            rows = await call_ok(client, "read_cypher", {"query": "MATCH (n:Note) RETURN n.name"})
            assert rows["rows"] == [["after"]]
            _, infused = _infuse(server.base)
            assert infused["status"] != "failed", infused
