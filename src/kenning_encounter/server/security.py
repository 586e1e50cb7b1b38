"""HTTP guards: the bearer token, and the Host/Origin allow-lists against DNS rebinding.

Both wrap the whole HTTP app, so the MCP endpoint and the plain routes
(/session-start, /infuse, ...) are guarded alike. Only /healthz answers
without a token: it says nothing but "ok" and the version.
"""

from __future__ import annotations

import hmac
import json
import logging
from typing import Final

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from kenning_encounter.config import LOOPBACK, Settings

log = logging.getLogger(__name__)

OPEN_PATHS: Final = frozenset({"/healthz"})
WILDCARD_BINDS: Final = frozenset({"0.0.0.0", "::", ""})
_LOOPBACK_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")
_LOOPBACK_ORIGINS: Final = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")


def _host_patterns(host: str) -> list[str]:
    """'example.org' -> exact and any-port forms; 'example.org:8765' stays as given."""
    host = host.strip()
    if host.startswith("[") and host.endswith("]"):
        return [host, f"{host}:*"]
    if ":" in host and not host.startswith("["):
        if host.count(":") > 1:  # a bare IPv6 address
            return [f"[{host}]", f"[{host}]:*"]
        return [host]
    return [host, f"{host}:*"]


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Which Host and Origin headers the server accepts.

    Loopback names are always allowed, plus the bind address when it is a
    concrete one, plus --allowed-hosts. A wildcard bind (0.0.0.0) with no
    allowed hosts cannot know the names clients use; it requires a token
    anyway, which is what guards it, so the Host check is off (and logged).
    ``--allowed-hosts '*'`` turns the check off explicitly.
    """
    configured = [h for h in settings.allowed_hosts if h.strip()]
    wildcard_bind = settings.host in WILDCARD_BINDS
    if "*" in configured or (wildcard_bind and not configured):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    hosts: list[str] = list(_LOOPBACK_HOSTS)
    if not wildcard_bind and settings.host not in LOOPBACK:
        hosts += _host_patterns(settings.host)
    for host in configured:
        hosts += _host_patterns(host)
    origins: list[str] = [*_LOOPBACK_ORIGINS, *(o.rstrip("/") for o in settings.allowed_origins)]
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
    )


async def _answer(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]]
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
    """401 for any request without ``Authorization: Bearer <token>``; constant-time compare."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS:
            await self.app(scope, receive, send)
            return
        given = Headers(scope=scope).get("authorization", "").encode("latin-1", "replace")
        if hmac.compare_digest(given, self._expected):
            await self.app(scope, receive, send)
            return
        log.info("refused a request without the right bearer token (%s)", scope["path"])
        await _answer(send, 401, "unauthorized", [(b"www-authenticate", b"Bearer")])


class HostGuard:
    """Refuses a Host header (421) or Origin header (403) outside the allow-lists."""

    def __init__(self, app: ASGIApp, settings: TransportSecuritySettings) -> None:
        self.app = app
        self._check = TransportSecurityMiddleware(settings)
        self._enabled = settings.enable_dns_rebinding_protection

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self._enabled:
            refusal = await self._check.validate_request(Request(scope), is_post=False)
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        await self.app(scope, receive, send)
