"""read_json_body over a real Starlette app: refused by size as it streams, by depth before parsing.

The client's body is a generator that counts the chunks the server pulls, so
"stopped at the limit" is seen as chunks never asked for, not as a timing.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kenning_encounter.server.bodies import BodyRefused, nesting_depth, read_json_body

pytestmark = pytest.mark.anyio

LIMIT = 10_000
DEPTH = 8
CHUNK = 1_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def echo(request: Request) -> Response:
    limit = int(request.query_params.get("limit", LIMIT))
    depth = int(request.query_params.get("depth", DEPTH))
    try:
        data = await read_json_body(request, limit=limit, max_depth=depth)
    except BodyRefused as refusal:
        return refusal.response()
    return JSONResponse({"got": data})


APP = Starlette(routes=[Route("/echo", echo, methods=["POST"])])


class Counted:
    """A request body of ``chunks`` chunks (None: without end) that counts what was pulled."""

    def __init__(self, chunks: int | None, piece: bytes = b" " * CHUNK) -> None:
        self.chunks = chunks
        self.piece = piece
        self.pulled = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        while self.chunks is None or self.pulled < self.chunks:
            self.pulled += 1
            yield self.piece


async def post(content: Any, headers: dict[str, str] | None = None, **query: int) -> httpx.Response:
    transport = httpx.ASGITransport(app=APP)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        return await client.post("/echo", content=content, headers=headers, params=query)


async def test_a_json_object_within_the_limits_is_read() -> None:
    answer = await post(json.dumps({"session_id": "s", "trajectory": ["a", "b"]}))
    assert answer.status_code == 200
    assert answer.json() == {"got": {"session_id": "s", "trajectory": ["a", "b"]}}


async def test_a_declared_length_over_the_limit_is_refused_before_any_byte_is_read() -> None:
    body = Counted(LIMIT // CHUNK + 5)
    answer = await post(body, headers={"content-length": str(LIMIT + 5 * CHUNK)})
    assert answer.status_code == 413
    assert answer.json()["error"] == (
        f"body: too large: the limit is {LIMIT} bytes; send a smaller JSON object"
    )
    assert body.pulled == 0


async def test_a_chunked_body_is_cut_off_at_the_limit() -> None:
    body = Counted(1_000)  # a hundred times the limit
    answer = await post(body)
    assert answer.status_code == 413
    assert "too large" in answer.json()["error"]
    assert body.pulled == LIMIT // CHUNK + 1


async def test_a_body_of_exactly_the_limit_is_read() -> None:
    text = json.dumps({"p": "x" * (LIMIT - 9)}).encode()
    assert len(text) == LIMIT
    assert (await post(text)).status_code == 200
    assert (await post(text + b" ")).status_code == 413


@pytest.mark.parametrize(
    ("value", "code"),
    [("abc", 400), ("-1", 400), ("1e3", 400)],
)
async def test_a_malformed_content_length_is_refused(value: str, code: int) -> None:
    answer = await post(Counted(1), headers={"content-length": value})
    assert answer.status_code == code
    assert "Content-Length" in answer.json()["error"]


async def test_nesting_at_the_bound_is_read_and_one_deeper_is_refused() -> None:
    at_bound = "[" * DEPTH + "]" * DEPTH
    assert (await post(at_bound)).json() == {"got": json.loads(at_bound)}
    deeper = '{"a":' * (DEPTH + 1) + "1" + "}" * (DEPTH + 1)
    answer = await post(deeper)
    assert answer.status_code == 400
    assert answer.json()["error"] == (
        f"body: nested {DEPTH + 1} levels deep; at most {DEPTH} are allowed, send a flatter object"
    )


async def test_a_document_deep_enough_to_overflow_the_decoder_is_a_400() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    answer = await post(deep, limit=1_000_000)
    assert answer.status_code == 400 and "100000 levels deep" in answer.json()["error"]


async def test_the_decoder_recursing_too_deep_is_still_a_400() -> None:
    # With the depth bound out of the way, json.loads itself hits the recursion limit.
    deep = "[" * 100_000 + "]" * 100_000
    answer = await post(deep, limit=1_000_000, depth=10**9)
    assert answer.status_code == 400
    assert answer.json()["error"] == "body: nested too deeply; send a flatter object"


async def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"prompt": "[" * 500 + '\\"{' * 100, "k": ["]]]", "\\"]})
    answer = await post(text)
    assert answer.status_code == 200 and answer.json() == {"got": json.loads(text)}


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "body: empty"),
        (b"  \n", "body: empty"),
        (b"{not json", "not valid JSON"),
        (b'{"a": "' + b"[" * 50, "a string is never closed"),
        (b'{"a": "\xff\xfe"}', "not valid JSON"),
        (b"[1, 2", "not valid JSON"),
    ],
)
async def test_bad_json_is_a_400_naming_the_body(body: bytes, says: str) -> None:
    answer = await post(body)
    assert answer.status_code == 400
    assert answer.json()["error"].startswith("body: ")
    assert says in answer.json()["error"]


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return 0


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='[]{}"\\ax\n\u00e9'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='[]{}"\\b'), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(value=JSON_VALUES, ascii_only=st.booleans())
def test_the_scanned_depth_is_the_depth_of_the_value(value: object, ascii_only: bool) -> None:
    assert nesting_depth(json.dumps(value, ensure_ascii=ascii_only).encode()) == _depth(value)
