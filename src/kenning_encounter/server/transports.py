"""Serving: stdio, SSE or streamable HTTP, with the start-up announcement on stderr.

The memory is opened before anything listens, so a store another process owns
stops the start at once with that process's PID and URL. stdout belongs to the
MCP protocol in stdio mode; everything human goes to stderr.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, cast

import anyio
import pydantic_core
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types import INVALID_REQUEST, PARSE_ERROR
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import JSONResponse
from starlette.routing import BaseRoute, Match, Mount, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kenning_encounter.config import ENV_PREFIX, Settings
from kenning_encounter.server.app import DEFAULT_TOOL_GROUPS, build_server, check_face
from kenning_encounter.server.context import (
    AppContext,
    InfusionFactory,
    Runtime,
    StoreFactory,
    open_store,
)
from kenning_encounter.server.front import MODERN_VERSION_KEY, Launch
from kenning_encounter.server.info import package_version
from kenning_encounter.server.messages import Fault, request_id, shape_fault
from kenning_encounter.server.registry import ToolGroup
from kenning_encounter.server.routes import build_routes
from kenning_encounter.server.security import (
    WILDCARD_BINDS,
    AcceptGuard,
    BearerAuth,
    HostGuard,
    allowed_origin,
    host_policy,
)
from kenning_encounter.server.stdio import KenningMCPServer
from kenning_encounter.ui.access import is_ui_path

log = logging.getLogger(__name__)

Announce = Callable[[str], None]
CORS_HEADERS: Final = (
    "authorization",
    "content-type",
    "accept",
    "last-event-id",
    "mcp-session-id",
    "mcp-protocol-version",
)
# The SDK's own bound, named here so it cannot move under us: a tool call may carry a
# batch of thousands of entities, more than the hook routes' 1 MB. The SDK counts the
# bytes as they arrive and answers 413 past this, chunked or not.
MCP_MAX_BODY: Final = 4 * 1024 * 1024
VERSION_HEADER: Final = "mcp-protocol-version"
SPOKEN: Final = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
MESSAGE_READ: Final = "kenning_encounter.message"  # a POST's body as _MessageGuard read it
# Host and Origin are checked once, by HostGuard, for every path: the SDK's own check
# prefix-matches origins and compares names case-sensitively, so it is switched off.
_SDK_CHECKS_OFF: Final = TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _to_stderr(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


def endpoint_path(settings: Settings) -> str:
    return f"{settings.path}sse" if settings.transport == "sse" else settings.path


def connect_host(host: str) -> str:
    """The address a local client dials for a bind address."""
    if host in WILDCARD_BINDS:
        return "127.0.0.1"
    return f"[{host}]" if ":" in host else host


def build_http_app(
    server: MCPServer[AppContext], runtime: Runtime, settings: Settings
) -> Starlette:
    """One ASGI app: the MCP endpoint and the hook routes behind the same guards."""
    policy = host_policy(settings)
    message_path = f"{settings.path}messages/"  # where an SSE client posts its messages
    if settings.transport == "sse":
        inner = server.sse_app(
            sse_path=endpoint_path(settings),
            message_path=message_path,
            max_request_body_size=MCP_MAX_BODY,
            transport_security=_SDK_CHECKS_OFF,
            host=settings.host,
        )
        mcp_paths: list[str] = []  # the older SSE transport sets no Accept rules
    else:
        inner = server.streamable_http_app(
            streamable_http_path=settings.path,
            stateless_http=settings.http_sessions == "stateless",
            max_request_body_size=MCP_MAX_BODY,
            transport_security=_SDK_CHECKS_OFF,
            host=settings.host,
        )
        mcp_paths = [settings.path, settings.path.rstrip("/") or "/"]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncGenerator[None]:
        async with runtime.session():
            if settings.transport == "sse":
                yield  # SSE enters the server lifespan per connection
            else:
                async with server.session_manager.run():
                    yield

    middleware: list[Middleware] = []
    if mcp_paths and mcp_paths[0] != mcp_paths[1]:
        middleware.append(Middleware(_OneEndpoint, path=mcp_paths[0]))
    if settings.allowed_origins:
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=[
                    str(allowed_origin(o)) for o in settings.allowed_origins if o.strip()
                ],
                allow_methods=["GET", "POST", "DELETE", "OPTIONS"],
                allow_headers=list(CORS_HEADERS),
                expose_headers=["mcp-session-id", "mcp-protocol-version"],
            )
        )
    if settings.token is not None:
        middleware.append(Middleware(BearerAuth, token=settings.token.get_secret_value()))
    middleware.append(Middleware(HostGuard, policy=policy))
    plain = build_routes(runtime)
    middleware.append(Middleware(_WrongMethod, routes=plain))
    # The inspector's pages answer HTML, so the JSON routes' Accept rule is not theirs.
    json_paths = [r.path for r in plain if not is_ui_path(r.path)]
    middleware.append(Middleware(AcceptGuard, mcp_paths=mcp_paths, json_paths=json_paths))
    posted = mcp_paths[:1] or [message_path]
    middleware.append(Middleware(_MessageGuard, paths=posted, limit=MCP_MAX_BODY))
    if mcp_paths:
        middleware.append(Middleware(_VersionGuard, path=mcp_paths[0]))
        middleware.append(Middleware(_FreshStream, path=mcp_paths[0]))
    routes: list[BaseRoute] = [*plain, Mount("/", app=inner)]
    return Starlette(routes=routes, middleware=middleware, lifespan=lifespan)


class _OneEndpoint:
    """The MCP endpoint at its path with or without the final slash ("/mcp" as "/mcp/"):
    a client given the URL without it was answered a redirect on every message."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self._path = path
        self._bare = path.rstrip("/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == self._bare:
            scope = {**scope, "path": self._path, "raw_path": self._path.encode()}
        await self.app(scope, receive, send)


class _MessageGuard:
    """A POST to an MCP endpoint (streamable HTTP's, or the SSE transport's message path)
    whose body is not a JSON-RPC message MCP takes is refused as over stdio (messages.py):
    415 for a body not sent as JSON, 400 with a parse error or an invalid request naming
    the member at fault and the fix.

    The SDK answered such a body with a kilobyte of pydantic's text as "invalid params",
    a Content-Type it does not take with bare text, and a request whose id is no request
    id (null, 1.5) with 202 Accepted, as a notification: the client waited for an answer
    that never came. On the SSE transport it also logged the body's values at ERROR with
    a traceback (what a client sends may be memory content). The body is read up to the
    SDK's own limit and handed on unchanged; a larger one goes on for the SDK to refuse."""

    def __init__(self, app: ASGIApp, paths: Iterable[str], limit: int) -> None:
        self.app = app
        self._paths = frozenset(paths)
        self._limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self._paths:
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:
            await self.app(scope, receive, send)  # refused unread, by the SDK
            return
        media = headers.get("content-type")
        if media is None or not media.lower().startswith("application/json"):
            said = "Content-Type: a message is sent as JSON; send Content-Type: application/json"
            await _refused(Fault(None, said), INVALID_REQUEST, 415, scope, receive, send)
            return
        taken: list[Message] = []
        size, more = 0, True
        while more and size <= self._limit:
            message = await receive()
            taken.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            more = bool(message.get("more_body", False))
        if not more and size <= self._limit and taken[-1]["type"] == "http.request":
            body = b"".join(m.get("body", b"") for m in taken)
            code, fault = INVALID_REQUEST, None
            try:
                parsed = pydantic_core.from_json(body)
                scope = {**scope, MESSAGE_READ: parsed}  # for _VersionGuard
                fault = shape_fault(parsed, apart="in a POST of its own")
            except ValueError as bad:  # its words name a place in the body, never a value
                code = PARSE_ERROR
                fault = Fault(
                    None,
                    f"parse error: the body is not JSON ({str(bad)[:200]}); send one "
                    "JSON-RPC 2.0 message, a JSON object",
                )
            if fault is not None:
                await _refused(fault, code, 400, scope, receive, send)
                return

        async def replay() -> Message:
            return taken.pop(0) if taken else await receive()

        await self.app(scope, replay, send)


async def _refused(
    fault: Fault, code: int, status: int, scope: Scope, receive: Receive, send: Send
) -> None:
    error = {"code": code, "message": fault.message}
    answer = JSONResponse({"jsonrpc": "2.0", "id": fault.ident, "error": error}, status)
    await answer(scope, receive, send)


class _VersionGuard:
    """A request to the streamable HTTP endpoint whose MCP-Protocol-Version header names
    a version this server does not speak is refused naming the header, the versions it
    speaks and the fix (MCP answers it 400); an ``initialize`` carrying one is answered
    by the handshake, which negotiates a version both sides speak.

    The SDK routes every version it does not know to its 2026 entry, which answered as
    if the request were a 2026 one: a 2025 request (an initialize too) with "params._meta
    must be an object carrying the required ... envelope keys", a GET for the event
    stream and a DELETE ending the session with 405 "allow: POST". A 2026 request (its
    envelope in ``_meta``) is left to that entry, which names the mismatch itself."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = Headers(scope=scope).get(VERSION_HEADER) if scope["type"] == "http" else None
        if version is None or version in SPOKEN or scope["path"] != self._path:
            await self.app(scope, receive, send)
            return
        message = scope.get(MESSAGE_READ)
        ident: str | int | None = None
        if isinstance(message, dict):
            message = cast(dict[str, Any], message)
            params = message.get("params")
            meta = cast(dict[str, Any], params).get("_meta") if isinstance(params, dict) else None
            if isinstance(meta, dict) and MODERN_VERSION_KEY in meta:
                await self.app(scope, receive, send)
                return
            if message.get("method") == "initialize":
                kept = [(k, v) for k, v in scope["headers"] if k.lower() != VERSION_HEADER.encode()]
                await self.app({**scope, "headers": kept}, receive, send)
                return
            ident = request_id(message)
        shown = version if len(version) <= 40 else version[:40] + "..."
        said = (
            f"MCP-Protocol-Version: {shown!r} is no version this server speaks (it speaks "
            f"{', '.join(SPOKEN)}); send the version initialize "
            "negotiated, or leave the header out of the initialize"
        )
        await _refused(Fault(ident, said), INVALID_REQUEST, 400, scope, receive, send)


class _FreshStream:
    """A GET for the event stream that asks to resume after an event (Last-Event-ID) gets a
    fresh stream: this server keeps no event store, so it numbers no events and has none
    to replay. The SDK returned without answering such a GET, which the HTTP server
    turned into a 500 and an ERROR in the log; a client resuming its stream (after a
    proxy cut it, or from a restarted server's id) was left without one."""

    def __init__(self, app: ASGIApp, path: str) -> None:
        self.app = app
        self._path = path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and scope["path"] == self._path:
            kept = [(k, v) for k, v in scope["headers"] if k.lower() != b"last-event-id"]
            scope = {**scope, "headers": kept}
        await self.app(scope, receive, send)


class _WrongMethod:
    """405 naming the methods a plain route takes, for any other method asked of it.

    The MCP app is mounted at "/" and so matches every path: Starlette's router takes
    that whole match over a route whose path matched but whose method did not, and
    ``GET /infuse`` was answered the MCP app's plain-text 404, as if nothing were there.
    """

    def __init__(self, app: ASGIApp, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self._routes = [r for r in routes if isinstance(r, Route) and r.methods]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            for route in self._routes:
                match, _ = route.matches(scope)
                if match is Match.FULL:
                    break
                if match is Match.PARTIAL:
                    allowed = ", ".join(_in_order(route.methods or ()))
                    refusal = JSONResponse(
                        {
                            "error": f"method {scope['method']} is not taken at {route.path}; "
                            f"send {allowed}"
                        },
                        status_code=405,
                        headers={"allow": allowed},
                    )
                    await refusal(scope, receive, send)
                    return
        await self.app(scope, receive, send)


def _in_order(methods: Iterable[str]) -> list[str]:
    """GET before HEAD, as a reader expects them; any others after, by name."""
    known = ("GET", "HEAD", "POST")
    given = set(methods)
    return [m for m in known if m in given] + sorted(given.difference(known))


class _Uvicorn(uvicorn.Server):
    """uvicorn that stops on SIGINT/SIGTERM without re-raising the signal afterwards,
    so the memory closes cleanly once the server has drained."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        previous = {
            sig: signal.signal(sig, self.handle_exit) for sig in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)


def _location(settings: Settings) -> str:
    if settings.store == "neo4j":
        return f"neo4j store: {settings.neo4j_uri} (database {settings.neo4j_database})"
    return f"data directory: {settings.resolved_data_dir}"


def http_banner(settings: Settings, url: str) -> str:
    transport = "http" if settings.transport == "streamable-http" else "sse"
    header = (
        f' --header "Authorization: Bearer ${ENV_PREFIX}TOKEN"'
        if settings.token is not None
        else ""
    )
    return "\n".join(
        [
            f"kenning-encounter {package_version()} listening on {url} "
            f"({settings.transport}, {settings.face} face)",
            _location(settings),
            "register it with Claude Code:",
            f"  claude mcp add --transport {transport} kenning-encounter {url}{header}",
        ]
    )


def stdio_banner(settings: Settings) -> str:
    found = shutil.which("kenning-encounter")
    command, prefix = (found, []) if found else (sys.executable, ["-m", "kenning_encounter"])
    args = [*prefix, "serve", "--transport", "stdio"]
    if settings.store == "embedded":
        args += ["--data-dir", str(settings.resolved_data_dir)]
    snippet = {"mcpServers": {"kenning-encounter": {"command": command, "args": args}}}
    return "\n".join(
        [
            f"kenning-encounter {package_version()} serving on stdio ({settings.face} face)",
            _location(settings),
            "Claude Desktop (claude_desktop_config.json):",
            json.dumps(snippet, indent=2),
        ]
    )


async def _serve_http(
    app: Starlette, runtime: Runtime, settings: Settings, announce: Announce
) -> None:
    from kenning_encounter.server.deadline import deadlined  # HTTP's alone: not on stdio

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,
        access_log=settings.log_level.upper() == "DEBUG",
        lifespan="on",
        ws="none",  # nothing here speaks WebSocket; uvicorn would import an implementation
        http=deadlined(settings.request_timeout),
    )
    web = _Uvicorn(config)
    bind_failed = False

    async def run_web() -> None:
        nonlocal bind_failed
        try:
            await web.serve()
        except SystemExit:  # uvicorn's answer to a port it cannot bind; it logged why
            bind_failed = True

    async with anyio.create_task_group() as tg:
        tg.start_soon(run_web)
        while not (web.started or bind_failed or web.should_exit):
            await anyio.sleep(0.01)
        if web.started:
            port = web.servers[0].sockets[0].getsockname()[1]
            url = f"http://{connect_host(settings.host)}:{port}{endpoint_path(settings)}"
            runtime.listening(url)
            announce(http_banner(settings, url))
            runtime.ready_infusion()
    if bind_failed:
        raise OSError(
            f"could not listen on {settings.host}:{settings.port} (the reason is logged above); "
            "choose another --port or stop what holds it"
        )


async def _serve_stdio(
    server: MCPServer[AppContext], settings: Settings, announce: Announce, launch: Launch | None
) -> None:
    announce(stdio_banner(settings))
    async with anyio.create_task_group() as tg:

        async def stop_on_signal() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    tg.cancel_scope.cancel()
                    return

        tg.start_soon(stop_on_signal)
        if isinstance(server, KenningMCPServer):
            await server.serve_stdio(launch)
        else:
            await server.run_stdio_async()
        tg.cancel_scope.cancel()


async def serve(
    settings: Settings,
    *,
    groups: Sequence[ToolGroup] = DEFAULT_TOOL_GROUPS,
    store_factory: StoreFactory = open_store,
    infusion_factory: InfusionFactory | None = None,
    announce: Announce = _to_stderr,
    runtime: Runtime | None = None,
    launch: Launch | None = None,
) -> None:
    """Serve until the client leaves (stdio) or a signal arrives (HTTP); ``runtime``, when
    given, is one the caller made (it may be opening the memory already); ``launch``, the
    stdio quick start to carry on from and keep answers for (server/front.py)."""
    settings.require_safe_bind()
    check_face(settings)
    if runtime is None:
        runtime = Runtime(settings, store_factory=store_factory, infusion_factory=infusion_factory)
    server = build_server(settings, runtime, groups)
    async with runtime.session():
        if settings.transport == "stdio":
            await _serve_stdio(server, settings, announce, launch)
        else:
            await _serve_http(
                build_http_app(server, runtime, settings), runtime, settings, announce
            )
