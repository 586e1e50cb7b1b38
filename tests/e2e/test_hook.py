"""The Claude Code hook as Claude Code runs it: a subprocess fed hook JSON on stdin.

The server on the other end is ``FakeHookServer`` (a real HTTP server speaking
the hook contract), so every way a server can fail is reproducible here.
"""

from __future__ import annotations

import ast
import json
import socket
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from tests.support.hookfakes import (
    HOOK,
    HOOK_DIGEST,
    HOOK_LINK,
    FakeHookServer,
    assistant,
    fake_server,
    hook_env,
    jsonl,
    record,
    run_hook,
    text_blocks,
    tool_result,
    typed,
    write_transcript,
)

SESSION = "0b7c-session"


@pytest.fixture
def server() -> Iterator[FakeHookServer]:
    with fake_server() as running:
        yield running


def prompt_event(prompt: str, transcript: Path | str) -> dict[str, object]:
    return {
        "session_id": SESSION,
        "transcript_path": str(transcript),
        "cwd": "/work/project",
        "hook_event_name": "UserPromptSubmit",
        "prompt": prompt,
    }


def cli_env(server: FakeHookServer, **values: str) -> dict[str, str]:
    return hook_env(KENNING_ENCOUNTER_URL=server.url, CLAUDE_CODE_ENTRYPOINT="cli", **values)


def infuse_bodies(server: FakeHookServer) -> list[dict[str, object]]:
    bodies: list[dict[str, object]] = []
    for received in server.received:
        assert received.path == "/infuse"
        assert isinstance(received.body, dict)
        bodies.append(received.body)
    return bodies


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# ------------------------------------------------------------ prompt mode


def test_payload_is_injected_with_prompt_and_trajectory(
    server: FakeHookServer, tmp_path: Path
) -> None:
    transcript = write_transcript(
        tmp_path / "t.jsonl",
        [typed("first question"), assistant("an answer"), typed("second question")],
    )
    run = run_hook(["--mode", "prompt"], prompt_event("third", transcript), cli_env(server))

    assert run.returncode == 0
    assert run.stderr == ""
    assert json.loads(run.stdout) == {
        "hookSpecificOutput": {
            "hookEventName": "UserPromptSubmit",
            "additionalContext": server.payload,
        }
    }
    [body] = infuse_bodies(server)
    # The server is told how long the hook waits, less what the hook keeps for itself.
    deadline_ms = body.pop("deadline_ms")
    assert isinstance(deadline_ms, int) and 0 < deadline_ms < 2500
    assert body == {
        "session_id": SESSION,
        "prompt": "third",
        "trajectory": ["first question", "second question"],
        "cwd": "/work/project",
    }
    assert server.received[0].headers["Content-Type"] == "application/json"
    assert "Authorization" not in server.received[0].headers


def test_cold_nodes_are_asked_for_only_when_the_setting_says_so(
    server: FakeHookServer, tmp_path: Path
) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", [typed("first")])
    for value, asked in (("1", True), ("0", None), ("yes", None)):
        server.received.clear()
        env = cli_env(server, KENNING_ENCOUNTER_INFUSE_COLD=value)
        run = run_hook(["--mode", "prompt"], prompt_event("again", transcript), env)
        assert run.returncode == 0
        [body] = infuse_bodies(server)
        assert body.get("include_cold") is asked, value


def test_trajectory_keeps_only_what_the_user_typed(server: FakeHookServer, tmp_path: Path) -> None:
    transcript = write_transcript(
        tmp_path / "t.jsonl",
        [
            typed("kept: oldest"),
            tool_result("file contents"),
            typed("meta caveat", isMeta=True),
            typed("a subagent's prompt", isSidechain=True),
            typed("summary of earlier work", isCompactSummary=True),
            typed("<command-name>/clear</command-name>\n<command-message>clear</command-message>"),
            typed("<local-command-stdout>cleared</local-command-stdout>"),
            typed("<bash-input>ls</bash-input>"),
            text_blocks("[Request interrupted by user for tool use]"),
            typed("[Request interrupted by user]"),
            '{"type": "user", "message": {"role": "user", "content": "trunc',
            "not json at all",
            typed("<system-reminder>only a reminder</system-reminder>"),
            typed("   "),
            record("user", [{"type": "image", "source": {}}]),
            assistant("assistant text is not a turn"),
            {"type": "summary", "summary": "a title"},
            typed("<system-reminder>x</system-reminder>kept: after reminder"),
            text_blocks("kept: block one", "block two"),
            typed("kept: before an unclosed<system-reminder>reminder"),
        ],
    )
    run = run_hook(["--turns", "10"], prompt_event("now", transcript), cli_env(server))

    assert run.returncode == 0
    [body] = infuse_bodies(server)
    assert body["trajectory"] == [
        "kept: oldest",
        "kept: after reminder",
        "kept: block one\nblock two",
        "kept: before an unclosed",
    ]


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        # The transcript lags: the current prompt is not written yet.
        ([typed("one"), typed("two")], ["one", "two"]),
        # The transcript already holds the current prompt as its last turn.
        ([typed("one"), typed("two"), typed("the prompt")], ["one", "two"]),
        (
            [typed("one"), typed("two"), typed("the prompt\n<system-reminder>r</system-reminder>")],
            ["one", "two"],
        ),
    ],
    ids=["lagging", "already-written", "already-written-with-reminder"],
)
def test_current_prompt_never_duplicated(
    server: FakeHookServer,
    tmp_path: Path,
    tail: list[dict[str, object] | str],
    expected: list[str],
) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", tail)
    run_hook([], prompt_event("the prompt", transcript), cli_env(server))
    [body] = infuse_bodies(server)
    assert body["trajectory"] == expected
    assert body["prompt"] == "the prompt"


def test_turns_limits_the_trajectory_to_the_newest(server: FakeHookServer, tmp_path: Path) -> None:
    transcript = write_transcript(tmp_path / "t.jsonl", [typed(f"turn {i}") for i in range(10)])
    run_hook(["--turns", "3"], prompt_event("now", transcript), cli_env(server))
    run_hook(["--turns=0"], prompt_event("now", transcript), cli_env(server))
    run_hook([], prompt_event("now", transcript), cli_env(server))

    limited, none, default = infuse_bodies(server)
    assert limited["trajectory"] == ["turn 7", "turn 8", "turn 9"]
    assert none["trajectory"] == []
    assert default["trajectory"] == [f"turn {i}" for i in range(4, 10)]


def test_long_turns_are_clipped_head_and_tail(server: FakeHookServer, tmp_path: Path) -> None:
    long_turn = "HEAD" + "x" * 10_000 + "TAIL"
    transcript = write_transcript(tmp_path / "t.jsonl", [typed(long_turn)])
    run_hook([], prompt_event("now", transcript), cli_env(server))

    [body] = infuse_bodies(server)
    trajectory = body["trajectory"]
    assert isinstance(trajectory, list)
    [clipped] = trajectory
    assert isinstance(clipped, str)
    assert len(clipped) <= 2000
    assert clipped.startswith("HEAD")
    assert clipped.endswith("TAIL")


@pytest.mark.parametrize("path", ["missing.jsonl", "", "dir"])
def test_unreadable_transcript_still_infuses(
    server: FakeHookServer, tmp_path: Path, path: str
) -> None:
    (tmp_path / "dir").mkdir()
    run = run_hook([], prompt_event("now", tmp_path / path if path else ""), cli_env(server))
    assert run.returncode == 0
    assert run.context() == server.payload
    [body] = infuse_bodies(server)
    assert body["trajectory"] == []


# ------------------------------------------------------- a 100 MB transcript

FILLER_BYTES = 100 * 1024 * 1024


@pytest.fixture(scope="session")
def huge_transcript(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """100 MB of realistic traffic, then a tail with a big tool result in it."""
    path = tmp_path_factory.mktemp("huge") / "transcript.jsonl"
    block = jsonl(
        [
            typed("filler prompt"),
            assistant("working on it " * 40),
            tool_result("line of a large file\n" * 1000),
            assistant("done " * 100),
        ]
        * 20
    ).encode()
    with path.open("wb") as out:
        out.write(jsonl([typed("the very first turn, far outside the tail")]).encode())
        written = 0
        while written < FILLER_BYTES:
            out.write(block)
            written += len(block)
        out.write(
            jsonl(
                [
                    typed("recent one"),
                    assistant("reading"),
                    tool_result("x" * 1_500_000),
                    typed("recent two"),
                    '{"broken": ',
                    typed("recent three"),
                ]
            ).encode()
        )
    return path


def test_huge_transcript_is_read_from_its_tail_only(
    server: FakeHookServer, huge_transcript: Path
) -> None:
    assert huge_transcript.stat().st_size > FILLER_BYTES
    run = run_hook(["--turns", "3"], prompt_event("now", huge_transcript), cli_env(server))

    assert run.returncode == 0
    # Speed is measured in bench/hook_bench.py; that the reader stays in the tail is
    # shown by test_huge_transcript_never_reaches_its_head.
    [body] = infuse_bodies(server)
    assert body["trajectory"] == ["recent one", "recent two", "recent three"]


def test_huge_transcript_never_reaches_its_head(
    server: FakeHookServer, huge_transcript: Path
) -> None:
    run_hook(["--turns", "100000"], prompt_event("now", huge_transcript), cli_env(server))
    [body] = infuse_bodies(server)
    trajectory = body["trajectory"]
    assert isinstance(trajectory, list)
    assert trajectory[-3:] == ["recent one", "recent two", "recent three"]
    assert "the very first turn, far outside the tail" not in trajectory
    # The window is a few MiB: some filler turns, far from all of them.
    assert 0 < trajectory.count("filler prompt") < 1000


# ------------------------------------------------------------------- gate


@pytest.mark.parametrize(
    ("infuse", "entrypoint", "calls"),
    [
        (None, "cli", True),
        ("auto", "cli", True),
        ("auto", "claude-vscode", True),
        ("auto", "claude-desktop", True),
        ("auto", "local-agent", True),
        ("auto", "sdk-cli", False),
        ("auto", "mcp", False),
        ("auto", "sdk-ts", False),
        ("auto", "sdk-py", False),
        ("auto", "github-action", False),
        ("auto", None, False),
        ("on", "sdk-ts", True),
        ("on", None, True),
        ("off", "cli", False),
        ("OFF", "cli", False),
    ],
)
def test_gate(
    server: FakeHookServer,
    tmp_path: Path,
    infuse: str | None,
    entrypoint: str | None,
    calls: bool,
) -> None:
    values = {"KENNING_ENCOUNTER_URL": server.url}
    if infuse is not None:
        values["KENNING_ENCOUNTER_INFUSE"] = infuse
    if entrypoint is not None:
        values["CLAUDE_CODE_ENTRYPOINT"] = entrypoint
    run = run_hook([], prompt_event("now", tmp_path / "none"), hook_env(**values))

    assert run.returncode == 0
    assert len(server.received) == (1 if calls else 0)
    assert (run.stdout != "") == calls


# --------------------------------------------------------- what is printed


def test_empty_payload_is_silence(server: FakeHookServer, tmp_path: Path) -> None:
    server.payload = ""
    healthy = run_hook([], prompt_event("unrelated", tmp_path / "none"), cli_env(server))
    server.meta = {"channel": "lexical", "degraded": True, "degraded_reason": "no key"}
    degraded = run_hook([], prompt_event("unrelated", tmp_path / "none"), cli_env(server))

    assert len(server.received) == 2
    assert (healthy.returncode, healthy.stdout) == (0, "")
    assert (degraded.returncode, degraded.stdout) == (0, "")


def test_degraded_channel_is_stated_in_one_line(server: FakeHookServer, tmp_path: Path) -> None:
    server.meta = {
        "channel": "lexical",
        "degraded": True,
        "degraded_reason": "matcher timed out\nafter 2 s",
    }
    run = run_hook([], prompt_event("now", tmp_path / "none"), cli_env(server))

    first, rest = run.context().split("\n", 1)
    assert first == "[kenning-encounter: lexical fallback — matcher timed out after 2 s]"
    assert rest == server.payload


def test_chunked_answer_is_read(tmp_path: Path) -> None:
    with fake_server(behaviour="chunked") as server:
        run = run_hook([], prompt_event("now", tmp_path / "none"), cli_env(server))
    assert run.context() == server.payload


# ---------------------------------------------------------------- failures


def test_server_down_is_stated(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    env = hook_env(KENNING_ENCOUNTER_URL=url, CLAUDE_CODE_ENTRYPOINT="cli")
    run = run_hook([], prompt_event("now", tmp_path / "none"), env)

    assert run.returncode == 0
    assert run.stderr == ""
    assert run.context() == (
        f"[kenning-encounter: memory server unreachable at {url} — running without infusion]"
    )


def test_slow_server_is_abandoned_within_the_timeout(tmp_path: Path) -> None:
    with fake_server(behaviour="slow") as server:
        run = run_hook(
            ["--timeout", "0.8"], prompt_event("now", tmp_path / "none"), cli_env(server)
        )
        assert len(server.received) == 1

    # The server holds the request for 10 s: a hook that ignored its timeout would print the payload.
    assert run.returncode == 0
    assert "did not answer within 0.8 s" in run.context()


def test_timeout_from_the_environment(tmp_path: Path) -> None:
    with fake_server(behaviour="slow") as server:
        env = cli_env(server, KENNING_ENCOUNTER_HOOK_TIMEOUT="0.5")
        run = run_hook([], prompt_event("now", tmp_path / "none"), env)

    assert "did not answer within 0.5 s" in run.context()


@pytest.mark.parametrize(
    ("behaviour", "detail"),
    [("garbage", "not JSON"), ("error", "HTTP 500")],
)
def test_bad_answer_is_stated(tmp_path: Path, behaviour: str, detail: str) -> None:
    with fake_server(behaviour=behaviour) as server:
        run = run_hook([], prompt_event("now", tmp_path / "none"), cli_env(server))

    assert run.returncode == 0
    assert run.context() == (
        f"[kenning-encounter: memory server at {server.url} answered badly ({detail})"
        " — running without infusion]"
    )


def test_answer_without_payload_is_stated(server: FakeHookServer, tmp_path: Path) -> None:
    server.payload = None  # type: ignore[assignment]
    run = run_hook([], prompt_event("now", tmp_path / "none"), cli_env(server))
    assert "answered badly (no payload)" in run.context()


def test_token_is_sent_when_set(tmp_path: Path) -> None:
    with fake_server(token="s3cret") as server:
        good = run_hook(
            [],
            prompt_event("now", tmp_path / "none"),
            cli_env(server, KENNING_ENCOUNTER_TOKEN="s3cret"),
        )
        wrong = run_hook(
            [],
            prompt_event("now", tmp_path / "none"),
            cli_env(server, KENNING_ENCOUNTER_TOKEN="guess"),
        )
        missing = run_hook([], prompt_event("now", tmp_path / "none"), cli_env(server))

    assert server.received[0].headers["Authorization"] == "Bearer s3cret"
    assert good.context() == server.payload
    assert "HTTP 401: check KENNING_ENCOUNTER_TOKEN" in wrong.context()
    assert "HTTP 401" in missing.context()


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["--mode", "nope"],
        ["--mode"],
        ["--timeout", "abc"],
        ["--timeout", "-1"],
        ["--turns", "-1"],
        ["--turns", "many"],
        ["--url", "ftp://host"],
        ["--mode", "prompt", "--mode", "prompt"],
        ["positional"],
    ],
)
def test_bad_arguments_are_silent(server: FakeHookServer, tmp_path: Path, args: list[str]) -> None:
    run = run_hook(args, prompt_event("now", tmp_path / "none"), cli_env(server))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert server.received == []


@pytest.mark.parametrize("stdin", [b"", b"not json", b"[1, 2]", b'{"prompt": 3}'])
def test_unusable_stdin_is_silent(server: FakeHookServer, stdin: bytes) -> None:
    run = run_hook([], stdin, cli_env(server))
    assert (run.returncode, run.stdout, run.stderr) == (0, "", "")
    assert server.received == []


def test_debug_goes_to_stderr_only(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    env = hook_env(
        KENNING_ENCOUNTER_URL=url,
        CLAUDE_CODE_ENTRYPOINT="cli",
        KENNING_ENCOUNTER_HOOK_DEBUG="1",
    )
    run = run_hook([], prompt_event("now", tmp_path / "none"), env)
    assert "infuse failed: unreachable" in run.stderr
    assert "unreachable" in run.context()


def test_url_flag_accepts_the_mcp_endpoint(server: FakeHookServer, tmp_path: Path) -> None:
    env = hook_env(CLAUDE_CODE_ENTRYPOINT="cli", KENNING_ENCOUNTER_URL="http://127.0.0.1:1")
    run = run_hook(["--url", f"{server.url}/mcp/"], prompt_event("now", tmp_path / "x"), env)
    assert run.context() == server.payload
    assert server.received[0].path == "/infuse"


# ------------------------------------------------------- session start / end


def test_session_start_injects_the_server_context(server: FakeHookServer) -> None:
    event = {"session_id": SESSION, "hook_event_name": "SessionStart", "source": "startup"}
    run = run_hook(["--mode", "session-start"], event, cli_env(server))

    assert json.loads(run.stdout) == {
        "hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": server.context}
    }
    [received] = server.received
    assert received.path == "/session-start"
    assert received.body == {"session_id": SESSION, "source": "startup", "hook": HOOK_DIGEST}


def test_session_start_without_server_still_names_the_session() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    # Not gated: SDK sessions need their session_id as much as CLI ones.
    env = hook_env(KENNING_ENCOUNTER_URL=url, CLAUDE_CODE_ENTRYPOINT="sdk-py")
    run = run_hook(["--mode", "session-start"], {"session_id": SESSION}, env)

    assert run.returncode == 0
    context = run.context()
    assert context.startswith(f"Your kenning-encounter session_id is {SESSION};")
    assert "memory server unreachable" in context


def test_session_end_posts_and_prints_nothing(server: FakeHookServer) -> None:
    event = {"session_id": SESSION, "hook_event_name": "SessionEnd", "reason": "logout"}
    run = run_hook(["--mode", "session-end"], event, cli_env(server))

    assert (run.returncode, run.stdout) == (0, "")
    [received] = server.received
    assert received.path == "/session-end"
    assert received.body == {"session_id": SESSION, "reason": "logout"}


def test_session_end_does_not_wait_on_a_slow_server() -> None:
    events: list[str] = []

    class Holding(FakeHookServer):
        def answer(self, handler: BaseHTTPRequestHandler) -> None:
            super().answer(handler)
            events.append("server answered")

    # The server holds the request longer than the run's wall guard and the hook's own
    # --timeout: only session-end's short cap of its wait can let the hook exit first.
    server = Holding(behaviour="slow", slow_seconds=120.0)
    server.start()
    try:
        env = cli_env(server, KENNING_ENCOUNTER_HOOK_DEBUG="1")
        run = run_hook(["--mode", "session-end", "--timeout", "120"], {"session_id": SESSION}, env)
        events.append("hook exited")
        assert len(server.received) == 1
        assert events == ["hook exited"]  # the server still held the request
    finally:
        server.stop()
    assert (run.returncode, run.stdout) == (0, "")
    assert "session-end failed: timeout" in run.stderr


# ------------------------------------------------------------ the file itself


def test_script_link_runs_the_hook(server: FakeHookServer, tmp_path: Path) -> None:
    assert HOOK_LINK.is_symlink()
    assert HOOK_LINK.resolve() == HOOK.resolve()
    run = run_hook([], prompt_event("now", tmp_path / "x"), cli_env(server), script=HOOK_LINK)
    assert run.context() == server.payload


def annotation_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside an annotation (never evaluated, thanks to __future__)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        annotations: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            annotations.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            annotations.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            if annotation is not None:
                inside.update(id(sub) for sub in ast.walk(annotation))
    return inside


TYPE_NAMES = frozenset(
    {"str", "int", "float", "bytes", "bool", "list", "dict", "set", "tuple", "object", "type"}
)


def test_hook_source_runs_on_python_3_9() -> None:
    source = HOOK.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 9))

    assert any(
        isinstance(node, ast.ImportFrom)
        and node.module == "__future__"
        and any(alias.name == "annotations" for alias in node.names)
        for node in tree.body
    )
    # `X | Y` is a 3.10 runtime feature; it may appear only in annotations.
    in_annotations = annotation_nodes(tree)

    def type_like(node: ast.expr) -> bool:
        # int flags (os.O_WRONLY | ...) are or-ed at runtime on every version
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return type_like(node.left) or type_like(node.right)
        if isinstance(node, ast.Constant):
            return node.value is None
        return isinstance(node, ast.Subscript) or (
            isinstance(node, ast.Name) and node.id in TYPE_NAMES
        )

    runtime_unions = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.BitOr)
        and id(node) not in in_annotations
        and (type_like(node.left) or type_like(node.right))
    ]
    assert runtime_unions == []
    # zip(strict=...) and friends are 3.10+; parsing above already refuses `match`.
    strict_calls = [
        node.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and any(k.arg == "strict" for k in node.keywords)
    ]
    assert strict_calls == []
    # Parenthesized context managers parse under feature_version=(3, 9) but are 3.10+.
    grouped_withs = [
        node.lineno for node in ast.walk(tree) if isinstance(node, ast.With) and len(node.items) > 1
    ]
    assert grouped_withs == []


def test_hook_imports_the_standard_library_only() -> None:
    tree = ast.parse(HOOK.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    assert imported
    assert imported <= set(sys.stdlib_module_names)
