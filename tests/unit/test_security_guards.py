"""The HTTP guards as ASGI middleware, in process: BearerAuth, HostGuard and AcceptGuard
around a small app of the test's own, driven through httpx's ASGI transport, or called
with a hand-made scope where a client cannot send the request (two Host headers, none,
a websocket). Each refusal is checked to the status, body and headers."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kenning_encounter.server import security as s
from kenning_encounter.server.security import Origin

pytestmark = pytest.mark.anyio

TOKEN = "s3cret-Token-0123456789"
REACHED = b"reached"
SENT = b'{"sent": true}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Inner:
    """The app behind the guards: reads what the client sends, answers 200 (or accepts
    the websocket, or finishes start-up), and keeps the scopes and bodies it was given,
    so a guard that passes on a request without its receive or send shows."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scopes.append(scope)
        self.bodies.append((await receive()).get("body", b""))
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": REACHED})
        else:
            await send({"type": UP[scope["type"]]})


UP = {"websocket": "websocket.accept", "lifespan": "lifespan.startup.complete"}


@asynccontextmanager
async def client(
    app: ASGIApp, base: str = "http://localhost:8765"
) -> AsyncGenerator[httpx.AsyncClient]:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base) as http:
        yield http


def refusal(answer: httpx.Response, status: int, message: str) -> None:
    body = json.dumps({"error": message}).encode()
    assert answer.status_code == status
    assert answer.content == body
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["content-length"] == str(len(body))


async def call(app: ASGIApp, **scope: Any) -> tuple[list[Message], bool]:
    """One request straight into the app: what it sent back, and whether it read the body."""
    full: dict[str, Any] = {
        "type": "http",
        "method": "GET",
        "path": "/x",
        "headers": [],
        "server": ("localhost", 8765),
        **scope,
    }
    sent: list[Message] = []
    read = False

    async def receive() -> Message:
        nonlocal read
        read = True
        return {"type": "http.request", "body": SENT, "more_body": False}

    async def send(message: Message) -> None:
        sent.append(message)

    await app(full, receive, send)
    return sent, read


def answered(sent: list[Message]) -> tuple[int, dict[bytes, bytes], bytes]:
    start, body = sent
    assert start["type"] == "http.response.start" and body["type"] == "http.response.body"
    return start["status"], dict(start["headers"]), body["body"]


# --- BearerAuth -------------------------------------------------------------------


async def test_the_right_token_reaches_the_app() -> None:
    inner = Inner()
    async with client(s.BearerAuth(inner, TOKEN)) as http:
        answer = await http.post("/mcp", headers={"Authorization": f"Bearer {TOKEN}"}, content=SENT)
    assert answer.status_code == 200 and answer.content == REACHED
    assert [scope["path"] for scope in inner.scopes] == ["/mcp"]
    assert inner.bodies == [SENT]


@pytest.mark.parametrize("given", [f"bearer {TOKEN}", f"BEARER {TOKEN}", f"Bearer  {TOKEN}"])
async def test_the_scheme_is_read_in_any_case_and_may_be_followed_by_spaces(given: str) -> None:
    """HTTP reads an authentication scheme in any case, with one or more spaces before
    the credentials (RFC 9110, 11.4): such a client was refused."""
    inner = Inner()
    async with client(s.BearerAuth(inner, TOKEN)) as http:
        answer = await http.post("/mcp", headers={"Authorization": given}, content=SENT)
    assert answer.status_code == 200 and answer.content == REACHED


@pytest.mark.parametrize(
    "given",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        TOKEN,
        f"Basic {TOKEN}",
        f"Bearer {TOKEN[:-1]}",
        f"Bearer {TOKEN[1:]}",
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN.lower()}",
        f"Bearer {TOKEN.upper()}",
        f"Bearer {TOKEN}, Bearer {TOKEN}",
    ],
)
async def test_any_other_authorization_is_refused_with_401(given: str | None) -> None:
    inner = Inner()
    headers = {} if given is None else {"Authorization": given}
    async with client(s.BearerAuth(inner, TOKEN)) as http:
        answer = await http.get("/session-start", headers=headers)
    refusal(answer, 401, "unauthorized")
    assert answer.headers["www-authenticate"] == "Bearer"
    assert inner.scopes == []


async def test_a_401_sends_its_headers_as_asgi_wants_them_lower_case() -> None:
    sent, read = await call(s.BearerAuth(Inner(), TOKEN), headers=[(b"host", b"localhost")])
    body = json.dumps({"error": "unauthorized"}).encode()
    assert sent[0]["headers"] == [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"www-authenticate", b"Bearer"),
    ]
    assert answered(sent)[2] == body
    assert not read  # a refused body is never read


async def test_a_token_outside_ascii_compares_by_its_utf8_bytes() -> None:
    inner = Inner()
    token = "tökén"
    guard = s.BearerAuth(inner, token)
    sent, _ = await call(guard, headers=[(b"authorization", f"Bearer {token}".encode())])
    assert answered(sent) == (200, {}, REACHED)
    latin = f"Bearer {token}".encode("latin-1")
    sent, _ = await call(guard, headers=[(b"authorization", latin)])
    assert answered(sent)[0] == 401
    extra = f"Bearer {token}é".encode()
    sent, _ = await call(guard, headers=[(b"authorization", extra)])
    assert answered(sent)[0] == 401
    assert len(inner.scopes) == 1


async def test_healthz_and_non_http_scopes_need_no_token() -> None:
    inner = Inner()
    guard = s.BearerAuth(inner, TOKEN)
    async with client(guard) as http:
        assert (await http.get("/healthz")).content == REACHED
        refusal(await http.get("/healthz/"), 401, "unauthorized")
    sent, _ = await call(guard, type="websocket", path="/mcp")
    assert sent == [{"type": "websocket.accept"}]
    sent, _ = await call(guard, type="lifespan")
    assert sent == [{"type": "lifespan.startup.complete"}]
    assert [scope["type"] for scope in inner.scopes] == ["http", "websocket", "lifespan"]
    assert inner.bodies == [b"", SENT, SENT]


async def test_a_refused_token_is_logged_by_path_without_the_value(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=s.__name__)
    async with client(s.BearerAuth(Inner(), TOKEN)) as http:
        await http.get("/infuse", headers={"Authorization": "Bearer guessed-value"})
    assert [r.getMessage() for r in caplog.records] == [
        "refused a request without the right bearer token ('/infuse')"
    ]
    assert caplog.records[0].levelno == logging.INFO


# --- HostGuard --------------------------------------------------------------------

LOCAL = s.HostPolicy(
    True,
    frozenset({("localhost", None), ("127.0.0.1", None), ("::1", None)}),
    frozenset({Origin("https", "app.example", 443)}),
)


def host_refusal(shown: str) -> str:
    return f"Host {shown} is not served here; add it with --allowed-hosts"


def origin_refusal(shown: str) -> str:
    return (
        f"Origin {shown} is not allowed; add it exactly (scheme://host:port) with --allowed-origins"
    )


async def test_an_allowed_host_and_origin_reach_the_app() -> None:
    inner = Inner()
    async with client(s.HostGuard(inner, LOCAL)) as http:
        assert (await http.post("/x", content=SENT)).content == REACHED
        assert (await http.get("/x", headers={"Origin": "https://app.example"})).content == REACHED
        loopback = await http.get("/x", headers={"Origin": "http://127.0.0.1:8765"})
        assert loopback.content == REACHED
    assert inner.bodies == [SENT, b"", b""]


async def test_a_host_outside_the_policy_is_refused_with_421() -> None:
    inner = Inner()
    async with client(s.HostGuard(inner, LOCAL), "http://evil.example:8765") as http:
        refusal(await http.get("/x"), 421, host_refusal("evil.example:8765"))
        spoofed = await http.get("/x", headers={"Host": "localhost:8765.evil.example"})
        refusal(spoofed, 421, host_refusal("localhost:8765.evil.example"))
    assert inner.scopes == []


async def test_no_host_or_two_hosts_are_refused() -> None:
    inner = Inner()
    guard = s.HostGuard(inner, LOCAL)
    sent, read = await call(guard)
    body = json.dumps({"error": host_refusal("(none)")}).encode()
    assert sent[0]["headers"] == [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
    ]
    assert answered(sent) == (421, dict(sent[0]["headers"]), body)
    assert not read
    two = [(b"host", b"localhost"), (b"host", b"evil.example")]
    sent, _ = await call(guard, headers=two)
    status, _, body = answered(sent)
    assert (status, json.loads(body)) == (421, {"error": host_refusal("localhost, evil.example")})
    same = [(b"host", b"localhost"), (b"host", b"localhost")]
    sent, _ = await call(guard, headers=same)
    assert answered(sent)[0] == 421
    assert inner.scopes == []


async def test_a_long_host_is_shown_cut_to_100_characters() -> None:
    long = "a" * 150 + ".example"
    async with client(s.HostGuard(Inner(), LOCAL)) as http:
        answer = await http.get("/x", headers={"Host": long})
    refusal(answer, 421, host_refusal("a" * 100))


async def test_with_the_host_check_off_any_host_passes_but_origin_is_still_checked() -> None:
    inner = Inner()
    open_hosts = s.HostPolicy(False, LOCAL.hosts, LOCAL.origins)
    async with client(s.HostGuard(inner, open_hosts), "http://anything.example:8765") as http:
        assert (await http.get("/x")).content == REACHED
        bad = await http.get("/x", headers={"Origin": "https://evil.example"})
        refusal(bad, 403, origin_refusal("https://evil.example"))
    sent, _ = await call(s.HostGuard(inner, open_hosts))
    assert answered(sent)[0] == 200  # no Host at all is fine when names are not checked
    assert len(inner.scopes) == 2


@pytest.mark.parametrize(
    "origin",
    [
        "https://evil.example",
        "https://app.example:8443",
        "http://app.example",
        "http://localhost:8766",
        "https://localhost:8765",
        "null",
        "",
    ],
)
async def test_an_origin_outside_the_policy_is_refused_with_403(origin: str) -> None:
    inner = Inner()
    async with client(s.HostGuard(inner, LOCAL)) as http:
        answer = await http.get("/x", headers={"Origin": origin})
    refusal(answer, 403, origin_refusal(origin))
    assert inner.scopes == []


async def test_two_origins_are_refused_even_when_both_are_allowed() -> None:
    origin = (b"origin", b"https://app.example")
    two = [(b"host", b"localhost"), origin, origin]
    sent, _ = await call(s.HostGuard(Inner(), LOCAL), headers=two)
    status, _, body = answered(sent)
    assert (status, json.loads(body)) == (
        403,
        {"error": origin_refusal("https://app.example, https://app.example")},
    )


async def test_a_long_origin_is_shown_cut_to_100_characters() -> None:
    long = "https://" + "b" * 150 + ".example"
    async with client(s.HostGuard(Inner(), LOCAL)) as http:
        answer = await http.get("/x", headers={"Origin": long})
    refusal(answer, 403, origin_refusal(long[:100]))


async def test_a_loopback_origin_needs_the_port_the_server_listens_on() -> None:
    guard = s.HostGuard(Inner(), LOCAL)
    origin = [(b"host", b"localhost"), (b"origin", b"http://localhost:8765")]
    assert answered((await call(guard, headers=origin))[0])[0] == 200
    for server in (None, ("localhost", None), ("localhost", 9000)):
        sent, _ = await call(guard, headers=origin, server=server)
        assert answered(sent)[0] == 403, server
    sent, _ = await call(guard, headers=[(b"host", b"localhost"), (b"origin", b"http://localhost")])
    assert answered(sent)[0] == 403  # default port 80, but this server's port is 8765
    async with client(guard, "http://localhost") as http:  # the transport gives no port
        refusal(
            await http.get("/x", headers={"Origin": "http://localhost"}),
            403,
            origin_refusal("http://localhost"),
        )


async def test_host_and_origin_refusals_are_logged_by_path(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=s.__name__)
    guard = s.HostGuard(Inner(), LOCAL)
    await call(guard, path="/a", headers=[(b"host", b"evil.example")])
    await call(guard, path="/b", headers=[(b"host", b"localhost"), (b"origin", b"http://e.x")])
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [
        (logging.INFO, "refused Host 'evil.example' ('/a')"),
        (logging.INFO, "refused Origin 'http://e.x' ('/b')"),
    ]


async def test_non_http_scopes_pass_the_host_guard() -> None:
    inner = Inner()
    guard = s.HostGuard(inner, LOCAL)
    sent, _ = await call(guard, type="websocket", headers=[(b"host", b"evil.example")])
    assert sent == [{"type": "websocket.accept"}]
    sent, _ = await call(guard, type="lifespan")
    assert sent == [{"type": "lifespan.startup.complete"}]
    assert [scope["type"] for scope in inner.scopes] == ["websocket", "lifespan"]
    assert inner.bodies == [SENT, SENT]


# --- AcceptGuard ------------------------------------------------------------------

MCP_POST = "Not Acceptable: a POST here must send Accept: application/json, text/event-stream"
MCP_GET = "Not Acceptable: a GET here must send Accept: text/event-stream"
JSON_ONLY = (
    "Not Acceptable: this route answers application/json only; send Accept: application/json"
)
BOTH = "application/json, text/event-stream"


def accept_guard(inner: ASGIApp) -> s.AcceptGuard:
    return s.AcceptGuard(inner, mcp_paths=["/mcp/", "/mcp"], json_paths=["/infuse"])


async def send_accept(method: str, path: str, accept: str | None) -> httpx.Response:
    headers = {} if accept is None else {"Accept": accept}
    async with client(accept_guard(Inner())) as http:
        # httpx sends Accept: */* unless told otherwise; None must mean no header at all
        http.headers.pop("accept")
        return await http.request(method, path, headers=headers)


@pytest.mark.parametrize(
    ("method", "path", "accept", "refused"),
    [
        ("POST", "/mcp", BOTH, None),
        ("POST", "/mcp/", "*/*", None),
        ("POST", "/mcp", "application/*, text/*", None),
        ("POST", "/mcp", None, MCP_POST),
        ("POST", "/mcp", "application/json", MCP_POST),
        ("POST", "/mcp/", "text/event-stream", MCP_POST),
        ("POST", "/mcp", "application/json, text/event-stream;q=0", MCP_POST),
        ("GET", "/mcp", "text/event-stream", None),
        ("GET", "/mcp", "text/*", None),
        ("GET", "/mcp", None, MCP_GET),
        ("GET", "/mcp/", "application/json", MCP_GET),
        ("DELETE", "/mcp", None, None),
        ("DELETE", "/mcp", "text/html", None),
        ("POST", "/infuse", None, None),
        ("POST", "/infuse", "application/json", None),
        ("POST", "/infuse", "*/*", None),
        ("POST", "/infuse", "text/event-stream", JSON_ONLY),
        ("GET", "/infuse", "application/json;q=0", JSON_ONLY),
        ("GET", "/elsewhere", "text/html", None),
        ("POST", "/elsewhere", None, None),
    ],
)
async def test_accept_is_refused_with_406_only_where_no_answer_could_be_given(
    method: str, path: str, accept: str | None, refused: str | None
) -> None:
    answer = await send_accept(method, path, accept)
    if refused is None:
        assert answer.status_code == 200 and answer.content == REACHED
    else:
        refusal(answer, 406, refused)


async def test_accept_headers_sent_apart_count_as_one_list() -> None:
    inner = Inner()
    guard = accept_guard(inner)
    apart = [(b"accept", b"application/json"), (b"accept", b"text/event-stream")]
    sent, _ = await call(guard, method="POST", path="/mcp", headers=apart)
    assert answered(sent)[0] == 200 and inner.bodies == [SENT]
    sent, _ = await call(guard, method="POST", path="/mcp", headers=apart[:1])
    status, _, body = answered(sent)
    assert (status, json.loads(body)) == (406, {"error": MCP_POST})


async def test_non_http_scopes_pass_the_accept_guard() -> None:
    inner = Inner()
    guard = accept_guard(inner)
    sent, _ = await call(guard, type="websocket", method="GET", path="/mcp")
    assert sent == [{"type": "websocket.accept"}]
    sent, _ = await call(guard, type="lifespan")
    assert sent == [{"type": "lifespan.startup.complete"}]
    assert [scope["type"] for scope in inner.scopes] == ["websocket", "lifespan"]
    assert inner.bodies == [SENT, SENT]
