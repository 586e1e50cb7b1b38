"""The hook routes' body reader (server/bodies.py), the layer behind the HTTP parser: a
Content-Length it cannot read as one whole number is refused with 400, whatever the
parser in front let through (uvicorn's h11 refuses these first today)."""

from __future__ import annotations

import anyio
import pytest
from starlette.requests import Request

from kenning_encounter.server.bodies import BodyRefused, read_json_body


def _request(length: bytes, body: bytes = b"{}") -> Request:
    sent = False

    async def receive() -> dict[str, object]:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    scope = {"type": "http", "method": "POST", "headers": [(b"content-length", length)]}
    return Request(scope, receive)


@pytest.mark.parametrize("length", [b"\xb2", b"1\xb2", b"\xef\xbc\x91", b"-2", b"2.0", b""])
def test_a_length_that_is_no_ascii_whole_number_is_refused(length: bytes) -> None:
    async def read() -> object:
        return await read_json_body(_request(length), limit=1_000, max_depth=10)

    with pytest.raises(BodyRefused) as refused:
        anyio.run(read)
    assert refused.value.status == 400 and "Content-Length" in str(refused.value)


def test_a_whole_number_is_read() -> None:
    async def read() -> object:
        return await read_json_body(_request(b"2"), limit=1_000, max_depth=10)

    assert anyio.run(read) == {}
