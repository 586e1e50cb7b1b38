"""Our stdio wire: clean protocol, large messages, piped scripts, a client that leaves.

Every server here is a real subprocess; the client is mcp.Client or raw
JSON-RPC lines, as a script would send them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from kenning_encounter.server.stdio import (  # pyright: ignore[reportPrivateUsage]
    DRAIN_SECONDS,
    HEAD_BYTES,
    MAX_LINE,
    Oversized,
    _Pending,
    next_line,
    too_long,
)
from tests.e2e.conftest import ROOT, SESSION, call_ok, clean_environ, server_command

pytestmark = [pytest.mark.usefixtures("clean_env")]

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "a script", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _lines(*messages: dict[str, Any]) -> str:
    return "".join(json.dumps(m) + "\n" for m in messages)


def _serve(data_dir: Path) -> list[str]:
    return server_command(
        "serve", "--transport", "stdio", "--data-dir", str(data_dir), "--matcher", "off"
    )


def _piped(tmp_path: Path, script: str) -> subprocess.CompletedProcess[str]:
    """A server fed ``script`` on stdin, run until it stops by itself (stdin closed)."""
    done = subprocess.run(
        _serve(tmp_path / "memory"),
        input=script,
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done


def _answers(stdout: str) -> dict[Any, dict[str, Any]]:
    found: dict[Any, dict[str, Any]] = {}
    for line in stdout.splitlines():
        message = json.loads(line)  # every line on stdout is protocol
        if "id" in message:
            found[message["id"]] = message
    return found


def test_requests_piped_in_are_answered_before_the_server_stops(tmp_path: Path) -> None:
    search = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "retry storm"}},
    }
    ping = {"jsonrpc": "2.0", "id": 3, "method": "ping"}
    # Closed right after the last request, which has no newline at all.
    script = _lines(INITIALIZE, INITIALIZED, search) + json.dumps(ping)
    done = _piped(tmp_path, script)
    answers = _answers(done.stdout)
    assert set(answers) == {1, 2, 3}
    assert answers[2]["result"]["structuredContent"]["hits"] == []
    assert answers[3]["result"] == {}


def test_stdin_from_a_file_is_served_by_the_sdk_transport(tmp_path: Path) -> None:
    """A regular file cannot be watched by the event loop: the SDK's threads read it."""
    requests = tmp_path / "requests.jsonl"
    requests.write_text(_lines(INITIALIZE, INITIALIZED), encoding="utf-8")
    out = tmp_path / "out.jsonl"
    with requests.open("rb") as stdin, out.open("wb") as stdout:
        done = subprocess.run(
            _serve(tmp_path / "memory"),
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=clean_environ(),
            timeout=120,
        )
    assert done.returncode == 0, done.stderr
    answers = _answers(out.read_text(encoding="utf-8"))
    assert answers[1]["result"]["serverInfo"]["name"] == "kenning-encounter"


def test_the_server_stops_when_the_client_closes_its_end_of_stdout(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        _serve(tmp_path / "memory"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_environ(),
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    try:
        proc.stdin.write(_lines(INITIALIZE, INITIALIZED).encode())
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1
        proc.stdout.close()  # gone, while stdin stays open
        proc.stdin.write(_lines({"jsonrpc": "2.0", "id": 2, "method": "ping"}).encode())
        proc.stdin.flush()
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdin.close()
    with proc.stderr:
        assert "the client closed stdout" in proc.stderr.read().decode()


@pytest.mark.anyio
async def test_stray_writes_to_stdout_go_to_stderr(tmp_path: Path) -> None:
    errlog = (tmp_path / "stderr.log").open("w+", encoding="utf-8")
    script = ROOT / "tests" / "support" / "noisy_stdio_server.py"
    params = StdioServerParameters(
        command=sys.executable,
        args=[str(script)],
        env=clean_environ(PYTHONPATH=str(ROOT / "src") + ":" + str(ROOT)),
    )
    with errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            for word in ("one", "two"):
                result = await client.call_tool("shout", {"word": word})
                assert not result.is_error
                assert [getattr(c, "text", "") for c in result.content] == [f"heard {word}"]
        errlog.seek(0)
        noise = errlog.read()
    for word in ("one", "two"):
        for where in ("print", "fd1", "buffer"):
            assert f"{where} {word}" in noise


@pytest.mark.anyio
async def test_a_batch_larger_than_a_pipe_buffer_goes_through(tmp_path: Path) -> None:
    cmd = _serve(tmp_path / "memory")
    params = StdioServerParameters(command=cmd[0], args=cmd[1:], env=clean_environ())
    entities = [
        {
            "type": "Observation",
            "name": f"long reading {i}",
            "description": f"gauge {i} " + "drifted upward overnight " * 120,
        }
        for i in range(40)
    ]
    assert len(json.dumps(entities)) > 100_000
    async with Client(params) as client:
        await call_ok(client, "advance_encounter", {"session_id": SESSION, "purpose": "load"})
        created = await call_ok(
            client, "create_entities", {"session_id": SESSION, "entities": entities}
        )
        assert len(created["created"]) == 40
        found = await call_ok(client, "search", {"query": "gauge 17 drifted", "limit": 100})
        assert found["hits"][0]["name"] == "long reading 17"


async def _all_lines(data: bytes, limit: int) -> list[bytes | Oversized]:
    reader = asyncio.StreamReader(limit=limit)
    reader.feed_data(data)
    reader.feed_eof()
    lines: list[bytes | Oversized] = []
    while (line := await next_line(reader)) is not None:
        lines.append(line)
    return lines


def test_a_line_over_the_limit_is_skipped_and_the_next_one_read(
    caplog: pytest.LogCaptureFixture,
) -> None:
    big = b"x" * 300
    with caplog.at_level(logging.WARNING):
        lines = asyncio.run(_all_lines(b"first\n" + big + b"\nthird\nlast", 64))
    assert lines == [b"first\n", Oversized(301, big[:HEAD_BYTES]), b"third\n", b"last"]
    assert "skipped a message of 301 bytes" in caplog.text


def test_input_ending_inside_an_oversized_line_ends_the_lines() -> None:
    lines = asyncio.run(_all_lines(b"first\n" + b"y" * 300, 64))
    assert lines == [b"first\n", Oversized(300, b"y" * 300)]


@pytest.mark.parametrize(
    ("head", "ident"),
    [
        (b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"a', 5),
        (b'{"id":"five","jsonrpc":"2.0","method":"x","params":{"', "five"),
        (b' { "jsonrpc" : "2.0" , "id" : -3 , "params": {"', -3),
        (b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"id": 9, "x', None),
        (b'{"method": "x", "id": 4, "params": {"', None),  # an id after the rest: unseen
        (b"xxxxxxxx", None),
    ],
)
def test_an_oversized_request_is_refused_under_the_id_it_starts_with(
    head: bytes, ident: object
) -> None:
    refused = too_long(Oversized(MAX_LINE + 1, head))
    assert refused is not None and refused.id == ident


def test_an_oversized_answer_of_the_clients_is_not_answered() -> None:
    for head in (b'{"jsonrpc":"2.0","id":1,"result":{"x', b'{"id": "a", "error": {"code'):
        assert too_long(Oversized(MAX_LINE + 1, head)) is None


@pytest.mark.timeout(60)  # the guard if a drain never gives up; the checks are all ordering
def test_the_end_of_input_waits_for_unanswered_requests_only_so_long(
    caplog: pytest.LogCaptureFixture,
) -> None:
    import mcp_types as types

    def request(i: int) -> types.JSONRPCRequest:
        return types.JSONRPCRequest(jsonrpc="2.0", id=i, method="ping")

    async def turns() -> None:
        for _ in range(10):
            await asyncio.sleep(0)

    async def scenario() -> None:
        pending = _Pending()
        pending.asked(request(1))
        pending.asked(request(2))
        pending.answered(1)
        pending.asked(
            types.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 2}
            )
        )
        # Deadlines of an hour: only what is pending can end these drains in time.
        nothing_left = asyncio.ensure_future(pending.drained(3600.0))
        await turns()
        assert nothing_left.done(), "drained waited with nothing unanswered"
        pending.asked(request(3))
        waiting = asyncio.ensure_future(pending.drained(3600.0))
        await turns()
        assert not waiting.done(), "drained gave up while request 3 was unanswered"
        pending.answered(3)
        await turns()
        assert waiting.done(), "the answer to request 3 did not end the drain"
        assert "still unanswered" not in caplog.text
        pending.asked(request(4))
        await pending.drained(0.2)  # never answered: gives up

    with caplog.at_level(logging.WARNING):
        asyncio.run(scenario())
    assert "1 request(s) still unanswered" in caplog.text


SECRET = "do-not-log-this-7f3a"


def test_a_line_that_is_no_message_is_answered_with_the_field_and_the_fix(
    tmp_path: Path,
) -> None:
    """The SDK drops a line it cannot read as JSON-RPC, so its sender would wait forever:
    each gets an answer, with its id when the id can be read, and nothing is written."""
    deep = "[" * 300 + f'"{SECRET}"' + "]" * 300
    create = (
        '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
        '"create_entities", "arguments": {"session_id": "s", "entities": [{"type": "Note", '
        f'"name": "{SECRET}", "description": "x", "status": {deep}}}]}}}}}}'
    )
    lines = [
        f'{{"jsonrpc": "2.0", "id": 2, "method": "ping", "x": "{SECRET}"',  # cut short
        '{"id": 3, "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 4, "method": 5}',
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": "all"}',
        '[{"jsonrpc": "2.0", "id": 6, "method": "ping"}]',
        create,
        '{"jsonrpc": "2.0", "id": 8, "result": 1, "extra": [' + "[" * 300 + "]" * 300 + "]}",
    ]
    search = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": SECRET}},
    }
    script = _lines(INITIALIZE, INITIALIZED) + "\n".join(lines) + "\n" + _lines(search)
    done = _piped(tmp_path, script)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    errors = [a for a in answers if "error" in a]
    got = [(a["id"], a["error"]["code"]) for a in errors]
    assert got == [
        (None, -32700),
        (3, -32600),
        (4, -32600),
        (5, -32600),
        (None, -32600),
        (7, -32600),
    ]
    said = [a["error"]["message"] for a in errors]
    assert "not JSON" in said[0]
    assert said[1].startswith('invalid request: jsonrpc: must be "2.0"')
    assert said[2].startswith("invalid request: method:")
    assert said[3].startswith("invalid request: params:")
    assert "batch" in said[4]
    assert "deeper" in said[5] and "flatter" in said[5]
    # A malformed answer of the client's is not answered; the search after is, and finds
    # nothing: the refused write wrote nothing.
    assert 8 not in {a.get("id") for a in answers}
    found = next(a for a in answers if a.get("id") == 9)
    assert found["result"]["structuredContent"]["hits"] == []
    assert SECRET not in done.stderr
    assert done.stderr.count("refused a message on stdin") == 7


def test_a_request_whose_id_is_no_request_id_is_answered_not_taken_for_a_notification(
    tmp_path: Path,
) -> None:
    """The SDK's message models read any object without a valid id as a notification,
    so a request whose id is null, a fraction, a boolean or a structure went unanswered
    and its sender waited forever. Each is refused by name, with a null id (its own
    cannot be echoed); a write sent so is not run; real notifications stay unanswered."""
    odd_ids = ["null", "1.5", "1.0", "true", "[1]", '{"n": 1}']
    lines = [f'{{"jsonrpc": "2.0", "id": {raw}, "method": "ping"}}' for raw in odd_ids]
    advance = {"name": "advance_encounter", "arguments": {"session_id": SESSION, "purpose": "x"}}
    lines.append(
        '{"jsonrpc": "2.0", "id": 2.5, "method": "tools/call", "params": '
        + json.dumps(advance)
        + "}"
    )
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    find = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "x"}},
    }
    script = _lines(INITIALIZE, INITIALIZED) + "\n".join(lines) + "\n" + _lines(cancel, find)
    done = _piped(tmp_path, script)
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    refused = [a for a in answers if a.get("id") is None]
    assert [a["error"]["code"] for a in refused] == [-32600] * len(lines)
    for answer in refused:
        assert answer["error"]["message"].startswith("invalid request: id: "), answer
        assert "string or an integer" in answer["error"]["message"]
    assert sorted(a["id"] for a in answers if a.get("id") is not None) == [1, 3]
    # The call sent with a fractional id opened no encounter.
    assert "Opened encounter" not in done.stdout and "advance_encounter" not in done.stderr


def test_a_message_over_the_line_limit_is_answered_and_the_next_one_served(
    tmp_path: Path,
) -> None:
    """A line longer than the wire reads (MAX_LINE) was skipped with a warning only, so a
    client that sent a request that large waited forever for its answer. It is refused,
    under its id when the line starts with it, and nothing it asked for is done; a
    client's oversized answer to the server is still dropped unanswered."""
    padding = "x" * (MAX_LINE + 10)
    advance = {"session_id": SESSION, "purpose": padding}
    request = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "advance_encounter", "arguments": advance},
    }
    answer = {"jsonrpc": "2.0", "id": 6, "result": {"padding": padding}}
    notice = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"p": padding}}
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    done = _piped(tmp_path, _lines(INITIALIZE, INITIALIZED, request, answer, notice, ping))
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    refused = [a for a in answers if "error" in a]
    assert [(a["id"], a["error"]["code"]) for a in refused] == [(5, -32600), (None, -32600)]
    said = refused[0]["error"]["message"]
    assert "64 MiB" in said and "split" in said, said
    assert [a["id"] for a in answers if "result" in a] == [1, 7]
    assert "Opened encounter" not in done.stdout


def test_a_2026_client_that_closes_stdin_with_its_list_stream_open_is_not_kept_waiting(
    tmp_path: Path,
) -> None:
    """A 2026 client (Claude Code) keeps a subscriptions/listen stream open for the whole
    session; that request is answered only when the connection ends. Closing stdin, as
    MCP's stdio shutdown asks, made the server wait the whole drain (30 s) for it and
    warn of an unanswered request, so a client that waits a reasonable time killed it."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "a script", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "listen",
        "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": True}},
    }
    tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
    started = time.monotonic()
    done = _piped(tmp_path, _lines(listen, tools))
    took = time.monotonic() - started
    answers = _answers(done.stdout)
    assert answers[2]["result"]["tools"]
    assert "still unanswered" not in done.stderr
    assert took < DRAIN_SECONDS / 2, f"the server took {took:.1f}s to stop"


def test_an_unknown_prompt_is_invalid_params_and_no_traceback(tmp_path: Path) -> None:
    """The SDK answered prompts/get for a name it does not serve with error code 0 (MCP
    says -32602) and logged the client's mistake as a server fault, a traceback with the
    name it was sent, at ERROR. This server serves no prompts, and says so."""
    get = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "prompts/get",
        "params": {"name": SECRET, "arguments": {"a": SECRET}},
    }
    done = _piped(tmp_path, _lines(INITIALIZE, INITIALIZED, get))
    error = _answers(done.stdout)[2]["error"]
    assert error["code"] == -32602
    assert error["message"].startswith(f"Unknown prompt: {SECRET}")
    assert "serves no prompts" in error["message"]
    assert "Traceback" not in done.stderr and SECRET not in done.stderr


def test_a_request_cancelled_under_its_id_as_a_string_is_not_waited_for(tmp_path: Path) -> None:
    """The SDK takes a cancellation naming request 7 as "7" for request 7 (its ids
    correlate so, as the TypeScript SDK's do) and never answers it; the end of input
    waited for that answer the whole drain (30 s), and warned of it."""
    slow = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {
            "name": "read_cypher",
            "arguments": {
                "query": "UNWIND range(1, 1000) AS a UNWIND range(1, 1000) AS b "
                "WITH a * b AS p WHERE toString(p) ENDS WITH '7' RETURN count(*) AS c"
            },
        },
    }
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "7"}}
    started = time.monotonic()
    done = _piped(tmp_path, _lines(INITIALIZE, INITIALIZED, slow, cancel))
    took = time.monotonic() - started
    assert set(_answers(done.stdout)) == {1}  # a cancelled request is not answered
    assert "still unanswered" not in done.stderr
    assert took < DRAIN_SECONDS / 2, f"the server took {took:.1f}s to stop"


def _asked(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": params}


def test_params_the_protocol_refuses_are_named_with_the_fix(tmp_path: Path) -> None:
    """The SDK answered every request whose params broke the protocol's own models, and
    every request sent before the handshake, with the same bare "Invalid request
    parameters": an initialize without its version and a tools/call whose arguments are
    a list read alike. Each names the method, the member and the fix (code -32602 kept),
    and repeats nothing sent."""
    early = _asked(11, "tools/list", {})
    bad = [
        _asked(2, "initialize", {"capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}),
        _asked(3, "tools/call", {"name": "list_vocabulary", "arguments": [SECRET]}),
        _asked(4, "tools/call", {"arguments": {}}),
        _asked(5, "tools/list", {"cursor": 5}),
        _asked(6, "logging/setLevel", {"level": SECRET}),
    ]
    done = _piped(tmp_path, _lines(early, *bad[:1], INITIALIZE, INITIALIZED, *bad[1:]))
    answers = _answers(done.stdout)
    said = {ident: answers[ident]["error"]["message"] for ident in (11, 2, 3, 4, 5, 6)}
    assert all(answers[i]["error"]["code"] == -32602 for i in said)
    assert said[11].startswith("tools/list: the connection is not initialized yet; send initialize")
    assert said[2] == "initialize: params.protocolVersion: required, and missing; add it"
    assert said[3].startswith("tools/call: params.arguments: expected an object")
    assert said[3].endswith("got a list")
    assert said[4] == "tools/call: params.name: required, and missing; add it"
    assert said[5].startswith("tools/list: params.cursor: expected a string")
    assert said[6].startswith("logging/setLevel: params.level: not an allowed value")
    assert "debug" in said[6]
    assert SECRET not in done.stdout and SECRET not in done.stderr
