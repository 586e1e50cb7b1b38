"""Fake model providers: real HTTP servers on 127.0.0.1 speaking each provider's wire format.

The LLM is the one boundary the tests fake. These servers are driven by the
real client code (google-genai, httpx) exactly as a real endpoint would be.
A test scripts what the "model" answers: a queue of ``Reply`` values used in
order, then a ``responder`` function of the request it received.

    with FakeOpenAI() as fake:
        fake.script(Reply(status=500), Reply(text='{"ids": [3]}'))
        provider = OpenAICompatProvider(base_url=fake.url + "/v1", model="m")
"""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass(frozen=True)
class Reply:
    """What the fake sends for one request."""

    text: str | None = None  # the model's answer, wrapped in the provider's wire format
    status: int = 200
    raw: bytes | None = None  # a body sent verbatim instead (for broken responses)
    delay_s: float = 0.0  # sleep before answering (for timeouts)


@dataclass(frozen=True)
class Seen:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    system: str
    user: str
    at: float = field(default_factory=time.monotonic)


Responder = Callable[[Seen], "Reply | str"]

_LINE = re.compile(r"^(\d+): (.*)$", re.MULTILINE)


def listed_handles(user: str) -> dict[int, str]:
    """handle -> meaning for every item line in a selection prompt."""
    return {int(m.group(1)): m.group(2) for m in _LINE.finditer(user)}


def handle_of(user: str, needle: str) -> int:
    """The handle of the one listed meaning containing ``needle``."""
    found = [h for h, meaning in listed_handles(user).items() if needle in meaning]
    if len(found) != 1:
        raise AssertionError(f"{needle!r} matched {len(found)} listed meanings")
    return found[0]


def echo_meaning(seen: Seen) -> str:
    """A stand-in compressor: a sentence made from the node text it was sent."""
    fields = dict(line.split(": ", 1) for line in seen.user.splitlines() if ": " in line)
    return f"About {fields.get('Name', '?')}: {fields.get('Description', '')}".strip()


def nothing_selected(seen: Seen) -> str:
    return json.dumps({"ids": []})


def default_responder(seen: Seen) -> str:
    return nothing_selected(seen) if "MEMORY ITEMS" in seen.user else echo_meaning(seen)


class _FakeServer:
    """Common machinery; subclasses know one wire format."""

    def __init__(self, responder: Responder = default_responder) -> None:
        self.responder: Responder = responder
        self.requests: list[Seen] = []
        self.errors: list[str] = []  # responder failures, answered with HTTP 599
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    # -- wire format (subclasses) --------------------------------------------
    def _route(self, path: str) -> bool:
        raise NotImplementedError

    def _extract(self, body: dict[str, Any]) -> tuple[str, str]:
        raise NotImplementedError

    def _wrap(self, text: str, path: str) -> dict[str, Any]:
        raise NotImplementedError

    # -- test-facing API -------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *replies: Reply | str) -> None:
        with self._lock:
            for r in replies:
                self._script.append(Reply(text=r) if isinstance(r, str) else r)

    @property
    def hits(self) -> int:
        with self._lock:
            return len(self.requests)

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving ---------------------------------------------------------------
    def _answer(self, path: str, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        system, user = self._extract(body)
        seen = Seen(path, headers, body, system, user)
        with self._lock:
            self.requests.append(seen)
            scripted = self._script.popleft() if self._script else None
        if scripted is not None:
            return scripted
        try:
            answer = self.responder(seen)
        except Exception as exc:  # a broken script must show up in the test, not hang it
            with self._lock:
                self.errors.append(f"{type(exc).__name__}: {exc}")
            return Reply(status=599)
        return Reply(text=answer) if isinstance(answer, str) else answer

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go out in separate writes; without this,
                # Nagle plus delayed ACK add ~40 ms to every exchange.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                # The client may have given up (a timeout test); nothing to answer.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError, TimeoutError):
                    self._serve()

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                raw_body = self.rfile.read(length)
                path = self.path.split("?", 1)[0]
                if not fake._route(path):
                    self._send(404, b'{"error": "no such route"}')
                    return
                body = json.loads(raw_body or b"{}")
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = fake._answer(path, body, headers)
                if reply.delay_s and fake._stop.wait(reply.delay_s):
                    return
                if reply.raw is not None:
                    self._send(reply.status, reply.raw)
                elif reply.status != 200:
                    err = {
                        "error": {
                            "code": reply.status,
                            "message": "scripted failure",
                            "status": "INTERNAL",
                        }
                    }
                    self._send(reply.status, json.dumps(err).encode())
                else:
                    wire = fake._wrap(reply.text or "", path)
                    self._send(200, json.dumps(wire).encode())

            def _send(self, status: int, payload: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


class FakeGemini(_FakeServer):
    """POST /v1beta/models/{model}:generateContent, as the Gemini API serves it."""

    _PATH = re.compile(r"^/v1beta/models/([^/:]+):generateContent$")

    def _route(self, path: str) -> bool:
        return self._PATH.match(path) is not None

    def _extract(self, body: dict[str, Any]) -> tuple[str, str]:
        def texts(content: dict[str, Any] | None) -> str:
            parts = (content or {}).get("parts") or []
            return "".join(str(p.get("text", "")) for p in parts)

        system = texts(body.get("systemInstruction"))
        user = "".join(texts(c) for c in body.get("contents") or [])
        return system, user

    def _wrap(self, text: str, path: str) -> dict[str, Any]:
        match = self._PATH.match(path)
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1},
            "modelVersion": match.group(1) if match else "",
        }


class FakeOpenAI(_FakeServer):
    """POST /v1/chat/completions, as OpenAI-compatible servers serve it."""

    def _route(self, path: str) -> bool:
        return path == "/v1/chat/completions"

    def _extract(self, body: dict[str, Any]) -> tuple[str, str]:
        messages = body.get("messages") or []
        system = "".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        user = "".join(str(m.get("content", "")) for m in messages if m.get("role") == "user")
        return system, user

    def _wrap(self, text: str, path: str) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "fake",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": "stop",
                }
            ],
        }
