"""The inspector: read-only web pages over the memory, served at /ui/ by the same server.

Imported by the server's routes at start, so this module stays light: the pages
(Jinja2, the templates) load on the first request to /ui/, not when the server starts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from kenning_encounter.memory.service import Memory

__all__ = ["ui_routes"]

DEFAULT_READ_TIMEOUT = 30.0  # the server passes its own (--read-timeout)


class _OnFirstUse:
    def __init__(
        self, memory_of: Callable[[], Memory], sources_of: Callable[[], Any], read_timeout: float
    ) -> None:
        self._memory_of = memory_of
        self._sources_of = sources_of
        self._read_timeout = read_timeout
        self._app: ASGIApp | None = None
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._app is None:
            with self._lock:
                if self._app is None:
                    from kenning_encounter.ui.app import build_ui

                    self._app = build_ui(
                        self._memory_of, self._sources_of, read_timeout=self._read_timeout
                    )
        await self._app(scope, receive, send)


async def _to_index(_: Request) -> Response:
    return RedirectResponse("/ui/", status_code=308)


def _none() -> None:
    return None


def ui_routes(
    memory_of: Callable[[], Memory],
    sources_of: Callable[[], Any] = _none,
    *,
    read_timeout: float = DEFAULT_READ_TIMEOUT,
) -> list[Any]:
    """/ui/ and what is under it; /ui itself redirects there. ``sources_of`` lends the
    orient page the server's baselines and analytics engine (ui/orient_page.py);
    ``read_timeout`` bounds each page's reading, as it bounds a read tool's."""
    return [
        Route("/ui", _to_index, methods=["GET"]),
        Mount("/ui", app=_OnFirstUse(memory_of, sources_of, read_timeout)),
    ]
