"""The official TypeScript MCP client (@modelcontextprotocol/sdk) against the real server.

Claude Desktop, Cursor and most JavaScript hosts build on that client. It checks every
tool result's structuredContent against the tool's outputSchema with Ajv, parses every
message with its own schemas, and has its own ways to cancel, time out, hold an HTTP
session and close. tests/clients/drive.mjs drives a real server with it (over stdio,
started by the client as a host starts it, and over streamable HTTP) and reports each
outcome as a JSON line; the tests here assert on those lines.

The client is pinned by tests/clients/package-lock.json and installed by
``make ts-client``; without node or npm these tests skip with the reason (a failure
under CI=true).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.clients.install_sdk import (
    DEFAULT_DIR,
    PACKAGE,
    VERSION,
    install_command,
    pinned_version,
    unavailable_reason,
)
from tests.e2e.conftest import ALL_TOOLS, clean_environ, run_server, server_command

DRIVER = DEFAULT_DIR / "drive.mjs"
# In the environment of each server started here, so what it leaves running can be found.
MARKED = {"KENNING_TS_CLIENT_RUN": uuid.uuid4().hex}
MARK = "{}={}".format(*next(iter(MARKED.items()))).encode()
Records = list[dict[str, Any]]


def require_client() -> str:
    reason = unavailable_reason(DEFAULT_DIR)
    node = shutil.which("node")
    if reason is None and node is not None:
        return node
    reason = reason or "node is not on PATH"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true: the TypeScript client tests must run here, but {reason}")
    pytest.skip(reason)


# What a host passes on to a stdio server besides its config's env: the TypeScript SDK's
# getDefaultEnvironment() (HOME, LOGNAME, PATH, SHELL, TERM, USER on POSIX).
HOST_INHERITED = ("LOGNAME", "PATH", "SHELL", "TERM", "USER")


def drive(config: dict[str, Any], *, home: Path | None = None, timeout: float = 120) -> Records:
    """Run the driver; with ``home``, as a desktop host runs it: an environment of only
    the variables such a host keeps, with ``home`` as HOME."""
    node = require_client()
    env = clean_environ()
    if home is not None:
        home.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in env.items() if k in HOST_INHERITED} | {"HOME": str(home)}
    done = subprocess.run(
        [node, str(DRIVER), json.dumps(config)],
        cwd=DEFAULT_DIR,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )
    assert done.returncode == 0, f"the driver failed:\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}"
    records = [json.loads(line) for line in done.stdout.splitlines()]
    assert records and records[-1]["event"] == "done", done.stderr[-5000:]
    return records


def stdio_config(data_dir: Path, session: str, **more: Any) -> dict[str, Any]:
    """A host's config for the server: the command, and an env of only the source tree
    (no session key: the server mints its own, and the client keeps the handle)."""
    command = server_command(
        "serve", "--transport", "stdio", "--data-dir", str(data_dir), "--matcher", "off"
    )
    return {
        "transport": "stdio",
        "command": command[0],
        "args": command[1:],
        "env": {"PYTHONPATH": clean_environ()["PYTHONPATH"], **MARKED},
        "session": session,
        **more,
    }


def left_running() -> Records:
    """What a server marked with ``MARKED`` (and every process it started) left running."""
    deadline = time.monotonic() + 2
    while True:
        found: list[int] = []
        for entry in Path("/proc").iterdir():
            try:
                if entry.name.isdigit() and MARK in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                continue
        if not found or time.monotonic() > deadline:
            return [{"event": "left_running", "pids": found}]
        time.sleep(0.05)


@pytest.fixture(scope="module")
def stdio_run(tmp_path_factory: pytest.TempPathFactory) -> Records:
    require_client()
    place = tmp_path_factory.mktemp("ts-stdio")
    records = drive(stdio_config(place / "memory", "ts-client-stdio"), home=place / "home")
    return records + left_running()


@pytest.fixture(scope="module")
def http_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Records]:
    require_client()
    with run_server(tmp_path_factory.mktemp("ts-http") / "memory", env=MARKED) as server:
        records = drive({"transport": "http", "url": server.url, "session": "ts-client-http"})
        # The last read the client cancelled may still run in the server: it stops anyway.
        started = time.monotonic()
        server.proc.terminate()
        code = server.proc.wait(timeout=30)
        stopped = {"event": "server_stopped", "code": code, "s": time.monotonic() - started}
        yield [*records, stopped, *left_running()]


@pytest.fixture(params=["stdio", "http"])
def run(request: pytest.FixtureRequest) -> Records:
    return request.getfixturevalue(f"{request.param}_run")


def of(records: Records, event: str) -> Records:
    return [r for r in records if r["event"] == event]


def one(records: Records, event: str) -> dict[str, Any]:
    found = of(records, event)
    assert len(found) == 1, f"{event}: {found}"
    return found[0]


def test_the_handshake_and_the_listings(run: Records) -> None:
    connected = one(run, "connected")
    assert connected["server"]["name"] == "kenning-encounter"
    assert connected["protocol"] and connected["instructions"] > 0
    listed = {r["kind"]: r for r in of(run, "listed")}
    assert all(r["ok"] for r in listed.values()), listed
    assert set(listed["tools"]["names"]) == ALL_TOOLS
    (howto,) = listed["resources"]["read"]
    assert howto["uri"] == "kenning-encounter://howto" and howto["chars"] > 1000


def test_ajv_compiles_every_schema(run: Records) -> None:
    schemas = of(run, "schema")
    failed = [r for r in schemas if not r["ok"]]
    assert not failed, failed
    assert {r["tool"] for r in schemas if r["which"] == "output"} == ALL_TOOLS


def test_every_tool_answers_and_its_result_validates(run: Records) -> None:
    calls = of(run, "call")
    bad = [
        {k: r.get(k) for k in ("label", "threw", "schema_error", "text")}
        for r in calls
        if not (r["ok"] and r["validated"])
    ]
    assert not bad, bad
    assert {r["tool"] for r in calls} == ALL_TOOLS


def test_bad_arguments_are_tool_errors_naming_what_is_wrong(run: Records) -> None:
    refusals = of(run, "refusal")
    assert len(refusals) >= 15
    for r in refusals:
        assert r["is_error"] and "threw" not in r, r
        missing = [name for name in r["names"] if name not in r["text"]]
        assert not missing, f"{r['label']}: {r['text']!r} does not name {missing}"


def test_every_bound_a_schema_states_is_one_the_server_holds(run: Records) -> None:
    """A host checks and fills in arguments from the inputSchema: a value at a bound it
    states (minimum, maximum, minLength, maxLength) is never refused for its size."""
    bounds = of(run, "bound")
    assert {(b["tool"], b["field"]) for b in bounds} >= {("orient", "top_k"), ("search", "limit")}
    wrong = [b for b in bounds if b.get("refused_for_bound") is not False]
    assert not wrong, wrong


def test_a_cancelled_call_leaves_the_session_working(run: Records) -> None:
    cancels = of(run, "cancel")
    assert {c["how"] for c in cancels} == {"timeout", "abort"}
    for cancel in cancels:
        assert cancel["settled"] == "rejected", cancel  # the slow read was still running
        assert "ping_error" not in cancel and cancel["next_call_ok"], cancel
    assert one(run, "ping")["ok"]
    errors = one(run, "done")["errors"]
    if one(run, "connected")["transport"] == "stdio":
        # A cancelled request is never answered; a late answer is an error to the client.
        assert errors == []
    else:
        # The Python SDK's 2025-era HTTP transport ends a cancelled request's stream with an
        # error answer (-32800: its choice, not ours); the client reports it as an answer to
        # a request it forgot and carries on. Nothing else may go wrong.
        assert all(
            "-32800" in e["message"] and "unknown message ID" in e["message"] for e in errors
        )


def test_stdio_the_server_leaves_when_the_client_closes(stdio_run: Records) -> None:
    done = one(stdio_run, "done")
    # The client closes stdin and gives the server 2 s to exit, then sends SIGTERM: the
    # server leaves by itself, though the read cancelled last still ran when it was told.
    assert done["exit"] == {"code": 0, "signal": None}, done
    assert done["close_ms"] < 2000, done


def test_http_the_server_stops_at_once(http_run: Records) -> None:
    stopped = one(http_run, "server_stopped")
    assert stopped["code"] == 0 and stopped["s"] < 3, stopped


@pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="reads /proc")
def test_nothing_is_left_running_after_the_server(run: Records) -> None:
    """The read cancelled last ran in a read_cypher sandbox (a process of its own)."""
    assert one(run, "left_running")["pids"] == []


def test_http_sessions_as_the_client_holds_them(http_run: Records) -> None:
    assert not of(http_run, "http_failed")
    first = one(http_run, "connected")["session_id"]
    second = one(http_run, "http_second_session")
    assert first and second["first"] == first and second["second"] not in (None, first)
    assert second["ok"]
    resumed = one(http_run, "http_resumed")
    assert resumed == {**resumed, "session_id": first, "ok": True, "error": None}
    exchanges = one(http_run, "http_exchanges")
    # No event ids are sent (no event store), so the client never resumes with Last-Event-ID.
    assert exchanges["last_event_ids"] == 0
    assert exchanges["versions_sent"] == [one(http_run, "connected")["protocol"]]
    terminated = one(http_run, "http_terminated")
    assert terminated["ok"] and terminated["session_id_after"] is None
    assert terminated["deletes"] == [200]
    assert terminated["stale"]["refused"] and terminated["stale"]["error"]["code"] == 404


def test_stdio_a_second_launch_answers_from_the_quick_start(tmp_path: Path) -> None:
    """A host launches the server afresh each time; the second launch answers the
    handshake and the listings from what the first kept (server/front.py)."""
    config = stdio_config(tmp_path / "memory", "ts-client-again", only="listings")
    home = tmp_path / "home"
    first = drive(config, home=home)
    kept = list((home / ".cache" / "kenning-encounter" / "quick-start").glob("*.json"))
    assert len(kept) == 1, f"the first launch kept {kept}"
    again = drive(config, home=home)
    for records in (first, again):
        assert all(r["ok"] for r in of(records, "listed"))
        assert not [r for r in of(records, "schema") if not r["ok"]]
        assert one(records, "done")["exit"] == {"code": 0, "signal": None}
    for key in ("protocol", "server", "capabilities"):
        assert one(again, "connected")[key] == one(first, "connected")[key]


# --- the installer ----------------------------------------------------------------------
def test_the_client_is_pinned_to_one_version_and_its_lock() -> None:
    assert pinned_version(DEFAULT_DIR) == VERSION
    lock = json.loads((DEFAULT_DIR / "package-lock.json").read_text(encoding="utf-8"))
    assert lock["packages"][""]["dependencies"] == {PACKAGE: VERSION}
    assert lock["packages"][f"node_modules/{PACKAGE}"]["version"] == VERSION
    assert install_command(DEFAULT_DIR)[:2] == ["npm", "ci"]  # exactly the lock, or nothing


def test_an_empty_folder_says_how_to_install(tmp_path: Path) -> None:
    reason = unavailable_reason(tmp_path)
    assert reason is not None and "make ts-client" in reason
