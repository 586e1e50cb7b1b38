"""What is wrong with a JSON value sent as a JSON-RPC message, said the same on every wire.

The SDK reads a message through one union model and, when none fits, says so in
pydantic's words (over HTTP, a kilobyte of them under "invalid params"), or drops
it (over stdio); and it takes a request whose id is no request id (null, 1.5) for a
notification, which is never answered. Both wires refuse such a value as an invalid
request naming the member at fault and the fix (stdio.py, transports.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast


@dataclass(frozen=True)
class Fault:
    """Why a value is no message: the id to answer under (when it can be read) and what
    to say (the member at fault and the fix)."""

    ident: str | int | None
    message: str


def request_id(message: dict[str, Any]) -> str | int | None:
    """The message's id when it is one MCP allows (a string or an integer)."""
    raw = message.get("id")
    return raw if isinstance(raw, str | int) and not isinstance(raw, bool) else None


def is_answer(value: object) -> bool:
    """Whether ``value`` is shaped as a client's answer (to a request of the server's)."""
    return (
        isinstance(value, dict)
        and "method" not in value
        and ("result" in value or "error" in value)
    )


def shape_fault(value: object, *, apart: str) -> Fault | None:
    """What makes ``value`` (parsed JSON) no request or notification, or None when its
    envelope is sound or it is a client's answer (whose shape the SDK checks).
    ``apart`` says how this wire takes messages one by one ("on its own line")."""
    if isinstance(value, list):
        # 2025-03-26 let a client batch; no SDK ever took one, and MCP dropped them after.
        return Fault(
            None,
            "a JSON array (a batch): this server takes one message at a time (MCP dropped "
            f"batches after 2025-03-26); send each message {apart}",
        )
    if not isinstance(value, dict):
        return Fault(None, "a message is a JSON object, not a bare value")
    if is_answer(value):
        return None
    message = cast(dict[str, Any], value)
    ident = request_id(message)
    if message.get("jsonrpc") != "2.0":
        why = 'jsonrpc: must be "2.0"; add "jsonrpc": "2.0" to the message'
    elif "id" in message and ident is None:
        why = (
            "id: must be a string or an integer (null, a fraction, a boolean or a structure "
            "is no MCP request id); send the request's id as one, or leave it out of a "
            "notification"
        )
    elif not isinstance(message.get("method"), str):
        why = 'method: must be a string naming the method, such as "tools/call"'
    elif message.get("params") is not None and not isinstance(message["params"], dict):
        why = "params: must be a JSON object (or left out)"
    else:
        return None
    return Fault(ident, f"invalid request: {why}")
