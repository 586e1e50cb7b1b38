"""Test doubles for the Claude Code hook: a stand-in server and transcript builders.

``FakeHookServer`` is a real HTTP server on 127.0.0.1 that speaks the hook
endpoints' contract (``/infuse``, ``/session-start``, ``/session-end``) and can
be told to misbehave, so the hook's failure handling is tested over a real
socket. The real server's endpoints are tested against the real server.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "src" / "kenning_encounter" / "hooks" / "infuse_hook.py"
HOOK_LINK = REPO / "scripts" / "kenning_encounter_infuse_hook.py"
# What the hook reports itself as at SessionStart (infuse_hook.own_digest).
HOOK_DIGEST = hashlib.sha256(HOOK.read_bytes()).hexdigest()[:16]

BEHAVIOURS = ("normal", "slow", "garbage", "error", "chunked")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: object


@dataclass
class FakeHookServer:
    """Answers per the hook contract; ``behaviour`` switches how it misbehaves."""

    behaviour: str = "normal"
    payload: str = "## held\n- café — a node that bears"
    meta: dict[str, object] = field(
        default_factory=lambda: {"channel": "meaning", "degraded": False, "degraded_reason": None}
    )
    context: str = "session_id: S; re-entry note"
    status: str | None = None  # the /infuse answer's status; None sends none (an older server)
    raw_answer: bytes | None = None  # sent as the 200 body of every route instead of JSON
    token: str | None = None
    slow_seconds: float = 10.0
    received: list[Received] = field(default_factory=list[Received])
    _release: threading.Event = field(default_factory=threading.Event)
    _server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # As asyncio servers do; Nagle would otherwise stall each answer.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body: object = json.loads(raw)
                except ValueError:
                    body = raw
                fake.received.append(Received(self.path, dict(self.headers.items()), body))
                fake.answer(self)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        ).start()

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def answer(self, handler: BaseHTTPRequestHandler) -> None:
        expected = f"Bearer {self.token}"
        if self.token is not None and handler.headers.get("Authorization") != expected:
            self.send(handler, 401, b'{"detail": "bad token"}')
            return
        if self.behaviour == "slow":
            self._release.wait(self.slow_seconds)
        if self.behaviour == "garbage":
            self.send(handler, 200, b"<html>not json</html>")
            return
        if self.behaviour == "error":
            self.send(handler, 500, b'{"detail": "boom"}')
            return
        if self.raw_answer is not None:
            self.send(handler, 200, self.raw_answer)
            return
        route = handler.path
        if route.endswith("/infuse"):
            answer: object = {"payload": self.payload, "meta": self.meta}
            if self.status is not None:
                answer = {**answer, "status": self.status}
        elif route.endswith("/session-start"):
            answer = {"context": self.context}
        elif route.endswith("/session-end"):
            answer = {"dissolved": True}
        else:
            self.send(handler, 404, b'{"detail": "no such route"}')
            return
        body = json.dumps(answer).encode()
        if self.behaviour == "chunked":
            self.send_chunked(handler, body)
        else:
            self.send(handler, 200, body)

    @staticmethod
    def send(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.send_header("Connection", "close")
            handler.end_headers()
            handler.wfile.write(body)
        except OSError:
            pass  # the hook gave up first, as it should

    @staticmethod
    def send_chunked(handler: BaseHTTPRequestHandler, body: bytes) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Transfer-Encoding", "chunked")
        handler.send_header("Connection", "close")
        handler.end_headers()
        middle = len(body) // 2
        for piece in (body[:middle], body[middle:]):
            handler.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
        handler.wfile.write(b"0\r\n\r\n")


@contextmanager
def fake_server(**settings: object) -> Generator[FakeHookServer, None, None]:
    server = FakeHookServer(**settings)  # type: ignore[arg-type]
    server.start()
    try:
        yield server
    finally:
        server.stop()


# --------------------------------------------------------------- transcripts


def record(kind: str, content: object, **flags: object) -> dict[str, object]:
    role = "assistant" if kind == "assistant" else "user"
    line: dict[str, object] = {
        "parentUuid": None,
        "isSidechain": False,
        "userType": "external",
        "type": kind,
        "message": {"role": role, "content": content},
        "uuid": "u",
        "timestamp": "2025-01-01T00:00:00Z",
    }
    line.update(flags)
    return line


def typed(text: str, **flags: object) -> dict[str, object]:
    return record("user", text, **flags)


def text_blocks(*texts: str) -> dict[str, object]:
    return record("user", [{"type": "text", "text": text} for text in texts])


def tool_result(content: str) -> dict[str, object]:
    return record("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": content}])


def assistant(text: str) -> dict[str, object]:
    return record("assistant", [{"type": "text", "text": text}])


def jsonl(records: list[dict[str, object] | str]) -> str:
    """Records as transcript lines; a str is written verbatim (a malformed line)."""
    lines = [item if isinstance(item, str) else json.dumps(item) for item in records]
    return "".join(line + "\n" for line in lines)


def write_transcript(path: Path, records: list[dict[str, object] | str]) -> Path:
    path.write_text(jsonl(records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- subprocess


@dataclass
class HookRun:
    returncode: int
    stdout: str
    stderr: str

    def context(self) -> str:
        """The additionalContext of the one JSON object printed."""
        output = json.loads(self.stdout)
        return output["hookSpecificOutput"]["additionalContext"]


_STATE_HOME: list[str] = []


def state_home_for_tests() -> str:
    """One marked folder per test process for the handles hooks keep, never the user's."""
    if not _STATE_HOME:
        _STATE_HOME.append(tempfile.mkdtemp(prefix="kenning-encounter-test-state-"))
    return _STATE_HOME[0]


def hook_env(**values: str) -> dict[str, str]:
    """The caller's environment without any hook setting, plus ``values``.

    The hook keeps session handles under XDG_STATE_HOME: a test folder, so no
    test ever writes the user's ~/.local/state.
    """
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("KENNING_ENCOUNTER_") and key != "CLAUDE_CODE_ENTRYPOINT"
    }
    env["XDG_STATE_HOME"] = state_home_for_tests()
    env.update(values)
    return env


def run_hook(
    args: list[str],
    stdin: object,
    env: dict[str, str],
    *,
    script: Path = HOOK,
    wall: float = 30.0,
) -> HookRun:
    """Run the hook as Claude Code does: a fresh ``python -S`` process."""
    data = stdin if isinstance(stdin, bytes) else json.dumps(stdin).encode()
    done = subprocess.run(
        [sys.executable, "-S", str(script), *args],
        input=data,
        env=env,
        capture_output=True,
        timeout=wall,
        check=False,
    )
    return HookRun(done.returncode, done.stdout.decode(), done.stderr.decode())
