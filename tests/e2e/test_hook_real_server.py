"""The hook as a real subprocess against a real server subprocess: the whole path of one prompt."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import httpx
import pytest
from mcp import Client

from tests.e2e.conftest import SESSION, call_ok, run_server
from tests.support.hookfakes import (
    HOOK,
    assistant,
    hook_env,
    run_hook,
    tool_result,
    typed,
    write_transcript,
)

pytestmark = pytest.mark.usefixtures("clean_env")


def _seed(base: str) -> None:
    """Record what the prompt will touch, through the server's own MCP endpoint."""

    async def go() -> None:
        async with Client(f"{base}/mcp/") as client:
            await call_ok(
                client, "advance_encounter", {"session_id": "writer", "purpose": "deploys"}
            )
            await call_ok(
                client,
                "create_entities",
                {
                    "session_id": "writer",
                    "entities": [
                        {
                            "type": "Observation",
                            "name": "retry storm",
                            "description": "Deploys set off a retry storm against auth.",
                        },
                        {
                            "type": "Concept",
                            "name": "lockstep retries",
                            "description": "Clients retry in lockstep without jitter.",
                        },
                    ],
                },
            )
            await call_ok(
                client,
                "create_relations",
                {
                    "session_id": "writer",
                    "relations": [
                        {"source": "retry storm", "type": "GROUNDS", "target": "lockstep retries"}
                    ],
                },
            )

    anyio.run(go)


def test_one_prompt_through_hook_and_server(tmp_path: Path) -> None:
    with run_server(tmp_path / "m") as running:
        base = running.url.removesuffix("/mcp/")
        _seed(base)
        transcript = write_transcript(
            tmp_path / "t.jsonl",
            [
                typed("look at the auth service"),
                assistant("Looking."),
                tool_result("<big log output mentioning nothing>"),
                typed("the jitter question again"),
            ],
        )
        event = {
            "session_id": SESSION,
            "transcript_path": str(transcript),
            "cwd": str(tmp_path),
            "hook_event_name": "UserPromptSubmit",
            "prompt": "why did the retry storm come back after the deploy?",
        }
        env = hook_env(KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on")
        first = run_hook(["--mode", "prompt"], event, env)
        assert first.returncode == 0, first.stderr
        context = first.context()
        assert "retry storm" in context and "Deploys set off a retry storm" in context
        assert "lexical" in context.splitlines()[0]

        second = run_hook(["--mode", "prompt"], event, env)
        assert "STANDING" in second.context()  # told already: a handle now

        quiet = run_hook(
            ["--mode", "prompt"], {**event, "prompt": "format the table as markdown"}, env
        )
        assert quiet.returncode == 0 and quiet.stdout == ""  # silence: nothing printed

        start = run_hook(
            ["--mode", "session-start"], {"session_id": SESSION, "source": "startup"}, env
        )
        assert SESSION in start.context()
        end = run_hook(["--mode", "session-end"], {"session_id": "writer", "reason": "exit"}, env)
        assert end.returncode == 0 and end.stdout == ""
        health = httpx.get(f"{base}/healthz", timeout=5)
        assert health.status_code == 200


def test_server_gone_is_stated_in_one_line(tmp_path: Path) -> None:
    with run_server(tmp_path / "m") as running:
        base = running.url.removesuffix("/mcp/")
    env = hook_env(KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on")
    event = {"session_id": SESSION, "transcript_path": "/nonexistent", "prompt": "anything"}
    result = run_hook(["--mode", "prompt"], event, env)
    assert result.returncode == 0
    assert "unreachable" in result.context() and len(result.context().splitlines()) == 1


def test_big_malformed_and_lagging_transcripts(tmp_path: Path) -> None:
    """100 MB of history, broken lines, and a transcript that has not caught up with the prompt."""
    big = tmp_path / "big.jsonl"
    filler = (
        json.dumps(typed("filler about the weather"))
        + "\n"
        + json.dumps(assistant("ok " * 200))
        + "\n"
    ).encode()
    with big.open("wb") as out:
        for _ in range(100 * 1024 * 1024 // len(filler) + 1):
            out.write(filler)
        out.write(b'{"broken": \n')
        out.write((json.dumps(typed("we changed the auth client yesterday")) + "\n").encode())
        out.write(b"not json at all\n")
    assert big.stat().st_size > 100 * 1024 * 1024
    with run_server(tmp_path / "m") as running:
        base = running.url.removesuffix("/mcp/")
        _seed(base)
        env = hook_env(KENNING_ENCOUNTER_URL=base, KENNING_ENCOUNTER_INFUSE="on")
        event = {
            "session_id": SESSION,
            "transcript_path": str(big),
            "cwd": str(tmp_path),
            "hook_event_name": "UserPromptSubmit",
            # the transcript lags: this prompt is not in it yet
            "prompt": "is the retry storm from lockstep retries?",
        }
        result = run_hook(["--mode", "prompt"], event, env)
        assert result.returncode == 0, result.stderr
        # The run's one deadline bounds the read: a hook that parsed the whole file would
        # print its "did not answer within" line here instead of the payload.
        context = result.context()
        assert "lockstep retries" in context and "retry storm" in context


def test_a_hook_copy_an_older_install_left_is_named_at_session_start(tmp_path: Path) -> None:
    stale = "run 'kenning-encounter install claude-code' again"
    older = tmp_path / "hooks" / "kenning_encounter_infuse_hook.py"
    older.parent.mkdir()
    older.write_bytes(HOOK.read_bytes() + b"# a line a later release took out\n")
    with run_server(tmp_path / "m") as server:
        base = server.url.removesuffix("/mcp/")
        env = hook_env(KENNING_ENCOUNTER_URL=base)
        current = run_hook(["--mode", "session-start"], {"session_id": "s-now"}, env)
        assert "s-now" in current.context() and stale not in current.context()
        copied = run_hook(["--mode", "session-start"], {"session_id": "s-copy"}, env, script=older)
        assert "s-copy" in copied.context() and stale in copied.context()
        # A hook from before the check (0.1.0's) sends no digest at all.
        answer = httpx.post(f"{base}/session-start", json={"session_id": "s-old"}, timeout=10)
        assert stale in answer.json()["context"]
