"""Protocol-level refusals that name what to fix, on every wire.

The SDK checks a request's params against the protocol's own models before any
handler runs, and answers every failure with the same bare "Invalid request
parameters" (it keeps pydantic's text off the wire): an initialize without its
protocolVersion, a tools/call without a name or whose arguments are a list, a
listing whose cursor is a number, all alike. A request sent before the handshake
gets those words too. The client cannot tell what to change. This middleware keeps
the code (invalid params) and says the member at fault and the fix, in the house
style of the tools' own refusals (refusals.py), never repeating a value sent.
"""

from __future__ import annotations

from typing import Any, Final

import mcp_types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from kenning_encounter.server.refusals import refusal_text

# What the SDK raises, and how, for a request before the handshake (mcp.server.runner).
_GATE: Final = ("Invalid request parameters", "")


def _schema(title: str) -> dict[str, Any]:
    """The JSON schema of the protocol's model named ``title`` (empty if none is)."""
    model = getattr(mcp_types, title, None)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return model.model_json_schema(by_alias=True)
    return {}


class NamedParams:
    """Server middleware: a request refused for its params says which and why."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        try:
            return await call_next(ctx)
        except ValidationError as exc:
            if ctx.request_id is None:
                raise
            text = refusal_text(exc, _schema(exc.title)).replace("\n", "; ")
            raise MCPError(
                code=mcp_types.INVALID_PARAMS, message=f"{ctx.method}: {text}", data=""
            ) from None
        except MCPError as exc:
            if (exc.error.code, exc.error.message, exc.error.data) != (
                mcp_types.INVALID_PARAMS,
                *_GATE,
            ):
                raise
            raise MCPError(
                code=mcp_types.INVALID_PARAMS,
                message=(
                    f"{ctx.method}: the connection is not initialized yet; send initialize "
                    "first (and then notifications/initialized)"
                ),
                data="",
            ) from None
