"""A session is held, not named (DESIGN §3, invariant 9).

Every way to act for a session — the write tools, the spine tools, infuse, and
the three hook routes — is tried with the victim's plain id and with a forged
proof, each on its own, and must be refused with the store unchanged; the
handle the opener was given must work from any client.
"""

from __future__ import annotations

import os
import stat
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client

from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.holds import KEY_FILE, PROOF_CHARS, SessionKey, split_handle
from kenning_encounter.server.transports import build_http_app
from tests.e2e.conftest import call_ok, call_refused, make_settings, run_server
from tests.support.cli import run_cli
from tests.support.handles import handle
from tests.support.hookfakes import hook_env, run_hook
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.anyio

VICTIM = "0b6f3c1e-victim-session"
NOTE = {"type": "Note", "name": "victim note", "description": "written by its session"}
FORGED = f"{VICTIM}~{'a' * PROOF_CHARS}"
NOT_HELD = f"session {VICTIM!r} is held by the client that opened it"
NOT_ITS_HANDLE = f"this is not the handle of session {VICTIM!r}"


def _acts(session_id: str, encounter: str) -> list[tuple[str, dict[str, Any]]]:
    """Every tool call that acts for a session, aimed at the victim's open encounter."""
    link = {"source": "victim note", "type": "INFORMS", "target": "victim concept"}
    return [
        ("advance_encounter", {"session_id": session_id, "purpose": "take over"}),
        ("close_encounter", {"session_id": session_id, "summary": "sealed by another"}),
        (
            "close_encounter",
            {"session_id": session_id, "summary": "sealed by name", "encounter": encounter},
        ),
        ("create_entities", {"session_id": session_id, "entities": [{**NOTE, "name": "x"}]}),
        ("create_relations", {"session_id": session_id, "relations": [link]}),
        ("delete_entities", {"session_id": session_id, "refs": ["victim note"]}),
        ("delete_relations", {"session_id": session_id, "relations": [link]}),
        ("infuse", {"session_id": session_id, "prompt": "what did the victim note say?"}),
    ]


@asynccontextmanager
async def _victim(tmp_path: Path) -> AsyncGenerator[tuple[Client, Runtime, str, str]]:
    """A server whose session VICTIM has an open encounter with a note and a link in it."""
    config = make_settings(tmp_path / "memory")
    runtime = Runtime(config)
    async with Client(build_server(config, runtime)) as client:
        opened = await call_ok(
            client, "advance_encounter", {"session_id": VICTIM, "purpose": "p"}, sign=False
        )
        held: str = opened["handle"]
        concept = {"type": "Concept", "name": "victim concept", "description": "c"}
        await call_ok(client, "create_entities", {"session_id": held, "entities": [NOTE, concept]})
        link = {"source": "victim note", "type": "INFORMS", "target": "victim concept"}
        await call_ok(client, "create_relations", {"session_id": held, "relations": [link]})
        yield client, runtime, held, opened["encounter"]["name"]


async def test_the_opener_is_handed_the_handle(tmp_path: Path) -> None:
    async with _victim(tmp_path) as (_, runtime, held, _name):
        locus, proof = split_handle(held)
        assert locus == VICTIM and proof is not None and len(proof) == PROOF_CHARS
        # Deterministic: the handle SessionStart hands out for this id is the same one.
        assert runtime.context.holds.handle(VICTIM) == held


@pytest.mark.parametrize("who", ["plain id", "forged proof"])
async def test_no_call_acts_for_a_session_without_its_handle(tmp_path: Path, who: str) -> None:
    async with _victim(tmp_path) as (client, runtime, _held, encounter):
        store = runtime.context.store
        before = snapshot(store)
        session_id, why = (VICTIM, NOT_HELD) if who == "plain id" else (FORGED, NOT_ITS_HANDLE)
        for tool, arguments in _acts(session_id, encounter):
            text = await call_refused(client, tool, arguments, sign=False)
            assert f"session_id: {why}" in text, (tool, text)
            assert snapshot(store) == before, f"{tool} with a {who} changed the store"


async def test_the_handle_works_from_another_client_and_server_process(tmp_path: Path) -> None:
    data = tmp_path / "m"
    with run_server(data, test_key=False) as first:
        async with Client(first.url) as opener:
            opened = await call_ok(
                opener, "advance_encounter", {"session_id": VICTIM, "purpose": "p"}, sign=False
            )
    held = opened["handle"]
    with run_server(data, test_key=False) as second:
        async with Client(second.url) as other:
            # Another client, another process: the plain id is refused, the handle is honoured.
            refused = await call_refused(
                other, "create_entities", {"session_id": VICTIM, "entities": [NOTE]}, sign=False
            )
            assert NOT_HELD in refused
            created = await call_ok(
                other, "create_entities", {"session_id": held, "entities": [NOTE]}, sign=False
            )
            assert created["encounter"] == opened["encounter"]["name"]
            sealed = await call_ok(
                other, "close_encounter", {"session_id": held, "summary": "done"}, sign=False
            )
            assert sealed["encounter"]["state"] == "sealed"


def test_the_minted_key_is_private_and_outlives_the_server(tmp_path: Path) -> None:
    data = tmp_path / "m"
    with run_server(data, test_key=False):
        pass
    key_file = data / KEY_FILE
    assert not key_file.exists(), "a server nobody acted through minted a key"

    async def open_one(url: str) -> str:
        async with Client(url) as client:
            opened = await call_ok(
                client, "advance_encounter", {"session_id": VICTIM, "purpose": "p"}, sign=False
            )
            return opened["handle"]

    with run_server(data, test_key=False) as running:
        held = anyio.run(open_one, running.url)
    assert stat.S_IMODE(os.stat(key_file).st_mode) == 0o600
    secret = bytes.fromhex(key_file.read_text().strip())
    assert SessionKey(secret).handle(VICTIM) == held
    # The tests' key is not this memory's: its handle for the id is a forgery here.
    assert handle(VICTIM) != held


async def _hook_app(data_dir: Path, **values: Any) -> Any:
    settings = make_settings(data_dir, **values)
    runtime = Runtime(settings)
    return build_http_app(build_server(settings, runtime), runtime, settings), runtime


async def test_the_hook_routes_need_the_handle(tmp_path: Path) -> None:
    app, runtime = await _hook_app(tmp_path / "m")
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
            # While the id is unused, SessionStart hands its handle to whoever asks.
            start = (await http.post("/session-start", json={"session_id": VICTIM})).json()
            held = start["handle"]
            assert held == handle(VICTIM) and f"session_id is {held}" in start["context"]
            memory = runtime.context.memory
            name = memory.advance_encounter(VICTIM, "work").encounter.name
            memory.create_entities(VICTIM, [NOTE])
            before = snapshot(runtime.context.store)

            for who in (VICTIM, FORGED):
                start = (await http.post("/session-start", json={"session_id": who})).json()
                assert start["handle"] is None and "held by another client" in start["context"]
                assert name not in start["context"]  # nothing of its state either
                end = await http.post("/session-end", json={"session_id": who})
                assert end.status_code == 409 and "session_id:" in end.json()["error"]
                infused = (
                    await http.post(
                        "/infuse", json={"session_id": who, "prompt": "the victim note"}
                    )
                ).json()
                assert infused["status"] == "failed" and infused["payload"] == ""
                assert "session_id:" in infused["meta"]["degraded_reason"]
                assert snapshot(runtime.context.store) == before

            infused = (
                await http.post("/infuse", json={"session_id": held, "prompt": "the victim note"})
            ).json()
            assert infused["status"] == "infused" and "victim note" in infused["payload"]
            end = await http.post("/session-end", json={"session_id": held})
            assert end.json() == {"dissolved": name}


def test_the_hook_keeps_the_handle_for_its_session(tmp_path: Path) -> None:
    state = tmp_path / "state"
    with run_server(tmp_path / "m") as running:
        base = running.url.removesuffix("/mcp/")
        env = hook_env(
            KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on", XDG_STATE_HOME=str(state)
        )
        start = run_hook(["--mode", "session-start"], {"session_id": VICTIM}, env)
        kept = state / "kenning-encounter" / "handles" / VICTIM
        assert kept.read_text() == handle(VICTIM)
        assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
        assert stat.S_IMODE(os.stat(kept.parent).st_mode) == 0o700
        # The agent is told the handle as its session_id, and writes with it.
        assert f"session_id is {handle(VICTIM)}" in start.context()

        async def record() -> None:
            async with Client(running.url) as client:
                await call_ok(client, "advance_encounter", {"session_id": VICTIM, "purpose": "p"})
                await call_ok(client, "create_entities", {"session_id": VICTIM, "entities": [NOTE]})

        anyio.run(record)
        prompt = {"session_id": VICTIM, "prompt": "what did the victim note say?"}
        infused = run_hook(["--mode", "prompt"], prompt, env)
        assert "victim note" in infused.context()
        # Without the kept handle the same hook cannot take the session's infusions.
        kept.unlink()
        refused = run_hook(["--mode", "prompt"], prompt, env)
        assert "failed to infuse" in refused.context() and "session_id:" in refused.context()
        resumed = run_hook(["--mode", "session-start"], {"session_id": VICTIM}, env)
        assert "held by another client" in resumed.context() and not kept.exists()


def test_an_operator_recovers_a_lost_handle_for_the_hook(tmp_path: Path) -> None:
    data, state = tmp_path / "m", tmp_path / "state"
    with run_server(data, test_key=False) as running:

        async def open_one() -> str:
            async with Client(running.url) as client:
                opened = await call_ok(
                    client, "advance_encounter", {"session_id": VICTIM, "purpose": "p"}, sign=False
                )
                held: str = opened["handle"]
                await call_ok(client, "create_entities", {"session_id": held, "entities": [NOTE]})
                return held

        held = anyio.run(open_one)
        base = running.url.removesuffix("/mcp/")
        env = hook_env(
            KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on", XDG_STATE_HOME=str(state)
        )
        # This machine never kept the handle (a client that lost it, a 0.1.0 session).
        lost = run_hook(["--mode", "session-start"], {"session_id": VICTIM}, env)
        assert "held by another client" in lost.context()
        assert f"kenning-encounter handle {VICTIM} --keep-for-hook" in lost.context()
        recovered = run_cli(
            "handle",
            VICTIM,
            "--data-dir",
            str(data),
            "--keep-for-hook",
            env={"XDG_STATE_HOME": str(state)},
        )
        assert recovered.returncode == 0, recovered.stderr
        assert recovered.stdout == held + "\n"  # the one the opener was given
        kept = state / "kenning-encounter" / "handles" / VICTIM
        assert kept.read_text() == held and stat.S_IMODE(os.stat(kept).st_mode) == 0o600
        resumed = run_hook(["--mode", "session-start"], {"session_id": VICTIM}, env)
        assert f"session_id is {held}" in resumed.context()
        prompt = {"session_id": VICTIM, "prompt": "what did the victim note say?"}
        assert "victim note" in run_hook(["--mode", "prompt"], prompt, env).context()


def test_the_handle_command_refuses_what_names_no_session_of_a_memory(tmp_path: Path) -> None:
    missing = tmp_path / "none"
    refused = run_cli("handle", VICTIM, "--data-dir", str(missing))
    assert refused.returncode == 2 and "no memory at" in refused.stderr
    assert not missing.exists() and refused.stdout == ""
    with run_server(tmp_path / "m", test_key=False):
        pass
    bad = run_cli("handle", "a\nb", "--data-dir", str(tmp_path / "m"))
    assert bad.returncode == 2 and "SESSION_ID: holds U+000A" in bad.stderr
    assert bad.stdout == "" and not (tmp_path / "m" / KEY_FILE).exists()
