"""The inspector's pages: a small Starlette app mounted at /ui/ inside the server's HTTP app.

It sits behind the same guards as the MCP endpoint (bearer token, Host and Origin:
server/security.py wraps the whole app), answers GET only, and never writes. Pages
are rendered on the server with Jinja2 (autoescaping on), from templates and a
stylesheet shipped in the package: no CDN, no script, nothing fetched at run time.
A strict Content-Security-Policy says so to the browser too.

A page reads as a read tool does (kenning_encounter.abandon): given up, its statement
interrupted, when its browser leaves (a reload, a closed tab) or the server's read
timeout passes; and no more than ``PAGE_READS`` pages read at once, so a person
browsing never holds every store reader the agent's calls and the hook need.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final, TypeVar, cast

import anyio
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from kenning_encounter.abandon import Call, run_as
from kenning_encounter.errors import InvalidInput, NotFound
from kenning_encounter.memory.models import Provenance
from kenning_encounter.memory.service import Memory
from kenning_encounter.server.info import package_version
from kenning_encounter.ui import access, views
from kenning_encounter.ui.orient_page import OrientReadings, OrientSources

log = logging.getLogger(__name__)

T = TypeVar("T")
PREFIX: Final = "/ui/"
# Pages reading at once; the others wait their turn (holding no reader). The embedded
# store lends four readers (store/embedded/backend.py): two stay free for the agent.
PAGE_READS: Final = 2
PROVENANCE_SHOWN: Final = 200  # nodes of a provenance tree a node page draws
HEADERS: Final = {
    "content-security-policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


@dataclass(frozen=True)
class TreeNode:
    relation: str
    node: views.NodeLink
    children: list[TreeNode]


@dataclass(frozen=True)
class Grounds:
    """A node's provenance tree as drawn, and how many grounds it had no room for."""

    roots: list[TreeNode]
    more: int


def provenance_tree(
    provenance: Provenance, names: dict[str, views.NodeLink], limit: int = PROVENANCE_SHOWN
) -> Grounds:
    """What the node rests on as a tree, its grounds under it; each node once, at most
    ``limit`` of them, and a count of the grounds left out (a hub has thousands)."""
    into: dict[str, list[tuple[str, str]]] = {}
    for e in provenance.edges:
        into.setdefault(e.target, []).append((e.type, e.source))
    seen = {provenance.node.id}
    budget = [limit]

    def under(node_id: str) -> list[TreeNode]:
        out: list[TreeNode] = []
        for relation, source in into.get(node_id, []):
            if source in seen or source not in names or budget[0] <= 0:
                continue
            seen.add(source)
            budget[0] -= 1
            out.append(TreeNode(relation, names[source], under(source)))
        return out

    roots = under(provenance.node.id)
    # A revision stands on what grounded the versions it revised: those hang under them.
    for revision in provenance.revisions:
        if revision.id in names and revision.id not in seen:
            seen.add(revision.id)
            roots.append(TreeNode("SUPERSEDES", names[revision.id], under(revision.id)))
    # Every source the walk reached that the tree has no room for.
    left = {e.source for e in provenance.edges if e.source in names} - seen
    return Grounds(roots, len(left))


def _environment() -> Environment:
    env = Environment(
        loader=PackageLoader("kenning_encounter.ui", "templates"),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["when"] = views.when
    # Globals, not render values: the imported macros see globals only.
    cast(dict[str, Any], env.globals).update(version=package_version(), prefix=PREFIX)
    return env


def _one(request: Request, name: str) -> str | None:
    """The one value of query parameter ``name``, or None when it is not given. Given
    twice it is refused: which one a page should obey is anyone's guess."""
    given = request.query_params.getlist(name)
    if len(given) > 1:
        raise InvalidInput(name, f"is given {len(given)} times; give it once")
    return given[0] if given else None


def _page(request: Request) -> int:
    raw = _one(request, "page")
    if raw is None:
        return 0
    # ASCII digits only: str.isdigit takes superscripts and other scripts' digits,
    # which int() refuses or reads as another number; and a short one, before int().
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 6:
        raise InvalidInput(
            "page", f"must be a whole number from 0 to {views.MAX_PAGE}, e.g. page=2"
        )
    return views.check_page(int(raw))


def _flag(request: Request, name: str) -> bool:
    raw = _one(request, name)
    if raw not in (None, "0", "1"):
        raise InvalidInput(name, f"must be 1 (on) or 0 (off), e.g. {name}=1, or left out")
    return raw == "1"


Page = Callable[[Memory, Request], tuple[str, dict[str, Any]]]


async def _browser_left(request: Request) -> None:
    """Returns once the browser that asked is gone; a GET's body is read past on the way."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _read_for(
    request: Request, work: Callable[[], T], *, limiter: anyio.CapacityLimiter, timeout: float
) -> T | None:
    """``work`` on a worker thread as a ``Call``: None when the browser left first,
    TimeoutError past ``timeout``; either way the work is given up where it stands."""
    call = Call()
    done: list[T] = []
    failed: list[Exception] = []

    async def run(watching: anyio.CancelScope) -> None:
        try:
            done.append(
                await anyio.to_thread.run_sync(
                    run_as, call, work, abandon_on_cancel=True, limiter=limiter
                )
            )
        except Exception as exc:  # raised below, outside the task group's exception group
            failed.append(exc)
        watching.cancel()

    try:
        with anyio.fail_after(timeout):
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, tg.cancel_scope)
                await _browser_left(request)
                tg.cancel_scope.cancel()
    except BaseException:
        call.abandon()
        raise
    if failed:
        raise failed[0]
    if not done:
        call.abandon()
        return None
    return done[0]


def build_ui(
    memory_of: Callable[[], Memory],
    sources_of: Callable[[], OrientSources | None] = lambda: None,
    *,
    read_timeout: float = 30.0,
) -> Starlette:
    """The inspector over whatever memory ``memory_of`` returns when a page is asked;
    ``read_timeout`` (seconds) bounds each page's reading."""
    env = _environment()
    limiter = anyio.CapacityLimiter(PAGE_READS)
    readings = OrientReadings(sources_of)
    css = resources.files("kenning_encounter.ui").joinpath("static/ui.css").read_bytes()

    def html(template: str, status: int = 200, **values: Any) -> HTMLResponse:
        body = env.get_template(template).render(**values)
        return HTMLResponse(body, status_code=status, headers=HEADERS)

    def page(render: Page) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            memory = memory_of()
            try:
                read = await _read_for(
                    request,
                    lambda: render(memory, request),
                    limiter=limiter,
                    timeout=read_timeout,
                )
            except (views.NotShown, NotFound) as exc:
                return html("missing.html", 404, title="Not here", message=str(exc))
            except InvalidInput as exc:
                return html("missing.html", 400, title="Cannot show that", message=str(exc))
            except TimeoutError:
                message = (
                    f"Reading this page took longer than the server's read timeout of "
                    f"{read_timeout:g}s (KENNING_ENCOUNTER_READ_TIMEOUT), so it was stopped; "
                    "the server can be started with a longer one (--read-timeout)."
                )
                return html("missing.html", 503, title="Took too long", message=message)
            if read is None:  # the browser left: nobody reads an answer
                return Response(status_code=204)
            template, values = read
            return html(template, **values)

        return endpoint

    def spine(memory: Memory, request: Request) -> tuple[str, dict[str, Any]]:
        view = views.spine(memory, _page(request))
        return "spine.html", {"title": "Spine", "view": view, "here": "spine"}

    def node(memory: Memory, request: Request) -> tuple[str, dict[str, Any]]:
        view = views.node(memory, str(request.path_params["node_id"]))
        tree = provenance_tree(view.provenance, view.names)
        return "node.html", {"title": view.node.name, "view": view, "grounds": tree, "here": ""}

    def search(memory: Memory, request: Request) -> tuple[str, dict[str, Any]]:
        query = (_one(request, "q") or "").strip()
        history_too = _flag(request, "history")
        page = _page(request)
        values: dict[str, Any] = {
            "title": "Search",
            "query": query,
            "history": history_too,
            "here": "search",
        }
        if query:
            result, paged = views.search(memory, query, history_too=history_too, page=page)
            values.update(result=result, paged=paged)
        return "search.html", values

    def orient(memory: Memory, _: Request) -> tuple[str, dict[str, Any]]:
        view = readings.view(memory)
        return "orient.html", {"title": "Orient", "view": view, "here": "orient"}

    def log_index(memory: Memory, request: Request) -> tuple[str, dict[str, Any]]:
        view = views.log_sessions(memory, _page(request))
        return "log.html", {"title": "Infusion log", "view": view, "here": "log"}

    def log_session(memory: Memory, request: Request) -> tuple[str, dict[str, Any]]:
        view = views.log_entries(memory, str(request.path_params["tag"]), _page(request))
        title = f"Infusion log: {view.session}"
        return "log_session.html", {"title": title, "view": view, "here": "log"}

    async def login(request: Request) -> Response:
        # The token guard checked the one-time code and hands over the cookie to set;
        # without a token configured there is nothing to set. Either way: the clean URL.
        grant = request.scope.get("state", {}).get(access.GRANTED)
        reply = RedirectResponse(PREFIX, status_code=303, headers=HEADERS)
        if isinstance(grant, str):
            reply.headers.append("set-cookie", grant)
        return reply

    async def refused(request: Request, exc: Exception) -> Response:
        # The router's own 404 and 405, answered as the pages are, not in plain text.
        status = exc.status_code if isinstance(exc, HTTPException) else 404
        if status == 405:
            reply = html(
                "missing.html",
                405,
                title="Cannot do that",
                message=f"method: {request.method} is not taken here; the inspector only "
                "reads, so ask its pages with GET",
            )
            reply.headers["allow"] = "GET, HEAD"
            return reply
        shown = views.echoed(request.url.path)
        message = f"address: nothing is shown at {shown}; the pages are linked from the spine"
        return html("missing.html", 404, title="Not here", message=message)

    async def stylesheet(_: Request) -> Response:
        return Response(css, media_type="text/css", headers={"cache-control": "max-age=300"})

    return Starlette(
        routes=[
            Route("/", page(spine), methods=["GET"]),
            Route("/node/{node_id}", page(node), methods=["GET"]),
            Route("/search", page(search), methods=["GET"]),
            Route("/orient", page(orient), methods=["GET"]),
            Route("/log", page(log_index), methods=["GET"]),
            Route("/log/{tag}", page(log_session), methods=["GET"]),
            Route("/login", login, methods=["GET"]),
            Route("/static/ui.css", stylesheet, methods=["GET"]),
        ],
        exception_handlers={404: refused, 405: refused},
    )
