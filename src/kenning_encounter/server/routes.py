"""Plain HTTP routes beside the MCP endpoint, for the harness hooks.

GET /healthz answers without a token. The others sit behind the same guards
as /mcp/ and validate their bodies: a bad body gets 400 naming the field.
The inspector's read-only pages (kenning_encounter.ui) are mounted at /ui/,
behind the same guards.
"""

from __future__ import annotations

import functools
import hashlib
import logging
from importlib import resources
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from kenning_encounter.errors import KenningError, SessionNotHeld
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.server.bodies import BodyRefused, read_json_body
from kenning_encounter.server.context import AppContext, Runtime
from kenning_encounter.server.holds import MAX_HANDLE, split_handle
from kenning_encounter.server.info import package_version
from kenning_encounter.server.session_note import session_start_context
from kenning_encounter.ui import ui_routes

log = logging.getLogger(__name__)

B = TypeVar("B", bound=BaseModel)
MAX_BODY = 1_000_000
# The hook bodies are two levels deep; anything far deeper is not a hook body.
MAX_DEPTH = 32


class _Body(LazyModel):
    model_config = ConfigDict(extra="ignore")

    # The session's handle (or, for a session not used yet, its plain id).
    session_id: str = Field(min_length=1, max_length=MAX_HANDLE)


class SessionStartIn(_Body):
    source: str | None = None
    cwd: str | None = None
    # What the hook script is (infuse_hook.own_digest); none from a hook older than that.
    hook: str | None = Field(None, max_length=64)


@functools.cache
def shipped_hook() -> str:
    """The digest of the hook script this server ships, as the hook reports its own."""
    script = resources.files("kenning_encounter.hooks").joinpath("infuse_hook.py")
    return hashlib.sha256(script.read_bytes()).hexdigest()[:16]


STALE_HOOK = (
    "The kenning-encounter hook script this project runs is not the one this server "
    "ships (an older install left it): tell the person to run 'kenning-encounter install "
    "claude-code' again (or to update the kenning-encounter plugin)."
)


class SessionEndIn(_Body):
    reason: str | None = None


class InfuseIn(_Body):
    prompt: str = Field(max_length=100_000)
    trajectory: list[str] = Field(default_factory=list, max_length=200)
    cwd: str | None = None
    # How long the caller waits; the answer comes within it (the matcher gives way).
    # Strict: JSON true is no number of milliseconds (lax, it was read as 1).
    deadline_ms: int | None = Field(default=None, ge=1, le=600_000, strict=True)
    # Cold nodes too (memory/activation.py); the hook sends it when its setting asks.
    include_cold: bool = False


def infusion_off(reason: str) -> dict[str, Any]:
    return {
        "payload": "",
        "status": "off",
        "meta": {"channel": "off", "degraded": True, "degraded_reason": reason},
    }


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


async def _parse(request: Request, model: type[B]) -> B | JSONResponse:
    try:
        # Refused by size as it streams and by depth before parsing.
        data = await read_json_body(request, limit=MAX_BODY, max_depth=MAX_DEPTH)
    except BodyRefused as refusal:
        return refusal.response()
    if not isinstance(data, dict):
        return _bad("body: must be a JSON object")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = [
            f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"
            for err in exc.errors()
        ]
        return _bad("; ".join(problems))


async def _claim(app: AppContext, session_id: str) -> str:
    """The plain id, once the body proves it may act for the session (``SessionNotHeld``)."""
    return await anyio.to_thread.run_sync(app.hold, session_id)


def build_routes(runtime: Runtime) -> list[Route | Mount]:
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok", "version": package_version()})

    async def session_start(request: Request) -> Response:
        body = await _parse(request, SessionStartIn)
        if isinstance(body, JSONResponse):
            return body
        app = runtime.context
        try:
            try:
                locus = await _claim(app, body.session_id)
            except SessionNotHeld:
                # Held by a handle this caller lacks: a note that says so, and nothing reset.
                locus, handle = split_handle(body.session_id.strip())[0], None
            else:
                handle = app.holds.handle(locus)
                if app.services is not None:
                    # The ledger may live in the store: off the event loop.
                    await anyio.to_thread.run_sync(
                        app.services.infuser.session_started, locus, body.source
                    )
            text = await anyio.to_thread.run_sync(
                session_start_context, app.memory, app.settings, locus, handle
            )
        except KenningError as exc:
            return _bad(str(exc))
        if body.hook != shipped_hook():
            text = f"{text}\n{STALE_HOOK}" if text else STALE_HOOK
        return JSONResponse({"context": text, "handle": handle})

    async def session_end(request: Request) -> Response:
        body = await _parse(request, SessionEndIn)
        if isinstance(body, JSONResponse):
            return body
        app = runtime.context
        if app.settings.face == "reader":
            # The reader face opens no encounters: nothing of this session to dissolve.
            return JSONResponse({"dissolved": None})
        try:
            locus = await _claim(app, body.session_id)
            dissolved = await anyio.to_thread.run_sync(app.memory.session_end, locus)
        except SessionNotHeld as exc:
            return JSONResponse({"error": str(exc)}, status_code=409)
        except KenningError as exc:
            return _bad(str(exc))
        return JSONResponse({"dissolved": dissolved})

    async def infuse(request: Request) -> Response:
        body = await _parse(request, InfuseIn)
        if isinstance(body, JSONResponse):
            return body
        app = runtime.context
        fn = app.infuse
        if fn is None:
            return JSONResponse(infusion_off("infusion not configured"))
        deadline = None if body.deadline_ms is None else body.deadline_ms / 1000

        def run() -> dict[str, Any]:
            locus = app.hold(body.session_id)
            answer = fn(
                locus,
                body.prompt,
                body.trajectory,
                deadline_s=deadline,
                include_cold=body.include_cold,
            )
            # A hook that missed SessionStart learns the handle while the session is unused.
            return {**answer, "handle": app.holds.handle(locus)}

        # Here, not at the top: the pipeline brings numpy and scipy, which the server
        # loads only when something infuses.
        from kenning_encounter.infusion.pipeline import answer_failed

        try:
            answer = await anyio.to_thread.run_sync(run)
        except SessionNotHeld as exc:
            return JSONResponse(answer_failed(str(exc)))
        except KenningError as exc:
            return _bad(str(exc))
        except Exception as exc:  # the hook must get an answer whatever the pipeline does
            log.exception("the infusion pipeline failed")
            return JSONResponse(
                answer_failed(f"infusion failed on the server ({type(exc).__name__}); see its log")
            )
        return JSONResponse(answer)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/session-start", session_start, methods=["POST"]),
        Route("/session-end", session_end, methods=["POST"]),
        Route("/infuse", infuse, methods=["POST"]),
        *ui_routes(
            lambda: runtime.context.memory,
            lambda: runtime.context.services,
            read_timeout=runtime.settings.read_timeout,
        ),
    ]
