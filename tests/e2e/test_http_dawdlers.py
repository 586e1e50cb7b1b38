"""Clients that open a connection and dawdle, against a real server process and raw
sockets: one that never sends a request, one that sends its head a byte at a time, one
that stops half-way through its body. Each is closed once ``--request-timeout`` has
passed (server/deadline.py), and the server goes on serving; a request received whole
is answered however long its answer is held open."""

from __future__ import annotations

import socket
import time
from collections.abc import Generator
from urllib.parse import urlsplit

import anyio
import httpx
import pytest
from mcp import Client

from tests.e2e.conftest import ALL_TOOLS, RunningServer, run_server

TIMEOUT_S = 1.0
SOCKET_S = 10.0  # a hung server's bound, not a speed claim


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Generator[RunningServer]:
    data_dir = tmp_path_factory.mktemp("dawdlers") / "m"
    with run_server(data_dir, "--request-timeout", str(TIMEOUT_S)) as running:
        yield running


def _connect(server: RunningServer) -> socket.socket:
    port = urlsplit(server.base).port
    assert port is not None
    sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_S)
    return sock


def _closed_after(sock: socket.socket, trickle: bytes = b"") -> float:
    """Seconds until the server closes ``sock``, sending ``trickle`` a byte every tenth
    of a second meanwhile (a head or body that never ends)."""
    started = time.monotonic()
    with sock:
        sock.settimeout(0.1)
        for i in range(int(SOCKET_S * 10)):
            try:
                if sock.recv(1024) == b"":
                    return time.monotonic() - started
            except TimeoutError:
                pass
            except ConnectionResetError:
                return time.monotonic() - started
            if trickle:
                try:
                    sock.sendall(trickle[i % len(trickle) : i % len(trickle) + 1])
                except (BrokenPipeError, ConnectionResetError):
                    return time.monotonic() - started
    raise AssertionError(f"the connection was still open after {SOCKET_S} s")


def _still_serves(server: RunningServer) -> None:
    assert httpx.get(f"{server.base}/healthz", timeout=SOCKET_S).status_code == 200


def test_a_connection_that_never_sends_a_request_is_closed(server: RunningServer) -> None:
    assert _closed_after(_connect(server)) < SOCKET_S / 2
    _still_serves(server)


def test_a_head_sent_a_byte_at_a_time_is_cut_off_at_its_deadline(server: RunningServer) -> None:
    sock = _connect(server)
    sock.sendall(b"GET /healthz HTTP/1.1\r\n")
    # Each byte came well inside the timeout: the head's deadline holds regardless.
    assert _closed_after(sock, trickle=b"X-Slow: " + b"a" * 200) < SOCKET_S / 2
    _still_serves(server)


def test_a_body_that_stops_half_way_is_closed(server: RunningServer) -> None:
    sock = _connect(server)
    head = (
        f"POST /infuse HTTP/1.1\r\nHost: {urlsplit(server.base).netloc}\r\n"
        "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n"
    )
    sock.sendall(head.encode() + b'{"session_id": ')
    assert _closed_after(sock) < SOCKET_S / 2
    _still_serves(server)


@pytest.mark.anyio
async def test_a_client_pausing_between_its_calls_is_served_throughout(
    server: RunningServer,
) -> None:
    # Its idle connections are closed and opened again; its event stream is a request
    # received whole, held open on purpose. Nothing it asks is lost.
    async with Client(server.url) as client:
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
        await anyio.sleep(TIMEOUT_S * 2.5)
        assert {t.name for t in (await client.list_tools()).tools} == ALL_TOOLS
