"""How a person's browser carries the server's bearer token to /ui/.

A browser cannot be told to send ``Authorization: Bearer``, so under /ui/ (and only
there) two more ways in are taken, each of them the token or derived from it:

- HTTP Basic with the token as the password (any user name). A 401 under /ui/ asks
  for it, so a browser shows its own sign-in prompt and keeps the answer for the tab.
- A session cookie, ``kenning_ui``, HttpOnly and SameSite=Strict, scoped to /ui/. Its
  value is an HMAC of the token, so it is the same on every replica, needs no server
  state, and stops working when the token changes. It is set by /ui/login, which
  takes a one-time code instead of the token: ``kenning-encounter ui`` mints one from
  the token it was configured with (``login_code``) and opens /ui/login?code=..., the
  server checks it, sets the cookie and redirects to the clean /ui/. The token itself
  is never in a URL, so never in a browser's history or an access log; the code
  expires within a minute and is taken once per process.

This module is imported by the server's guards at start: standard library only.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets
import threading
import time
from typing import Final
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.types import Scope

UI_ROOT: Final = "/ui"
LOGIN_PATH: Final = "/ui/login"
COOKIE: Final = "kenning_ui"
CODE_TTL_S: Final = 60
# Set by the token guard for the login page when the code was good: the cookie to set.
GRANTED: Final = "kenning_ui_grant"
CHALLENGE: Final = b'Basic realm="kenning-encounter inspector", charset="UTF-8"'


def is_ui_path(path: str) -> bool:
    return path == UI_ROOT or path.startswith(UI_ROOT + "/")


def _mac(token: str, purpose: str) -> str:
    return hmac.new(token.encode(), purpose.encode(), hashlib.sha256).hexdigest()


def cookie_value(token: str) -> str:
    return _mac(token, "kenning-encounter ui cookie v1")


def login_code(token: str, now: float | None = None) -> str:
    """A one-time code for /ui/login, good for ``CODE_TTL_S`` seconds."""
    expires = int(now if now is not None else time.time()) + CODE_TTL_S
    nonce = secrets.token_hex(8)
    return f"{expires}.{nonce}.{_mac(token, f'ui-login|{expires}|{nonce}')}"


class _Redeemed:
    """Codes already taken, until they would have expired anyway."""

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def take(self, nonce: str, expires: float, now: float) -> bool:
        with self._lock:
            self._until = {n: t for n, t in self._until.items() if t >= now}
            if nonce in self._until:
                return False
            self._until[nonce] = expires
            return True


_REDEEMED = _Redeemed()


def redeem(token: str, code: str, now: float | None = None) -> bool:
    """Whether ``code`` was minted from ``token``, is unexpired and is used the first time."""
    moment = now if now is not None else time.time()
    parts = code.split(".")
    if len(parts) != 3 or not (parts[0].isascii() and parts[0].isdigit()) or len(parts[0]) > 12:
        return False
    expires, nonce, mac = int(parts[0]), parts[1], parts[2]
    expected = _mac(token, f"ui-login|{expires}|{nonce}")
    if not hmac.compare_digest(mac.encode(), expected.encode()):
        return False
    # A code claiming to live longer than any minted one is not ours, whatever its MAC.
    if not moment <= expires <= moment + CODE_TTL_S:
        return False
    return _REDEEMED.take(nonce, expires, moment)


def _basic_password(header: str) -> str | None:
    scheme, _, encoded = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    _, colon, password = decoded.partition(":")
    return password if colon else None


def _same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8", "replace"), expected.encode())


def browser_admitted(scope: Scope, token: str) -> bool:
    """Whether a request under /ui/ carries the token as Basic or the cookie."""
    headers = Headers(scope=scope)
    password = _basic_password(headers.get("authorization", ""))
    if password is not None and _same(password, token):
        return True
    expected = cookie_value(token)
    # Split by hand: other sites' cookies on the same host may be anything, and must
    # neither hide ours nor stand in for it.
    for raw in headers.getlist("cookie"):
        for pair in raw.split(";"):
            name, eq, value = pair.strip().partition("=")
            if eq and name == COOKIE and _same(value.strip('"'), expected):
                return True
    return False


def login_query_code(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    values = parse_qs(query).get("code", [])
    return values[0] if len(values) == 1 else ""


def set_cookie_header(token: str, secure: bool) -> str:
    flags = "; Secure" if secure else ""
    return f"{COOKIE}={cookie_value(token)}; Path={UI_ROOT}; HttpOnly; SameSite=Strict{flags}"
