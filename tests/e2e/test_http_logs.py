"""What a hostile request can make a real server write to its log at the default level.

The guards log each refusal at INFO with the path asked for. A path is the client's to
choose and arrives percent-decoded, so ``%0a`` is a line break: written as it came, one
unauthenticated request could add a line of its own making to the operator's log (a
forged WARNING, a fake "memory closed"). Every refusal shows the path escaped, on the
one line it belongs to, and cut short; and the log's format keeps any library's record
of client text on its line as well.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.e2e.conftest import RunningServer, run_server

TOKEN = "log-lines-token-3e8b1d"
FORGED = "2026-01-01 00:00:00,000 WARNING kenning_encounter: FORGED-BY-A-CLIENT"
# A line break as the client may spell it in a path: LF, CR LF, a lone CR, NEL and the
# Unicode line and paragraph separators (str.splitlines breaks on each).
BREAKS = ("%0a", "%0d%0a", "%0d", "%c2%85", "%e2%80%a8", "%e2%80%a9")
LONG = 20_000


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    with run_server(
        tmp_path_factory.mktemp("log-lines"), env={"KENNING_ENCOUNTER_TOKEN": TOKEN}
    ) as server:
        yield server


def _refusals(server: RunningServer) -> list[httpx.Response]:
    """One request per guard that logs its refusal, each with a path holding a forged line."""
    bearer = {"authorization": f"Bearer {TOKEN}"}
    answers: list[httpx.Response] = []
    with httpx.Client(base_url=server.base, timeout=30) as http:
        for brk in BREAKS:
            forged = brk + FORGED.replace(" ", "%20")
            answers += [
                http.post(f"/infuse{forged}"),  # no token
                http.get(f"/ui/{forged}"),  # no token, an inspector page
                http.get(f"/ui/{forged}", headers={**bearer, "host": "evil.example"}),
                http.get(f"/ui/{forged}", headers={**bearer, "origin": "http://evil.example"}),
            ]
    return answers


def test_a_path_cannot_write_a_line_of_its_own_into_the_log(guarded: RunningServer) -> None:
    answers = _refusals(guarded)
    assert [a.status_code for a in answers] == [401, 401, 421, 403] * len(BREAKS)
    logged = guarded.logged("FORGED-BY-A-CLIENT", len(answers))
    assert len(logged) == len(answers), logged
    for line in logged:
        assert not line.startswith("2026-01-01"), line
        assert " INFO kenning_encounter.server.security: refused " in line, line


def test_a_long_path_is_logged_cut_short(guarded: RunningServer) -> None:
    marker = "long-path-marker-"
    with httpx.Client(base_url=guarded.base, timeout=30) as http:
        assert http.get(f"/infuse/{marker}{'x' * LONG}").status_code == 401
    logged = guarded.logged(marker, 1)
    assert len(logged) == 1, logged
    assert len(logged[0]) < 400, len(logged[0])


def test_what_any_library_logs_of_a_request_stays_on_its_line(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # The MCP SDK's SSE transport logs a malformed session_id query value as it came, at
    # WARNING; uvicorn and the SDK log other client text too. The log's own format keeps
    # every record's message on its line, whoever wrote it.
    with run_server(tmp_path_factory.mktemp("log-sse"), "--transport", "sse") as server:
        with httpx.Client(base_url=server.base, timeout=30) as http:
            for brk in (*BREAKS, "%1b%5b2J%1b%5bH"):  # the last: clear a terminal
                forged = brk + FORGED.replace(" ", "%20")
                ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
                answer = http.post(f"/mcp/messages/?session_id=zz{forged}", json=ping)
                assert answer.status_code == 400, answer.text
        logged = server.logged("FORGED-BY-A-CLIENT", len(BREAKS) + 1)
    assert len(logged) == len(BREAKS) + 1, logged
    assert not [line for line in logged if line.startswith("2026-01-01")], logged
    assert "\x1b" not in server.stderr
