"""The HTTP side: hook routes, the bearer token, the Host/Origin allow-lists.

Most tests drive the real ASGI app in process (its lifespan entered, the real
store open); the last ones run the CLI on a free loopback port and talk to it
over sockets with a real MCP client.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR

from kenning_encounter.config import INSPECTOR_ROOT, OWN_ROUTES
from kenning_encounter.errors import ConfigError
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import InfuseFn, Runtime
from kenning_encounter.server.transports import build_http_app
from kenning_encounter.ui import access
from tests.e2e.conftest import (
    ALL_TOOLS,
    SESSION,
    clean_environ,
    make_settings,
    run_server,
    server_command,
)
from tests.support.handles import handle

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("clean_env")]

TOKEN = "a-long-random-token-for-the-tests-0123456789"
OTHER = "session-other"


@asynccontextmanager
async def http_app(
    data_dir: Path, infusion: InfuseFn | None = None, **values: Any
) -> AsyncGenerator[tuple[httpx.AsyncClient, Runtime]]:
    settings = make_settings(data_dir, **values)
    runtime = Runtime(settings, infusion_factory=(lambda _ctx: infusion) if infusion else None)
    app = build_http_app(build_server(settings, runtime), runtime, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as http:
            yield http, runtime


def open_encounter(runtime: Runtime, session: str) -> str | None:
    found = runtime.context.store.read(lambda tx: tx.open_encounter_of(session))
    return found.name if found else None


async def test_healthz(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m", token=TOKEN) as (http, _):
        answer = await http.get("/healthz")  # no token needed here
        assert answer.status_code == 200
        assert answer.json()["status"] == "ok" and answer.json()["version"]


async def test_session_start_tells_the_session_id_and_opens_nothing(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m") as (http, runtime):
        other = runtime.context.memory.advance_encounter(OTHER, "left running elsewhere")
        answer = await http.post(
            "/session-start", json={"session_id": SESSION, "source": "startup", "cwd": None}
        )
        assert answer.status_code == 200
        context = answer.json()["context"]
        assert f"session_id is {SESSION}" in context
        assert "advance_encounter" in context
        assert other.encounter.name in context and OTHER not in context
        assert open_encounter(runtime, SESSION) is None


async def test_session_start_after_a_restart_finds_the_encounter_open(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m") as (_, runtime):
        left = runtime.context.memory.advance_encounter(SESSION, "interrupted work").encounter.name
    async with http_app(tmp_path / "m") as (http, runtime):
        held = {"session_id": handle(SESSION)}
        context = (await http.post("/session-start", json=held)).json()["context"]
        assert f"Your encounter {left} is still open" in context
        # Once the session has been idle past the horizon, the sweep dissolves it, and says so.
        await anyio.sleep(0.05)
        assert runtime.context.memory.sweep_idle(0.01) == [left]
        context = (await http.post("/session-start", json=held)).json()["context"]
        assert f"{left} was dissolved" in context
        assert f"encounter='{left}'" in context


async def test_session_end_dissolves_the_open_encounter_and_its_session_may_seal_it_later(
    tmp_path: Path,
) -> None:
    # DESIGN §3 invariant 6: an encounter whose session the harness ended gets a
    # mechanical dissolved_at, never a summary; a session that comes back (a resume) may
    # still seal it by name, with one.
    async with http_app(tmp_path / "m") as (http, runtime):
        memory = runtime.context.memory
        name = memory.advance_encounter(SESSION, "work").encounter.name
        held = handle(SESSION)
        answer = await http.post("/session-end", json={"session_id": held, "reason": "logout"})
        assert answer.json() == {"dissolved": name}
        assert open_encounter(runtime, SESSION) is None
        ended = memory.store.read(lambda tx: tx.get_encounter(name))
        assert ended is not None and ended.dissolved_at and ended.sealed_at is None
        assert ended.summary in (None, "")
        again = await http.post("/session-end", json={"session_id": held})
        assert again.json() == {"dissolved": None}
        closed = memory.close_encounter(SESSION, "what the work came to", encounter=name)
        assert closed.encounter.name == name
        sealed = memory.store.read(lambda tx: tx.get_encounter(name))
        assert sealed is not None and sealed.summary == "what the work came to"


async def test_the_reader_face_seals_nothing(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m") as (_, runtime):
        runtime.context.memory.advance_encounter(SESSION, "work")
    async with http_app(tmp_path / "m", face="reader") as (http, runtime):
        answer = await http.post("/session-end", json={"session_id": SESSION})
        assert answer.json() == {"dissolved": None}
        context = (await http.post("/session-start", json={"session_id": SESSION})).json()[
            "context"
        ]
        assert "read-only" in context


async def test_infuse_runs_the_real_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    async with http_app(tmp_path / "m", matcher="gemini") as (http, runtime):
        memory = runtime.context.memory
        memory.advance_encounter(OTHER, "deploys")
        memory.create_entities(
            OTHER,
            [
                {
                    "type": "Observation",
                    "name": "retry storm",
                    "description": "Deploys set off a retry storm.",
                }
            ],
        )
        body = {
            "session_id": SESSION,
            "prompt": "the retry storm is back",
            "trajectory": [],
            "cwd": "/w",
        }
        answer = await http.post("/infuse", json=body)
        assert answer.status_code == 200
        result = answer.json()
        assert "retry storm" in result["payload"]
        # no Gemini key here: the lexical path served, and the payload says why
        assert result["meta"]["channel"] == "lexical"
        assert result["meta"]["degraded"] and result["meta"]["degraded_reason"] == "no_key"
        again = (await http.post("/infuse", json=body)).json()
        assert again["meta"]["standing"] and not again["meta"]["delivered"]
        quiet = await http.post("/infuse", json={**body, "prompt": "format this table as markdown"})
        assert quiet.json()["payload"] == ""


async def test_infuse_hands_the_request_to_the_pipeline(tmp_path: Path) -> None:
    seen: list[tuple[str, str, list[str], bool]] = []

    def pipeline(
        session_id: str,
        prompt: str,
        trajectory: list[str],
        *,
        deadline_s: float | None = None,
        include_cold: bool = False,
    ) -> dict[str, Any]:
        seen.append((session_id, prompt, trajectory, include_cold))
        return {"payload": "held: retry storm", "meta": {"channel": "lexical", "degraded": False}}

    async with http_app(tmp_path / "m", infusion=pipeline) as (http, _):
        answer = await http.post(
            "/infuse",
            json={"session_id": SESSION, "prompt": "why nine?", "trajectory": ["earlier"]},
        )
        assert answer.json()["payload"] == "held: retry storm"
        cold = {"session_id": SESSION, "prompt": "and before?", "include_cold": True}
        assert (await http.post("/infuse", json=cold)).status_code == 200
        assert seen == [
            (SESSION, "why nine?", ["earlier"], False),
            (SESSION, "and before?", [], True),
        ]


async def test_a_failing_pipeline_degrades_instead_of_failing_the_turn(tmp_path: Path) -> None:
    def broken(
        session_id: str,
        prompt: str,
        trajectory: list[str],
        *,
        deadline_s: float | None = None,
        include_cold: bool = False,
    ) -> dict[str, Any]:
        raise RuntimeError("matcher exploded")

    async with http_app(tmp_path / "m", infusion=broken) as (http, _):
        answer = await http.post("/infuse", json={"session_id": SESSION, "prompt": "p"})
        assert answer.status_code == 200
        assert answer.json()["payload"] == ""
        assert answer.json()["meta"]["degraded"] is True


@pytest.mark.parametrize(
    ("route", "body", "field"),
    [
        ("/session-start", {"source": "startup"}, "session_id"),
        ("/session-start", {"session_id": ""}, "session_id"),
        ("/session-end", {"session_id": 42}, "session_id"),
        ("/infuse", {"session_id": SESSION}, "prompt"),
        (
            "/infuse",
            {"session_id": SESSION, "prompt": "p", "trajectory": "not a list"},
            "trajectory",
        ),
        ("/infuse", [1, 2], "body"),
        ("/infuse", {"session_id": SESSION, "prompt": "p", "deadline_ms": True}, "deadline_ms"),
    ],
)
async def test_bad_bodies_get_400_naming_the_field(
    tmp_path: Path, route: str, body: Any, field: str
) -> None:
    async with http_app(tmp_path / "m") as (http, runtime):
        answer = await http.post(route, json=body)
        assert answer.status_code == 400
        assert answer.json()["error"].startswith(field)
        assert open_encounter(runtime, SESSION) is None
    async with http_app(tmp_path / "m2") as (http, _):
        garbled = await http.post(
            route, content=b"{not json", headers={"content-type": "application/json"}
        )
        assert garbled.status_code == 400 and "JSON" in garbled.json()["error"]


async def test_every_route_but_healthz_needs_the_token(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m", token=TOKEN) as (http, _):
        body = {"session_id": SESSION, "prompt": "p"}
        for route in ("/session-start", "/session-end", "/infuse", "/mcp/"):
            for headers in ({}, {"authorization": "Bearer wrong"}, {"authorization": TOKEN}):
                refused = await http.post(route, json=body, headers=headers)
                assert refused.status_code == 401, (route, headers)
                assert refused.json() == {"error": "unauthorized"}
                assert refused.headers["www-authenticate"] == "Bearer"
        good = {"authorization": f"Bearer {TOKEN}"}
        assert (await http.post("/session-start", json=body, headers=good)).status_code == 200
        assert (await http.post("/infuse", json=body, headers=good)).status_code == 200


async def test_host_and_origin_outside_the_allow_lists_are_refused(tmp_path: Path) -> None:
    async with http_app(tmp_path / "m", allowed_hosts=["memory.internal"]) as (http, _):
        body = {"session_id": SESSION}
        evil = await http.post("/session-start", json=body, headers={"host": "evil.example:8765"})
        assert evil.status_code == 421
        evil_mcp = await http.post("/mcp/", json={}, headers={"host": "evil.example"})
        assert evil_mcp.status_code == 421
        allowed = await http.post(
            "/session-start", json=body, headers={"host": "memory.internal:8765"}
        )
        assert allowed.status_code == 200
        origin = await http.post(
            "/session-start", json=body, headers={"origin": "http://evil.example"}
        )
        assert origin.status_code == 403


async def test_cors_answers_an_allowed_origin(tmp_path: Path) -> None:
    site = "https://app.example"
    async with http_app(tmp_path / "m", allowed_origins=[site]) as (http, _):
        preflight = await http.options(
            "/mcp/",
            headers={
                "origin": site,
                "access-control-request-method": "POST",
                "access-control-request-headers": "content-type,mcp-session-id",
            },
        )
        assert preflight.status_code == 200
        assert preflight.headers["access-control-allow-origin"] == site
        other = await http.options(
            "/mcp/",
            headers={"origin": "https://other.example", "access-control-request-method": "POST"},
        )
        assert other.status_code == 400


# --- over real sockets -------------------------------------------------------------
async def test_a_real_server_refuses_without_the_token_and_serves_with_it(tmp_path: Path) -> None:
    with run_server(tmp_path / "m", "--token", TOKEN) as running:
        async with httpx.AsyncClient() as http:
            bare = await http.post(
                running.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
            )
            assert bare.status_code == 401
            assert (await http.get(f"{running.base}/healthz")).status_code == 200
            wrong_host = await http.post(
                running.url,
                headers={"host": "evil.example", "authorization": f"Bearer {TOKEN}"},
                json={},
            )
            assert wrong_host.status_code == 421
        # The SDK turns any refusal but a 404 into this one error; the 401 itself is above.
        refused = pytest.RaisesExc(
            MCPError,
            check=lambda e: (
                (e.code, e.message) == (INTERNAL_ERROR, "Server returned an error response")
            ),
        )
        with pytest.RaisesGroup(refused, flatten_subgroups=True):
            async with Client(running.url) as client:
                await client.list_tools()
        authed = httpx2.AsyncClient(headers={"authorization": f"Bearer {TOKEN}"})
        async with (
            authed,
            Client(streamable_http_client(running.url, http_client=authed)) as client,
        ):
            assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS


async def test_the_endpoint_answers_without_its_final_slash_and_without_a_redirect(
    tmp_path: Path,
) -> None:
    with run_server(tmp_path / "m") as running:
        bare = running.url.rstrip("/")  # ".../mcp", as a person may type it
        async with httpx.AsyncClient() as http:
            hello = await http.post(
                bare,
                headers={"accept": "application/json, text/event-stream"},
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-06-18",
                        "capabilities": {},
                        "clientInfo": {"name": "t", "version": "1"},
                    },
                },
            )
            assert hello.status_code == 200, hello.status_code
            # Neither is any other path near it.
            assert (await http.post(f"{bare}x", json={})).status_code == 404
        async with Client(bare) as client:
            assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS


# --- exact Host and Origin rules (the matrix over a real server is test_http_faults.py) ---
async def test_configured_hosts_match_by_name_any_case_and_by_port_when_given(
    tmp_path: Path,
) -> None:
    hosts = ["fd00::5", "memory.internal:9000", "[fd00::6]:7000"]
    async with http_app(tmp_path / "m", allowed_hosts=hosts) as (http, _):
        body = {"session_id": SESSION}
        for host, code in [
            ("[FD00::5]:8765", 200),
            ("[fd00:0::5]", 200),  # the same address spelled longer
            ("memory.internal:9000", 200),
            ("MEMORY.Internal:9000", 200),
            ("memory.internal:8765", 421),  # a port was given, so only that one
            ("memory.internal", 421),
            ("[fd00::6]:7000", 200),
            ("[fd00::6]:7001", 421),
            ("memory.internal:9000.evil.example", 421),
            ("memory.internal.evil.example:9000", 421),
            ("fd00::5", 421),  # an IPv6 Host needs its brackets
        ]:
            answer = await http.post("/session-start", json=body, headers={"host": host})
            assert answer.status_code == code, (host, answer.text)


async def test_a_configured_origin_matches_only_exactly(tmp_path: Path) -> None:
    site = "https://App.example/"  # written loosely: case and a trailing slash do not matter
    async with http_app(tmp_path / "m", allowed_origins=[site]) as (http, _):
        body = {"session_id": SESSION}
        for origin, code in [
            ("https://app.example", 200),
            ("https://app.example:443", 200),  # the default port, said aloud
            ("http://app.example", 403),
            ("https://app.example:8443", 403),
            ("https://app.example.evil.example", 403),
            ("https://evil.example#https://app.example", 403),
            ("https://app.example@evil.example", 403),
        ]:
            answer = await http.post("/session-start", json=body, headers={"origin": origin})
            assert answer.status_code == code, (origin, answer.text)
        refused = await http.post(
            "/session-start", json=body, headers={"origin": "https://app.example.evil.example"}
        )
        assert refused.json()["error"].startswith("Origin https://app.example.evil.example ")
        assert "--allowed-origins" in refused.json()["error"]


async def test_a_wildcard_bind_drops_the_host_check_but_keeps_the_origin_check(
    tmp_path: Path,
) -> None:
    async with http_app(tmp_path / "m", host="0.0.0.0", token=TOKEN) as (http, _):
        good = {"authorization": f"Bearer {TOKEN}"}
        body = {"session_id": SESSION}
        served = await http.post(
            "/session-start", json=body, headers={**good, "host": "box.lan:8765"}
        )
        assert served.status_code == 200
        evil = await http.post(
            "/session-start", json=body, headers={**good, "origin": "http://evil.example"}
        )
        assert evil.status_code == 403


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"allowed_origins": ["*"]}, "allowed_origins"),
        ({"allowed_origins": ["app.example"]}, "allowed_origins"),
        ({"allowed_origins": ["https://app.example/path"]}, "allowed_origins"),
        ({"allowed_hosts": ["memory.internal/x"]}, "allowed_hosts"),
    ],
)
async def test_an_allow_list_entry_that_is_not_a_host_or_origin_stops_the_start(
    tmp_path: Path, values: dict[str, list[str]], field: str
) -> None:
    # Refused when the settings are read (before a memory is made); the app's own check
    # stays behind it.
    with pytest.raises(ConfigError) as refused:
        settings = make_settings(tmp_path / "m", **values)
        runtime = Runtime(settings)
        build_http_app(build_server(settings, runtime), runtime, settings)
    assert field in str(refused.value)
    assert "scheme://host" in str(refused.value) or "name:port" in str(refused.value)


# An MCP path the server's own routes answer, or one under which they live: the endpoint
# would be shadowed (/ui/: every message a 405 from the inspector) or would take a hook
# route from the hook (/infuse: the hook's POSTs answered by MCP).
CLASHING_PATHS = ["/ui/", "/ui", "ui/x/", "/ui/mcp/", "/infuse", "/healthz/", "/session-start"]


@pytest.mark.parametrize("transport", ["streamable-http", "sse"])
@pytest.mark.parametrize("path", CLASHING_PATHS)
async def test_an_mcp_path_on_the_servers_own_routes_stops_the_start(
    tmp_path: Path, path: str, transport: str
) -> None:
    data_dir = tmp_path / "m"
    done = subprocess.run(
        server_command(
            "serve",
            "--data-dir",
            str(data_dir),
            "--port",
            "0",
            "--transport",
            transport,
            "--path",
            path,
        ),
        capture_output=True,
        text=True,
        timeout=30,  # a server that started instead serves until this ends it
        env=clean_environ(),
        check=False,
    )
    assert done.returncode == 2, (done.returncode, done.stderr[-500:])
    assert "--path" in done.stderr and "e.g. /mcp/" in done.stderr, done.stderr
    assert not data_dir.exists()  # refused before a memory was made


@pytest.mark.parametrize("path", ["/mcp/", "/", "/uix/", "/infuse/more/", "/my/ui/"])
async def test_an_mcp_path_beside_the_servers_own_routes_is_taken(
    tmp_path: Path, path: str
) -> None:
    settings = make_settings(tmp_path / "m", path=path)
    assert settings.path.strip("/") == path.strip("/")


async def test_the_paths_kept_from_mcp_are_the_servers_own_routes(tmp_path: Path) -> None:
    settings = make_settings(tmp_path / "m")
    runtime = Runtime(settings)
    app = build_http_app(build_server(settings, runtime), runtime, settings)
    own = {route.path for route in app.routes} - {""}  # "": the MCP app, mounted at /
    assert own == {*OWN_ROUTES, INSPECTOR_ROOT}
    assert access.UI_ROOT == INSPECTOR_ROOT
