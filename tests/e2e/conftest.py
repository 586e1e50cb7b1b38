"""Fixtures for the server's end-to-end tests: settings, in-process servers, subprocess servers.

A subprocess server is started on port 0 and its URL read from the start-up
announcement on stderr, so tests never race for a port.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from kenning_encounter.config import Settings, load_settings
from tests.support.handles import SESSION_KEY_ENV, TEST_SESSION_KEY, signed

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src"
LISTENING = re.compile(r"listening on (http://\S+)")
_OUR_ENV = ("KENNING_ENCOUNTER_", "NEO4J_", "GEMINI_", "OPENAI_")


def clean_environ(*, test_key: bool = True, **extra: str) -> dict[str, str]:
    """This process's environment without our settings, with the source tree importable.

    ``test_key`` gives a server started with it the tests' session key (see
    tests/support/handles.py); without it the server mints its own.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_OUR_ENV)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH", "")]))
    if test_key:
        env.update(SESSION_KEY_ENV)
    env.update(extra)
    return env


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No setting leaks in from the environment or a .env file of the checkout."""
    for key in list(os.environ):
        if key.startswith(_OUR_ENV):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def make_settings(data_dir: Path, **values: Any) -> Settings:
    """Test settings; the session key is the tests' own unless ``session_key=None`` is asked."""
    values.setdefault("matcher", "off")
    values.setdefault("session_key", TEST_SESSION_KEY)
    return load_settings(data_dir=data_dir, **values)


def modules_after_import(*names: str) -> set[str]:
    """Every module a fresh interpreter holds after importing ``names`` (none of ours set)."""
    probe = f"import sys, {', '.join(names)}; print('\\n'.join(sys.modules))"
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=120,
        check=True,
    )
    return set(done.stdout.split())


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kenning_encounter", *args]


@dataclass
class RunningServer:
    proc: subprocess.Popen[str]
    url: str  # the MCP endpoint
    lines: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)

    def logged(self, marker: str, count: int, timeout: float = 10.0) -> list[str]:
        """The log's lines holding ``marker``, read as an operator's tools read them (split
        at every line break), once ``count`` of them have come or ``timeout`` has passed:
        a line reaches ``lines`` through a reader thread, after the answer that logged it."""
        deadline = time.monotonic() + timeout
        while True:
            found = [line for line in self.stderr.splitlines() if marker in line]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.02)


def _pump(stream: Any, lines: list[str], found: threading.Event) -> None:
    for line in stream:
        lines.append(line.rstrip("\n"))
        if LISTENING.search(line):
            found.set()
    found.set()  # the process ended


@contextmanager
def run_server(
    data_dir: Path,
    *args: str,
    startup: float = 30.0,
    env: dict[str, str] | None = None,
    test_key: bool = True,
) -> Generator[RunningServer]:
    """A real ``kenning-encounter serve`` subprocess on a free loopback port.

    ``test_key`` gives it the tests' session key; without it the server mints its own.
    """
    cmd = server_command(
        "serve", "--data-dir", str(data_dir), "--port", "0", "--matcher", "off", *args
    )
    proc = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_environ(test_key=test_key, **(env or {})),
    )
    lines: list[str] = []
    found = threading.Event()
    pump = threading.Thread(target=_pump, args=(proc.stderr, lines, found), daemon=True)
    pump.start()
    try:
        deadline = time.monotonic() + startup
        while not found.wait(0.05):
            if time.monotonic() > deadline:
                raise AssertionError("the server did not announce itself:\n" + "\n".join(lines))
        match = next((m for m in map(LISTENING.search, lines) if m), None)
        if match is None:
            raise AssertionError("the server exited before listening:\n" + "\n".join(lines))
        yield RunningServer(proc, match.group(1), lines)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        pump.join(timeout=5)
        if proc.stderr is not None:
            proc.stderr.close()


# --- driving a client ---------------------------------------------------------------
SESSION = "5d1e7c0a-session-one"
READ_TOOLS = frozenset(
    {
        "search",
        "find_by_name",
        "trace_provenance",
        "chain_history",
        "conflicts",
        "read_cypher",
        "get_schema",
        "list_node_types",
        "list_relation_types",
        "list_vocabulary",
        "orient",
        "gds_create_projection",
        "gds_pagerank",
        "gds_articlerank",
        "gds_betweenness",
        "gds_leiden",
        "gds_wcc",
        "gds_drop_projection",
        "infuse",
        "infuse_meaning",
    }
)
ALL_TOOLS = READ_TOOLS | {
    "advance_encounter",
    "close_encounter",
    "create_entities",
    "create_relations",
    "delete_entities",
    "delete_relations",
    "confirm_entities",
    "claim_referents",
    "pin_entities",
}


async def call_ok(
    client: Any, name: str, arguments: dict[str, Any], *, sign: bool = True
) -> dict[str, Any]:
    """Call a tool that must succeed; its structured content.

    ``sign`` passes the session's handle for a plain session_id, as a client that
    holds its session does (the test servers use the tests' session key).
    """
    result = await client.call_tool(name, signed(arguments) if sign else arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert not result.is_error, f"{name} failed: {text}"
    assert text.strip(), f"{name} returned no text rendering"
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def call_refused(
    client: Any, name: str, arguments: dict[str, Any], *, sign: bool = True
) -> str:
    """Call a tool that must be refused; the message the client sees.

    Signed like ``call_ok``, so a refusal is for the reason the test means, not the
    missing handle; ``sign=False`` tests the handle itself.
    """
    result = await client.call_tool(name, signed(arguments) if sign else arguments)
    text = " ".join(getattr(c, "text", "") for c in result.content)
    assert result.is_error, f"{name} should have been refused, got: {text}"
    return text
