"""The quick start over stdio: the first answers while the rest of the server loads.

A stdio client launches the server afresh every time and waits for its first
answers (``initialize``, or a 2026 client's ``server/discover`` and the
acknowledgement of its list-change stream), then the listings; the MCP SDK alone
takes longer to import than the whole reference server takes to answer. Those
answers depend only on the command line, the settings' environment, the code, the
libraries and the request's own parameters, so a launch keeps the answers the SDK
gave (a file per command line, in the user cache directory), and the next launch
with the same command line, environment, ``.env``, code and libraries gives them
from that file, on a thread, while the main thread imports the SDK and builds the
server.

This module imports nothing beyond the standard library, and runs before anything
else is imported. It answers a request only when it was kept for exactly the same
parameters, in the same state of the connection (``Conversation``: the era the
first request opened, and on a handshake connection the version its first
``initialize`` negotiated, which the front must have answered itself). Every other
message waits for the SDK. When the server is ready (``hand_over``), every line
the front read goes to the SDK first, in order, so its session is in the state the
client believes; the SDK's answers to what the front answered are compared with
what it sent and dropped (stdio.py). A difference is logged and the file
rewritten, so a stale file is wrong for one launch at most.

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
from typing import Any, Final, TypeGuard, cast

log = logging.getLogger(__name__)

FORMAT: Final = 2
ENV_PREFIX: Final = "KENNING_ENCOUNTER_"
OFF_ENV: Final = ENV_PREFIX + "QUICK_START"
CACHE_ENV: Final = ENV_PREFIX + "CACHE_DIR"
SECRET_FLAGS: Final = frozenset({"--token", "--neo4j-password"})
KEPT_FILES: Final = 64  # one per command line; the oldest go first
_PACKAGE: Final = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_ENVELOPE: Final = frozenset({"jsonrpc", "id", "method", "params"})
MODERN_VERSION_KEY: Final = "io.modelcontextprotocol/protocolVersion"
# A 2026 client opens a stream of list-change notices first (Claude Code waits for its
# acknowledgement before it lists anything): the front sends the acknowledgement the
# SDK sent for the same request, and the stream itself is the SDK's to serve.
LISTEN: Final = "subscriptions/listen"
ACKNOWLEDGED: Final = "notifications/subscriptions/acknowledged"
SUBSCRIPTION_KEY: Final = "io.modelcontextprotocol/subscriptionId"
# What a client asks first, answered alike every time for one server and the same
# parameters: the handshake or discovery, and the listings of what it was built with.
KEPT: Final = frozenset(
    {
        "initialize",
        "server/discover",
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
        "ping",
        LISTEN,
    }
)
KEPT_ANSWERS: Final = 64  # per file; a client whose parameters changed leaves old ones
# The SDK's wire skips a line this long (stdio.py), and its reader refuses values nested
# about 200 deep, which json reads: a line past either, or one holding an answer's member
# besides a method (the reader may take it for a client's answer), the front cannot be
# sure the SDK reads as it does, so it answers nothing more (see Front._doubtful).
MAX_LINE: Final = 64 * 1024 * 1024
TRUSTED_DEPTH: Final = 100

Json = dict[str, Any]


def cache_root() -> str:
    """Our folder in the platform's user cache directory (``KENNING_ENCOUNTER_CACHE_DIR``
    moves it)."""
    chosen = os.environ.get(CACHE_ENV)
    if chosen:
        return os.path.expanduser(chosen)
    if sys.platform == "darwin":
        base = os.path.expanduser("~/Library/Caches")
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return os.path.join(base, "kenning-encounter")


def cache_dir() -> str:
    """Where the quick-start files live."""
    return os.path.join(cache_root(), "quick-start")


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


def watchable(fd: int) -> bool:
    """Whether ``fd`` is a pipe or a socket, which a thread may wait on."""
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


def _canonical(params: Any) -> str:
    return json.dumps(params, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def _enveloped(params: Any) -> bool:
    meta = cast(Json, params).get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and MODERN_VERSION_KEY in meta


@dataclass(frozen=True)
class Asked:
    """A request whose answer may be kept: its era, method and exact parameters."""

    era: str  # "modern" | "legacy"
    method: str
    params: str  # canonical JSON
    first_initialize: bool = False


class Conversation:
    """What the answers to one connection's requests depend on beyond their parameters,
    followed as the SDK follows it (mcp.server.runner.serve_dual_era_loop): the era the
    first request opens (a 2026-era ``_meta`` envelope on anything but ``initialize``
    opens a modern connection, whose requests each stand alone; anything else the
    handshake), and on a handshake connection the version its first ``initialize``
    negotiated. The front and the SDK's wire (stdio.py) each keep one, so they key
    answers alike."""

    def __init__(self) -> None:
        self._era: str | None = None
        self._initialize_asked = False
        self.negotiated: str | None = None

    def ask(self, method: str, params: Any, ident: str | int) -> Asked | None:
        """Follow a request (every one, in order); what its kept answer is keyed by (a
        stream's acknowledgement names the request, so its key holds the id too)."""
        if self._era is None:
            self._era = "modern" if method != "initialize" and _enveloped(params) else "legacy"
        first = False
        if self._era == "legacy" and method == "initialize":
            first, self._initialize_asked = not self._initialize_asked, True
        if method not in KEPT:
            return None
        if method == LISTEN:
            return Asked(self._era, method, _canonical({"id": ident, "params": params}))
        return Asked(self._era, method, _canonical(params), first)

    def key(self, asked: Asked) -> str | None:
        if asked.era == "modern":
            return f"modern {asked.method} {asked.params}"
        if asked.method == "initialize":
            return f"legacy initialize {asked.params}" if asked.first_initialize else None
        if self.negotiated is None:  # before the handshake, or after one the front missed
            return None
        return f"legacy {self.negotiated} {asked.method} {asked.params}"

    def answered(self, asked: Asked, payload: Json) -> None:
        result = payload.get("result")
        if asked.first_initialize and isinstance(result, dict):
            self.negotiated = str(cast(Json, result).get("protocolVersion"))


def _read_as_request(message: Any) -> bool:
    """Whether the SDK's reader (mcp_types.JSONRPCRequest) takes ``message`` for a request:
    members it does not know are ignored there, and params must be an object if given."""
    if not isinstance(message, dict):
        return False
    message = cast(Json, message)
    ident, params = message.get("id"), message.get("params")
    return (
        message.get("jsonrpc") == "2.0"
        and isinstance(ident, str | int)
        and not isinstance(ident, bool)
        and isinstance(message.get("method"), str)
        and (params is None or isinstance(params, dict))
    )


def _doubtful(line: bytes, message: Any) -> bool:
    """Whether the SDK's reader may take ``message`` otherwise than the front would: nested
    deeper than the front trusts it to read alike, or a request holding a member of an
    answer (its union reader scores the shapes by the members they hold, nested ones too)."""
    if line.count(b"[") + line.count(b"{") > TRUSTED_DEPTH and _depth(message) > TRUSTED_DEPTH:
        return True
    return (
        isinstance(message, dict)
        and "method" in message
        and not message.keys().isdisjoint(("result", "error"))
    )


def _depth(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (a bare value: 0)."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            depth += 1
            deepest = max(deepest, depth)
            inner = cast(Json, item).values() if isinstance(item, dict) else cast(list[Any], item)
            stack.extend((v, depth) for v in inner if isinstance(v, dict | list))
    return deepest


@dataclass
class Handover:
    """What the front leaves the SDK's wire: its private ends of stdin and stdout, every
    line it read (the SDK gets them all, in order), what it read beyond the last whole
    line, what of its answers the client had not taken yet (written first), and what it
    answered, by request id (the SDK's own answers to those are compared and dropped)."""

    wire_in: int
    wire_out: int
    replay: list[bytes] = field(default_factory=list[bytes])
    unread: bytes = b""
    unsent: bytes = b""
    sent: dict[str | int, Json] = field(default_factory=dict[str | int, Json])
    acknowledged: dict[str | int, Json] = field(default_factory=dict[str | int, Json])


class Front:
    """The thread answering from the kept answers until the server takes the wire.

    It never waits on stdout: a client may send everything before it reads an answer,
    and a front that stopped reading while its answers filled the pipe would wait on that
    client forever. What the pipe does not take yet is kept, written as it drains, and
    handed over unsent."""

    def __init__(self, answers: Json) -> None:
        self._answers = answers
        self._conversation = Conversation()
        self._ids: set[str | int] = set()  # of the requests read
        self._quiet = False  # a line the SDK may read otherwise came: the SDK answers all
        self._out = bytearray()  # answers the stdout pipe has not taken yet
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
        wire_in, wire_out = self.handover.wire_in, self.handover.wire_out
        buffer = bytearray()
        scanned = 0  # of buffer, holding no newline
        ended = False  # the client closed stdin; the SDK sees the end after the rest
        try:
            os.set_blocking(wire_out, False)
            while not (ended and not self._out):
                reading = [self._stop_r] if ended else [wire_in, self._stop_r]
                ready, writable, _ = select.select(reading, [wire_out] if self._out else [], [])
                if self._stop_r in ready:
                    break
                if writable:
                    self._flush()
                if wire_in not in ready:
                    continue
                chunk = os.read(wire_in, 65536)
                ended = not chunk
                buffer += chunk
                while (end := buffer.find(b"\n", scanned)) >= 0:
                    line = bytes(buffer[: end + 1])
                    del buffer[: end + 1]
                    scanned = 0
                    self.handover.replay.append(line)
                    self._take(line)
                scanned = len(buffer)
        except OSError as exc:  # the SDK's wire meets the same fault and reports it
            log.debug("quick start stopped: %s", exc)
        finally:
            self.handover.unread = bytes(buffer)
            self.handover.unsent = bytes(self._out)
            with contextlib.suppress(OSError):
                os.set_blocking(wire_out, True)

    def _take(self, line: bytes) -> None:
        """Answer ``line`` when it is a request whose answer is kept; the SDK answers the rest
        (and any line that is not a well-formed request) when it takes over.

        The front follows the connection's era and handshake through exactly the lines
        the SDK reads as requests (``_read_as_request``), for a line it follows and the
        SDK does not (or the other way round) would set the two in different eras."""
        if self._quiet:
            return
        if len(line) >= MAX_LINE:
            self._quiet = True
            return
        try:
            # Only UTF-8, as the SDK's reader: json alone takes a byte-order mark, UTF-16.
            message: Any = json.loads(line.decode("utf-8"))
            # The SDK's reader refuses a lone surrogate escape, which json takes.
            json.dumps(message, ensure_ascii=False).encode("utf-8")
        except (ValueError, RecursionError):
            return
        if _doubtful(line, message):
            self._quiet = True
            return
        if not _read_as_request(message):
            return
        message = cast(Json, message)
        ident, method = cast(str | int, message["id"]), cast(str, message["method"])
        # An id read before may name a request still unanswered (a client's fault): the
        # answers could not be told apart, so the SDK answers every request under it.
        repeated = ident in self._ids
        self._ids.add(ident)
        asked = self._conversation.ask(method, message.get("params"), ident)
        key = self._conversation.key(asked) if asked is not None else None
        payload = cast(Json | None, self._answers.get(key)) if key is not None else None
        if asked is None or payload is None or repeated or not set(message) <= _ENVELOPE:
            return
        if method == LISTEN:
            if "notification" in payload and ident not in self.handover.acknowledged:
                notice = {"jsonrpc": "2.0", **cast(Json, payload["notification"])}
                data = json.dumps(notice, ensure_ascii=False, separators=(",", ":")).encode()
                self._write(data + b"\n")
                self.handover.acknowledged[ident] = payload
            return
        answer = {"jsonrpc": "2.0", "id": ident, **payload}
        data = json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode()
        self._write(data + b"\n")
        self.handover.sent[ident] = payload
        self._conversation.answered(asked, payload)

    def _write(self, data: bytes) -> None:
        self._out += data
        self._flush()

    def _flush(self) -> None:
        """Write what the pipe takes now, without waiting."""
        while self._out:
            try:
                written = os.write(self.handover.wire_out, self._out)
            except BlockingIOError:
                return
            del self._out[:written]


def _well_formed(kept: Any) -> TypeGuard[Json]:
    """Whether ``kept`` has the shape ``Launch.record`` writes: a damaged file (or one of
    another version) is no reason to stop a start, nor to end the front with a traceback."""
    if not isinstance(kept, dict) or cast(Json, kept).get("format") != FORMAT:
        return False
    kept = cast(Json, kept)
    names, files, answers = kept.get("env_names"), kept.get("files"), kept.get("answers")
    return (
        all(isinstance(kept.get(k), str) for k in ("salt", "key", "source"))
        and isinstance(names, list)
        and all(isinstance(n, str) for n in cast(list[Any], names))
        and isinstance(files, dict)
        and isinstance(answers, dict)
        and all(_answer_shaped(a) for a in cast(Json, answers).values())
    )


def _answer_shaped(answer: Any) -> bool:
    """A kept answer: an object, whose acknowledgement (when it holds one) is an object."""
    return isinstance(answer, dict) and isinstance(cast(Json, answer).get("notification", {}), dict)


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
        self._answers: Json = {}
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
            if launch._answers and watchable(0) and watchable(1):
                launch.front = Front(launch._answers)
        return launch

    def _read(self) -> Json | None:
        try:
            with open(self.path, encoding="utf-8") as f:
                kept: Any = json.load(f)
        except (OSError, ValueError):
            return None
        if not _well_formed(kept):
            return None
        try:  # a salt that is no hex, a file name holding a NUL
            holds = (
                kept["key"] == self._key(kept["env_names"], bytes.fromhex(kept["salt"]))
                and kept["files"] == file_stamps(kept["files"])
                and kept["source"] == source_stamp()
            )
        except ValueError:
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
        if front is None:
            return None
        handover = front.hand_over()
        log.debug(
            "the quick start answered %d of %d message(s) before the server took over",
            len(handover.sent),
            len(handover.replay),
        )
        return handover

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

    def record(self, key: str, payload: Json, libraries: Iterable[str]) -> None:
        """Keep ``payload`` (``result`` or ``error``), the SDK's answer to the request
        ``key`` names; written at once when it differs from what was kept. ``libraries``
        are files whose change (an upgrade) makes the kept answers stale."""
        if self._answers.get(key) == payload and self._kept is not None:
            return
        self._answers.pop(key, None)
        self._answers[key] = payload
        for old in list(self._answers)[:-KEPT_ANSWERS]:
            del self._answers[old]
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
