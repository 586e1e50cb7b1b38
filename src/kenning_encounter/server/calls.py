"""The one path every tool call takes: run the service, render, or refuse.

Services are synchronous and may wait on the store's write lock, so they run
on a worker thread. The exception is a quick read (a lookup bounded by its own
limit, such as search) on stdio: there the server has one client, which waits
for the answer, and handing a millisecond of work to a thread and back costs
two thread wake-ups, often more than the work. Such a read runs on the event
loop, when the store is the embedded one (a Neo4j read waits on the network).

A refusal (any ``KenningError``, or a request the models reject) becomes the
SDK's ``ToolError``: the client sees ``isError: true`` with our message. A
result is never a success that describes a failure.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from kenning_encounter.abandon import Call, run_as
from kenning_encounter.errors import KenningError, UnknownType
from kenning_encounter.server.context import AppContext
from kenning_encounter.server.outputs import wire
from kenning_encounter.server.refusals import close_match, refusal_text

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
ToolContext = Context[AppContext, Any]


def app_of(ctx: ToolContext) -> AppContext:
    return ctx.request_context.lifespan_context


def _refusal(exc: KenningError) -> str:
    text = str(exc)
    if isinstance(exc, UnknownType) and isinstance(exc.value, str):
        match = close_match(exc.value, exc.allowed)
        if match is not None:
            text += f"; did you mean {match!r}?"
    return text


NARROW = "narrow the request (a smaller limit or depth) and try again"
# A reading of the whole memory has nothing to narrow but the memory.
WHOLE_MEMORY = (
    "it reads the whole memory, so on one this large raise KENNING_ENCOUNTER_READ_TIMEOUT "
    "and restart, or read a part: gds_create_projection around a node (or of some node "
    "types), then a gds_* algorithm on it"
)


def _inline_reads(app: AppContext) -> bool:
    return app.settings.transport == "stdio" and app.settings.store == "embedded"


async def run_tool(
    ctx: ToolContext,
    work: Callable[[AppContext], M],
    render: Callable[[M], str],
    *,
    deadline: float | None = None,
    quick: bool = False,
    exclude: frozenset[str] = frozenset(),
    narrow: str = NARROW,
) -> CallToolResult:
    """Run ``work`` off the event loop; structured result plus a short text rendering.

    The structured result is what a model reads (Claude Code hands it the JSON, not
    the text), so it is sent compact; ``exclude`` names fields that only repeat
    the rest, such as a text rendering kept on the result.

    ``deadline`` (seconds) bounds read tools only: a write that outlives a
    deadline may still commit, and answering "failed" then would be a lie. A read
    given up (past its deadline, or cancelled) is stopped where it stands.
    ``quick`` marks a read bounded by its own limits, run inline on stdio. ``narrow``
    says how to ask for less, when the read outlives its deadline.
    """
    app = app_of(ctx)
    try:
        if quick and _inline_reads(app):
            result = work(app)
        elif deadline is None:
            result = await anyio.to_thread.run_sync(work, app)
        else:
            call = Call()
            try:
                with anyio.fail_after(deadline):
                    result = await anyio.to_thread.run_sync(
                        run_as, call, lambda: work(app), abandon_on_cancel=True
                    )
            except BaseException:
                # Past its deadline, or cancelled by its client: the read is given up, and
                # what it runs stops (kenning_encounter.abandon).
                call.abandon()
                raise
    except KenningError as exc:
        raise ToolError(_refusal(exc)) from exc
    except ValidationError as exc:
        raise ToolError(refusal_text(exc)) from exc
    except TimeoutError as exc:
        raise ToolError(
            f"the read took longer than the server's read timeout of {deadline:g}s "
            f"(KENNING_ENCOUNTER_READ_TIMEOUT) and was stopped; {narrow}"
        ) from exc
    return CallToolResult(
        content=[TextContent(type="text", text=render(result))],
        structured_content=wire(result, exclude=exclude),
    )
