"""Plain HTTP routes beside the MCP endpoint, for the harness hooks.

GET /healthz answers without a token. The others sit behind the same guards
as /mcp/ and validate their bodies: a bad body gets 400 naming the field.
"""

from __future__ import annotations

import json
import logging
from typing import Any, TypeVar

import anyio
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from kenning_encounter.errors import KenningError
from kenning_encounter.server.context import Runtime
from kenning_encounter.server.info import package_version
from kenning_encounter.server.session_note import session_start_context

log = logging.getLogger(__name__)

B = TypeVar("B", bound=BaseModel)
MAX_BODY = 1_000_000


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")

    session_id: str = Field(min_length=1, max_length=200)


class SessionStartIn(_Body):
    source: str | None = None
    cwd: str | None = None


class SessionEndIn(_Body):
    reason: str | None = None


class InfuseIn(_Body):
    prompt: str = Field(max_length=100_000)
    trajectory: list[str] = Field(default_factory=list, max_length=200)
    cwd: str | None = None


def infusion_off(reason: str) -> dict[str, Any]:
    return {"payload": "", "meta": {"channel": "off", "degraded": True, "degraded_reason": reason}}


def _bad(message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=400)


async def _parse(request: Request, model: type[B]) -> B | JSONResponse:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        return JSONResponse({"error": "body: too large"}, status_code=413)
    try:
        data = json.loads(raw or b"null")
    except ValueError:
        return _bad("body: not valid JSON; send a JSON object")
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


def build_routes(runtime: Runtime) -> list[Route]:
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok", "version": package_version()})

    async def session_start(request: Request) -> Response:
        body = await _parse(request, SessionStartIn)
        if isinstance(body, JSONResponse):
            return body
        app = runtime.context
        try:
            text = await anyio.to_thread.run_sync(
                session_start_context, app.memory, app.settings, body.session_id
            )
        except KenningError as exc:
            return _bad(str(exc))
        return JSONResponse({"context": text})

    async def session_end(request: Request) -> Response:
        body = await _parse(request, SessionEndIn)
        if isinstance(body, JSONResponse):
            return body
        app = runtime.context
        if app.settings.face == "reader":
            # The reader face opens no encounters, so there is nothing of this session to seal.
            return JSONResponse({"sealed": None})
        try:
            sealed = await anyio.to_thread.run_sync(app.memory.session_end, body.session_id)
        except KenningError as exc:
            return _bad(str(exc))
        return JSONResponse({"sealed": sealed})

    async def infuse(request: Request) -> Response:
        body = await _parse(request, InfuseIn)
        if isinstance(body, JSONResponse):
            return body
        fn = runtime.context.infuse
        if fn is None:
            return JSONResponse(infusion_off("infusion not configured"))
        try:
            answer = await anyio.to_thread.run_sync(
                fn, body.session_id, body.prompt, body.trajectory
            )
        except Exception:  # the hook must get an answer whatever the pipeline does
            log.exception("the infusion pipeline failed")
            return JSONResponse(infusion_off("infusion failed on the server; see its log"))
        return JSONResponse(answer)

    return [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/session-start", session_start, methods=["POST"]),
        Route("/session-end", session_end, methods=["POST"]),
        Route("/infuse", infuse, methods=["POST"]),
    ]
