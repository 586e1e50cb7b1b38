"""The hook's parts, called in process: arguments, URLs, the gate, the transcript, HTTP
decoding, the kept handles. The subprocess tests (tests/e2e/test_hook*.py) prove the
whole; these pin each part at its edges, and are what its mutation run can reach."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.hooks import infuse_hook as h
from tests.support.hookfakes import HOOK_DIGEST, FakeHookServer, fake_server

ENV: dict[str, str] = {}


def test_arguments_parse_or_leave_the_hook_silent() -> None:
    options = h.parse_args([], ENV)
    assert options is not None
    assert (options.mode, options.url, options.timeout, options.turns) == (
        "prompt",
        h.DEFAULT_URL,
        h.DEFAULT_TIMEOUT,
        h.DEFAULT_TURNS,
    )
    given = h.parse_args(
        ["--mode", "session-start", "--url=http://127.0.0.1:9/x", "--timeout", "1.5", "--turns=0"],
        ENV,
    )
    assert given is not None
    assert (given.mode, given.url, given.timeout, given.turns) == (
        "session-start",
        "http://127.0.0.1:9/x",
        1.5,
        0,
    )
    for bad in (
        ["mode"],
        ["--colour", "red"],
        ["--mode", "prompt", "--mode", "prompt"],
        ["--mode"],
        ["--mode", "later"],
        ["--url", "ftp://x"],
        ["--timeout", "0"],
        ["--timeout", "soon"],
        ["--turns", "-1"],
        ["--turns", "two"],
    ):
        assert h.parse_args(bad, ENV) is None, bad


def test_the_environment_fills_what_the_arguments_leave() -> None:
    env = {"KENNING_ENCOUNTER_URL": "http://[::1]:7000", "KENNING_ENCOUNTER_HOOK_TIMEOUT": "4"}
    options = h.parse_args([], env)
    assert options is not None and (options.url, options.timeout) == ("http://[::1]:7000", 4.0)
    broken = h.parse_args([], {"KENNING_ENCOUNTER_HOOK_TIMEOUT": "nan"})
    assert broken is not None and broken.timeout == h.DEFAULT_TIMEOUT
    before = time.monotonic()
    timed = h.parse_args(["--timeout", "2"], ENV)
    assert timed is not None and before + 2 <= timed.deadline <= time.monotonic() + 2


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1.0),
        ("0.25", 0.25),
        ("3599", 3599.0),
        ("0", None),
        ("3600", None),
        ("-1", None),
        ("nan", None),
        ("x", None),
    ],
)
def test_positive_float(text: str, value: float | None) -> None:
    assert h.positive_float(text) == value


@pytest.mark.parametrize(
    ("url", "parts"),
    [
        ("http://127.0.0.1:8765", ("http", "127.0.0.1", 8765, "")),
        ("HTTPS://memory.example", ("https", "memory.example", 443, "")),
        ("http://host", ("http", "host", 80, "")),
        ("http://host:9/mcp", ("http", "host", 9, "")),
        ("http://host:9/base/mcp/", ("http", "host", 9, "/base")),
        ("http://host:9/base/", ("http", "host", 9, "/base")),
        ("http://[::1]:9", ("http", "::1", 9, "")),
        ("http://[::1]", ("http", "::1", 80, "")),
        ("host:9", None),
        ("ftp://host", None),
        ("http://", None),
        ("http://user@host", None),
        ("http://[::1", None),
        ("http://[::1]x", None),
        ("http://:9", None),
        ("http://host:0", None),
        ("http://host:65536", None),
        ("http://host:http", None),
    ],
)
def test_split_url(url: str, parts: tuple[str, str, int, str] | None) -> None:
    assert h.split_url(url) == parts


def test_the_gate_and_its_notice() -> None:
    assert h.gate({"CLAUDE_CODE_ENTRYPOINT": "cli"}) is None
    assert h.gate({"KENNING_ENCOUNTER_INFUSE": " ON "}) is None
    assert h.gate({"KENNING_ENCOUNTER_INFUSE": "off", "CLAUDE_CODE_ENTRYPOINT": "cli"}) == (
        "KENNING_ENCOUNTER_INFUSE=off"
    )
    assert h.gate({"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}) == (
        "entrypoint sdk-cli is not a surface where a person types prompts"
    )
    assert h.gate({}) == "no CLAUDE_CODE_ENTRYPOINT is not a surface where a person types prompts"
    assert h.gate_notice({"CLAUDE_CODE_ENTRYPOINT": "cli"}) is None
    assert h.gate_notice({"CLAUDE_CODE_ENTRYPOINT": "sdk-cli"}) == (
        "[kenning-encounter: prompt infusion is off for this session (entrypoint sdk-cli is not "
        "a surface where a person types prompts); set KENNING_ENCOUNTER_INFUSE=on to infuse "
        "every prompt]"
    )
    assert h.gate_notice({"KENNING_ENCOUNTER_INFUSE": "off"}) == (
        "[kenning-encounter: prompt infusion is off for this session "
        "(KENNING_ENCOUNTER_INFUSE=off); unset it to infuse typed prompts]"
    )


def _user(content: object, **flags: object) -> dict[str, object]:
    return {"type": "user", "message": {"role": "user", "content": content}, **flags}


def test_what_counts_as_a_typed_turn() -> None:
    assert h.typed_text(_user("  why?  ")) == "why?"
    assert h.typed_text(_user([{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])) == (
        "a\nb"
    )
    assert h.typed_text(_user("x <system-reminder>hidden</system-reminder> y")) == "x  y"
    for not_typed in (
        _user([{"type": "tool_result", "content": "log"}]),
        _user("<command-name>/clear</command-name>"),
        _user("why?", isSidechain=True),
        _user("why?", isMeta=True),
        _user("why?", isCompactSummary=True),
        _user(7),
        _user("   "),
        {"type": "assistant", "message": {"role": "assistant", "content": "hi"}},
        {"type": "user", "message": {"role": "assistant", "content": "hi"}},
        {"type": "user", "message": "hi"},
        "not a record",
    ):
        assert h.typed_text(not_typed) is None, not_typed


def test_reminders_are_stripped_even_unclosed() -> None:
    assert h.strip_reminders("a<system-reminder>b</system-reminder>c") == "ac"
    assert h.strip_reminders("a<system-reminder>b") == "a"
    two = "1<system-reminder>x</system-reminder>2<system-reminder>y</system-reminder>3"
    assert h.strip_reminders(two) == "123"


@pytest.mark.parametrize(
    "text",
    [
        "x </system-reminder> y",
        "<SYSTEM-REMINDER>",
        "< / system-reminder >",
        "<\u200b/system\u200d-remin\u00adder>",  # invisible characters between its letters
        "<\ufffd/system-reminder>",  # as the server shows a hidden character there
        "<\u017fystem-reminder>",  # LATIN SMALL LETTER LONG S folds to s
    ],
)
def test_no_text_printed_opens_or_closes_the_harness_wrapper(text: str) -> None:
    shown = h.unframed(text)
    assert "<" not in shown and shown == text.replace("<", "&lt;")


def test_other_angle_brackets_are_printed_as_they_are() -> None:
    for text in ("<div> x < y", "a <-> b", "<system-note>", "List<T>"):
        assert h.unframed(text) == text


def test_clip_keeps_head_and_tail() -> None:
    assert h.clip("short", 10) == "short"
    clipped = h.clip("h" * 30 + "t" * 10, 20)
    assert len(clipped) == 20 and clipped.startswith("h" * 12) and clipped.endswith("t" * 5)
    assert "\n…\n" in clipped
    assert h.cap("x" * 9) == "x" * 9
    assert h.cap("x" * (h.PAYLOAD_CAP + 5)) == "x" * (h.PAYLOAD_CAP - 1) + "…"
    assert h.one_line(" a\n b\t c ") == "a b c"
    assert h.one_line("y" * 500) == "y" * h.REASON_CHARS


def _transcript(path: Path, records: list[object]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_the_trajectory_is_the_previous_typed_turns_oldest_first(tmp_path: Path) -> None:
    records: list[object] = [_user(f"turn {i}") for i in range(5)]
    records.insert(2, {"type": "assistant", "message": {"role": "assistant", "content": "x"}})
    path = _transcript(tmp_path / "t.jsonl", [*records, _user("now")])
    assert h.trajectory(path, "now", 3) == ["turn 2", "turn 3", "turn 4"]
    assert h.trajectory(path, "something else", 2) == ["turn 4", "now"]
    assert h.trajectory(path, "now", 0) == []
    assert h.trajectory("", "now", 3) == []
    long = _transcript(tmp_path / "long.jsonl", [_user("w" * (h.TURN_CHARS + 50))])
    [clipped] = h.trajectory(long, "now", 1)
    assert len(clipped) == h.TURN_CHARS
    with (tmp_path / "broken.jsonl").open("w") as out:
        out.write('{"type": "user", broken\n' + json.dumps(_user("kept")) + "\n")
    assert h.trajectory(str(tmp_path / "broken.jsonl"), "now", 3) == ["kept"]


def test_lines_are_read_backwards_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    lines = [f"line {i:06d}".encode() for i in range(20_000)]
    path.write_bytes(b"\n".join(lines) + b"\n")
    found = list(h.lines_backwards(str(path)))
    assert found[:3] == [lines[-1], lines[-2], lines[-3]]
    assert found[-1] == lines[0] and len(found) == len(lines)
    assert list(h.lines_backwards(str(path), deadline=time.monotonic() - 1)) == []
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        h.open_regular(str(fifo))


def test_http_answers_are_decoded_or_refused() -> None:
    ok = b'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{"a": 1}'
    assert h.decode_response(ok) == {"a": 1}
    chunked = b'HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n4\r\n{"a"\r\n3;x\r\n: 2\r\n1\r\n}\r\n0\r\n\r\n'
    assert h.decode_response(chunked) == {"a": 2}
    for raw, detail in (
        (b"garbage", "no HTTP response"),
        (b"HTTP/1.1\r\n\r\n", "no HTTP status"),
        (b"HTTP/1.1 abc\r\n\r\n", "no HTTP status"),
        (b"HTTP/1.1 401 No\r\n\r\n", "HTTP 401: check KENNING_ENCOUNTER_TOKEN"),
        (b"HTTP/1.1 403 No\r\n\r\n", "HTTP 403: check KENNING_ENCOUNTER_TOKEN"),
        (b"HTTP/1.1 500 Oops\r\n\r\n{}", "HTTP 500"),
        (b"HTTP/1.1 200 OK\r\n\r\nnot json", "not JSON"),
        (b"HTTP/1.1 200 OK\r\n\r\n" + b"[" * 100_000, "not JSON"),
    ):
        with pytest.raises(h.HookFailure) as info:
            h.decode_response(raw)
        assert (info.value.kind, info.value.detail) == ("bad", detail)
    head = b"HTTP/1.1 200 OK\r\nX-A: 1\r\ncontent-LENGTH:  12 "
    assert h.header_value(head, b"content-length") == b"12"
    assert h.header_value(head, b"x-b") is None
    assert h.dechunk(b"3\r\nabc\r\n") == b"abc"


def test_each_failure_says_what_happened() -> None:
    options = h.Options("prompt", "http://m:1", 2.5, 6)
    lines = {
        kind: h.failure_line(options, h.HookFailure(kind, "why"))
        for kind in ("unreachable", "timeout", "failed", "bad")
    }
    assert lines == {
        "unreachable": "[kenning-encounter: memory server unreachable at http://m:1 — running "
        "without infusion]",
        "timeout": "[kenning-encounter: memory server at http://m:1 did not answer within 2.5 s "
        "— running without infusion]",
        "failed": "[kenning-encounter: memory at http://m:1 failed to infuse (why) — running "
        "without infusion]",
        "bad": "[kenning-encounter: memory server at http://m:1 answered badly (why) — running "
        "without infusion]",
    }
    assert str(h.HookFailure("bad")) == "bad" and str(h.HookFailure("bad", "x")) == "bad: x"


def test_handles_are_kept_privately_per_session(tmp_path: Path) -> None:
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "HOME": str(tmp_path / "home")}
    folder = tmp_path / "state" / "kenning-encounter" / "handles"
    assert h.handle_dir(env) == str(folder)
    assert h.handle_dir({"HOME": str(tmp_path / "home")}) == str(
        tmp_path / "home" / ".local" / "state" / "kenning-encounter" / "handles"
    )
    assert h.handle_dir({"XDG_STATE_HOME": "relative", "HOME": "also-relative"}) is None
    assert h.handle_path(env, "5d1e-7c0a") == str(folder / "5d1e-7c0a")
    odd = h.handle_path(env, "../escape")
    assert (
        odd is not None and os.path.dirname(odd) == str(folder) and len(os.path.basename(odd)) == 64
    )
    assert os.path.basename(h.handle_path(env, ".hidden") or "") != ".hidden"
    assert h.load_handle(env, "s1") is None
    h.save_handle(env, "s1", "s1~" + "a" * 26)
    assert h.load_handle(env, "s1") == "s1~" + "a" * 26
    assert stat.S_IMODE(os.stat(folder / "s1").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    h.save_handle(env, "s1", "someone-else~" + "b" * 26)  # not this session's: ignored
    assert h.load_handle(env, "s1") == "s1~" + "a" * 26
    (folder / "s2").write_text("s1~" + "c" * 26)  # a file that is not s2's handle
    assert h.load_handle(env, "s2") is None
    h.remember(env, "s3", {"handle": "s3~" + "d" * 26})
    assert h.load_handle(env, "s3") == "s3~" + "d" * 26
    h.remember(env, "s3", {"handle": None})
    assert h.load_handle(env, "s3") == "s3~" + "d" * 26
    old = time.time() - h.HANDLE_KEEP_S - 60
    os.utime(folder / "s1", (old, old))
    h.prune_handles(env, time.time())
    assert not (folder / "s1").exists() and (folder / "s3").exists()


# --------------------------------------------------------------- the modes, in process

SESSION = "5d1e7c0a-parts"


@pytest.fixture
def server() -> Iterator[FakeHookServer]:
    with fake_server() as running:
        yield running


def _printed(capsys: pytest.CaptureFixture[str]) -> str | None:
    out = capsys.readouterr().out
    if not out:
        return None
    [line] = out.splitlines()
    return json.loads(line)["hookSpecificOutput"]["additionalContext"]


def _env(server: FakeHookServer, tmp_path: Path, **values: str) -> dict[str, str]:
    return {
        "KENNING_ENCOUNTER_URL": server.url,
        "CLAUDE_CODE_ENTRYPOINT": "cli",
        "XDG_STATE_HOME": str(tmp_path / "state"),
        **values,
    }


def _options(server: FakeHookServer, mode: str = "prompt", timeout: float = 5.0) -> h.Options:
    return h.Options(mode, server.url, timeout, 6)


def test_a_prompt_is_sent_with_its_trajectory_and_the_payload_printed(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _transcript(tmp_path / "t.jsonl", [_user("before"), _user("the prompt")])
    event = {"session_id": SESSION, "prompt": "the prompt", "transcript_path": path, "cwd": "/w"}
    h.run_prompt(_options(server), event, _env(server, tmp_path))
    assert _printed(capsys) == server.payload
    [sent] = server.received
    assert sent.path == "/infuse" and isinstance(sent.body, dict)
    assert sent.body["session_id"] == SESSION and sent.body["prompt"] == "the prompt"
    assert sent.body["trajectory"] == ["before"] and sent.body["cwd"] == "/w"
    assert 0 < int(sent.body["deadline_ms"]) <= 5000
    assert sent.headers.get("Content-Type") == "application/json"


def test_a_prompt_carries_the_kept_handle_and_keeps_a_new_one(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path, KENNING_ENCOUNTER_TOKEN="tok")
    server.token = "tok"
    h.save_handle(env, SESSION, f"{SESSION}~" + "a" * 26)
    h.run_prompt(_options(server), {"session_id": SESSION, "prompt": "p"}, env)
    [sent] = server.received
    assert isinstance(sent.body, dict) and sent.body["session_id"] == f"{SESSION}~" + "a" * 26
    assert sent.headers.get("Authorization") == "Bearer tok"
    capsys.readouterr()


@pytest.mark.parametrize(
    ("event", "why"),
    [
        ({"session_id": SESSION, "prompt": "  "}, "a blank prompt"),
        ({"session_id": SESSION}, "no prompt"),
        ({"prompt": "p"}, "no session"),
    ],
)
def test_nothing_is_sent_for_an_empty_event(
    server: FakeHookServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    event: dict[str, object],
    why: str,
) -> None:
    h.run_prompt(_options(server), event, _env(server, tmp_path))
    assert server.received == [] and _printed(capsys) is None, why


def test_a_closed_gate_sends_nothing(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli")
    h.run_prompt(_options(server), {"session_id": SESSION, "prompt": "p"}, env)
    assert server.received == [] and _printed(capsys) is None


def test_how_each_answer_is_printed(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path)
    event = {"session_id": SESSION, "prompt": "p"}
    server.meta = {"channel": "lexical", "degraded": True, "degraded_reason": "no key\nat all"}
    h.run_prompt(_options(server), event, env)
    assert (
        _printed(capsys)
        == f"[kenning-encounter: lexical fallback — no key at all]\n{server.payload}"
    )
    server.meta = {"channel": "cache", "degraded": True}
    h.run_prompt(_options(server), event, env)
    assert _printed(capsys) == (
        f"[kenning-encounter: degraded channel cache — no reason given]\n{server.payload}"
    )
    server.meta, server.payload, server.status = {}, "   ", "silent"
    h.run_prompt(_options(server), event, env)
    assert _printed(capsys) is None
    server.status, server.meta = "failed", {"degraded_reason": "the index\nbroke"}
    h.run_prompt(_options(server), event, env)
    assert _printed(capsys) == (
        f"[kenning-encounter: memory at {server.url} failed to infuse (the index broke) — "
        "running without infusion]"
    )
    server.meta = {}
    h.run_prompt(_options(server), event, env)
    assert "failed to infuse (no reason given)" in (_printed(capsys) or "")
    server.status, server.raw_answer = None, b'{"no": "payload"}'
    h.run_prompt(_options(server), event, env)
    assert "answered badly (no payload)" in (_printed(capsys) or "")


def test_session_start_prints_the_context_and_keeps_the_handle(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path)
    server.context = "the re-entry note"
    server.raw_answer = json.dumps(
        {"context": "the re-entry note", "handle": f"{SESSION}~" + "b" * 26}
    ).encode()
    h.run_session_start(
        _options(server, "session-start"), {"session_id": SESSION, "source": "resume"}, env
    )
    assert _printed(capsys) == "the re-entry note"
    assert h.load_handle(env, SESSION) == f"{SESSION}~" + "b" * 26
    [sent] = server.received
    assert sent.path == "/session-start" and sent.body == {
        "session_id": SESSION,
        "source": "resume",
        "hook": HOOK_DIGEST,
    }
    gated = _env(server, tmp_path, CLAUDE_CODE_ENTRYPOINT="sdk-cli")
    h.run_session_start(_options(server, "session-start"), {"session_id": SESSION}, gated)
    assert _printed(capsys) == "the re-entry note\n" + (h.gate_notice(gated) or "")
    sent = server.received[-1]
    assert sent.body == {
        "session_id": f"{SESSION}~" + "b" * 26,
        "source": None,
        "hook": HOOK_DIGEST,
    }
    h.run_session_start(_options(server, "session-start"), {"source": "startup"}, env)
    assert _printed(capsys) is None and len(server.received) == 2


def test_session_start_without_a_server_still_names_the_session(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with fake_server() as gone:
        url = gone.url
    options = h.Options("session-start", url, 1.0, 6)
    env = {"XDG_STATE_HOME": str(tmp_path / "state"), "CLAUDE_CODE_ENTRYPOINT": "cli"}
    h.run_session_start(options, {"session_id": SESSION}, env)
    assert _printed(capsys) == (
        f"Your kenning-encounter session_id is {SESSION}; pass it as session_id to the memory "
        f"tools. (memory server unreachable at {url}; no re-entry note.)"
    )


def test_session_end_sends_the_handle_and_prints_nothing(
    server: FakeHookServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    env = _env(server, tmp_path)
    h.save_handle(env, SESSION, f"{SESSION}~" + "c" * 26)
    h.run_session_end(
        _options(server, "session-end"), {"session_id": SESSION, "reason": "exit"}, env
    )
    [sent] = server.received
    assert sent.path == "/session-end"
    assert sent.body == {"session_id": f"{SESSION}~" + "c" * 26, "reason": "exit"}
    assert _printed(capsys) is None
    assert h.load_handle(env, SESSION) is not None  # kept for a --resume
    h.run_session_end(_options(server, "session-end"), {"reason": "exit"}, env)
    assert len(server.received) == 1


def test_post_json_reports_each_failure_kind(tmp_path: Path) -> None:
    with fake_server() as gone:
        url = gone.url
    with pytest.raises(h.HookFailure) as down:
        h.post_json(h.Options("prompt", url, 1.0, 6), "/infuse", {}, {}, 1.0)
    assert down.value.kind == "unreachable"
    with fake_server() as slow:
        slow.behaviour = "slow"
        with pytest.raises(h.HookFailure) as late:
            h.post_json(h.Options("prompt", slow.url, 0.3, 6), "/infuse", {}, {}, 5.0)
        assert late.value.kind == "timeout"
    with fake_server() as chunked:
        chunked.behaviour = "chunked"
        answer = h.post_json(h.Options("prompt", chunked.url, 5.0, 6), "/session-end", {}, {}, 5.0)
        assert answer == {"dissolved": True}
    with pytest.raises(h.HookFailure) as bad:
        h.post_json(h.Options("prompt", "ftp://x", 1.0, 6), "/infuse", {}, {}, 1.0)
    # A URL no request can use is a setting's failure, stated without the URL itself.
    assert bad.value.kind == "setting"
    assert bad.value.detail.startswith("KENNING_ENCOUNTER_URL is not a usable http(s) address")
