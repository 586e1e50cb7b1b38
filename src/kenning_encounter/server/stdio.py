"""The stdio wire without threads: the event loop reads and writes the pipes itself.

The SDK's stdio transport reads each line and writes each answer through a
worker thread, so every call wakes two threads besides the event loop. On a
quiet machine a sleeping thread takes a while to wake, and those hops cost more
than a search does. Here the loop watches private copies of fd 0 and 1 through
asyncio's pipe transports; the SDK still parses, dispatches and answers every
message.

As in the SDK, while serving fd 0 reads the null device and fd 1 writes to
stderr, so a stray print (ours or a library's) cannot corrupt the protocol;
both are restored on exit.

When the client closes stdin, the requests it sent before are answered before
the server stops (for up to DRAIN_SECONDS): a script may pipe its requests in
and close at once. When stdin or stdout is not a pipe or socket (a regular
file, a terminal), asyncio cannot watch it and the SDK's transport serves.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import re
import sys
from collections.abc import AsyncGenerator, Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.stdio import stdio_server
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types import CallToolResult, GetPromptResult, InputRequiredResult

from kenning_encounter.server.context import AppContext
from kenning_encounter.server.front import (
    ACKNOWLEDGED,
    LISTEN,
    MAX_LINE,
    SUBSCRIPTION_KEY,
    Asked,
    Conversation,
    Handover,
    Launch,
    watchable,
)
from kenning_encounter.server.messages import is_answer, request_id, shape_fault
from kenning_encounter.server.named_params import NamedParams

log = logging.getLogger(__name__)

# One JSON-RPC message per line; a batch of entities can be large, so the limit
# (MAX_LINE, shared with the quick start) only guards memory against a client that
# never sends a newline.
DRAIN_SECONDS = 30.0

Incoming = SessionMessage | Exception


@dataclass(frozen=True)
class Oversized:
    """A line longer than the reader's limit, skipped: its size and its first bytes."""

    size: int
    head: bytes


async def next_line(reader: asyncio.StreamReader) -> bytes | Oversized | None:
    """The next line (a last one may lack its newline); None at the end of input.

    A line longer than the reader's limit is skipped, with a warning, and told as
    ``Oversized`` (so its sender can be answered)."""
    skipped = 0
    head = b""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            if skipped:
                line = exc.partial  # the input ended inside the oversized line
            else:
                return exc.partial or None
        except asyncio.LimitOverrunError as exc:
            # Drop what is buffered of the oversized line; its newline ends the skipping.
            dropped = await reader.readexactly(exc.consumed)
            head = head or dropped[:HEAD_BYTES]
            skipped += len(dropped)
            continue
        if not skipped:
            return line
        log.warning("skipped a message of %d bytes on stdin (the limit)", skipped + len(line))
        return Oversized(skipped + len(line), head)


# The id and the next member of a message whose id comes first, or second after "jsonrpc",
# as every SDK writes it: there it is the message's own, not a nested one.
_LEADING = re.compile(
    rb'\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?'
    rb'(?:"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,\s*)?'
    rb'(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"(\w+)"'
)
HEAD_BYTES = 4096


def too_long(line: Oversized) -> types.JSONRPCError | None:
    """The answer to a line too long to read: refused under its id when it starts with it
    (null otherwise); None for a client's answer, which JSON-RPC never answers."""
    leading = _LEADING.match(line.head)
    if leading is not None and leading.group(2) in (b"result", b"error"):
        return None
    ident: str | int | None = None
    if leading is not None and leading.group(1) is not None:
        with contextlib.suppress(ValueError):
            ident = json.loads(leading.group(1))
    return _error(
        ident,
        types.INVALID_REQUEST,
        f"invalid request: the message is {line.size} bytes, over the "
        f"{MAX_LINE // (1024 * 1024)} MiB a line may hold, and was not read; send less at "
        "once (split a batch over several calls)",
    )


class _Pending:
    """Requests read and not yet answered, so the end of input can wait for them.

    A list-change stream (``subscriptions/listen``) is not waited for: it lasts as long as
    the connection, and is answered only when the connection ends."""

    def __init__(self) -> None:
        self._ids: set[types.RequestId] = set()
        self._changed = anyio.Event()

    def asked(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCRequest):
            if message.method != LISTEN:
                self._ids.add(coerce_request_id(message.id))
        elif isinstance(message, types.JSONRPCNotification) and (
            message.method == "notifications/cancelled"
        ):
            self.answered((message.params or {}).get("requestId"))

    def answered(self, request_id: object) -> None:
        """``request_id`` is answered (or cancelled: the SDK takes "7" and 7 for one id)."""
        if isinstance(request_id, str | int) and not isinstance(request_id, bool):
            request_id = coerce_request_id(request_id)
        if request_id in self._ids:
            self._ids.discard(request_id)  # pyright: ignore[reportArgumentType]
            self._changed.set()
            self._changed = anyio.Event()

    async def drained(self, seconds: float) -> None:
        with anyio.move_on_after(seconds) as scope:
            while self._ids:
                await self._changed.wait()
        if scope.cancelled_caught:
            log.warning("stdin closed; %d request(s) still unanswered, stopping", len(self._ids))


def _libraries() -> list[str]:
    """Files an upgrade of the SDK, its types or pydantic rewrites (front.py)."""
    names = ("mcp", "mcp_types", "pydantic", "pydantic_core", "anyio")
    return [str(getattr(sys.modules[n], "__file__", "")) for n in names if n in sys.modules]


class _Kept:
    """Keeps the SDK's answers to the requests whose answers the next launch's quick start
    may give (front.py), and drops its answers to those the front gave already.

    An answer names its request by id alone, so while two requests with one id are
    unanswered (a client's fault) their answers cannot be told apart: none of them is
    kept, and of the front's answer the SDK's copy is dropped only when it is the same,
    so every request keeps its answer."""

    def __init__(self, launch: Launch | None, handover: Handover | None) -> None:
        self._launch = launch
        self._sent = handover.sent if handover is not None else {}
        self._acknowledged = handover.acknowledged if handover is not None else {}
        self._conversation = Conversation()
        self._asked: dict[types.RequestId, Asked] = {}
        self._listens: dict[types.RequestId, Asked] = {}
        self._unanswered: dict[types.RequestId, int] = {}  # requests read, by id
        self._repeated: set[types.RequestId] = set()  # ids asked again while unanswered

    def asked(self, message: types.JSONRPCMessage) -> None:
        if isinstance(message, types.JSONRPCNotification):
            if message.method == "notifications/cancelled":
                ident = (message.params or {}).get("requestId")
                if isinstance(ident, str | int) and not isinstance(ident, bool):
                    # The SDK sends no answer to a cancelled request, and takes "7" for 7.
                    cancelled = coerce_request_id(ident)
                    for unanswered in list(self._unanswered):
                        if coerce_request_id(unanswered) == cancelled:
                            self._settled(unanswered)
            return
        if not isinstance(message, types.JSONRPCRequest):
            return
        self.arrived(message.id)
        asked = self._conversation.ask(message.method, message.params, message.id)
        if asked is not None and message.id not in self._repeated:
            (self._listens if asked.method == LISTEN else self._asked)[message.id] = asked

    def arrived(self, ident: types.RequestId) -> None:
        """Count a request (or a refused line) that will be answered under ``ident``."""
        if ident in self._unanswered:
            self._repeated.add(ident)
            self._asked.pop(ident, None)
            self._listens.pop(ident, None)
        self._unanswered[ident] = self._unanswered.get(ident, 0) + 1

    def _settled(self, ident: types.RequestId) -> bool:
        """Count one answer under ``ident``; whether the id was repeated."""
        repeated = ident in self._repeated
        left = self._unanswered.pop(ident, 0) - 1
        if left > 0:
            self._unanswered[ident] = left
        else:
            self._repeated.discard(ident)
        return repeated

    def answered(self, message: types.JSONRPCMessage, data: str) -> bool:
        """Keep what ``message`` answers; True when the front already sent that answer."""
        if isinstance(message, types.JSONRPCNotification) and message.method == ACKNOWLEDGED:
            return self._acknowledges(data)
        if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
            return False
        if message.id is None:
            return False
        repeated = self._settled(message.id)
        asked = self._asked.pop(message.id, None)
        front_sent = message.id in self._sent
        if asked is None and not front_sent:
            return False
        parsed: dict[str, Any] = json.loads(data)
        payload = {k: parsed[k] for k in ("result", "error") if k in parsed}
        if asked is not None:
            self._keep(asked, payload)
        if not front_sent or (repeated and payload != self._sent[message.id]):
            return False  # under a repeated id, another request's answer: it is owed
        return self._same(message.id, payload, self._sent.pop(message.id))

    def _acknowledges(self, data: str) -> bool:
        parsed: dict[str, Any] = json.loads(data)
        subscription = (parsed.get("params") or {}).get("_meta", {}).get(SUBSCRIPTION_KEY)
        if not isinstance(subscription, str | int) or isinstance(subscription, bool):
            return False
        asked = self._listens.pop(subscription, None)
        payload = {"notification": {k: parsed[k] for k in ("method", "params") if k in parsed}}
        if asked is not None:
            self._keep(asked, payload)
        if subscription not in self._acknowledged:
            return False
        return self._same(subscription, payload, self._acknowledged.pop(subscription))

    def _keep(self, asked: Asked, payload: dict[str, Any]) -> None:
        key = self._conversation.key(asked)
        self._conversation.answered(asked, payload)
        if key is not None and self._launch is not None:
            self._launch.record(key, payload, _libraries())

    @staticmethod
    def _same(ident: object, payload: dict[str, Any], sent: object) -> bool:
        """True (drop the SDK's copy); a difference is logged, for the client has the front's."""
        if payload != sent:
            log.warning(
                "the quick start answered %r otherwise than the server does (its kept "
                "answers were stale); the server's answers are kept for the next launch",
                ident,
            )
        return True


def _unreadable(exc: Exception) -> str:
    if isinstance(exc, RecursionError) or "recursion limit" in str(exc):
        return (
            "the message nests its values deeper than the server reads (about 200 levels); "
            "send flatter values"
        )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"it could not be read as a JSON-RPC 2.0 message ({first[:200]})"


def refusal(line: bytes, exc: Exception) -> types.JSONRPCError | None:
    """The answer to a line that is no JSON-RPC message the server can take, or None for
    one that needs none (a client's malformed answer to the server's own request).

    The SDK drops such a line (it logs it at DEBUG), so a client that sent it would wait
    for an answer that never comes. JSON-RPC 2.0 answers it: a parse error, or an invalid
    request naming the field at fault, with the request's id when it can be read (null
    otherwise)."""
    try:
        # Only UTF-8, as the SDK's reader: json alone would take a byte-order mark.
        parsed: object = json.loads(line.decode("utf-8"))
    except RecursionError as deep:
        return _error(None, types.INVALID_REQUEST, _unreadable(deep))
    except ValueError as bad:  # not JSON, or not UTF-8
        return _error(
            None,
            types.PARSE_ERROR,
            f"parse error: the line is not JSON ({str(bad)[:200]}); send one JSON-RPC 2.0 "
            "message, a JSON object, per line",
        )
    if is_answer(parsed):
        return None  # an answer of the client's: JSON-RPC never answers an answer
    fault = shape_fault(parsed, apart="on its own line")
    if fault is not None:
        return _error(fault.ident, types.INVALID_REQUEST, fault.message)
    known_id = request_id(cast(dict[str, Any], parsed))
    return _error(known_id, types.INVALID_REQUEST, f"invalid request: {_unreadable(exc)}")


def _no_id(line: bytes) -> None:
    """Raise when a line the SDK read as a notification is a request: its models take an
    object whose id is no valid one (null, 1.5, true) for a notification, which is never
    answered, so its sender would wait forever. JSON-RPC tells them apart by the member."""
    if "id" in json.loads(line):
        raise ValueError("a request whose id is no request id")


def _error(request_id: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


async def _read(
    reader: asyncio.StreamReader,
    send: MemoryObjectSendStream[Incoming],
    answer: MemoryObjectSendStream[SessionMessage],
    pending: _Pending,
    kept: _Kept,
    drain_seconds: float,
    scope: anyio.CancelScope,
) -> None:
    with scope, send, answer:
        while (line := await next_line(reader)) is not None:
            if isinstance(line, Oversized):
                refused = too_long(line)
                if refused is not None:
                    if refused.id is not None:
                        kept.arrived(refused.id)
                    await answer.send(SessionMessage(refused))
                continue
            try:
                message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                if isinstance(message, types.JSONRPCNotification):
                    _no_id(line)
            except Exception as exc:
                refused = refusal(line, exc)
                # Never the line itself in the log: it may carry memory content.
                log.warning(
                    "refused a message on stdin (%d bytes): %s",
                    len(line),
                    refused.error.message if refused else "a malformed answer, dropped",
                )
                if refused is not None:
                    if refused.id is not None:
                        kept.arrived(refused.id)
                    await answer.send(SessionMessage(refused))
                continue
            pending.asked(message)
            kept.asked(message)
            await send.send(SessionMessage(message))
        await pending.drained(drain_seconds)


class _PipeOut(asyncio.Protocol):
    """The write end: waits while the pipe is full, knows when the client has gone."""

    def __init__(self) -> None:
        self.transport: asyncio.WriteTransport | None = None
        self._writable = asyncio.Event()
        self._writable.set()
        self.gone: asyncio.Future[Exception | None] = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)
        self.transport = transport

    def pause_writing(self) -> None:
        self._writable.clear()

    def resume_writing(self) -> None:
        self._writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        self._writable.set()
        if not self.gone.done():
            self.gone.set_result(exc)

    async def write(self, data: bytes) -> None:
        if self.gone.done() or self.transport is None:
            raise ConnectionResetError("stdout is closed")
        self.transport.write(data)
        await self._writable.wait()

    async def close(self, seconds: float) -> None:
        """Close once everything written has reached the pipe (or ``seconds`` pass)."""
        if self.transport is not None:
            self.transport.close()
        with anyio.move_on_after(seconds):
            await self.gone


async def _write(
    out: _PipeOut,
    receive: MemoryObjectReceiveStream[SessionMessage],
    pending: _Pending,
    kept: _Kept,
    reading: anyio.CancelScope,
) -> None:
    async with receive:
        async for item in receive:
            message = item.message
            data = message.model_dump_json(by_alias=True, exclude_unset=True)
            if kept.answered(message, data):
                if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                    pending.answered(message.id)
                continue
            try:
                await out.write(data.encode("utf-8") + b"\n")
            except ConnectionError as exc:
                # Nobody can hear the answers: stop reading, so the server ends.
                if not reading.cancel_called:
                    log.info("the client closed stdout (%s); stopping", exc)
                    reading.cancel()
                continue  # keep taking answers, so the server never waits on a dead pipe
            if isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
                pending.answered(message.id)


@contextlib.contextmanager
def _claimed(fd: int, diversion: int | None, private: int | None = None) -> Generator[int]:
    """A private duplicate of ``fd`` for the wire, while ``fd`` itself points at ``diversion``;
    or ``private``, which the quick start claimed so already."""
    if private is None:
        assert diversion is not None
        private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
        try:
            os.dup2(diversion, fd)
        finally:
            os.close(diversion)
    try:
        yield private
    finally:
        os.dup2(private, fd)
        os.close(private)


@contextlib.asynccontextmanager
async def stdio_streams(
    drain_seconds: float = DRAIN_SECONDS, launch: Launch | None = None
) -> AsyncGenerator[tuple[Any, Any]]:
    """The (read, write) message streams over this process's stdin and stdout; with
    ``launch``, carrying on from its quick start (front.py) and keeping its answers."""
    handover = launch.hand_over() if launch is not None else None
    if handover is None and not (watchable(0) and watchable(1)):
        async with stdio_server() as streams:
            yield streams
        return
    loop = asyncio.get_running_loop()
    with (
        _claimed(
            0,
            os.open(os.devnull, os.O_RDONLY) if handover is None else None,
            handover.wire_in if handover else None,
        ) as wire_in,
        _claimed(
            1, os.dup(2) if handover is None else None, handover.wire_out if handover else None
        ) as wire_out,
    ):
        reader = asyncio.StreamReader(limit=MAX_LINE)
        if handover is not None:
            # What the front took goes to the SDK first, then what it read beyond.
            reader.feed_data(b"".join(handover.replay) + handover.unread)
        kept = _Kept(launch, handover)
        in_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader),
            os.fdopen(os.dup(wire_in), "rb", buffering=0),
        )
        _, out = await loop.connect_write_pipe(
            _PipeOut, os.fdopen(os.dup(wire_out), "wb", buffering=0)
        )
        if handover is not None and handover.unsent and out.transport is not None:
            # The front's answers the client has not taken yet go first; written without
            # waiting, for the client may be writing still and stdin is not read yet.
            out.transport.write(handover.unsent)
        incoming_send, incoming = anyio.create_memory_object_stream[Incoming](0)
        outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
        pending = _Pending()
        reading = anyio.CancelScope()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(
                    _read,
                    reader,
                    incoming_send,
                    outgoing.clone(),
                    pending,
                    kept,
                    drain_seconds,
                    reading,
                )
                group.start_soon(_write, out, outgoing_receive, pending, kept, reading)
                try:
                    yield incoming, outgoing
                finally:
                    reading.cancel()
                    # The writer ends once the server's side is closed and written.
                    outgoing.close()
        finally:
            in_transport.close()
            await out.close(drain_seconds)


class KenningMCPServer(MCPServer[AppContext]):
    """The SDK's server, serving stdio over the thread-free wire above, and refusing a call
    to a tool it does not serve with what to call instead (``unknown``: the text)."""

    def __init__(
        self, *args: Any, unknown: Callable[[str], str | None] | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self._unknown = unknown
        self._lowlevel_server.middleware.append(NamedParams())

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[AppContext, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        refusal = self._unknown(name) if self._unknown is not None else None
        if refusal is not None:
            raise ToolError(refusal)
        return await super().call_tool(name, arguments, context)

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[AppContext, Any] | None = None,
    ) -> GetPromptResult | InputRequiredResult:
        """The SDK answers an unknown name with error code 0 and logs a traceback, as for a
        fault of its own; MCP answers a client's wrong name with invalid params."""
        served = [p.name for p in await self.list_prompts()]
        if name not in served:
            fix = (
                "this server serves no prompts"
                if not served
                else f"prompts/list names the {len(served)} prompts served"
            )
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}; {fix}")
        return await super().get_prompt(name, arguments, context)

    async def run_stdio_async(self) -> None:
        await self.serve_stdio(None)

    async def serve_stdio(self, launch: Launch | None) -> None:
        """Serve stdio, carrying on from ``launch``'s quick start when it has one."""
        async with stdio_streams(launch=launch) as (read_stream, write_stream):
            await self._lowlevel_server.run(
                read_stream,
                write_stream,
                self._lowlevel_server.create_initialization_options(),
            )
