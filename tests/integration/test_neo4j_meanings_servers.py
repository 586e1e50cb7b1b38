"""Two real servers on one Neo4j make each meaning once, into the store (issue #15 item 2)."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.meaning.stored import StoredMeanings
from kenning_encounter.memory.service import Memory
from tests.e2e.conftest import run_server
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri
from tests.support.fake_llm import FakeOpenAI, Reply, Seen, default_responder

pytestmark = pytest.mark.neo4j


def _slow(seen: Seen) -> Reply:
    # Slow enough that the second server starts while the first is still making meanings.
    return Reply(text=default_responder(seen), delay_s=0.3)


def test_two_servers_starting_on_one_memory_make_each_meaning_once(
    neo4j_store: Any, tmp_path: Path
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("writer", "deploys")
    memory.create_entities(
        "writer",
        [
            {"type": "Observation", "name": f"retry storm {i}", "description": f"Deploy {i}."}
            for i in range(6)
        ],
    )
    user, password = credentials()
    with FakeOpenAI(responder=_slow) as fake:
        args = [
            *("--store", "neo4j", "--neo4j-uri", neo4j_uri()),
            *(
                "--matcher",
                "openai",
                "--matcher-model",
                "m",
                "--matcher-base-url",
                fake.url + "/v1",
            ),
        ]
        env = {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password, "OPENAI_API_KEY": "k"}
        with contextlib.ExitStack() as stack:
            servers = [
                stack.enter_context(run_server(tmp_path / name, *args, env=env)) for name in "ab"
            ]
            held = StoredMeanings(neo4j_store.meanings)
            deadline = time.monotonic() + 60
            while len(held.snapshot().entries) < 6:
                logs = "\n".join(line for s in servers for line in s.lines)
                assert time.monotonic() < deadline, f"{len(held)} of 6 made; {fake.hits}\n{logs}"
                time.sleep(0.1)
        made = [r for r in fake.requests if "MEMORY ITEMS" not in r.user]
    assert len(made) == 6, "a meaning was paid for by both servers"
    assert not any((tmp_path / n / "sidecar" / "meanings.log").exists() for n in "ab")
