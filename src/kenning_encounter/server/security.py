"""HTTP guards: the bearer token, Host and Origin against DNS rebinding, MCP's Accept rules.

They wrap the whole HTTP app, so the MCP endpoint and the plain routes
(/session-start, /infuse, ...) are guarded alike. Only /healthz answers
without a token: it says nothing but "ok" and the version.

Host and Origin are parsed, never prefix-matched: ``localhost:8765.evil.com``
is a name that is not ``localhost``. Names compare case-insensitively, as DNS
does. An Origin matches only an allowed origin's exact scheme, host and port;
a loopback Origin only with the port this server listens on.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from kenning_encounter.config import LOOPBACK, Settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.ui import access

log = logging.getLogger(__name__)

OPEN_PATHS: Final = frozenset({"/healthz"})
WILDCARD_BINDS: Final = frozenset({"0.0.0.0", "::", ""})
_LOOPBACK_NAMES: Final = frozenset({"127.0.0.1", "localhost", "::1"})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_NAME: Final = r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
_HOST: Final = re.compile(_NAME + r"(?::([0-9]{1,5}))?")
_ORIGIN: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*)://" + _NAME + r"(?::([0-9]{1,5}))?")
JSON: Final = "application/json"
EVENT_STREAM: Final = "text/event-stream"
LOGGED: Final = 100  # characters of a client's value (a path, a Host) a log line repeats


def _name(raw: str) -> str:
    """Lower-case; IP addresses in their one canonical spelling, IPv6 without brackets."""
    bare = raw[1:-1] if raw.startswith("[") else raw
    try:
        return ipaddress.ip_address(bare).compressed
    except ValueError:
        return bare.lower()


def _port(raw: str | None) -> int | None:
    if raw is None:
        return None
    port = int(raw)
    if port > 65535:
        raise ValueError(raw)
    return port


def parse_host(value: str) -> tuple[str, int | None] | None:
    """'LOCALHOST:8765' -> ('localhost', 8765); '[::1]' -> ('::1', None); junk -> None."""
    match = _HOST.fullmatch(value.strip())
    if match is None:
        return None
    try:
        return _name(match[1]), _port(match[2])
    except ValueError:
        return None


@dataclass(frozen=True)
class Origin:
    scheme: str
    host: str
    port: int | None  # None only for a scheme with no default port

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        if self.port is None or self.port == _DEFAULT_PORTS.get(self.scheme):
            return f"{self.scheme}://{host}"
        return f"{self.scheme}://{host}:{self.port}"


def parse_origin(value: str) -> Origin | None:
    """An Origin header's scheme, host and port (the scheme's default filled in), or None."""
    match = _ORIGIN.fullmatch(value.strip())
    if match is None:
        return None
    scheme = match[1].lower()
    try:
        port = _port(match[3])
    except ValueError:
        return None
    return Origin(scheme, _name(match[2]), port if port is not None else _DEFAULT_PORTS.get(scheme))


@dataclass(frozen=True)
class HostPolicy:
    """Which Host and Origin headers a server answers.

    ``hosts`` pairs a name with a port, or with None for any port (or none).
    ``check_hosts`` False means the Host check is off; Origin is checked always.
    """

    check_hosts: bool
    hosts: frozenset[tuple[str, int | None]]
    origins: frozenset[Origin]

    def host_allowed(self, value: str) -> bool:
        parsed = parse_host(value)
        if parsed is None:
            return False
        name, port = parsed
        return (name, None) in self.hosts or (name, 80 if port is None else port) in self.hosts

    def origin_allowed(self, value: str, own_port: int | None) -> bool:
        origin = parse_origin(value)
        if origin is None:
            return False
        if origin in self.origins:
            return True
        return (
            origin.scheme == "http"
            and origin.host in _LOOPBACK_NAMES
            and own_port is not None
            and origin.port == own_port
        )


def allowed_host(entry: str) -> tuple[str, int | None]:
    """'example.org' (any port), 'example.org:8765', '[::1]:8765' or a bare '::1'."""
    text = entry.strip()
    if text.count(":") > 1 and not text.startswith("["):
        text = f"[{text}]"  # a bare IPv6 address
    parsed = parse_host(text)
    if parsed is None:
        raise ConfigError(
            f"allowed_hosts: {entry!r} is not a host name; write name, name:port or [ipv6]:port"
        )
    return parsed


def allowed_origin(entry: str) -> Origin:
    parsed = parse_origin(entry.strip().rstrip("/"))
    if parsed is None:
        raise ConfigError(
            f"allowed_origins: {entry!r} is not an origin; list each one exactly as "
            "scheme://host[:port], e.g. https://app.example"
        )
    return parsed


def host_policy(settings: Settings) -> HostPolicy:
    """Loopback names are always allowed, plus the bind address when it is a concrete
    one, plus --allowed-hosts. A wildcard bind (0.0.0.0) with no allowed hosts cannot
    know the names clients use; it requires a token anyway, which is what guards it, so
    the Host check is off. ``--allowed-hosts '*'`` turns it off explicitly.
    """
    configured = [h for h in settings.allowed_hosts if h.strip()]
    wildcard_bind = settings.host in WILDCARD_BINDS
    check_hosts = not ("*" in configured or (wildcard_bind and not configured))
    hosts: set[tuple[str, int | None]] = {(name, None) for name in _LOOPBACK_NAMES}
    if check_hosts:
        if not wildcard_bind and settings.host not in LOOPBACK:
            hosts.add(allowed_host(settings.host))
        hosts.update(allowed_host(h) for h in configured)
    origins = frozenset(allowed_origin(o) for o in settings.allowed_origins if o.strip())
    return HostPolicy(check_hosts, frozenset(hosts), origins)


def logged(value: str) -> str:
    """A client's value as a log line shows it: quoted, escaped, cut short. A path comes
    percent-decoded, so ``%0a`` in it is a line break that would start a line of the
    client's making in the operator's log."""
    return repr(value if len(value) <= LOGGED else value[:LOGGED] + "…")


async def _answer(
    send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


class BearerAuth:
    """401 for any request without ``Authorization: Bearer <token>``; constant-time compare.
    The scheme is read in any case, as HTTP reads it (a client sending ``bearer`` was
    refused). Under /ui/ a browser's ways of carrying the token are taken too
    (ui/access.py)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = token.encode()
        self._token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        scheme, _, credentials = Headers(scope=scope).get("authorization", "").partition(" ")
        given = credentials.lstrip(" ").encode("latin-1", "replace")
        # Both compared whatever the scheme, so the time taken tells nothing of the token.
        if hmac.compare_digest(given, self._expected) & (scheme.lower() == "bearer"):
            await self.app(scope, receive, send)
            return
        if access.is_ui_path(scope["path"]):
            await self._browser(scope, receive, send)
            return
        log.info("refused a request without the right bearer token (%s)", logged(scope["path"]))
        await _answer(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])

    async def _browser(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The inspector's pages also take the token as a browser can send it (ui/access.py)."""
        # Only a GET spends a login code: a HEAD (a link checker's, a proxy's) leaves it
        # for the browser the link was opened for.
        if scope["path"] == access.LOGIN_PATH and scope["method"] == "GET":
            code = access.login_query_code(scope)
            if code and access.redeem(self._token, code):
                grant = access.set_cookie_header(self._token, secure=scope["scheme"] == "https")
                state = {**scope.get("state", {}), access.GRANTED: grant}
                await self.app({**scope, "state": state}, receive, send)
                return
        # A browser signed in already (a spent code reloaded, say) is sent on to the pages.
        if access.browser_admitted(scope, self._token):
            await self.app(scope, receive, send)
            return
        log.info("refused an inspector page without the token (%s)", logged(scope["path"]))
        await _answer(
            send,
            401,
            "unauthorized: sign in with any user name and the server's token as the password, "
            "or run kenning-encounter ui",
            [(b"www-authenticate", access.CHALLENGE)],
        )


def _own_port(scope: Scope) -> int | None:
    server = scope.get("server")
    return server[1] if server and server[1] is not None else None


class HostGuard:
    """Refuses a Host header (421) or Origin header (403) outside the policy."""

    def __init__(self, app: ASGIApp, policy: HostPolicy) -> None:
        self.app = app
        self._policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        hosts = headers.getlist("host")
        if self._policy.check_hosts and not (
            len(hosts) == 1 and self._policy.host_allowed(hosts[0])
        ):
            shown = ", ".join(hosts)[:100] or "(none)"
            log.info("refused Host %s (%s)", logged(", ".join(hosts)), logged(scope["path"]))
            await _answer(
                send, 421, f"Host {shown} is not served here; add it with --allowed-hosts"
            )
            return
        origins = headers.getlist("origin")
        if origins and not (
            len(origins) == 1 and self._policy.origin_allowed(origins[0], _own_port(scope))
        ):
            shown = ", ".join(origins)[:100]
            log.info("refused Origin %s (%s)", logged(", ".join(origins)), logged(scope["path"]))
            await _answer(
                send,
                403,
                f"Origin {shown} is not allowed; add it exactly (scheme://host:port) "
                "with --allowed-origins",
            )
            return
        await self.app(scope, receive, send)


def accepts(accept: str | None, media_type: str) -> bool:
    """Whether an Accept header admits ``media_type``: the most specific range that
    matches decides, and q=0 means "not this one". No header admits everything."""
    if accept is None:
        return True
    kind = media_type.split("/")[0]
    best: tuple[int, float] | None = None  # (specificity, q)
    for part in accept.split(","):
        fields = [f.strip() for f in part.split(";")]
        candidate = fields[0].lower()
        specificity = {media_type: 2, f"{kind}/*": 1, "*/*": 0}.get(candidate)
        if specificity is None:
            continue
        q = 1.0
        for param in fields[1:]:
            key, _, value = param.partition("=")
            if key.strip().lower() == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        if best is None or specificity > best[0]:
            best = (specificity, q)
    return best is not None and best[1] > 0


class AcceptGuard:
    """406 for a request whose Accept header refuses every answer the path could give.

    On the streamable HTTP endpoint MCP's own rules apply: a POST must accept both
    JSON and an event stream (the server picks either), a GET an event stream, and
    the header is required. The plain JSON routes need JSON when Accept is sent.
    """

    def __init__(self, app: ASGIApp, mcp_paths: Iterable[str], json_paths: Iterable[str]) -> None:
        self.app = app
        self._mcp = frozenset(mcp_paths)
        self._json = frozenset(json_paths)

    def _refusal(self, method: str, path: str, accept: str | None) -> str | None:
        if path in self._mcp:
            if method == "POST" and not (
                accept is not None and accepts(accept, JSON) and accepts(accept, EVENT_STREAM)
            ):
                return f"Not Acceptable: a POST here must send Accept: {JSON}, {EVENT_STREAM}"
            if method == "GET" and not (accept is not None and accepts(accept, EVENT_STREAM)):
                return f"Not Acceptable: a GET here must send Accept: {EVENT_STREAM}"
        elif path in self._json and not accepts(accept, JSON):
            return f"Not Acceptable: this route answers {JSON} only; send Accept: {JSON}"
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = Headers(scope=scope).getlist("accept")
            accept = ", ".join(given) if given else None
            refusal = self._refusal(scope["method"], scope["path"], accept)
            if refusal is not None:
                await _answer(send, 406, refusal)
                return
        await self.app(scope, receive, send)
