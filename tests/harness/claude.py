"""Driving the real Claude Code CLI in a temporary project wired by our installer.

A ``Workspace`` is one test's world: a HOME that is not the user's, a project
folder wired with ``kenning-encounter install claude-code --project``, a real
memory server subprocess and the stand-in Messages API. ``run`` starts
``claude -p`` there with an environment built from nothing, so no key,
setting or proxy of the machine it runs on reaches the CLI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.conftest import RunningServer, clean_environ, run_server
from tests.support.fake_anthropic import Exchange, FakeAnthropic, Turn

SERVER = "kenning-encounter"
TOOL_PREFIX = f"mcp__{SERVER}__"
# What Claude Code calls the same server when the plugin in plugin/ provides it.
PLUGIN_TOOL_PREFIX = f"mcp__plugin_{SERVER}_{SERVER}__"
INSTALL = (sys.executable, "-m", "kenning_encounter", "install", "claude-code")
HOOK_COPY = Path(".claude") / "hooks" / "kenning_encounter_infuse_hook.py"
# The session's handle (id, "~", proof) as the SessionStart hook tells it to the model.
SESSION_LINE = re.compile(r"kenning-encounter session_id is ([0-9A-Za-z-]+(?:~[a-z2-7]{26})?)")
NOTICE = re.compile(r"\[kenning-encounter:[^\]\n]*\]")
# How Claude Code (2.1.332 to 2.1.337) labels hook output in the request it sends the model.
PROMPT_CONTEXT = "UserPromptSubmit hook additional context:"
START_CONTEXT = "SessionStart hook additional context:"
# Claude Code's own wait for a hook is 10 s; a run that needs longer than this has hung.
RUN_TIMEOUT = 90


def tool(name: str, prefix: str = TOOL_PREFIX) -> str:
    """The name Claude Code gives one of our MCP tools."""
    return prefix + name


@dataclass
class Run:
    """One finished ``claude`` process."""

    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    debug: str

    def events(self) -> list[dict[str, Any]]:
        """The stream-json lines of stdout (when the run used --output-format stream-json)."""
        out: list[dict[str, Any]] = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                doc = json.loads(line)
                if isinstance(doc, dict):
                    out.append(doc)
        return out

    def session_id(self) -> str:
        """The conversation's id, from the init event (hook events before it may carry a
        provisional one when --continue picks the conversation)."""
        for event in self.events():
            if event.get("subtype") == "init" and isinstance(event.get("session_id"), str):
                return event["session_id"]
        raise AssertionError(f"no session_id in the output of {self.args}:\n{self.stdout}")

    def explain(self) -> str:
        return (
            f"claude {' '.join(self.args)} exited {self.returncode}\n"
            f"--- stdout\n{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}\n"
            f"--- debug (tail)\n{self.debug[-4000:]}"
        )


@dataclass(frozen=True)
class Started:
    proc: subprocess.Popen[str]
    argv: list[str]
    debug: Path
    stdin: str | None


@dataclass
class Workspace:
    root: Path
    binary: Path
    fake: FakeAnthropic
    server: RunningServer | None = None
    runs: list[Run] = field(default_factory=list[Run])

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    @property
    def data_dir(self) -> Path:
        return self.root / "memory"

    @property
    def hook_copy(self) -> Path:
        return self.project / HOOK_COPY

    def wire(self, mcp_url: str) -> str:
        """``kenning-encounter install claude-code --project`` into the project; its output."""
        done = subprocess.run(
            [*INSTALL, "--project", str(self.project), "--url", mcp_url],
            capture_output=True,
            text=True,
            env=clean_environ(HOME=str(self.home)),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, f"install failed:\n{done.stdout}\n{done.stderr}"
        return done.stdout

    def environment(self, **extra: str) -> dict[str, str]:
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "TMPDIR": str(self.root / "tmp"),
            "LANG": "C.UTF-8",
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "ANTHROPIC_BASE_URL": self.fake.url,
            "ANTHROPIC_API_KEY": "test-key",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            # claude -p is a programmatic entry point, which the hook's auto gate leaves
            # uninfused; these scenarios are about what infusion does when it is on.
            "KENNING_ENCOUNTER_INFUSE": "on",
        }
        env.update(extra)
        return env

    def start(
        self, *args: str, prompt: str | None = None, stdin: str | None = None, **env: str
    ) -> Started:
        """Start ``claude`` in the project; the caller collects it with ``finish``."""
        debug = self.root / f"debug-{len(self.runs)}-{os.getpid()}-{id(args)}.log"
        argv = [*args, "--debug-file", str(debug)]
        if prompt is not None:
            argv.append(prompt)
        proc = subprocess.Popen(
            [str(self.binary), *argv],
            cwd=self.project,
            env=self.environment(**env),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return Started(proc, argv, debug, stdin)

    def finish(self, started: Started) -> Run:
        proc, argv, debug = started.proc, started.argv, started.debug
        try:
            stdout, stderr = proc.communicate(started.stdin, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            stdout, stderr = proc.communicate(timeout=10)
        try:
            log = debug.read_text(encoding="utf-8", errors="replace")
        except OSError:
            log = ""
        run = Run(argv, proc.returncode, stdout, stderr, log)
        self.runs.append(run)
        return run

    def run(
        self, *args: str, prompt: str | None = None, stdin: str | None = None, **env: str
    ) -> Run:
        return self.finish(self.start(*args, prompt=prompt, stdin=stdin, **env))

    def print_run(self, prompt: str, *args: str, **env: str) -> Run:
        """``claude -p PROMPT`` with our tools allowed; it must exit 0."""
        run = self.run(*print_args(*args), prompt=prompt, **env)
        assert not self.fake.errors, f"the scripted model failed: {self.fake.errors}"
        assert run.returncode == 0, run.explain()
        return run


def print_args(*more: str) -> list[str]:
    return [
        "-p",
        "--output-format", "stream-json", "--verbose",
        "--allowedTools", TOOL_PREFIX.rstrip("_"), PLUGIN_TOOL_PREFIX.rstrip("_"),
        *more,
    ]  # fmt: skip


def stream_message(text: str) -> str:
    """One user turn as ``--input-format stream-json`` reads it."""
    message = {"type": "user", "message": {"role": "user", "content": text}}
    return json.dumps(message) + "\n"


@contextmanager
def workspace(
    root: Path, binary: Path, *, serve: bool = True, server_env: dict[str, str] | None = None
) -> Generator[Workspace]:
    """A wired project with a server of its own (``serve=False``: wired to a closed port)."""
    for sub in ("home", "project", "tmp"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        fake = stack.enter_context(FakeAnthropic())
        space = Workspace(root, binary, fake)
        if serve:
            space.server = stack.enter_context(run_server(space.data_dir, env=server_env))
            space.wire(space.server.url)
        else:
            space.wire(f"http://127.0.0.1:{closed_port()}/mcp/")
        yield space


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


Step = Callable[[str], Turn]  # the model's answer, given the session_id it was told


class Agent:
    """A scripted model: each agent request gets the next step, given the session_id it saw.

    The session_id (the session's handle) is read from the request itself (the
    SessionStart context), so a step only runs when that context reached the
    model, and is what each step passes. Steps run out into the fake's idle
    text. ``seen`` keeps the plain session id each request carried.
    """

    def __init__(self, *steps: Step) -> None:
        self._steps = list(steps)
        self.seen: list[str | None] = []

    def __call__(self, exchange: Exchange) -> Turn | None:
        match = SESSION_LINE.search(exchange.text())
        held = match.group(1) if match else None
        self.seen.append(held.partition("~")[0] if held else None)
        if not self._steps:
            return None
        if held is None:
            raise AssertionError("a scripted step is due but no session_id reached the model")
        return self._steps.pop(0)(held)

    @property
    def pending(self) -> int:
        return len(self._steps)


def infusion_of(exchange: Exchange) -> str | None:
    """What the UserPromptSubmit hook added to this request, or None."""
    text = exchange.text()
    at = text.rfind(PROMPT_CONTEXT)
    if at < 0:
        return None
    return text[at + len(PROMPT_CONTEXT) :].strip()


def notices(text: str) -> list[str]:
    return NOTICE.findall(text)


@dataclass(frozen=True)
class Called:
    is_error: bool
    text: str
    structured: Any


def call_memory(mcp_url: str, name: str, arguments: dict[str, Any]) -> Called:
    """One tool call on the server's MCP endpoint, from outside Claude Code (to check the store)."""
    import anyio
    from mcp import Client

    async def go() -> Called:
        async with Client(mcp_url) as client:
            result = await client.call_tool(name, arguments)
            text = " ".join(getattr(c, "text", "") for c in result.content)
            return Called(bool(result.is_error), text, result.structured_content)

    return anyio.run(go)
