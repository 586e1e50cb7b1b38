"""``kenning-encounter ui`` as a real subprocess, its browser a script that records the URL.

Python's webbrowser runs the command named by BROWSER with the URL, so what the
command opened is what a person's browser would have been given: the server's own
address and port, /ui/, and with a token a one-time sign-in that does not carry it.
"""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from kenning_encounter.ui import access
from tests.e2e.conftest import clean_environ, run_server, server_command

TOKEN = "ui-command-token-0b9c8d7e6f5a"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _browser(tmp: Path) -> tuple[Path, Path]:
    record = tmp / "opened.txt"
    script = tmp / "browser.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$1" >> "{record}"\n', encoding="utf-8")
    script.chmod(0o755)
    return script, record


def _opened(record: Path, proc: subprocess.Popen[str], deadline_s: float = 60) -> str:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if record.exists() and record.read_text(encoding="utf-8").endswith("\n"):
            return record.read_text(encoding="utf-8").strip()
        if proc.poll() not in (None, 0):
            raise AssertionError(f"ui exited {proc.returncode}: {proc.communicate()}")
        time.sleep(0.1)
    raise AssertionError("the browser was never opened")


@contextmanager
def _ui(tmp: Path, *args: str, token: str | None) -> Iterator[tuple[subprocess.Popen[str], str]]:
    script, record = _browser(tmp)
    env = {"BROWSER": str(script)} | ({"KENNING_ENCOUNTER_TOKEN": token} if token else {})
    proc = subprocess.Popen(
        server_command("ui", "--matcher", "off", *args),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environ(**env),
    )
    try:
        yield proc, _opened(record, proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
        if proc.stdout is not None and not proc.stdout.closed:
            proc.communicate(timeout=30)


def _loads(url: str) -> httpx.Response:
    with httpx.Client(follow_redirects=True, timeout=30) as client:
        return client.get(url)


@pytest.mark.parametrize("token", [None, TOKEN], ids=["no-token", "token"])
def test_ui_serves_and_opens_its_own_address(tmp_path: Path, token: str | None) -> None:
    port = _free_port()
    with _ui(tmp_path, "--data-dir", str(tmp_path / "m"), "--port", str(port), token=token) as (
        proc,
        url,
    ):
        parts = urlsplit(url)
        assert (parts.scheme, parts.netloc) == ("http", f"127.0.0.1:{port}")
        if token is None:
            assert parts.path == "/ui/" and not parts.query
        else:
            assert parts.path == access.LOGIN_PATH and TOKEN not in url
            assert list(parse_qs(parts.query)) == ["code"]
            # The address alone is refused: it is the sign-in that opens the page.
            assert httpx.get(f"http://127.0.0.1:{port}/ui/", timeout=30).status_code == 401
        page = _loads(url)
        assert page.status_code == 200 and "<h1>Spine</h1>" in page.text
        assert urlsplit(str(page.url)).path == "/ui/" and not urlsplit(str(page.url)).query
        assert proc.poll() is None  # still serving the page it opened


def test_ui_opens_a_running_servers_page_and_starts_nothing(tmp_path: Path) -> None:
    with run_server(tmp_path / "m", env={"KENNING_ENCOUNTER_TOKEN": TOKEN}) as server:
        port = urlsplit(server.base).port
        assert port is not None
        # The memory is the running server's: a second server on it could not open it.
        with _ui(tmp_path, "--data-dir", str(tmp_path / "m"), "--port", str(port), token=TOKEN) as (
            proc,
            url,
        ):
            out, _ = proc.communicate(timeout=30)
            assert proc.returncode == 0 and "already running" in out
            assert url.startswith(f"{server.base}{access.LOGIN_PATH}?code=")
            page = _loads(url)
            assert page.status_code == 200 and "<h1>Spine</h1>" in page.text
