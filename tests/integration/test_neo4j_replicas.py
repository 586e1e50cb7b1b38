"""Three servers on one Neo4j database behind a load balancer: a session's calls land on
any replica, a replica dies mid-session, and nothing is lost (issue #15).

The load balancer is round-robin per request; with ``--http-sessions stateless`` no
request depends on the replica that answered the one before it.
"""

from __future__ import annotations

import contextlib
import itertools
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import RunningServer, run_server
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri
from tests.support.handles import signed

pytestmark = pytest.mark.neo4j

SESSION = "7c1d-replicated-session"
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _result(answer: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC result of a response sent as JSON or as one server-sent event."""
    assert answer.status_code == 200, answer.text
    body = answer.text
    if "text/event-stream" in answer.headers.get("content-type", ""):
        body = next(line[5:] for line in body.splitlines() if line.startswith("data:"))
    message = json.loads(body)
    assert "error" not in message, message
    return message["result"]


def _post(url: str, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """A tool call's result and its text, the arguments sent as given."""
    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    result = _result(httpx.post(url, json=request, headers=HEADERS, timeout=30))
    return result, " ".join(c.get("text", "") for c in result["content"])


def _call(url: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result, text = _post(url, name, signed(arguments))
    assert not result.get("isError"), f"{name} on {url}: {text}"
    return result["structuredContent"]


def _refusal(url: str, name: str, arguments: dict[str, Any]) -> str:
    """The text of a tool call that must be refused."""
    result, text = _post(url, name, arguments)
    assert result.get("isError"), f"{name} on {url} was served: {text}"
    return text


def _replicas(
    stack: contextlib.ExitStack, where: Path, count: int, *, test_key: bool = True
) -> list[RunningServer]:
    """``count`` stateless servers of the test Neo4j's memory, as behind a balancer."""
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), "--http-sessions", "stateless"]
    env = {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}
    return [
        stack.enter_context(run_server(where / str(i), *args, env=env, test_key=test_key))
        for i in range(count)
    ]


def test_a_session_spread_over_three_replicas_loses_nothing(
    neo4j_store: Any, tmp_path: Path
) -> None:
    with contextlib.ExitStack() as stack:
        replicas = _replicas(stack, tmp_path, 3)
        balancer = itertools.cycle([r.url for r in replicas])
        opened = _call(
            next(balancer), "advance_encounter", {"session_id": SESSION, "purpose": "lb"}
        )
        assert opened["encounter"]["name"] == "E1"
        names = [f"note {i}" for i in range(9)]
        for name in names:  # each write lands on the next replica
            entity = {"type": "Note", "name": name, "description": f"written as {name}"}
            _call(next(balancer), "create_entities", {"session_id": SESSION, "entities": [entity]})
        replicas[1].proc.kill()  # a replica dies between two calls of the session
        replicas[1].proc.wait(timeout=10)
        alive = itertools.cycle([replicas[0].url, replicas[2].url])
        _call(
            next(alive),
            "create_relations",
            {
                "session_id": SESSION,
                "relations": [{"source": "note 0", "type": "INFORMS", "target": "note 1"}],
            },
        )
        found = _call(next(alive), "search", {"query": "written as note"})
        assert len(found["hits"]) >= 5
        sealed = _call(
            next(alive), "close_encounter", {"session_id": SESSION, "summary": "spread out"}
        )
        assert sealed
    held = neo4j_store.read(
        lambda tx: (tx.head_ids_by_names(names), tx.get_encounter("E1"), tx.clock())
    )
    heads, encounter, clock = held
    assert sorted(heads) == sorted(names)
    assert encounter is not None and encounter.sealed_at is not None
    assert clock == 1 + len(names) + 1 + 1  # open, nine writes, the relation, the seal


def test_a_handle_one_replica_signed_under_another_key_is_refused_naming_the_key(
    neo4j_store: Any, tmp_path: Path
) -> None:
    # Replicas started without one shared key each mint their own: the handle the first
    # gave is refused by the second, which must say why, not only "pass it as given".
    with contextlib.ExitStack() as stack:
        one, two = _replicas(stack, tmp_path, 2, test_key=False)
        opened, _ = _post(one.url, "advance_encounter", {"session_id": SESSION, "purpose": "keys"})
        given = opened["structuredContent"]["handle"]
        entities = [{"type": "Note", "name": "x"}]
        text = _refusal(two.url, "create_entities", {"session_id": given, "entities": entities})
        assert "KENNING_ENCOUNTER_SESSION_KEY" in text, text
        assert f"kenning-encounter handle {SESSION}" in text, text


def test_a_projection_asked_of_a_replica_that_did_not_make_it_says_where_it_is(
    neo4j_store: Any, tmp_path: Path
) -> None:
    # A projection lives in the process that made it: behind a balancer the next gds_
    # call may reach another replica, which must say so, not only "create it".
    with contextlib.ExitStack() as stack:
        one, two = _replicas(stack, tmp_path, 2)
        _call(one.url, "advance_encounter", {"session_id": SESSION, "purpose": "ranks"})
        concepts = [{"type": "Concept", "name": n} for n in ("tide", "moon")]
        _call(one.url, "create_entities", {"session_id": SESSION, "entities": concepts})
        link = {"source": "moon", "type": "INFORMS", "target": "tide"}
        _call(one.url, "create_relations", {"session_id": SESSION, "relations": [link]})
        _call(one.url, "gds_create_projection", {"name": "tides"})
        for tool in ("gds_pagerank", "gds_drop_projection"):
            text = _refusal(two.url, tool, {"name": "tides"})
            assert "held by the server process that made it" in text, text
            assert "Mcp-Session-Id" in text, text
        assert _call(one.url, "gds_pagerank", {"name": "tides"})  # where it was made
