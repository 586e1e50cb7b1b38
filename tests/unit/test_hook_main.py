"""The hook's outer layer in process: ``main``, ``read_stdin`` and ``receive``.

The subprocess tests (tests/e2e/test_hook*.py) prove these as Claude Code runs them;
mutmut cannot see into a child process, so here the same code runs in this one,
across the same OS boundaries: stdin is a real pipe or file, the server a real socket
(a socketpair, or FakeHookServer), the handles real files under tmp_path.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

import pytest

from kenning_encounter.hooks import infuse_hook as h
from tests.support.hookfakes import HOOK_DIGEST, FakeHookServer, fake_server

# Far more than any healthy read needs; a slip that makes the hook wait fails here,
# at the deadline, sooner than at the mutation run's own timeout.
AMPLE = 5.0
SESSION = "5d1e7c0a-main"
DEBUG = {"KENNING_ENCOUNTER_HOOK_DEBUG": "1"}

Feed = Callable[..., None]


@pytest.fixture
def stdin(monkeypatch: pytest.MonkeyPatch) -> Iterator[Feed]:
    """Makes sys.stdin the read end of a real pipe holding ``data``.

    ``held=True`` keeps the write end open, as a caller that never closes stdin does.
    """
    opened: list[IO[str]] = []
    writers: list[int] = []

    def feed(data: bytes, *, held: bool = False) -> None:
        read_end, write_end = os.pipe()
        os.write(write_end, data)
        if held:
            writers.append(write_end)
        else:
            os.close(write_end)
        reader = open(read_end, encoding="utf-8")  # noqa: SIM115 - closed at teardown
        opened.append(reader)
        monkeypatch.setattr(sys, "stdin", reader)

    yield feed
    for reader in opened:
        reader.close()
    for write_end in writers:
        os.close(write_end)


@pytest.fixture
def server() -> Iterator[FakeHookServer]:
    with fake_server() as running:
        yield running


def _env(server: FakeHookServer, tmp_path: Path, **values: str) -> dict[str, str]:
    return {
        "KENNING_ENCOUNTER_URL": server.url,
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **values,
    }


def _event(**values: object) -> bytes:
    return json.dumps({"session_id": SESSION, **values}).encode()


def _line(event: str, context: str) -> str:
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    return json.dumps(output) + "\n"


# ------------------------------------------------------------------- read_stdin


def test_stdin_is_read_to_its_end_across_many_reads() -> None:
    # More than one pipe buffer and one read: a writer thread feeds it while the hook reads.
    data = bytes(range(256)) * 1200
    read_end, write_end = os.pipe()

    def write() -> None:
        with os.fdopen(write_end, "wb") as out:
            out.write(data)

    writer = threading.Thread(target=write)
    writer.start()
    with open(read_end, encoding="latin-1") as reader:
        saved, sys.stdin = sys.stdin, reader
        try:
            got = h.read_stdin(time.monotonic() + AMPLE)
        finally:
            sys.stdin = saved
    writer.join()
    assert got == data


def test_stdin_is_read_within_a_short_deadline_when_closed(stdin: Feed) -> None:
    # A deadline under a second away still leaves time for a closed pipe's bytes.
    stdin(b'{"a": 1}')
    assert h.read_stdin(time.monotonic() + 0.8) == b'{"a": 1}'
    stdin(b"")
    assert h.read_stdin(time.monotonic() + 0.8) == b""


def test_stdin_is_read_no_further_than_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "event.json"
    big.write_bytes(b"a" * h.MAX_STDIN_BYTES + b"b" * 70_000)
    with big.open(encoding="latin-1") as reader:
        monkeypatch.setattr(sys, "stdin", reader)
        got = h.read_stdin(time.monotonic() + AMPLE)
    assert got == b"a" * h.MAX_STDIN_BYTES


def test_stdin_held_open_gives_up_at_the_deadline(stdin: Feed) -> None:
    stdin(b'{"session_id": "s", "prompt": "half an ev', held=True)
    with pytest.raises(TimeoutError) as late:
        h.read_stdin(time.monotonic() + 0.2)
    assert str(late.value) == "stdin still open at the deadline"


def test_a_deadline_already_passed_reads_nothing(stdin: Feed) -> None:
    stdin(b'{"a": 1}')
    with pytest.raises(TimeoutError, match=r"^stdin still open at the deadline$"):
        h.read_stdin(time.monotonic() - 0.01)


def test_stdin_select_cannot_watch_is_read_plainly_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # select() refuses a descriptor at or past FD_SETSIZE (1024), as it refuses a
    # Windows pipe: the hook then reads plainly, still bounded.
    big = tmp_path / "event.json"
    big.write_bytes(b"c" * h.MAX_STDIN_BYTES + b"d" * 10)
    fd = os.open(big, os.O_RDONLY)
    high = os.dup2(fd, 1500)
    os.close(fd)
    with open(high, encoding="latin-1") as reader:
        monkeypatch.setattr(sys, "stdin", reader)
        got = h.read_stdin(time.monotonic() + AMPLE)
    assert got == b"c" * h.MAX_STDIN_BYTES


# ------------------------------------------------------------------------- main


def test_main_runs_a_prompt_from_stdin_to_stdout(
    server: FakeHookServer, tmp_path: Path, stdin: Feed, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin(_event(prompt="the prompt", cwd="/w"))
    code = h.main(["--timeout", "5"], _env(server, tmp_path))
    assert code == 0
    assert capsys.readouterr() == (_line("UserPromptSubmit", server.payload), "")
    [sent] = server.received
    assert sent.path == "/infuse" and isinstance(sent.body, dict)
    assert (sent.body["session_id"], sent.body["prompt"], sent.body["cwd"]) == (
        SESSION,
        "the prompt",
        "/w",
    )


def test_main_reads_argv_and_the_environment_when_not_given(
    server: FakeHookServer,
    tmp_path: Path,
    stdin: Feed,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for key in list(os.environ):
        if key.startswith("KENNING_ENCOUNTER_") or key == "CLAUDE_CODE_ENTRYPOINT":
            monkeypatch.delenv(key)
    for key, value in _env(server, tmp_path).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(sys, "argv", ["infuse_hook.py", "--mode", "session-start"])
    server.context = "the note"
    stdin(_event(source="startup"))
    assert h.main() == 0
    assert capsys.readouterr() == (_line("SessionStart", "the note"), "")
    [sent] = server.received
    assert sent.path == "/session-start"
    assert sent.body == {"session_id": SESSION, "source": "startup", "hook": HOOK_DIGEST}


def test_main_dispatches_each_mode(
    server: FakeHookServer, tmp_path: Path, stdin: Feed, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path)
    server.context = "the note"
    stdin(_event(source="resume"))
    assert h.main(["--mode=session-start"], env) == 0
    stdin(_event(reason="exit"))
    assert h.main(["--mode", "session-end"], env) == 0
    stdin(_event(prompt="p"))
    assert h.main(["--mode", "prompt"], env) == 0
    assert [r.path for r in server.received] == ["/session-start", "/session-end", "/infuse"]
    assert server.received[1].body == {"session_id": SESSION, "reason": "exit"}
    assert capsys.readouterr() == (
        _line("SessionStart", "the note") + _line("UserPromptSubmit", server.payload),
        "",
    )


@pytest.mark.parametrize(
    ("args", "data", "said"),
    [
        (["--colour", "red"], b"{}", "unusable arguments; staying silent"),
        ([], b"", "stdin held no hook event"),
        ([], b"[1, 2]", "stdin held no hook event"),
        ([], b"null", "stdin held no hook event"),
        ([], b"not json", "unexpected JSONDecodeError: Expecting value: line 1 column 1 (char 0)"),
    ],
)
def test_main_stays_silent_on_unusable_input_and_says_why_in_debug(
    server: FakeHookServer,
    tmp_path: Path,
    stdin: Feed,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    data: bytes,
    said: str,
) -> None:
    stdin(data)
    assert h.main(args, _env(server, tmp_path, **DEBUG)) == 0
    assert capsys.readouterr() == ("", f"kenning-encounter hook: {said}\n")
    stdin(data)
    assert h.main(args, _env(server, tmp_path)) == 0
    assert capsys.readouterr() == ("", "")
    assert server.received == []


def test_main_gives_up_on_stdin_held_open(
    server: FakeHookServer, tmp_path: Path, stdin: Feed, capsys: pytest.CaptureFixture[str]
) -> None:
    stdin(b'{"session_id": "s", "prompt": "half an ev', held=True)
    assert h.main(["--timeout", "0.3"], _env(server, tmp_path, **DEBUG)) == 0
    assert capsys.readouterr() == (
        "",
        "kenning-encounter hook: unexpected TimeoutError: stdin still open at the deadline\n",
    )
    assert server.received == []


def test_main_survives_a_stderr_nobody_reads(
    server: FakeHookServer, tmp_path: Path, stdin: Feed, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Debug output to a pipe whose reader has gone fails; the hook's contract still holds.
    read_end, write_end = os.pipe()
    os.close(read_end)
    with open(write_end, "w", buffering=1, encoding="utf-8") as gone:
        monkeypatch.setattr(sys, "stderr", gone)
        stdin(b"not json")
        assert h.main([], _env(server, tmp_path, **DEBUG)) == 0
        monkeypatch.undo()
        with contextlib.suppress(BrokenPipeError):
            gone.close()


def test_main_debug_narrates_a_prompt_on_stderr_only(
    server: FakeHookServer, tmp_path: Path, stdin: Feed, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        json.dumps({"type": "user", "message": {"role": "user", "content": "before"}}) + "\n"
    )
    stdin(_event(prompt="p", transcript_path=str(transcript)))
    assert h.main([], _env(server, tmp_path, **DEBUG)) == 0
    assert capsys.readouterr() == (
        _line("UserPromptSubmit", server.payload),
        "kenning-encounter hook: 1 previous turns\n",
    )
    stdin(_event(prompt="p", transcript_path=str(tmp_path)))
    assert h.main([], _env(server, tmp_path, **DEBUG)) == 0
    out, err = capsys.readouterr()
    assert out == _line("UserPromptSubmit", server.payload)
    assert err == (
        f"kenning-encounter hook: transcript unreadable: not a regular file: {tmp_path}\n"
        "kenning-encounter hook: 0 previous turns\n"
    )
    stdin(_event(prompt="p"))
    assert h.main([], _env(server, tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-py", **DEBUG)) == 0
    assert capsys.readouterr() == (
        "",
        "kenning-encounter hook: gate closed: entrypoint sdk-py is not a surface where a "
        "person types prompts\n",
    )


def test_main_states_a_failed_post_in_one_line_and_debug(
    tmp_path: Path, stdin: Feed, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_server(behaviour="error") as broken:
        env = _env(broken, tmp_path, **DEBUG)
        stdin(_event(prompt="p"))
        assert h.main([], env) == 0
        assert capsys.readouterr() == (
            _line(
                "UserPromptSubmit",
                f"[kenning-encounter: memory server at {broken.url} answered badly (HTTP 500) "
                "— running without infusion]",
            ),
            "kenning-encounter hook: 0 previous turns\n"
            "kenning-encounter hook: infuse failed: bad: HTTP 500\n",
        )
        stdin(_event(reason="exit"))
        assert h.main(["--mode", "session-end"], env) == 0
        assert capsys.readouterr() == (
            "",
            "kenning-encounter hook: session-end failed: bad: HTTP 500\n",
        )
        stdin(_event())
        assert h.main(["--mode", "session-start"], env) == 0
        out, err = capsys.readouterr()
        assert err == "kenning-encounter hook: session-start failed: bad: HTTP 500\n"
        assert out == _line(
            "SessionStart",
            f"Your kenning-encounter session_id is {SESSION}; pass it as session_id to the "
            f"memory tools. (memory server answered badly: HTTP 500 at {broken.url}; no "
            "re-entry note.)",
        )


# ------------------------------------------------------------ the modes' edges


def _options(server: FakeHookServer, mode: str = "prompt", timeout: float = 5.0) -> h.Options:
    return h.Options(mode, server.url, timeout, 6)


@pytest.mark.parametrize("mode", ["prompt", "session-start", "session-end"])
def test_an_empty_session_id_sends_nothing(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str
) -> None:
    run = {"prompt": h.run_prompt, "session-start": h.run_session_start}.get(
        mode, h.run_session_end
    )
    run(_options(server, mode), {"session_id": "", "prompt": "p"}, _env(server, tmp_path))
    assert server.received == [] and capsys.readouterr() == ("", "")


def test_the_server_is_told_what_is_left_of_the_deadline(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A long run's deadline: what is left is the whole of it, in milliseconds, less the margin.
    h.run_prompt(
        _options(server, timeout=3000),
        {"session_id": SESSION, "prompt": "p"},
        _env(server, tmp_path),
    )
    # A run with no more than the margin left still tells the server it has 1 ms.
    nearly = _options(server)
    nearly.deadline = time.monotonic() + h.DEADLINE_MARGIN
    h.run_prompt(nearly, {"session_id": SESSION, "prompt": "p"}, _env(server, tmp_path))
    sent = [r.body["deadline_ms"] for r in server.received if isinstance(r.body, dict)]
    assert len(sent) == 2
    assert 2_990_000 < sent[0] <= 2_999_850
    assert sent[1] == 1
    capsys.readouterr()


def test_a_spent_deadline_reads_no_transcript_and_says_so(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_text(
        "".join(
            json.dumps({"type": "user", "message": {"role": "user", "content": text}}) + "\n"
            for text in ("one", "two")
        )
    )
    spent = _options(server)
    spent.deadline = time.monotonic() - 1
    event: dict[str, object] = {
        "session_id": SESSION,
        "prompt": "p",
        "transcript_path": str(transcript),
    }
    h.run_prompt(spent, event, _env(server, tmp_path, **DEBUG))
    assert server.received == []
    assert capsys.readouterr() == (
        _line(
            "UserPromptSubmit",
            f"[kenning-encounter: memory server at {server.url} did not answer within 5 s — "
            "running without infusion]",
        ),
        "kenning-encounter hook: 0 previous turns\nkenning-encounter hook: infuse failed: timeout\n",
    )


def test_a_prompt_keeps_the_handle_its_answer_brings(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path)
    handle = f"{SESSION}~" + "e" * 26
    server.raw_answer = json.dumps({"payload": "held", "handle": handle}).encode()
    h.run_prompt(_options(server), {"session_id": SESSION, "prompt": "p"}, env)
    assert h.load_handle(env, SESSION) == handle
    assert capsys.readouterr().out == _line("UserPromptSubmit", "held")


@pytest.mark.parametrize(
    ("answer", "line", "said"),
    [
        ({"no": "payload"}, "answered badly (no payload)", "bad: no payload"),
        (
            {"payload": "", "status": "failed", "meta": "not a mapping"},
            "failed to infuse (no reason given)",
            "failed: no reason given",
        ),
    ],
)
def test_an_unusable_infuse_answer_is_one_line_and_said_in_debug(
    server: FakeHookServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    answer: dict[str, object],
    line: str,
    said: str,
) -> None:
    server.raw_answer = json.dumps(answer).encode()
    env = _env(server, tmp_path, **DEBUG)
    h.run_prompt(_options(server), {"session_id": SESSION, "prompt": "p"}, env)
    what = "memory" if said.startswith("failed") else "memory server"
    assert capsys.readouterr() == (
        _line(
            "UserPromptSubmit",
            f"[kenning-encounter: {what} at {server.url} {line} — running without infusion]",
        ),
        f"kenning-encounter hook: 0 previous turns\nkenning-encounter hook: infuse failed: {said}\n",
    )


def test_session_start_sends_only_a_string_source(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    event: dict[str, object] = {"session_id": SESSION, "source": 7}
    h.run_session_start(_options(server, "session-start"), event, _env(server, tmp_path))
    assert [r.body for r in server.received] == [
        {"session_id": SESSION, "source": None, "hook": HOOK_DIGEST}
    ]
    capsys.readouterr()


def test_session_start_without_context_names_the_session_and_why(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.raw_answer = b'{"no": "context"}'
    env = _env(server, tmp_path, **DEBUG)
    h.run_session_start(_options(server, "session-start"), {"session_id": SESSION}, env)
    assert capsys.readouterr() == (
        _line(
            "SessionStart",
            f"Your kenning-encounter session_id is {SESSION}; pass it as session_id to the "
            f"memory tools. (memory server answered badly: no context at {server.url}; no "
            "re-entry note.)",
        ),
        "kenning-encounter hook: session-start failed: bad: no context\n",
    )


def test_session_start_on_a_slow_server_adds_the_gate_notice(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_server(behaviour="slow") as slow:
        env = _env(slow, tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-ts")
        h.run_session_start(_options(slow, "session-start", 0.3), {"session_id": SESSION}, env)
        url = slow.url
    assert capsys.readouterr().out == _line(
        "SessionStart",
        f"Your kenning-encounter session_id is {SESSION}; pass it as session_id to the memory "
        f"tools. (memory server did not answer in time at {url}; no re-entry note.)\n"
        + (h.gate_notice(env) or "missing notice"),
    )


def test_a_blank_session_context_prints_the_notice_alone_or_nothing(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server.context = "  "
    gated = _env(server, tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-ts")
    h.run_session_start(_options(server, "session-start"), {"session_id": SESSION}, gated)
    assert capsys.readouterr().out == _line("SessionStart", h.gate_notice(gated) or "missing")
    h.run_session_start(
        _options(server, "session-start"), {"session_id": SESSION}, _env(server, tmp_path)
    )
    assert capsys.readouterr() == ("", "")
