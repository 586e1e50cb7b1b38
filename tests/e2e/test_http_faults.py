"""The HTTP fault matrix over a real server process and raw sockets.

Every hostile request below goes to each hook route and to the MCP endpoint:
bodies too large by declaration and by streaming, JSON nested past any bound,
Host and Origin lookalikes, and Accept headers that refuse what the path
answers. Each must get its 4xx, never a 500, and the server must still serve.
The streaming case is a memory bound, read from /proc: the peak resident size
may grow by a few times the limit, not by the size of what was sent.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import pytest

from kenning_encounter.server.routes import MAX_BODY as HOOK_LIMIT
from kenning_encounter.server.transports import MCP_MAX_BODY
from tests.e2e.conftest import RunningServer, run_server

HOOKS = ("/infuse", "/session-start", "/session-end")
MCP = "/mcp/"
TARGETS = (*HOOKS, MCP)
BOTH = "application/json, text/event-stream"
SENT = 128 * 1024 * 1024  # what a chunked attacker sends: far past any bound below
PIECE = 64 * 1024
READ_DEADLINE = 60.0  # a socket timeout for a hung server, not a speed claim


def initialize(**extra: object) -> dict[str, object]:
    params: dict[str, object] = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "fault-matrix", "version": "0"},
    }
    params.update(extra)
    return {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}


def valid_body(path: str) -> bytes:
    if path == MCP:
        return json.dumps(initialize()).encode()
    return json.dumps({"session_id": "fault-matrix", "prompt": "hello"}).encode()


def limit_of(path: str) -> int:
    return MCP_MAX_BODY if path == MCP else HOOK_LIMIT


@dataclass(frozen=True)
class Answer:
    status: int
    raw: bytes

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", "replace")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Generator[RunningServer]:
    with run_server(tmp_path_factory.mktemp("faults") / "m") as running:
        assert urlsplit(running.url).path == MCP
        yield running


def port_of(server: RunningServer) -> int:
    port = urlsplit(server.url).port
    assert port is not None
    return port


def _head(port: int, path: str, headers: Mapping[str, str | None], length: int | None) -> bytes:
    merged: dict[str, str | None] = {
        "Host": f"127.0.0.1:{port}",
        "Content-Type": "application/json",
        "Accept": BOTH,
        "Connection": "close",
    }
    if length is None:
        merged["Transfer-Encoding"] = "chunked"
    else:
        merged["Content-Length"] = str(length)
    merged.update(headers)
    lines = [f"POST {path} HTTP/1.1", *(f"{k}: {v}" for k, v in merged.items() if v is not None)]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read_answer(sock: socket.socket) -> Answer:
    received = bytearray()
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass  # the answer came before the reset, or there is none and the check below says so
    status_line = bytes(received).split(b"\r\n", 1)[0].decode("latin-1")
    assert status_line.startswith("HTTP/1.1 "), f"no HTTP answer: {bytes(received[:200])!r}"
    return Answer(int(status_line.split()[1]), bytes(received))


def exchange(
    port: int,
    path: str,
    body: bytes,
    headers: Mapping[str, str | None] | None = None,
    *,
    declared: int | None = None,
) -> Answer:
    """One request on its own connection; ``declared`` overrides the Content-Length sent."""
    with socket.create_connection(("127.0.0.1", port), timeout=READ_DEADLINE) as sock:
        length = len(body) if declared is None else declared
        sock.sendall(_head(port, path, headers or {}, length) + body)
        return _read_answer(sock)


def stream(port: int, path: str, total: int) -> Answer:
    """A chunked body of ``total`` spaces; sending stops early if the server hangs up."""
    piece = b"%x\r\n" % PIECE + b" " * PIECE + b"\r\n"
    with socket.create_connection(("127.0.0.1", port), timeout=READ_DEADLINE) as sock:
        sock.sendall(_head(port, path, {}, None))
        try:
            for _ in range(total // PIECE):
                sock.sendall(piece)
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server answered and closed without reading the rest: also a pass
        return _read_answer(sock)


def memory_mib(pid: int) -> dict[str, float]:
    """VmRSS (now) and VmHWM (peak since the last reset) of a process, in MiB."""
    found: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def reset_peak(pid: int) -> None:
    Path(f"/proc/{pid}/clear_refs").write_text("5")  # VmHWM := VmRSS


def assert_still_serves(port: int, path: str) -> None:
    assert exchange(port, path, valid_body(path)).status == 200


# --- the matrix ----------------------------------------------------------------------
@pytest.mark.parametrize("path", TARGETS)
def test_a_valid_request_is_served(server: RunningServer, path: str) -> None:
    answer = exchange(port_of(server), path, valid_body(path))
    assert answer.status == 200, answer.text


@pytest.mark.parametrize("path", TARGETS)
def test_a_declared_length_past_the_limit_is_refused_unread(
    server: RunningServer, path: str
) -> None:
    port = port_of(server)
    # Nothing of the 300 MB is sent: an answer at all shows the server did not wait for it.
    answer = exchange(port, path, b"", declared=300_000_000)
    assert answer.status == 413, answer.text
    assert_still_serves(port, path)


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("path", TARGETS)
def test_a_chunked_body_past_the_limit_is_refused_within_a_bounded_memory(
    server: RunningServer, path: str
) -> None:
    port, pid, limit = port_of(server), server.proc.pid, limit_of(path)
    assert stream(port, path, 2 * limit).status == 413  # warm the path up first
    before = memory_mib(pid)
    reset_peak(pid)
    answer = stream(port, path, SENT)
    after = memory_mib(pid)
    assert answer.status == 413, answer.text
    bound = 8 * limit / 2**20
    assert after["VmHWM"] - before["VmRSS"] <= bound, (before, after, f"bound {bound} MiB")
    assert after["VmRSS"] - before["VmRSS"] <= bound, (before, after, f"bound {bound} MiB")
    assert_still_serves(port, path)


def deep_body(path: str, depth: int = 100_000) -> bytes:
    nested = "[" * depth + "]" * depth
    if path == MCP:
        text = json.dumps(initialize(capabilities={"experimental": {"x": 0}}))
        return text.replace('{"x": 0}', '{"x": ' + nested + "}").encode()
    return ('{"session_id": "fault-matrix", "prompt": "p", "trajectory": ' + nested + "}").encode()


@pytest.mark.parametrize("path", TARGETS)
def test_deeply_nested_json_is_a_400_not_a_500(server: RunningServer, path: str) -> None:
    port = port_of(server)
    answer = exchange(port, path, deep_body(path))
    assert answer.status == 400, answer.text[:300]
    assert_still_serves(port, path)


def origin_lookalikes(port: int) -> list[str]:
    other = port + 1 if port < 65535 else port - 1
    return [
        f"http://localhost:{port}.evil.com",
        f"http://localhost:{port}@evil.com",
        f"http://localhost.evil.com:{port}",
        f"http://127.0.0.1.evil.com:{port}",
        f"http://127.0.0.1:{other}",  # loopback, but not this server
        f"http://localhost:{other}",
        "http://localhost",  # port 80, not this server's
        f"https://localhost:{port}",  # another scheme is another origin
        f"http://[::1]:{port}/",  # an Origin carries no path
        "null",
    ]


@pytest.mark.parametrize("path", TARGETS)
def test_origin_lookalikes_are_refused(server: RunningServer, path: str) -> None:
    port = port_of(server)
    for origin in origin_lookalikes(port):
        answer = exchange(port, path, valid_body(path), {"Origin": origin})
        assert answer.status == 403, (origin, answer.text)


@pytest.mark.parametrize("path", TARGETS)
def test_this_servers_own_loopback_origins_are_served(server: RunningServer, path: str) -> None:
    port = port_of(server)
    for origin in (f"http://localhost:{port}", f"http://127.0.0.1:{port}", f"http://[::1]:{port}"):
        answer = exchange(port, path, valid_body(path), {"Origin": origin})
        assert answer.status == 200, (origin, answer.text)


@pytest.mark.parametrize("path", TARGETS)
def test_host_names_compare_case_insensitively(server: RunningServer, path: str) -> None:
    port = port_of(server)
    for host in (f"LOCALHOST:{port}", f"LocalHost:{port}", "localhost", f"[::1]:{port}"):
        answer = exchange(port, path, valid_body(path), {"Host": host})
        assert answer.status == 200, (host, answer.text)
    for host in (f"localhost:{port}.evil.com", f"localhost.evil.com:{port}", "evil.com"):
        answer = exchange(port, path, valid_body(path), {"Host": host})
        assert answer.status == 421, (host, answer.text)


WRONG_ACCEPT = {
    "/infuse": ["text/html", "application/json;q=0", "text/event-stream"],
    "/session-start": ["text/html"],
    "/session-end": ["image/png, text/*"],
    MCP: [
        None,  # MCP requires the header
        "text/html",
        "application/json",
        "text/event-stream",
        "application/json, text/event-stream;q=0",
    ],
}


@pytest.mark.parametrize("path", TARGETS)
def test_an_accept_header_refusing_the_answer_is_a_406(server: RunningServer, path: str) -> None:
    port = port_of(server)
    for accept in WRONG_ACCEPT[path]:
        answer = exchange(port, path, valid_body(path), {"Accept": accept})
        assert answer.status == 406, (accept, answer.text)
    for accept in ("*/*", "application/*, text/*", BOTH):
        answer = exchange(port, path, valid_body(path), {"Accept": accept})
        assert answer.status == 200, (accept, answer.text)


# The plain routes beside the MCP endpoint, each with the methods it takes.
PLAIN_METHODS = {
    "/healthz": ("GET", "HEAD"),
    "/infuse": ("POST",),
    "/session-start": ("POST",),
    "/session-end": ("POST",),
    "/ui": ("GET", "HEAD"),
}
METHODS = ("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS")


def asked(port: int, method: str, path: str) -> tuple[Answer, dict[str, str]]:
    """One bodiless request; the answer and its headers (names lower-cased)."""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"Host: 127.0.0.1:{port}",
        "Accept: application/json",
        "Content-Length: 0",
        "Connection: close",
    ]
    with socket.create_connection(("127.0.0.1", port), timeout=READ_DEADLINE) as sock:
        sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        answer = _read_answer(sock)
    head = answer.raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}
    return answer, headers


@pytest.mark.parametrize("path", PLAIN_METHODS)
def test_a_method_a_route_does_not_take_is_a_405_naming_those_it_does(
    server: RunningServer, path: str
) -> None:
    port, allowed = port_of(server), PLAIN_METHODS[path]
    for method in (m for m in METHODS if m not in allowed):
        answer, headers = asked(port, method, path)
        assert answer.status == 405, (method, answer.text)
        assert headers.get("allow") == ", ".join(allowed), (method, headers)
        if method != "HEAD":
            assert headers.get("content-type") == "application/json", (method, headers)
            error = json.loads(answer.raw.split(b"\r\n\r\n", 1)[1])["error"]
            assert error.startswith(f"method {method} is not taken at {path}"), error
    assert_still_serves(port, "/infuse")


# --- bodies that are JSON but no MCP message -----------------------------------------
def _session(port: int) -> dict[str, str]:
    """The headers of a session opened with initialize, whose requests carry its id."""
    opened = exchange(port, MCP, valid_body(MCP))
    head = opened.raw.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")[1:]
    found = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in head)}
    return {"Mcp-Session-Id": found["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}


def _chunked(port: int, body: bytes, headers: Mapping[str, str]) -> Answer:
    with socket.create_connection(("127.0.0.1", port), timeout=READ_DEADLINE) as sock:
        sock.sendall(_head(port, MCP, headers, None))
        for at in range(0, len(body), 7):  # pieces cut inside the JSON
            piece = body[at : at + 7]
            sock.sendall(b"%x\r\n" % len(piece) + piece + b"\r\n")
        sock.sendall(b"0\r\n\r\n")
        return _read_answer(sock)


def _json_body(answer: Answer) -> dict[str, object]:
    return json.loads(answer.raw.split(b"\r\n\r\n", 1)[1])


PING = {"jsonrpc": "2.0", "id": 9, "method": "ping"}
# (a body, the id answered under, words the answer holds)
NOT_MESSAGES: list[tuple[object, object, str]] = [
    ({**PING, "id": None}, None, "id: must be a string or an integer"),
    ({**PING, "id": 1.5}, None, "id: must be a string or an integer"),
    ({**PING, "id": True}, None, "id: must be a string or an integer"),
    ({"id": 9, "method": "ping"}, 9, 'jsonrpc: must be "2.0"'),
    ({**PING, "jsonrpc": "1.0"}, 9, 'jsonrpc: must be "2.0"'),
    ({**PING, "method": 7}, 9, "method: must be a string"),
    ({**PING, "params": [1]}, 9, "params: must be a JSON object"),
    ([PING], None, "send each message in a POST of its own"),
    ([], None, "this server takes one message at a time"),
    (7, None, "not a bare value"),
]


def test_a_body_that_is_no_mcp_message_is_an_invalid_request_naming_the_member(
    server: RunningServer,
) -> None:
    """The SDK took a request whose id is no request id (null, 1.5, true) for a
    notification and answered 202 Accepted, so the client waited for an answer that
    never came; every other body that was JSON but no message got 400 with a kilobyte
    of pydantic's text as "invalid params". Each is refused as over stdio: an invalid
    request under the id when it is one, naming the member and the fix, sent in one
    piece or chunked; the session serves on."""
    port = port_of(server)
    session = _session(port)
    for body, ident, words in NOT_MESSAGES:
        raw = json.dumps(body).encode()
        for answer in (exchange(port, MCP, raw, session), _chunked(port, raw, session)):
            assert answer.status == 400, (body, answer.text)
            sent = _json_body(answer)
            assert sent["id"] == ident, (body, sent)
            error = sent["error"]
            assert isinstance(error, dict)
            assert error["code"] == -32600 and words in error["message"], (body, sent)
            assert "pydantic" not in answer.text and len(answer.raw) < 1_000
    served = exchange(port, MCP, json.dumps(PING).encode(), session)
    assert served.status == 200 and '"id":9,"result":{}' in served.text


def test_a_body_not_sent_as_json_is_a_415_naming_the_header(server: RunningServer) -> None:
    """Answered 400 with the bare text "Invalid Content-Type header"."""
    port = port_of(server)
    session = _session(port)
    for media in (None, "text/plain", "application/x-www-form-urlencoded"):
        answer = exchange(port, MCP, json.dumps(PING).encode(), {**session, "Content-Type": media})
        assert answer.status == 415, (media, answer.text)
        error = _json_body(answer)["error"]
        assert isinstance(error, dict) and "send Content-Type: application/json" in error["message"]
    sent_as = "application/json; charset=utf-8"
    answer = exchange(port, MCP, json.dumps(PING).encode(), {**session, "Content-Type": sent_as})
    assert answer.status == 200, answer.text


def test_not_json_is_a_parse_error_saying_what_to_send(server: RunningServer) -> None:
    port = port_of(server)
    session = _session(port)
    for body in (b"{not json", b"", b'{"jsonrpc": "2.0", "id": 9, "method": "ping"'):
        answer = exchange(port, MCP, body, session)
        assert answer.status == 400, (body, answer.text)
        sent = _json_body(answer)
        error = sent["error"]
        assert isinstance(error, dict) and error["code"] == -32700, (body, sent)
        assert "send one JSON-RPC 2.0 message" in str(error["message"]), (body, sent)


MARKER = "MEMORY-CONTENT-3f9a"


def test_the_sse_transport_refuses_no_message_alike_and_logs_none_of_it(tmp_path: Path) -> None:
    """The SSE transport's message path answered a body that was no message with the bare
    text "Could not parse message" and logged pydantic's account of it at ERROR with a
    traceback, the values sent among it (memory content, as a tool call's arguments may
    be); a request whose id is no request id it accepted (202) and never answered."""
    with run_server(tmp_path / "m", "--transport", "sse") as running:
        with (
            httpx.Client(base_url=running.base, timeout=30) as http,
            http.stream("GET", "/mcp/sse", headers={"accept": "text/event-stream"}) as events,
        ):
            lines = events.iter_lines()
            endpoint = next(line for line in lines if line.startswith("data: "))[6:]
            opened = http.post(endpoint, json=initialize())
            assert opened.status_code == 202, opened.text
            refused = [
                ({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [MARKER]}, 2),
                ({"jsonrpc": "2.0", "id": None, "method": "ping", "params": {"x": MARKER}}, None),
                ([{"jsonrpc": "2.0", "id": 3, "method": "ping", "params": {"x": MARKER}}], None),
            ]
            for body, ident in refused:
                answer = http.post(endpoint, json=body)
                assert answer.status_code == 400, (body, answer.text)
                sent = answer.json()
                assert sent["id"] == ident and sent["error"]["code"] == -32600, sent
            broken = http.post(
                endpoint, content=f'{{"x": "{MARKER}"', headers={"content-type": "application/json"}
            )
            assert broken.status_code == 400 and broken.json()["error"]["code"] == -32700
            assert (
                http.post(endpoint, json={"jsonrpc": "2.0", "id": 4, "method": "ping"}).status_code
                == 202
            )
        time.sleep(0.5)  # the log's reader thread takes the last lines
        assert MARKER not in running.stderr
        assert "Traceback" not in running.stderr


def test_a_protocol_version_the_server_does_not_speak_is_named_and_initialize_negotiates(
    server: RunningServer,
) -> None:
    """The SDK sends any MCP-Protocol-Version it does not know to its 2026 entry, which
    answered a 2025 request as a 2026 one: an initialize carrying its own (newer) version
    in the header, and a ping, with "params._meta must be an object carrying the
    required ... envelope keys"; a GET for the event stream and a DELETE ending the
    session with 405. An initialize negotiates; the rest are refused naming the header."""
    streamed = {"accept": BOTH, "content-type": "application/json"}
    with httpx.Client(base_url=server.base, timeout=30) as http:
        body = initialize(protocolVersion="2099-01-01")
        opened = http.post(
            MCP, json=body, headers={**streamed, "mcp-protocol-version": "2099-01-01"}
        )
        assert opened.status_code == 200, opened.text
        assert '"protocolVersion":"2025-11-25"' in opened.text
        session = {"mcp-session-id": opened.headers["mcp-session-id"]}
        wrong = {**session, "mcp-protocol-version": "2099-01-01"}
        answers = [
            http.post(MCP, json=PING, headers={**streamed, **wrong}),
            http.get(MCP, headers={"accept": "text/event-stream", **wrong}),
            http.delete(MCP, headers=wrong),
        ]
        for answer in answers:
            assert answer.status_code == 400, (answer.request.method, answer.text)
            error = answer.json()["error"]
            assert error["code"] == -32600
            assert "MCP-Protocol-Version: '2099-01-01' is no version" in error["message"]
            assert "2025-11-25" in error["message"]
        assert answers[0].json()["id"] == 9
        right = {**session, "mcp-protocol-version": "2025-11-25"}
        assert '"id":9,"result":{}' in http.post(MCP, json=PING, headers={**streamed, **right}).text
        assert http.delete(MCP, headers=right).status_code == 200


def test_params_the_protocol_refuses_are_named_over_http_too(server: RunningServer) -> None:
    port = port_of(server)
    session = _session(port)
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"arguments": [1]}}
    answer = exchange(port, MCP, json.dumps(call).encode(), session)
    assert answer.status == 200, answer.text
    assert "tools/call: params." in answer.text
    assert "params.name: required, and missing; add it" in answer.text
    assert "params.arguments: expected an object" in answer.text


def test_a_stream_asked_to_resume_after_an_event_is_given_afresh(server: RunningServer) -> None:
    """The server keeps no event store, so it has no event to resume after: a GET for the
    event stream carrying Last-Event-ID got a 500 (the SDK returned without answering),
    and the log an ERROR."""
    port = port_of(server)
    session = _session(port)
    asked = {"accept": "text/event-stream", **session, "last-event-id": "0"}
    with (
        httpx.Client(base_url=server.base, timeout=30) as http,
        http.stream("GET", MCP, headers=asked) as stream,
    ):
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    time.sleep(0.5)  # the log's reader thread takes the last lines
    assert "returned without starting response" not in server.stderr
