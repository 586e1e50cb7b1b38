"""A stand-in for the Anthropic Messages API: a real HTTP server on 127.0.0.1.

Claude Code is pointed at it with ``ANTHROPIC_BASE_URL``; the model is the one
boundary the harness fakes. Every request is recorded whole. A test scripts
what the "model" says on the agent's turns, in order:

    with FakeAnthropic() as fake:
        fake.script(
            Turn.call("mcp__kenning-encounter__search", {"query": "falcon"}),
            Turn.say("done"),
        )
        ...run claude...
        results = fake.tool_results()

An agent turn is a request that offers tools; the few requests Claude Code
makes without tools (titles, summaries) get ``side_text`` and do not consume
the script. When the script is empty the agent gets ``idle_text``. Paths the
fake does not serve are answered 404 and listed in ``unknown`` so a test can
say what the CLI asked for.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

_ids = itertools.count(1)
# How Claude Code's compaction request words its ask (seen in 2.1.332 and 2.1.337).
COMPACTION_ASK = "create a detailed summary of the conversation"


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str = field(default_factory=lambda: f"toolu_fake{next(_ids):05d}")


Block = Text | ToolUse


@dataclass(frozen=True)
class Turn:
    """What the model answers to one agent request."""

    blocks: tuple[Block, ...]
    status: int = 200  # non-200: an API error of that status instead

    @classmethod
    def say(cls, text: str) -> Turn:
        return cls((Text(text),))

    @classmethod
    def call(cls, name: str, arguments: dict[str, Any], *more: ToolUse) -> Turn:
        return cls((ToolUse(name, arguments), *more))

    @property
    def stop_reason(self) -> str:
        return "tool_use" if any(isinstance(b, ToolUse) for b in self.blocks) else "end_turn"


@dataclass(frozen=True)
class Exchange:
    """One request the fake received, and the turn it answered with (if any)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    answer: Turn | None = None

    @property
    def is_agent(self) -> bool:
        return self.path == "/v1/messages" and bool(self.tools) and not self.is_compaction

    @property
    def is_compaction(self) -> bool:
        """Claude Code asking for the summary that replaces the conversation (/compact)."""
        last = self.messages[-1:] if self.path == "/v1/messages" else []
        return any(COMPACTION_ASK in _block_text(b) for m in last for b in _message_blocks(m))

    @property
    def tools(self) -> list[str]:
        if not isinstance(self.body, dict):
            return []
        return [str(t.get("name")) for t in self.body.get("tools") or [] if isinstance(t, dict)]

    @property
    def messages(self) -> list[dict[str, Any]]:
        if not isinstance(self.body, dict):
            return []
        return [m for m in self.body.get("messages") or [] if isinstance(m, dict)]

    def blocks(self) -> Iterator[dict[str, Any]]:
        """Every content block of every message, tool results' inner blocks included."""
        for message in self.messages:
            yield from _message_blocks(message)

    def text(self) -> str:
        """All the text the model is shown in the messages (not the system prompt)."""
        return "\n".join(_block_text(b) for b in self.blocks())

    def system(self) -> str:
        system = self.body.get("system") if isinstance(self.body, dict) else None
        if isinstance(system, str):
            return system
        return "\n".join(str(b.get("text", "")) for b in system or [] if isinstance(b, dict))


def _message_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def _block_text(block: dict[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    if kind == "tool_result":
        return tool_result_text(block)
    if kind == "tool_use":
        return json.dumps(block.get("input"))
    return ""


def tool_result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(
        str(part.get("text", ""))
        for part in content or []
        if isinstance(part, dict) and part.get("type") == "text"
    )


@dataclass(frozen=True)
class ToolResult:
    """A tool result as the model received it, joined to the call the fake made."""

    tool_use_id: str
    name: str
    input: dict[str, Any]
    is_error: bool
    text: str

    @property
    def chars(self) -> int:
        return len(self.text)


Responder = Callable[[Exchange], "Turn | None"]


class FakeAnthropic:
    """POST /v1/messages (streamed or not) and the few other routes Claude Code calls."""

    def __init__(
        self, *, idle_text: str = "Done.", side_text: str = "Kenning harness session"
    ) -> None:
        self.idle_text = idle_text
        self.summary_text = (
            "<analysis>The harness conversation.</analysis>\n"
            "<summary>1. Primary Request and Intent: a harness conversation.</summary>"
        )
        self.side_text = side_text
        self.responder: Responder | None = None
        self.exchanges: list[Exchange] = []
        self.unknown: list[str] = []
        self.errors: list[str] = []
        self._script: deque[Turn] = deque()
        self._calls: dict[str, ToolUse] = {}
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    # -- test-facing API -------------------------------------------------------
    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def script(self, *turns: Turn | str) -> None:
        with self._lock:
            self._script.extend(Turn.say(t) if isinstance(t, str) else t for t in turns)

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    def agent_requests(self) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.is_agent]

    def tool_results(self) -> list[ToolResult]:
        """Each tool result the model was sent, once, in the order first sent."""
        seen: dict[str, ToolResult] = {}
        for exchange in self.agent_requests():
            for block in exchange.blocks():
                if block.get("type") != "tool_result":
                    continue
                use_id = str(block.get("tool_use_id"))
                if use_id in seen:
                    continue
                call = self._calls.get(use_id)
                seen[use_id] = ToolResult(
                    use_id,
                    call.name if call else "?",
                    call.input if call else {},
                    block.get("is_error") is True,
                    tool_result_text(block),
                )
        return list(seen.values())

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- answering -------------------------------------------------------------
    def _record(self, exchange: Exchange) -> Exchange:
        with self._lock:
            if exchange.is_agent:
                try:
                    turn = self.responder(exchange) if self.responder else None
                except Exception as exc:  # a broken script must fail the test, not hang the CLI
                    self.errors.append(f"responder: {type(exc).__name__}: {exc}")
                    turn = Turn((), status=400)
                if turn is None:
                    turn = self._script.popleft() if self._script else Turn.say(self.idle_text)
            elif exchange.is_compaction:
                turn = Turn.say(self.summary_text)
            else:
                turn = Turn.say(self.side_text)
            for block in turn.blocks:
                if isinstance(block, ToolUse):
                    self._calls[block.id] = block
            answered = Exchange(
                exchange.method, exchange.path, exchange.headers, exchange.body, turn
            )
            self.exchanges.append(answered)
            return answered

    def _note(self, method: str, path: str, headers: dict[str, str], body: Any) -> None:
        with self._lock:
            self.exchanges.append(Exchange(method, path, headers, body))
            self.unknown.append(f"{method} {path}")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._serve("GET")

            def do_POST(self) -> None:
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._serve("POST")

            def _serve(self, method: str) -> None:
                length = int(self.headers.get("Content-Length", "0") or 0)
                raw = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0]
                headers = {k.lower(): v for k, v in self.headers.items()}
                try:
                    body: Any = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                if method == "POST" and path == "/v1/messages" and isinstance(body, dict):
                    exchange = fake._record(Exchange(method, path, headers, body))
                    assert exchange.answer is not None
                    self._message(exchange.answer, body)
                elif method == "POST" and path == "/v1/messages/count_tokens":
                    with fake._lock:
                        fake.exchanges.append(Exchange(method, path, headers, body))
                    # A rough count is all the CLI needs for its budget display.
                    self._json(200, {"input_tokens": max(1, len(raw) // 4)})
                else:
                    fake._note(method, path, headers, body)
                    error = {"type": "not_found_error", "message": f"no route {path}"}
                    self._json(404, {"type": "error", "error": error})

            def _message(self, turn: Turn, request: dict[str, Any]) -> None:
                if turn.status != 200:
                    # 400 is one the CLI does not retry; 5xx and 429 it retries with backoff.
                    kind = "invalid_request_error" if turn.status == 400 else "api_error"
                    error = {"type": kind, "message": "scripted failure"}
                    self._json(turn.status, {"type": "error", "error": error})
                    return
                model = str(request.get("model", "claude-fake"))
                message_id = f"msg_fake{next(_ids):05d}"
                if request.get("stream"):
                    self._stream(turn, model, message_id)
                    return
                content = [_wire_block(b) for b in turn.blocks]
                self._json(
                    200,
                    {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": model,
                        "content": content,
                        "stop_reason": turn.stop_reason,
                        "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    },
                )

            def _stream(self, turn: Turn, model: str, message_id: str) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                self.close_connection = True
                for event in _sse_events(turn, model, message_id):
                    kind = event["type"]
                    self.wfile.write(f"event: {kind}\ndata: {json.dumps(event)}\n\n".encode())
                self.wfile.flush()

            def _json(self, status: int, doc: object) -> None:
                payload = json.dumps(doc).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler


def _wire_block(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def _sse_events(turn: Turn, model: str, message_id: str) -> Iterator[dict[str, Any]]:
    """The event sequence of a streamed message, one content block after another."""
    yield {
        "type": "message_start",
        "message": {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        },
    }
    for index, block in enumerate(turn.blocks):
        if isinstance(block, Text):
            start: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block.text}
        else:
            start = {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block.input)}
        yield {"type": "content_block_start", "index": index, "content_block": start}
        yield {"type": "content_block_delta", "index": index, "delta": delta}
        yield {"type": "content_block_stop", "index": index}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": turn.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": 5},
    }
    yield {"type": "message_stop"}
