"""Sessions across restarts, compaction and deadlines, through real server processes.

Each test drives a real ``kenning-encounter serve`` and, where the harness is
involved, the real hook script as Claude Code runs it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.e2e.conftest import call_ok, run_server
from tests.support.fake_llm import FakeOpenAI, Reply, Seen, echo_meaning
from tests.support.hookfakes import hook_env, run_hook
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.usefixtures("clean_env")

SESSION = "7a1d-durable-session"
PROMPT = "why do deploys set off a retry storm against auth?"


def _record(mcp_url: str, session: str = SESSION) -> None:
    """As Claude Code does it: SessionStart first (the hook keeps the handle), then writes."""
    if session == SESSION:
        _session_start(mcp_url.removesuffix("/mcp/"), "startup")

    async def go() -> None:
        async with Client(mcp_url) as client:
            await call_ok(
                client, "advance_encounter", {"session_id": session, "purpose": "deploys"}
            )
            await call_ok(
                client,
                "create_entities",
                {
                    "session_id": session,
                    "entities": [
                        {
                            "type": "Observation",
                            "name": "retry storm",
                            "description": "Deploys set off a retry storm against auth.",
                        }
                    ],
                },
            )

    anyio.run(go)


def _prompt(base: str, prompt: str = PROMPT, **env: str) -> str:
    event = {"session_id": SESSION, "prompt": prompt, "transcript_path": ""}
    run = run_hook(
        [],
        event,
        hook_env(KENNING_ENCOUNTER_URL=base, CLAUDE_CODE_ENTRYPOINT="cli", **env),
    )
    assert run.returncode == 0, run.stderr
    return run.context() if run.stdout else ""


def _session_start(base: str, source: str) -> str:
    event = {"session_id": SESSION, "source": source}
    run = run_hook(
        ["--mode", "session-start"],
        event,
        hook_env(KENNING_ENCOUNTER_URL=base, CLAUDE_CODE_ENTRYPOINT="cli"),
    )
    assert run.returncode == 0, run.stderr
    return run.context()


def test_a_restart_loses_no_session(tmp_path: Path) -> None:
    data = tmp_path / "m"
    with run_server(data) as first:
        _record(first.url)

    async def after_restart(url: str) -> dict[str, Any]:
        async with Client(url) as client:
            return await call_ok(
                client,
                "create_entities",
                {
                    "session_id": SESSION,
                    "entities": [{"type": "Note", "name": "written after the restart"}],
                },
            )

    with run_server(data) as second:
        created = anyio.run(after_restart, second.url)
    # The agent reconnects with its session_id and keeps writing into the encounter it opened.
    assert created["encounter"] == "E1"
    store = EmbeddedStore.open(data)
    try:
        opened = store.read(lambda tx: tx.get_encounter("E1"))
        assert opened is not None and opened.is_open and opened.dissolved_at is None
    finally:
        store.close()


def test_the_default_server_is_not_degraded(tmp_path: Path) -> None:
    """No key, default matcher: the lexical path is the chosen channel, said nowhere as a fault."""
    with run_server(tmp_path / "m", "--matcher", "auto") as running:
        _record(running.url)
        base = running.url.removesuffix("/mcp/")
        payload = _prompt(base)
        stderr = running.stderr
    assert "retry storm" in payload
    assert "no_key" not in payload and "degraded" not in payload
    assert not payload.startswith("[kenning-encounter: lexical fallback")
    assert "matcher unavailable" not in stderr


def test_compaction_renews_what_was_delivered(tmp_path: Path) -> None:
    """After a compaction nothing delivered before is in the context: bodies are due again."""
    with run_server(tmp_path / "m") as running:
        _record(running.url)
        base = running.url.removesuffix("/mcp/")
        _session_start(base, "startup")
        first = _prompt(base)
        second = _prompt(base)
        _session_start(base, "resume")
        resumed = _prompt(base)
        _session_start(base, "compact")
        compacted = _prompt(base)
    body = "Deploys set off a retry storm against auth."
    assert body in first
    # Told once, then re-pinned as a handle: the body is still in the context.
    assert body not in second and "STANDING" in second
    assert body not in resumed and "STANDING" in resumed
    assert body in compacted and "STANDING" not in compacted


def _slow_selection(seen: Seen) -> Reply | str:
    if "MEMORY ITEMS" in seen.user:
        return Reply(text=json.dumps({"ids": [1]}), delay_s=8.0)
    return echo_meaning(seen)


def test_a_late_matcher_gives_way_to_the_lexical_path_within_the_hook_deadline(
    tmp_path: Path,
) -> None:
    """The server's matcher may take 5 s; the hook waits 2.5 s. The answer still comes in time."""
    with FakeOpenAI(_slow_selection) as fake:
        args = (
            "--matcher",
            "openai",
            "--matcher-model",
            "m",
            "--matcher-base-url",
            f"{fake.url}/v1",
        )
        with run_server(tmp_path / "m", *args, env={"OPENAI_API_KEY": "k"}) as running:
            _record(running.url)
            base = running.url.removesuffix("/mcp/")
            _wait_for_meanings(fake, 1)
            payload = _prompt(base, KENNING_ENCOUNTER_HOOK_TIMEOUT="2.5")
        asked = [s for s in fake.requests if "MEMORY ITEMS" in s.user]
    assert asked, "the matcher was never asked"
    # Not the hook's own timeout line: the server answered, on the lexical path, and said why.
    assert "did not answer within" not in payload
    assert payload.startswith("[kenning-encounter: lexical fallback — timeout]")
    assert "retry storm" in payload


def _wait_for_meanings(fake: FakeOpenAI, count: int) -> None:
    async def poll() -> None:
        with anyio.fail_after(30):
            while sum("MEMORY ITEMS" not in s.user for s in fake.requests) < count:
                await anyio.sleep(0.05)

    anyio.run(poll)


def test_the_reader_face_never_writes(tmp_path: Path) -> None:
    """Start, every hook route and a read tool on the reader face leave the store as it was.

    An encounter is left open and the idle horizon is tiny, so a full face would
    dissolve it at start: the reader face must not.
    """
    data = tmp_path / "m"
    with run_server(data) as full:
        _record(full.url)
    store = EmbeddedStore.open(data)
    before = snapshot(store)
    store.close()

    async def read(url: str) -> None:
        async with Client(url) as client:
            await call_ok(client, "search", {"query": "retry storm"})
            await call_ok(client, "find_by_name", {"name": "retry storm"})
            await call_ok(client, "orient", {})

    with run_server(data, "--face", "reader", "--idle-horizon", "0.001") as reader:
        base = reader.url.removesuffix("/mcp/")
        anyio.run(read, reader.url)
        _session_start(base, "startup")
        _prompt(base)
        run_hook(
            ["--mode", "session-end"],
            {"session_id": SESSION},
            hook_env(KENNING_ENCOUNTER_URL=base),
        )
    store = EmbeddedStore.open(data)
    try:
        assert snapshot(store) == before
    finally:
        store.close()
