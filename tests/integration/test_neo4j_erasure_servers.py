"""An operator erases while servers keep serving one Neo4j memory: two real server
processes, the erasure run from the CLI beside them, and afterwards neither server's
search, infusion or read tools show the erased text, with no restart. (Each server drops
what it cached of node text when it reads the store's erasure count moved:
tests/contract/test_erasure_caches.py proves the caches go.)"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import run_server
from tests.integration.conftest import credentials
from tests.integration.test_neo4j_replicas import HEADERS, _call, _result
from tests.support.backends import neo4j_target, neo4j_uri
from tests.support.handles import signed

pytestmark = pytest.mark.neo4j

GONE = "zqxgone"  # in the erased node's name and description only
WRITER = "erasure-writer"
ROOT = Path(__file__).resolve().parents[2]


def _answer(url: str, name: str, arguments: dict[str, Any]) -> str:
    """A tool's whole answer as text, error or not, less the caller's own words echoed."""
    import httpx

    request = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": signed(arguments)},
    }
    result = _result(httpx.post(url, json=request, headers=HEADERS, timeout=30))
    answer = json.dumps(result)
    for value in arguments.values():
        answer = answer.replace(json.dumps(value)[1:-1], "")
    return answer


def _reads(url: str, session: str) -> list[str]:
    return [
        _answer(url, "search", {"query": f"{GONE} lantern", "limit": 50}),
        _answer(url, "infuse", {"session_id": session, "prompt": f"the {GONE} lantern at dusk"}),
        _answer(url, "find_by_name", {"name": f"{GONE} lantern"}),
        _answer(url, "read_cypher", {"query": "MATCH (n) RETURN n.name, n.description"}),
    ]


def _erase(ref: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    env |= neo4j_target().server_env() | {"KENNING_ENCOUNTER_STORE": "neo4j"}
    return subprocess.run(
        [sys.executable, "-m", "kenning_encounter", "erase", ref, "--yes", "--json"],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
        timeout=180,
        check=False,
    )


def test_servers_serving_through_an_erasure_show_nothing_of_it(
    neo4j_store: Any, tmp_path: Path
) -> None:
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), "--http-sessions", "stateless"]
    env = {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}
    with contextlib.ExitStack() as stack:
        one, two = (
            stack.enter_context(run_server(tmp_path / f"s{i}", *args, env=env)) for i in (1, 2)
        )
        _call(two.url, "advance_encounter", {"session_id": WRITER, "purpose": "lanterns"})
        entities = [
            {"type": "Note", "name": f"{GONE} lantern", "description": f"{GONE} words, a lantern"},
            {"type": "Note", "name": "plain lantern", "description": "a lantern at dusk"},
            {"type": "Note", "name": "kept lantern", "description": "the lantern stays lit"},
        ]
        _call(two.url, "create_entities", {"session_id": WRITER, "entities": entities})
        _call(two.url, "close_encounter", {"session_id": WRITER, "summary": "lanterns seen"})
        before = _reads(one.url, "reader-before")
        assert all(GONE in answer for answer in before), before  # served, and cached

        erased = _erase(f"{GONE} lantern")
        assert erased.returncode == 0, erased.stderr
        assert any("no restart needed" in s for s in json.loads(erased.stdout)["scrubbed"])

        for server in (one, two):
            after = _reads(server.url, "reader-after")
            assert not any(GONE in answer for answer in after), after
            assert server.proc.poll() is None  # the same processes, never restarted
        assert "kept lantern" in _reads(one.url, "reader-again")[0]
