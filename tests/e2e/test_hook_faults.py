"""The hook against everything that could hang it, flood it or make it mute.

Each test runs the real hook script as a subprocess, as Claude Code does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.hookfakes import (
    HOOK,
    HOOK_DIGEST,
    FakeHookServer,
    fake_server,
    hook_env,
    run_hook,
    typed,
    write_transcript,
)

SESSION = "5e55-faults"


@pytest.fixture
def server() -> Iterator[FakeHookServer]:
    with fake_server() as running:
        yield running


def event(prompt: str, transcript: Path | str) -> dict[str, object]:
    return {"session_id": SESSION, "transcript_path": str(transcript), "prompt": prompt}


def env_for(server: FakeHookServer, **values: str) -> dict[str, str]:
    return hook_env(KENNING_ENCOUNTER_URL=server.url, CLAUDE_CODE_ENTRYPOINT="cli", **values)


def test_a_failed_infusion_is_stated_not_silent(server: FakeHookServer, tmp_path: Path) -> None:
    """'Nothing bears' and 'the memory failed' both carry an empty payload; only one is quiet."""
    server.payload = ""
    server.status = "silent"
    quiet = run_hook([], event("hello", tmp_path / "none"), env_for(server))
    server.status = "failed"
    server.meta = {"channel": "none", "degraded": True, "degraded_reason": "index\nbroken"}
    failed = run_hook([], event("hello", tmp_path / "none"), env_for(server))

    assert (quiet.returncode, quiet.stdout) == (0, "")
    assert failed.returncode == 0
    line = failed.context()
    assert "\n" not in line
    assert line.startswith("[kenning-encounter: memory at ")
    assert "failed to infuse (index broken)" in line
    assert line.endswith("running without infusion]")


def test_the_payload_printed_is_capped(server: FakeHookServer, tmp_path: Path) -> None:
    server.payload = "x" * 20_971_592
    run = run_hook([], event("hello", tmp_path / "none"), env_for(server))

    assert run.returncode == 0
    # A 20 MB answer is over the hook's answer bound: refused as a bad answer, in one line.
    assert "answered badly (answer too large)" in run.context()

    server.payload = "y" * 50_000
    run = run_hook([], event("hello", tmp_path / "none"), env_for(server))
    assert len(run.context()) <= 9000


@pytest.mark.parametrize("route", ["prompt", "session-start"])
def test_a_deeply_nested_answer_is_stated(
    server: FakeHookServer, tmp_path: Path, route: str
) -> None:
    server.raw_answer = b"[" * 200_000 + b"]" * 200_000
    payload = event("hello", tmp_path / "none") if route == "prompt" else {"session_id": SESSION}
    run = run_hook(["--mode", route], payload, env_for(server))

    assert run.returncode == 0
    assert "answered badly" in run.context()


def test_a_deeply_nested_transcript_line_is_skipped(server: FakeHookServer, tmp_path: Path) -> None:
    nested = '{"type": "user", "x": ' + "[" * 200_000 + "]" * 200_000 + "}"
    transcript = write_transcript(
        tmp_path / "t.jsonl", [typed("an earlier turn"), nested, typed("the last turn")]
    )
    run = run_hook([], event("now", transcript), env_for(server))

    assert run.returncode == 0
    assert run.context() == server.payload
    [received] = server.received
    assert isinstance(received.body, dict)
    assert received.body["trajectory"] == ["an earlier turn", "the last turn"]


@pytest.mark.parametrize("path", ["with\x00nul.jsonl", "/dev/zero", "/dev/stdin"])
def test_an_unusable_transcript_path_still_infuses(server: FakeHookServer, path: str) -> None:
    run = run_hook([], event("now", path), env_for(server))

    assert run.returncode == 0
    assert run.context() == server.payload


def test_a_fifo_transcript_is_never_read(server: FakeHookServer, tmp_path: Path) -> None:
    """A FIFO with no writer blocks a plain open(); the hook skips what is not a regular file."""
    fifo = tmp_path / "transcript.jsonl"
    os.mkfifo(fifo)
    run = run_hook([], event("now", fifo), env_for(server, KENNING_ENCOUNTER_HOOK_TIMEOUT="20"))

    assert run.returncode == 0
    assert run.context() == server.payload
    [received] = server.received
    assert isinstance(received.body, dict)
    assert received.body["trajectory"] == []


def test_stdin_held_open_ends_at_the_deadline(server: FakeHookServer) -> None:
    """A caller that never closes stdin: the hook gives up at its own deadline, exit 0."""
    env = env_for(server, KENNING_ENCOUNTER_HOOK_TIMEOUT="0.5")
    with subprocess.Popen(
        [sys.executable, "-S", str(HOOK)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    ) as proc:
        assert proc.stdin is not None
        proc.stdin.write(b'{"session_id": "s", "prompt": "half an ev')
        proc.stdin.flush()
        # The hook must exit by itself while stdin is still open; 30 s only ends a broken test.
        code = proc.wait(timeout=30)
        out = proc.stdout.read() if proc.stdout else b""
        proc.stdin.close()
    assert code == 0
    assert out == b""
    assert server.received == []


def test_the_server_is_told_the_deadline_it_has(server: FakeHookServer, tmp_path: Path) -> None:
    run_hook(
        [], event("now", tmp_path / "none"), env_for(server, KENNING_ENCOUNTER_HOOK_TIMEOUT="60")
    )
    run_hook(
        [], event("now", tmp_path / "none"), env_for(server, KENNING_ENCOUNTER_HOOK_TIMEOUT="1")
    )

    long, short = (r.body for r in server.received)
    assert isinstance(long, dict) and isinstance(short, dict)
    # At most the timeout less the hook's 150 ms margin. The long one's floor needs no
    # clock: the run's 30 s wall guard ends any hook that spent 59 s before posting.
    assert 1000 - 150 < long["deadline_ms"] <= 60_000 - 150
    assert 0 < short["deadline_ms"] <= 1000 - 150


@pytest.mark.parametrize(
    ("values", "says"),
    [
        ({"CLAUDE_CODE_ENTRYPOINT": "sdk-py"}, "entrypoint sdk-py"),
        ({"CLAUDE_CODE_ENTRYPOINT": "cli", "KENNING_ENCOUNTER_INFUSE": "off"}, "INFUSE=off"),
        ({}, "no CLAUDE_CODE_ENTRYPOINT"),
    ],
)
def test_session_start_says_once_when_prompts_are_not_infused(
    server: FakeHookServer, values: dict[str, str], says: str
) -> None:
    env = hook_env(KENNING_ENCOUNTER_URL=server.url, **values)
    run = run_hook(["--mode", "session-start"], {"session_id": SESSION, "source": "startup"}, env)

    context = run.context()
    assert context.startswith(server.context)
    [notice] = [line for line in context.splitlines() if "prompt infusion is off" in line]
    assert says in notice


@pytest.mark.parametrize("entrypoint", ["cli", "claude-vscode", "claude-desktop"])
def test_session_start_is_quiet_about_the_gate_where_people_type(
    server: FakeHookServer, entrypoint: str
) -> None:
    env = hook_env(KENNING_ENCOUNTER_URL=server.url, CLAUDE_CODE_ENTRYPOINT=entrypoint)
    run = run_hook(["--mode", "session-start"], {"session_id": SESSION}, env)

    assert run.context() == server.context


def test_session_start_forwards_the_source(server: FakeHookServer) -> None:
    for source in ("startup", "resume", "clear", "compact"):
        run_hook(
            ["--mode", "session-start"],
            {"session_id": SESSION, "source": source},
            env_for(server),
        )
    assert [json.dumps(r.body, sort_keys=True) for r in server.received] == [
        json.dumps({"session_id": SESSION, "source": s, "hook": HOOK_DIGEST}, sort_keys=True)
        for s in ("startup", "resume", "clear", "compact")
    ]
