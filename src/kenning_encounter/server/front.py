"""The quick start over stdio: the first answers while the rest of the server loads.

A stdio client launches the server afresh every time and waits for its
``initialize`` answer, then the listings; the MCP SDK alone takes longer to
import than the whole reference server takes to answer. Both answers depend only
on the command line, the settings' environment, the code and the protocol
version asked, so a launch keeps the answers the SDK gave (a file per command
line, in the user cache directory), and the next launch with the same command
line, environment, ``.env``, code and libraries answers ``initialize`` and the
plain listings from that file, on a thread, while the main thread imports the SDK
and builds the server.

This module imports nothing beyond the standard library, and runs before
anything else is imported. It answers only what it knows exactly:

- an ``initialize`` request whose protocol version an earlier launch was asked,
  with the usual envelope and parameters; then
- once initialized, the requests in ``KEPT`` with no parameters (no cursor), for
  the version that ``initialize`` negotiated; ``notifications/initialized`` is noted.

The first message of any other shape ends the quick start: it and all that
follows wait for the SDK, in order. When the server is ready (``hand_over``), the
messages the front took are given to the SDK again, first, so its session is in
the state the client believes; the SDK's answers to those are compared with what
the front sent and dropped (stdio.py). A difference is logged and the file is
rewritten, so a stale file is wrong for at most one launch.

While the front runs, fd 0 reads the null device and fd 1 writes to stderr, as
while serving: a stray print during the imports cannot corrupt the protocol.

``KENNING_ENCOUNTER_QUICK_START=off`` turns it off; ``KENNING_ENCOUNTER_CACHE_DIR``
moves the files.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import select
import stat
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final, cast

log = logging.getLogger(__name__)

FORMAT: Final = 1
ENV_PREFIX: Final = "KENNING_ENCOUNTER_"
OFF_ENV: Final = ENV_PREFIX + "QUICK_START"
CACHE_ENV: Final = ENV_PREFIX + "CACHE_DIR"
SECRET_FLAGS: Final = frozenset({"--token", "--neo4j-password"})
KEPT_FILES: Final = 64  # one per command line; the oldest go first
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENVELOPE: Final = frozenset({"jsonrpc", "id", "method", "params"})
_INIT_PARAMS: Final = frozenset({"protocolVersion", "capabilities", "clientInfo", "_meta"})
# What a client asks right after initialize, answered the same every time for one server
# (they list what the server was built with; ping answers nothing).
KEPT: Final = ("tools/list", "prompts/list", "resources/list", "resources/templates/list", "ping")

Json = dict[str, Any]


def cache_dir() -> str:
    """Where the quick-start files live (the platform's user cache directory)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return os.path.join(os.path.expanduser(chosen), "quick-start")
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "kenning-encounter", "quick-start")


def source_stamp() -> str:
    """A digest of every module of the package: its path, size and modification time."""
    found: list[tuple[str, int, int]] = []
    for folder, dirs, files in os.walk(_PACKAGE):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                st = os.stat(path)
                found.append((os.path.relpath(path, _PACKAGE), st.st_size, st.st_mtime_ns))
    return hashlib.sha256(json.dumps(found).encode()).hexdigest()


def file_stamps(paths: Iterable[str]) -> dict[str, list[int]]:
    """Size and modification time of each file (an upgraded library rewrites them)."""
    stamps: dict[str, list[int]] = {}
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamps[path] = [-1, -1]
        else:
            stamps[path] = [st.st_size, st.st_mtime_ns]
    return stamps


def _environment(names: Iterable[str]) -> list[tuple[str, str]]:
    """The variables the settings may read: our prefix (in any case, as the settings read
    them) and the other names given (the Neo4j and matcher variables)."""
    wanted = {n.upper() for n in names}
    return [
        (key, value)
        for key, value in sorted(os.environ.items())
        if (key.upper().startswith(ENV_PREFIX) or key.upper() in wanted) and key.upper() != OFF_ENV
    ]


def _dotenv() -> str | None:
    try:
        with open(".env", "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def _unsecret(argv: list[str]) -> list[str]:
    """``argv`` without the values of the flags that carry secrets (for the file's name;
    the salted key covers them)."""
    out: list[str] = []
    hide = False
    for arg in argv:
        flag = arg.split("=", 1)[0]
        out.append("*" if hide else f"{flag}=*" if flag in SECRET_FLAGS and "=" in arg else arg)
        hide = not hide and arg in SECRET_FLAGS
    return out


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _claim(fd: int, diversion: int) -> int:
    """A private duplicate of ``fd`` for the wire, while ``fd`` itself points at ``diversion``."""
    private = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(diversion, fd)
    finally:
        os.close(diversion)
    return private


@dataclass
class Handover:
    """What the front leaves the SDK's wire: its private ends of stdin and stdout, the
    lines it took (to be given to the SDK first), what it read beyond them, and the
    results it sent, by request id (the SDK's own answers to those are dropped)."""

    wire_in: int
    wire_out: int
    replay: list[bytes] = field(default_factory=list[bytes])
    unread: bytes = b""
    sent: dict[str | int, Json] = field(default_factory=dict[str | int, Json])


class Front:
    """The thread answering from the kept answers until the server takes the wire."""

    def __init__(self, answers: Json) -> None:
        self._initialize = cast(dict[str, Json], answers.get("initialize", {}))
        self._answers = answers
        self._negotiated: str | None = None
        self._stop_r, self._stop_w = os.pipe()
        self.handover = Handover(
            wire_in=_claim(0, os.open(os.devnull, os.O_RDONLY)),
            wire_out=_claim(1, os.dup(2)),
        )
        self._thread = threading.Thread(target=self._run, name="quick-start", daemon=True)
        self._thread.start()

    def hand_over(self) -> Handover:
        """Stop answering; what the SDK needs to carry on exactly where the front stopped."""
        os.write(self._stop_w, b"x")
        self._thread.join()
        os.close(self._stop_r)
        os.close(self._stop_w)
        return self.handover

    def _run(self) -> None:
        buffer = b""
        try:
            while True:
                ready, _, _ = select.select([self.handover.wire_in, self._stop_r], [], [])
                if self._stop_r in ready:
                    break
                chunk = os.read(self.handover.wire_in, 65536)
                if not chunk:
                    break  # the client closed stdin; the SDK sees the end after the rest
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line, buffer = buffer[: end + 1], buffer[end + 1 :]
                    if not self._take(line):
                        buffer = line + buffer
                        return
        except OSError as exc:  # the SDK's wire meets the same fault and reports it
            log.debug("quick start stopped: %s", exc)
        finally:
            self.handover.unread = buffer

    def _take(self, line: bytes) -> bool:
        """Answer or note ``line``; False when it is for the SDK (and so is all after it)."""
        try:
            message: Any = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or cast(Json, message).get("jsonrpc") != "2.0":
            return False
        message = cast(Json, message)
        if not set(message) <= _ENVELOPE:
            return False
        method, params = message.get("method"), message.get("params")
        ident = message.get("id")
        if "id" not in message:
            if method == "notifications/initialized" and self._negotiated and params in (None, {}):
                self.handover.replay.append(line)
                return True
            return False
        if isinstance(ident, bool) or not isinstance(ident, str | int):
            return False
        if ident in self.handover.sent:
            return False
        result: Json | None = None
        if method == "initialize" and self._negotiated is None:
            result = self._initialize_result(params)
        elif method in KEPT and self._negotiated and params in (None, {}):
            result = cast(dict[str, Json], self._answers.get(method, {})).get(self._negotiated)
        if result is None:
            return False
        answer = {"jsonrpc": "2.0", "id": ident, "result": result}
        data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        self._write(data + b"\n")
        self.handover.replay.append(line)
        self.handover.sent[ident] = result
        if method == "initialize":
            self._negotiated = str(result["protocolVersion"])
        return True

    def _initialize_result(self, params: Any) -> Json | None:
        if not isinstance(params, dict):
            return None
        params = cast(Json, params)
        info, capabilities = params.get("clientInfo"), params.get("capabilities")
        if not (
            set(params) <= _INIT_PARAMS
            and isinstance(capabilities, dict)
            and isinstance(info, dict)
            and isinstance(cast(Json, info).get("name"), str)
            and isinstance(cast(Json, info).get("version"), str)
        ):
            return None
        return self._initialize.get(str(params.get("protocolVersion")))

    def _write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.handover.wire_out, view) :]


class Launch:
    """One ``serve`` launch's quick-start file: read before anything is imported, written
    from the answers the SDK gives once it serves."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = list(argv)
        self._where = [os.getcwd(), sys.executable]
        named = json.dumps([FORMAT, _unsecret(self._argv), self._where]).encode()
        name = hashlib.sha256(named).hexdigest()
        self.path = os.path.join(cache_dir(), name[:32] + ".json")
        self._kept: Json | None = None  # the file as read, when it still holds
        self._answers: Json = {"initialize": {}}
        self._env_names: list[str] = []
        self.front: Front | None = None

    @classmethod
    def start(cls, argv: list[str]) -> Launch | None:
        """The launch for ``argv``, answering already when an earlier one kept its answers;
        None when the quick start is turned off (nothing is read or kept)."""
        if os.environ.get(OFF_ENV, "").strip().lower() in ("off", "0", "false", "no"):
            return None
        launch = cls(argv)
        kept = launch._read()
        if kept is not None:
            launch._kept = kept
            launch._answers = cast(Json, kept["answers"])
            launch._env_names = cast(list[str], kept["env_names"])
            if launch._answers.get("initialize") and _watchable(0) and _watchable(1):
                launch.front = Front(launch._answers)
        return launch

    def _read(self) -> Json | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                kept: Any = json.load(f)
        except (OSError, ValueError):
            return None
        if not isinstance(kept, dict):
            return None
        kept = cast(Json, kept)
        try:
            holds = (
                kept["format"] == FORMAT
                and kept["key"] == self._key(kept["env_names"], bytes.fromhex(kept["salt"]))
                and kept["files"] == file_stamps(kept["files"])
                and kept["source"] == source_stamp()
                and isinstance(kept["answers"], dict)
            )
        except (KeyError, TypeError, ValueError):
            return None
        return kept if holds else None

    def _key(self, env_names: Iterable[str], salt: bytes) -> str:
        """What the answers depend on besides the code: the command line, where it runs,
        the interpreter, the settings' variables and ``.env``. Salted, for the command line
        and the variables may hold secrets (a token, a password)."""
        material: list[Any] = [FORMAT, self._argv, self._where, sys.version, _dotenv()]
        material.append(_environment(env_names))
        text = json.dumps(material, ensure_ascii=False).encode("utf-8", "surrogateescape")
        return hashlib.sha256(salt + text).hexdigest()

    def hand_over(self) -> Handover | None:
        front, self.front = self.front, None
        return front.hand_over() if front is not None else None

    def abandon(self) -> None:
        """Stop the front (if it runs) and give fds 0 and 1 back, as they were."""
        handover = self.hand_over()
        if handover is not None:
            for fd, private in ((0, handover.wire_in), (1, handover.wire_out)):
                with contextlib.suppress(OSError):
                    os.dup2(private, fd)
                    os.close(private)

    def configure(self, env_names: Iterable[str]) -> None:
        """The variables besides our prefix that the settings read (from config.py)."""
        self._env_names = sorted({n.upper() for n in env_names})

    def record(self, method: str, version: str, result: Json, libraries: Iterable[str]) -> None:
        """Keep ``result``, the SDK's answer to ``method`` at ``version``; written at once
        when it differs from what was kept. ``libraries`` are files whose change (an
        upgrade) makes the kept answers stale."""
        answers = cast(dict[str, Json], self._answers.setdefault(method, {}))
        if answers.get(version) == result and self._kept is not None:
            return
        answers[version] = result
        salt = os.urandom(16)
        entry: Json = {
            "format": FORMAT,
            "salt": salt.hex(),
            "key": self._key(self._env_names, salt),
            "env_names": self._env_names,
            "files": file_stamps(sorted(set(libraries))),
            "source": source_stamp(),
            "answers": self._answers,
        }
        try:
            self._write(entry)
        except OSError as exc:
            log.debug("could not keep the quick-start answers in %s: %s", self.path, exc)
            return
        self._kept = entry

    def _write(self, entry: Json) -> None:
        folder = os.path.dirname(self.path)
        os.makedirs(folder, exist_ok=True)
        partial = f"{self.path}.{os.getpid()}.partial"
        # Only its owner reads it (what it holds is public; its key is not for others).
        descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with open(descriptor, "w", encoding="utf-8") as f:
            json.dump(entry, f, ensure_ascii=False, separators=(",", ":"))
        os.replace(partial, self.path)
        kept = sorted(
            (os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".json")),
            key=lambda p: os.stat(p).st_mtime_ns,
        )
        for old in kept[:-KEPT_FILES]:
            with contextlib.suppress(OSError):
                os.unlink(old)
