"""What the stdio wire answers to a line the SDK cannot read as JSON-RPC (server/stdio.py
``refusal``), case by case; tests/e2e/test_server_stdio.py sends such lines to a real
server."""

from __future__ import annotations

import mcp_types as types
import pytest
from pydantic import ValidationError

from kenning_encounter.server.stdio import refusal


def _sdk_error(line: bytes) -> Exception:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return exc
    raise AssertionError(f"the SDK reads {line!r}")


@pytest.mark.parametrize(
    ("line", "request_id", "code", "says"),
    [
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ping"', None, types.PARSE_ERROR, "not JSON"),
        (b"\xff\xfe{}", None, types.PARSE_ERROR, "not JSON"),
        (b'{"id": 2, "method": "ping"}', 2, types.INVALID_REQUEST, "jsonrpc:"),
        (b'{"jsonrpc": "1.0", "id": "a", "method": "ping"}', "a", types.INVALID_REQUEST, "jsonrpc:"),
        (b'{"jsonrpc": "2.0", "id": 3.5, "method": "ping", "params": 1}', None, types.INVALID_REQUEST, "id:"),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping", "params": 1}', None, types.INVALID_REQUEST, "id:"),
        (b'{"jsonrpc": "2.0", "id": 4, "method": 4}', 4, types.INVALID_REQUEST, "method:"),
        (b'{"jsonrpc": "2.0", "id": 5}', 5, types.INVALID_REQUEST, "method:"),
        (b'{"jsonrpc": "2.0", "id": 6, "method": "x", "params": [1]}', 6, types.INVALID_REQUEST,
         "params:"),
        (b'[{"jsonrpc": "2.0", "id": 7, "method": "ping"}]', None, types.INVALID_REQUEST, "batch"),
        (b'"ping"', None, types.INVALID_REQUEST, "JSON object"),
        (b'{"jsonrpc": "2.0", "id": 8, "method": "x", "params": {"a": '
         + b"[" * 300 + b"]" * 300 + b"}}", 8, types.INVALID_REQUEST, "deeper"),
        (b"[" * 5000 + b"]" * 5000, None, types.INVALID_REQUEST, "deeper"),
    ],
)  # fmt: skip
def test_each_unreadable_line_is_answered_naming_what_is_wrong(
    line: bytes, request_id: object, code: int, says: str
) -> None:
    answer = refusal(line, _sdk_error(line))
    assert answer is not None
    assert (answer.id, answer.error.code) == (request_id, code)
    assert says in answer.error.message


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
        b'{"id": 2, "error": {"code": 1}}',
    ],
)
def test_a_malformed_answer_of_the_client_is_not_answered(line: bytes) -> None:
    assert refusal(line, _sdk_error(line)) is None
