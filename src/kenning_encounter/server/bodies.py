"""Reading a JSON request body without letting the sender choose the cost.

A body is refused by its size while it streams in: a Content-Length over the
limit before a byte is read, a chunked body as soon as the bytes received pass
the limit, so the server never holds more than the limit and one chunk. Its
nesting depth is measured on the raw bytes before ``json.loads`` runs, because
the decoder recurses once per level and a deep enough document ends in a
RecursionError (an HTTP 500) instead of a refusal.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Final

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse

from kenning_encounter.errors import InvalidInput

# A complete JSON string; possessive so a long string costs one pass, never a backtrack.
_STRING: Final = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_STEP: Final = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_NOT_BRACKETS: Final = bytes(b for b in range(256) if b not in _STEP and b != ord('"'))


class BodyRefused(InvalidInput):
    """A request body refused before or while parsing; ``status`` is the HTTP answer."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__("body", message)

    def response(self) -> JSONResponse:
        return JSONResponse({"error": str(self)}, status_code=self.status)


def _declared_length(request: Request) -> int | None:
    values = request.headers.getlist("content-length")
    if not values:
        return None
    declared = values[0].strip()
    if len(set(values)) != 1 or not (declared.isascii() and declared.isdigit()):
        raise BodyRefused(400, "Content-Length is not one whole number; send the body's size")
    return int(values[0])


def _too_large(limit: int) -> BodyRefused:
    return BodyRefused(413, f"too large: the limit is {limit} bytes; send a smaller JSON object")


async def _read_bounded(request: Request, limit: int) -> bytes:
    declared = _declared_length(request)
    if declared is not None and declared > limit:
        raise _too_large(limit)
    received = bytearray()
    try:
        async for chunk in request.stream():
            if len(received) + len(chunk) > limit:
                # Stop here: the rest is never read, so it never reaches memory.
                raise _too_large(limit)
            received += chunk
    except ClientDisconnect:
        raise BodyRefused(400, "the client left before sending the whole body") from None
    return bytes(received)


def nesting_depth(raw: bytes) -> int:
    """The deepest bracket nesting of a JSON text, brackets inside strings not counted.

    Raises BodyRefused(400) for an unterminated string, since no depth can be
    read from it and no JSON decoder would accept it either.
    """
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    if b'"' in brackets:
        raise BodyRefused(400, "not valid JSON (a string is never closed); send a JSON object")
    return max(accumulate(_STEP[b] for b in brackets), default=0)


async def read_json_body(request: Request, *, limit: int, max_depth: int) -> object:
    """The request's body decoded as JSON, or BodyRefused (413 too large, 400 otherwise)."""
    raw = await _read_bounded(request, limit)
    if not raw.strip():
        raise BodyRefused(400, 'empty; send a JSON object such as {"session_id": "..."}')
    depth = nesting_depth(raw)
    if depth > max_depth:
        raise BodyRefused(
            400,
            f"nested {depth} levels deep; at most {max_depth} are allowed, send a flatter object",
        )
    try:
        return json.loads(raw)
    except RecursionError:  # the depth bound should make this unreachable; never a 500
        raise BodyRefused(400, "nested too deeply; send a flatter object") from None
    except ValueError as exc:  # UnicodeDecodeError is a ValueError too
        raise BodyRefused(400, f"not valid JSON ({exc}); send a JSON object") from None
