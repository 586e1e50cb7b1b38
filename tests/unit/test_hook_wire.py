"""The hook's HTTP over real sockets, in process: the request it writes, the answer it
reads, and each way a connection fails (refused, never accepted, reset, not TLS).

A socketpair or a raw listening socket stands in for the server where FakeHookServer
cannot misbehave precisely enough; everything below is the kernel's real TCP.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field

import pytest

from kenning_encounter.hooks import infuse_hook as h

# Far more than any healthy read needs; a slip that makes the hook wait fails here,
# at the deadline, sooner than at the mutation run's own timeout.
AMPLE = 5.0
OK = b'HTTP/1.1 200 OK\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{"ok": true}'


@dataclass
class RawServer:
    """Accepts one connection, keeps the request's bytes, then answers ``reply``.

    ``reply=None`` resets the connection instead (SO_LINGER 0), as a crashing server does;
    ``http=False`` answers after the first bytes, whatever they are (a TLS ClientHello).
    """

    family: int = socket.AF_INET
    reply: bytes | None = OK
    http: bool = True
    request: bytes = b""
    port: int = field(init=False)
    _listener: socket.socket = field(init=False)
    _thread: threading.Thread = field(init=False)

    def __post_init__(self) -> None:
        self._listener = socket.socket(self.family, socket.SOCK_STREAM)
        self._listener.bind(("::1" if self.family == socket.AF_INET6 else "127.0.0.1", 0))
        self._listener.listen(1)
        self.port = int(self._listener.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self._listener.accept()
        with conn:
            conn.settimeout(10)
            with contextlib.suppress(OSError):
                self.request = conn.recv(65536)
                while self.http and b"\r\n\r\n" not in self.request:
                    self.request += conn.recv(65536)
                head, _, body = self.request.partition(b"\r\n\r\n")
                length = int(h.header_value(head, b"content-length") or b"0")
                while len(body) < length:
                    body += conn.recv(65536)
                self.request = head + b"\r\n\r\n" + body
                if self.reply is None:
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                else:
                    conn.sendall(self.reply)

    def close(self) -> None:
        self._thread.join(10)
        self._listener.close()


@contextlib.contextmanager
def raw_server(**settings: object) -> Generator[RawServer, None, None]:
    server = RawServer(**settings)  # type: ignore[arg-type]
    try:
        yield server
    finally:
        server.close()


def _options(url: str, timeout: float = 10.0) -> h.Options:
    return h.Options("prompt", url, timeout, 6)


# ---------------------------------------------------------------------- receive


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    """(hook side, server side) of a real connected socket pair."""
    hook_side, server_side = socket.socketpair()
    try:
        yield hook_side, server_side
    finally:
        hook_side.close()
        server_side.close()


def _send_in_thread(sock: socket.socket, data: bytes, *, close: bool) -> threading.Thread:
    def send() -> None:
        with contextlib.suppress(OSError):
            sock.sendall(data)
            if close:
                sock.shutdown(socket.SHUT_WR)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"


def test_receive_stops_at_content_length_while_the_server_holds_on(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    answer = HEAD + b"Content-Length: 8\r\n\r\n" + b'{"a": 1}'
    server_side.sendall(answer + b"trailing bytes")
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer


def test_receive_stops_at_exactly_the_length_sent(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    answer = HEAD + b"Content-Length: 0\r\n\r\n"
    server_side.sendall(answer)
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer


def test_receive_finds_the_head_when_it_arrives_in_pieces(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    first = HEAD + b"Content-Length: 5\r\n"
    server_side.sendall(first)

    def rest() -> None:
        # After the hook has read the first piece; the order matters, not the time.
        time.sleep(0.2)
        server_side.sendall(b"\r\nhello")

    writer = threading.Thread(target=rest)
    writer.start()
    assert h.receive(hook_side, time.monotonic() + AMPLE) == first + b"\r\nhello"
    writer.join()


def test_receive_measures_the_body_from_the_first_blank_line(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    answer = HEAD + b"Content-Length: 10\r\n\r\n" + b"ab\r\n\r\ncdef"
    server_side.sendall(answer)
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer


def test_receive_joins_a_long_body_over_many_reads(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    body = b"x" * 300_000
    answer = HEAD + b"Content-Length: 300000\r\n\r\n" + body
    writer = _send_in_thread(server_side, answer, close=False)
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer
    writer.join()


@pytest.mark.parametrize("length_line", [b"", b"Content-Length: many\r\n"])
def test_receive_without_a_length_reads_until_the_server_closes(
    pair: tuple[socket.socket, socket.socket], length_line: bytes
) -> None:
    hook_side, server_side = pair
    answer = HEAD + length_line + b"\r\n" + b"y" * 200_000
    writer = _send_in_thread(server_side, answer, close=True)
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer
    writer.join()


def test_receive_takes_an_answer_of_exactly_the_bound(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    answer = HEAD + b"\r\n"
    answer += b"z" * (h.MAX_ANSWER_BYTES - len(answer))
    writer = _send_in_thread(server_side, answer, close=True)
    assert h.receive(hook_side, time.monotonic() + AMPLE) == answer
    writer.join()


def test_receive_refuses_an_answer_past_the_bound(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    answer = HEAD + b"\r\n"
    answer += b"z" * (h.MAX_ANSWER_BYTES - len(answer) + 1)
    writer = _send_in_thread(server_side, answer, close=False)
    with pytest.raises(h.HookFailure) as big:
        h.receive(hook_side, time.monotonic() + AMPLE)
    assert (big.value.kind, big.value.detail) == ("bad", "answer too large")
    hook_side.close()
    writer.join()


def test_receive_gives_up_on_a_server_that_never_finishes(
    pair: tuple[socket.socket, socket.socket],
) -> None:
    hook_side, server_side = pair
    server_side.sendall(HEAD + b"Content-Length: 50\r\n\r\n{")
    with pytest.raises(socket.timeout):
        h.receive(hook_side, time.monotonic() + 0.3)
    with pytest.raises(socket.timeout, match=r"^deadline passed$"):
        h.receive(hook_side, time.monotonic() - 0.01)


# -------------------------------------------------------------------- post_json


def test_the_request_is_the_http_the_hook_means() -> None:
    # UTF-8 on the wire; a lone surrogate (which the server refuses) goes as "?".
    body = {"session_id": "s", "prompt": "café \ud800"}
    payload = '{"session_id": "s", "prompt": "café ?"}'.encode()
    with raw_server() as server:
        url = f"http://127.0.0.1:{server.port}/base/mcp"
        answer = h.post_json(_options(url), "/infuse", body, {}, 10.0)
    assert answer == {"ok": True}
    assert server.request == (
        b"POST /base/infuse HTTP/1.1\r\n"
        + f"Host: 127.0.0.1:{server.port}\r\n".encode()
        + b"Content-Type: application/json\r\n"
        b"Accept: application/json\r\n"
        + f"Content-Length: {len(payload)}\r\n".encode()
        + b"Connection: close\r\n"
        b"User-Agent: kenning-encounter-hook\r\n\r\n" + payload
    )


def test_an_ipv6_host_is_bracketed_and_the_token_sent_in_latin_1() -> None:
    with raw_server(family=socket.AF_INET6) as server:
        url = f"http://[::1]:{server.port}"
        env = {"KENNING_ENCOUNTER_TOKEN": "t€k"}
        h.post_json(_options(url), "/session-end", {}, env, 10.0)
    head = server.request.split(b"\r\n\r\n")[0].split(b"\r\n")
    assert head[1] == f"Host: [::1]:{server.port}".encode()
    # A token the header cannot carry is sent with "?" for what latin-1 lacks, not dropped.
    assert head[-1] == b"Authorization: Bearer t?k"
    assert b"Authorization" not in b"".join(head[:-1])


def test_an_empty_token_sends_no_authorization() -> None:
    with raw_server() as server:
        h.post_json(
            _options(f"http://127.0.0.1:{server.port}"),
            "/session-end",
            {},
            {"KENNING_ENCOUNTER_TOKEN": ""},
            10.0,
        )
    assert b"Authorization" not in server.request


def test_a_refused_connection_is_unreachable_with_the_reason() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(h.HookFailure) as down:
        h.post_json(_options(f"http://127.0.0.1:{port}"), "/infuse", {}, {}, 10.0)
    assert (down.value.kind, down.value.detail) == ("unreachable", "[Errno 111] Connection refused")


def test_a_connection_never_accepted_times_out() -> None:
    # A listener with a full accept queue drops new SYNs: the connect itself waits.
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        waiting: list[socket.socket] = []
        try:
            for _ in range(4):
                filler = socket.socket()
                filler.setblocking(False)
                with contextlib.suppress(BlockingIOError):
                    filler.connect(listener.getsockname())
                waiting.append(filler)
            url = f"http://127.0.0.1:{listener.getsockname()[1]}"
            with pytest.raises(h.HookFailure) as late:
                h.post_json(_options(url, timeout=30.0), "/infuse", {}, {}, 0.3)
        finally:
            for filler in waiting:
                filler.close()
    assert (late.value.kind, late.value.detail) == ("timeout", "")


def test_a_server_that_stops_reading_cannot_hold_the_send() -> None:
    # Connected by the kernel but never accepted, so never read: once its small receive
    # buffer and the hook's send buffer are full, the hook's send itself must time out.
    with socket.socket() as listener:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
        big = {"prompt": "y" * (16 * 1024 * 1024)}
        with pytest.raises(h.HookFailure) as late:
            h.post_json(_options(url, timeout=30.0), "/infuse", big, {}, 0.5)
    assert (late.value.kind, late.value.detail) == ("timeout", "")


def test_a_reset_connection_is_a_bad_answer() -> None:
    with raw_server(reply=None) as server, pytest.raises(h.HookFailure) as reset:
        h.post_json(_options(f"http://127.0.0.1:{server.port}"), "/infuse", {}, {}, 10.0)
    assert (reset.value.kind, reset.value.detail) == (
        "bad",
        "connection failed: [Errno 104] Connection reset by peer",
    )


def test_https_speaks_tls_and_a_plain_server_fails_it() -> None:
    with (
        raw_server(reply=b"HTTP/1.1 400 Bad Request\r\n\r\n", http=False) as server,
        pytest.raises(h.HookFailure) as bad,
    ):
        h.post_json(_options(f"https://127.0.0.1:{server.port}"), "/infuse", {}, {}, 10.0)
    assert bad.value.kind == "bad"
    assert bad.value.detail.startswith("connection failed: [SSL")
    # What reached the server was a TLS ClientHello, not the HTTP request.
    assert server.request[:1] == b"\x16" and b"POST" not in server.request
