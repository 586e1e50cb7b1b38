"""``kenning-encounter ui`` asks whether a server answers on its port before it serves;
whatever answers there may not be ours, so no answer can stop the command."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator

import pytest

from kenning_encounter.ui.launch import answering


def _serving(body: bytes) -> Iterator[str]:
    class Answer(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 2_048 + b"]" * 2_048,  # past the parser's depth in 4 KiB: a RecursionError
        b"not json",
        b'{"status": "ok"',
        b'["ok"]',
        b"9" * 4_096,
    ],
)
def test_an_answer_that_is_not_ours_is_no_server_of_ours(body: bytes) -> None:
    for base in _serving(body):
        assert answering(base) is False


def test_our_answer_is_ours() -> None:
    for base in _serving(b'{"status": "ok"}'):
        assert answering(base) is True
