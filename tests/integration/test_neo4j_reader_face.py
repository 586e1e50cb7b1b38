"""The reader face never writes on Neo4j either (DESIGN §3, invariant 10).

A real server process on the reader face serves the Neo4j memory; an encounter
is left open and the idle horizon is tiny, so a full face would dissolve it at
start. Every call a reader can make leaves the store's fingerprint as it was.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kenning_encounter.memory.service import Memory
from tests.e2e.conftest import call_ok, run_server
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri
from tests.support.hookfakes import hook_env, run_hook
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.neo4j

SESSION = "4e0f-reader-neo4j"


def _neo4j_args(*more: str) -> tuple[list[str], dict[str, str]]:
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), *more]
    return args, {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}


def test_the_reader_face_never_writes_on_neo4j(neo4j_store: Any, tmp_path: Path) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter(SESSION, "left open on purpose")
    memory.create_entities(
        SESSION,
        [{"type": "Observation", "name": "retry storm", "description": "Deploys retry."}],
    )
    before = snapshot(neo4j_store)

    async def read(url: str) -> None:
        async with Client(url) as client:
            await call_ok(client, "search", {"query": "retry storm"})
            await call_ok(client, "find_by_name", {"name": "retry storm"})
            await call_ok(client, "trace_provenance", {"ref": "retry storm"})
            await call_ok(client, "orient", {})

    args, env = _neo4j_args("--face", "reader", "--idle-horizon", "0.001")
    with run_server(tmp_path / "m", *args, env=env) as reader:
        base = reader.url.removesuffix("/mcp/")
        anyio.run(read, reader.url)
        hooks = hook_env(KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on")
        for mode, event in (
            ("session-start", {"session_id": SESSION, "source": "startup"}),
            ("prompt", {"session_id": SESSION, "prompt": "the retry storm", "transcript_path": ""}),
            ("session-end", {"session_id": SESSION}),
        ):
            assert run_hook(["--mode", mode], event, hooks).returncode == 0
    assert snapshot(neo4j_store) == before
