"""Claude Code hook client for kenning-encounter: one process per hook event.

Standard library only and Python 3.9+, because Claude Code runs it with
whatever ``python3`` the machine has, outside any virtual environment::

    python3 -S infuse_hook.py --mode prompt|session-start|session-end
            [--url URL] [--timeout SECONDS] [--turns N]

Modes
  prompt         UserPromptSubmit. Sends the typed prompt and the previous N
                 genuine user turns (read from the transcript's tail only) to
                 ``POST {url}/infuse`` and injects the payload it answers.
  session-start  SessionStart. ``POST {url}/session-start``; injects the context
                 the server composes (the session_id the agent passes to the
                 memory tools, and a re-entry note).
  session-end    SessionEnd. ``POST {url}/session-end`` so the server can seal;
                 fire-and-forget, prints nothing.

Contract with Claude Code: the exit status is always 0 (never 2, which would
block the prompt), stdout carries at most one JSON object, diagnostics go to
stderr only when KENNING_ENCOUNTER_HOOK_DEBUG=1. Unknown or malformed
arguments (a settings file written by another version) leave the hook silent.

Environment
  KENNING_ENCOUNTER_INFUSE        auto (default) | on | off. Governs prompt mode
                                  only: auto infuses the prompts a person types
                                  on an interactive surface (CLAUDE_CODE_ENTRYPOINT
                                  names the terminal CLI, an IDE extension, the
                                  desktop app or a remote session) and stays off
                                  for programmatic ones (the SDKs, -p, MCP, CI);
                                  on always; off never. When prompts are not
                                  infused, SessionStart says so once. SessionStart
                                  and SessionEnd are not gated: an agent needs its
                                  session_id to use the memory tools at all.
  KENNING_ENCOUNTER_INFUSE_COLD   1 to ask for cold nodes too (unused for 3 to 8
                                  half-lives of the memory's work), which
                                  infusion leaves out by default
  KENNING_ENCOUNTER_URL           server base URL (default http://127.0.0.1:8765)
  KENNING_ENCOUNTER_TOKEN         sent as ``Authorization: Bearer`` when set
  KENNING_ENCOUNTER_HOOK_TIMEOUT  seconds for the whole run: stdin, transcript,
                                  connect and answer (default 2.5); the server is
                                  told how long it has, and answers within it
  KENNING_ENCOUNTER_HOOK_DEBUG    1 to write diagnostics to stderr
  XDG_STATE_HOME                  where session handles are kept (default
                                  ~/.local/state): kenning-encounter/handles/,
                                  one 0600 file per session

Session handles
  A session is held, not named: writing as it, sealing it and taking its
  infusions need its handle, which the server hands out at SessionStart while
  the session is unused. The hook keeps it in a file only its user can read,
  sends it on every later event of the session (a --resume included), and
  gives it to the agent in the SessionStart context.

What the prompt hook prints (the decision on degraded channels)
  - non-empty payload: the payload as additionalContext; when the server says
    meta.degraded, one short line first naming the channel and the reason.
  - status "silent" (nothing held bears on the prompt): nothing. Silence from a
    working fallback is still an honest answer; a line on every quiet prompt
    is noise.
  - status "failed" (the memory could not infuse), server unreachable, too
    slow, non-200 or an unreadable answer: one line saying so and that the
    turn runs without infusion; never silence, so a broken memory is never
    mistaken for an empty one.
  - the payload is cut at the server's hard cap, whatever the server sent, and
    all it prints is bounded, free of control characters (a terminal would act
    on them), of lone surrogates (the model's API refuses a conversation
    holding one) and of tags that open or close the <system-reminder> Claude
    Code wraps it in (their "<" shows as "&lt;"). It is one JSON object, so no
    text inside it can become a field Claude Code acts on (a "decision" or
    "continue").

Startup time is most of this hook's cost, so it avoids modules that import
slowly (``logging``, ``typing``, ``urllib``, ``http.client``, which pulls in the
email package) and speaks the little HTTP/1.1 it needs over a socket; the
installer registers it with ``python3 -S`` to skip site-packages processing.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import socket
import stat
import sys
import time
from collections.abc import Iterator, Mapping

DEFAULT_URL = "http://127.0.0.1:8765"
DEFAULT_TIMEOUT = 2.5
DEFAULT_TURNS = 6
MODES = ("prompt", "session-start", "session-end")

# The server's hard cap on a payload; a longer answer is cut here too.
PAYLOAD_CAP = 9000
# Most bytes read from stdin and from the server: a hook event and an answer are small.
MAX_STDIN_BYTES = 4 * 1024 * 1024
MAX_ANSWER_BYTES = 1024 * 1024
# Time kept back from the server's deadline for our own parsing and printing.
DEADLINE_MARGIN = 0.15

# CLAUDE_CODE_ENTRYPOINT values where a person types the prompts: the
# terminal, the IDE extensions, the desktop app and remote sessions.
INTERACTIVE_ENTRYPOINTS = frozenset(
    {
        "cli",
        "claude-vscode",
        "claude-jetbrains",
        "claude-desktop",
        "claude-desktop-3p",
        "local-agent",
        "remote",
        "remote_baku",
        "remote_cowork",
        "remote_desktop",
        "remote_mobile",
        "remote_projects",
        "claude-in-slack",
        "claude_in_slack",
        "claude-in-teams",
        "claude-coworker",
        "claude-coworker-terminal",
        "ssh-remote",
    }
)

# The transcript is read backwards in growing blocks and never beyond this,
# so a transcript of any size costs at most a few milliseconds.
FIRST_BLOCK = 64 * 1024
MAX_TAIL_BYTES = 4 * 1024 * 1024

TURN_CHARS = 2000
# The server takes at most this many turns (server/routes.py, InfuseIn.trajectory).
MAX_TURNS = 200
# All turns together: at most six bytes a character on the wire (a control
# character's \u escape), so prompt, turns and fields stay under the server's
# one-megabyte body bound (server/routes.py, MAX_BODY) whatever they hold.
TRAJECTORY_CHARS = 100_000
# A pasted log must not turn the request into megabytes.
PROMPT_CHARS = 16000
# Event fields passed through as they are (cwd, source, reason); longer ones are dropped.
FIELD_CHARS = 4096
REASON_CHARS = 200
# Everything one event prints: the capped payload plus room for a status line.
CONTEXT_CAP = PAYLOAD_CAP + 1000
# Sealing is quick; a closing Claude Code should not wait on a dead server.
SESSION_END_TIMEOUT = 1.0

# Lines whose text starts like this are harness traffic, not something the user typed.
NOT_TYPED_PREFIXES = (
    "<command-name>",
    "<command-message>",
    "<command-args>",
    "<local-command-stdout>",
    "<local-command-stderr>",
    "<bash-input>",
    "<bash-stdout>",
    "<bash-stderr>",
    "<user-prompt-submit-hook>",
    "[Request interrupted by user",
    "Caveat: The messages below were generated by the user while running local commands",
)
REMINDER_OPEN = "<system-reminder>"
REMINDER_CLOSE = "</system-reminder>"


class Options:
    def __init__(self, mode: str, url: str, timeout: float, turns: int) -> None:
        self.mode = mode
        self.url = url
        self.timeout = timeout
        self.turns = turns
        # One deadline bounds the whole run, from the moment the options exist.
        self.deadline = time.monotonic() + timeout


class HookFailure(Exception):
    """The server could not be used; ``kind`` is unreachable, timeout, bad, failed or
    setting (a setting of ours no request can carry)."""

    def __init__(self, kind: str, detail: str = "") -> None:
        super().__init__(f"{kind}: {detail}" if detail else kind)
        self.kind = kind
        self.detail = detail


def debug(env: Mapping[str, str], message: str) -> None:
    if env.get("KENNING_ENCOUNTER_HOOK_DEBUG") == "1":
        sys.stderr.write(f"kenning-encounter hook: {printable(message)}\n")


# ---------------------------------------------------------------- arguments


def parse_args(argv: list[str], env: Mapping[str, str]) -> Options | None:
    """The options, or None when any argument is unknown or malformed."""
    values: dict[str, str] = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if not arg.startswith("--"):
            return None
        name, eq, inline = arg[2:].partition("=")
        if name not in ("mode", "url", "timeout", "turns") or name in values:
            return None
        if eq:
            values[name] = inline
        elif i + 1 < len(argv):
            i += 1
            values[name] = argv[i]
        else:
            return None
        i += 1

    mode = values.get("mode", "prompt")
    url = (values.get("url") or env.get("KENNING_ENCOUNTER_URL") or DEFAULT_URL).strip()
    # A bad --url is the installed command's own (silent, as any bad argument); a bad
    # KENNING_ENCOUNTER_URL is a person's setting, and the failed channel it makes is
    # stated at the request like any other (post_json).
    if mode not in MODES or ("url" in values and split_url(url) is None):
        return None
    if "timeout" in values:
        timeout = positive_float(values["timeout"])
        if timeout is None:
            return None
    else:
        timeout = positive_float(env.get("KENNING_ENCOUNTER_HOOK_TIMEOUT", "")) or DEFAULT_TIMEOUT
    turns = DEFAULT_TURNS
    if "turns" in values:
        try:
            turns = int(values["turns"])
        except ValueError:
            return None
        if turns < 0:
            return None
    return Options(mode, url, timeout, min(turns, MAX_TURNS))


def positive_float(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    # NaN fails both comparisons.
    if not 0 < value < 3600:
        return None
    return value


def split_url(url: str) -> tuple[str, str, int, str] | None:
    """(scheme, host, port, path prefix) of an http(s) base URL, or None."""
    # A space or control character would end up in the request line (a CR LF there
    # writes headers of its own); no usable URL holds one.
    if any(ch <= " " or ch == "\x7f" for ch in url):
        return None
    scheme, sep, rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in ("http", "https"):
        return None
    authority, slash, path = rest.partition("/")
    prefix = ("/" + path).rstrip("/") if slash else ""
    # The MCP endpoint's URL is a natural thing to paste here; the hook
    # endpoints live beside it.
    if prefix.endswith("/mcp"):
        prefix = prefix[: -len("/mcp")]
    if "@" in authority or not authority:
        return None
    port_text = ""
    if authority.startswith("["):
        host, bracket, tail = authority[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            return None
        port_text = tail[1:]
    else:
        host, _, port_text = authority.partition(":")
    if not host:
        return None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()) or not 0 < int(port_text) < 65536:
            return None
        port = int(port_text)
    else:
        port = 443 if scheme == "https" else 80
    return scheme, host, port, prefix


def gate(env: Mapping[str, str]) -> str | None:
    """None when typed prompts are infused; otherwise why they are not."""
    setting = env.get("KENNING_ENCOUNTER_INFUSE", "auto").strip().lower()
    if setting == "off":
        return "KENNING_ENCOUNTER_INFUSE=off"
    if setting == "on":
        return None
    entrypoint = env.get("CLAUDE_CODE_ENTRYPOINT", "")
    if entrypoint in INTERACTIVE_ENTRYPOINTS:
        return None
    where = f"entrypoint {entrypoint}" if entrypoint else "no CLAUDE_CODE_ENTRYPOINT"
    return f"{where} is not a surface where a person types prompts"


def gate_notice(env: Mapping[str, str]) -> str | None:
    """The one line SessionStart adds when prompts will not be infused."""
    why = gate(env)
    if why is None:
        return None
    fix = (
        "set KENNING_ENCOUNTER_INFUSE=on to infuse every prompt"
        if why != "KENNING_ENCOUNTER_INFUSE=off"
        else "unset it to infuse typed prompts"
    )
    return f"[kenning-encounter: prompt infusion is off for this session ({why}); {fix}]"


# --------------------------------------------------------------- transcript


def open_regular(path: str) -> int:
    """A descriptor of a regular file; a FIFO, device or socket is never read.

    O_NONBLOCK keeps the open itself from waiting on a FIFO with no writer.
    """
    flags = os.O_RDONLY
    flags |= getattr(os, "O_NONBLOCK", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"not a regular file: {path}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def lines_backwards(path: str, deadline: float | None = None) -> Iterator[bytes]:
    """Complete lines of a file, newest first, from its last MAX_TAIL_BYTES only."""
    with os.fdopen(open_regular(path), "rb") as handle:
        pos = handle.seek(0, os.SEEK_END)
        block = FIRST_BLOCK
        consumed = 0
        carry = b""
        while pos > 0 and consumed < MAX_TAIL_BYTES:
            if deadline is not None and time.monotonic() >= deadline:
                return
            size = min(block, pos, MAX_TAIL_BYTES - consumed)
            pos -= size
            handle.seek(pos)
            pieces = (handle.read(size) + carry).split(b"\n")
            consumed += size
            # The first piece may be the end of a line that starts further back.
            carry = pieces[0]
            for line in reversed(pieces[1:]):
                if line.strip():
                    yield line
            block *= 2
        if pos == 0 and carry.strip():
            yield carry


def strip_reminders(text: str) -> str:
    start = text.find(REMINDER_OPEN)
    while start != -1:
        end = text.find(REMINDER_CLOSE, start)
        if end == -1:
            return text[:start]
        text = text[:start] + text[end + len(REMINDER_CLOSE) :]
        start = text.find(REMINDER_OPEN, start)
    return text


def typed_text(record: object) -> str | None:
    """The text of a transcript record if it is a turn the user typed."""
    if not isinstance(record, dict) or record.get("type") != "user":
        return None
    if any(record.get(flag) is True for flag in ("isSidechain", "isMeta", "isCompactSummary")):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") != "user":
        return None
    content = message.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        parts = [
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        ]
        # A list made only of tool results (or images) is not a typed turn.
        if not parts:
            return None
        text = "\n".join(parts)
    else:
        return None
    text = strip_reminders(text).strip()
    if not text or text.startswith(NOT_TYPED_PREFIXES):
        return None
    return text


def clip(text: str, limit: int) -> str:
    """Keep the head and the tail: a question often follows what was pasted."""
    if len(text) <= limit:
        return text
    tail = limit // 4
    return text[: limit - tail - 3] + "\n…\n" + text[-tail:]


def trajectory(path: str, prompt: str, turns: int, deadline: float | None = None) -> list[str]:
    """The previous ``turns`` typed turns, oldest first, without the current prompt."""
    if turns == 0 or not path:
        return []
    newest_first: list[str] = []
    for line in lines_backwards(os.path.expanduser(path), deadline):
        # Cheap test before parsing: every typed turn carries this token.
        if b'"user"' not in line:
            continue
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            continue
        text = typed_text(record)
        if text is None:
            continue
        newest_first.append(text)
        # One extra, in case the transcript already holds the current prompt.
        if len(newest_first) > turns:
            break
    if newest_first and newest_first[0] == strip_reminders(prompt).strip():
        newest_first.pop(0)
    kept: list[str] = []
    room = TRAJECTORY_CHARS
    # Newest first, so the oldest turns are the ones a full budget leaves out.
    for text in newest_first[:turns]:
        clipped = clip(text, TURN_CHARS)
        room -= len(clipped)
        if room < 0:
            break
        kept.append(clipped)
    return kept[::-1]


# --------------------------------------------------------------------- HTTP


def post_json(
    options: Options, route: str, body: object, env: Mapping[str, str], timeout: float
) -> object:
    """POST ``body`` to the server; the decoded 200 answer, else HookFailure.

    ``timeout`` may shorten the run's deadline, never extend it.
    """
    parts = split_url(options.url)
    if parts is None:
        # Not quoted: it may carry credentials, and this line goes into the context.
        raise HookFailure(
            "setting",
            "KENNING_ENCOUNTER_URL is not a usable http(s) address (no credentials, spaces "
            "or control characters); set it to the server's, e.g. " + DEFAULT_URL,
        )
    scheme, host, port, prefix = parts
    deadline = min(options.deadline, time.monotonic() + timeout)
    # UTF-8 rather than \u escapes: a third of the size for most text. A lone
    # surrogate (JSON can escape half a pair; a JavaScript string cut mid-pair
    # holds one) becomes "?": the server refuses a string holding one.
    payload = json.dumps(body, ensure_ascii=False).encode("utf-8", "replace")
    head = [
        f"POST {prefix}{route} HTTP/1.1",
        f"Host: [{host}]:{port}" if ":" in host else f"Host: {host}:{port}",
        "Content-Type: application/json",
        "Accept: application/json",
        f"Content-Length: {len(payload)}",
        "Connection: close",
        "User-Agent: kenning-encounter-hook",
    ]
    token = env.get("KENNING_ENCOUNTER_TOKEN")
    if token:
        # A line break would end the header and start another (a CRLF file's "\r" too).
        if any(ch < " " or ch == "\x7f" for ch in token):
            raise HookFailure(
                "setting",
                "KENNING_ENCOUNTER_TOKEN holds a line break or other control character; "
                "set it to the token alone",
            )
        head.append(f"Authorization: Bearer {token}")
    request = ("\r\n".join(head) + "\r\n\r\n").encode("latin-1", "replace") + payload

    try:
        sock = connect(host, port, deadline)
    # On Python 3.9 socket.timeout is not yet the builtin TimeoutError.
    except socket.timeout as exc:  # noqa: UP041
        raise HookFailure("timeout") from exc
    # Whatever stops the connection is said, never silent: a host name IDNA cannot
    # encode ("memory..lan", a label past 63 characters) raises UnicodeError, not OSError.
    except Exception as exc:
        raise HookFailure("unreachable", str(exc)) from exc
    try:
        if scheme == "https":
            # Loaded only when asked for: ssl costs more startup than the rest.
            import ssl

            sock = ssl.create_default_context().wrap_socket(sock, server_hostname=host)
        sock.settimeout(remaining(deadline))
        sock.sendall(request)
        raw = receive(sock, deadline)
    except socket.timeout as exc:  # noqa: UP041
        raise HookFailure("timeout") from exc
    except HookFailure:
        raise
    except Exception as exc:  # OSError, or a Python built without ssl
        raise HookFailure("bad", f"connection failed: {exc}") from exc
    finally:
        sock.close()
    return decode_response(raw)


def connect(host: str, port: int, deadline: float) -> socket.socket:
    """A connected socket, name resolution included within the deadline.

    ``socket.create_connection``'s timeout does not reach ``getaddrinfo``: a name
    whose DNS server does not answer would hold the hook for the resolver's own
    retries (tens of seconds), so the lookup runs aside and is waited on only
    until the deadline. ``_thread`` rather than ``threading``: it costs nothing to import.
    """
    import _thread

    # Local annotations are never evaluated: no runtime cost for spelling the type out.
    resolved: list[
        tuple[
            socket.AddressFamily,
            socket.SocketKind,
            int,
            str,
            tuple[str, int] | tuple[str, int, int, int] | tuple[int, bytes],
        ]
    ] = []
    failed: list[BaseException] = []
    done = _thread.allocate_lock()
    done.acquire()

    def lookup() -> None:
        try:
            resolved.extend(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM))
        except BaseException as exc:  # handed to the waiting thread
            failed.append(exc)
        finally:
            done.release()

    _thread.start_new_thread(lookup, ())
    if not done.acquire(timeout=remaining(deadline)):
        raise OSError(f"{host} did not resolve in time")
    if failed:
        raise failed[0]
    error: OSError = OSError(f"{host} resolved to no address")
    for family, kind, proto, _, address in resolved:
        sock = socket.socket(family, kind, proto)
        try:
            sock.settimeout(remaining(deadline))
            sock.connect(address)
        except OSError as exc:
            sock.close()
            # A timeout spent what was left; a refusal leaves it to the next address.
            if isinstance(exc, socket.timeout):
                raise
            error = exc
        else:
            return sock
    raise error


def remaining(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise socket.timeout("deadline passed")  # noqa: UP041
    return left


def receive(sock: socket.socket, deadline: float) -> bytes:
    """Read one response; stops at Content-Length or when the server closes."""
    data = b""
    expected: int | None = None
    while True:
        sock.settimeout(remaining(deadline))
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk
        if len(data) > MAX_ANSWER_BYTES:
            raise HookFailure("bad", "answer too large")
        if expected is None:
            head_end = data.find(b"\r\n\r\n")
            if head_end != -1:
                length = header_value(data[:head_end], b"content-length")
                if length is not None and length.isdigit():
                    expected = head_end + 4 + int(length)
        if expected is not None and len(data) >= expected:
            return data[:expected]


def header_value(head: bytes, name: bytes) -> bytes | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.strip().lower() == name:
            return value.strip()
    return None


def dechunk(body: bytes) -> bytes:
    """A chunked body joined; linear in its size, however small the chunks.

    Indexes into the body rather than slicing off what was read: a megabyte of
    one-byte chunks would otherwise copy the rest of it once a chunk, seconds of work
    after the deadline stopped guarding.
    """
    pieces: list[bytes] = []
    at = 0
    while True:
        line_end = body.find(b"\r\n", at)
        if line_end == -1:
            return b"".join(pieces)
        size = int(body[at:line_end].split(b";")[0].strip() or b"0", 16)
        if size <= 0:
            return b"".join(pieces)
        start = line_end + 2
        pieces.append(body[start : start + size])
        at = start + size + 2


def decode_response(raw: bytes) -> object:
    head_end = raw.find(b"\r\n\r\n")
    if head_end == -1:
        raise HookFailure("bad", "no HTTP response")
    head = raw[:head_end]
    status_line = head.split(b"\r\n", 1)[0].split()
    if len(status_line) < 2 or not status_line[1].isdigit():
        raise HookFailure("bad", "no HTTP status")
    status = int(status_line[1])
    if status in (401, 403):
        raise HookFailure("bad", f"HTTP {status}: check KENNING_ENCOUNTER_TOKEN")
    if status != 200:
        raise HookFailure("bad", f"HTTP {status}")
    body = raw[head_end + 4 :]
    encoding = header_value(head, b"transfer-encoding")
    try:
        if encoding is not None and encoding.lower() == b"chunked":
            body = dechunk(body)
        return json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise HookFailure("bad", "not JSON") from exc


def failure_line(options: Options, failure: HookFailure) -> str:
    if failure.kind == "unreachable":
        what = f"memory server unreachable at {options.url}"
    elif failure.kind == "timeout":
        what = f"memory server at {options.url} did not answer within {options.timeout:g} s"
    elif failure.kind == "failed":
        what = f"memory at {options.url} failed to infuse ({failure.detail})"
    elif failure.kind == "setting":
        what = failure.detail
    else:
        what = f"memory server at {options.url} answered badly ({failure.detail})"
    return f"[kenning-encounter: {what} — running without infusion]"


def one_line(text: object) -> str:
    flat = " ".join(str(text).split())
    return flat[:REASON_CHARS]


# ------------------------------------------------------------------ handles

# Handle files untouched this long belong to sessions nobody will resume.
HANDLE_KEEP_S = 90 * 86400
SAFE_NAME = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def handle_dir(env: Mapping[str, str]) -> str | None:
    base = env.get("XDG_STATE_HOME") or ""
    if not os.path.isabs(base):
        home = env.get("HOME") or ""
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".local", "state")
    return os.path.join(base, "kenning-encounter", "handles")


def handle_path(env: Mapping[str, str], session_id: str) -> str | None:
    folder = handle_dir(env)
    if folder is None:
        return None
    if 0 < len(session_id) <= 120 and set(session_id) <= SAFE_NAME and session_id[0] != ".":
        name = session_id
    else:  # Loaded only for an unusual id: hashlib costs startup time.
        import hashlib

        name = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()
    return os.path.join(folder, name)


def load_handle(env: Mapping[str, str], session_id: str) -> str | None:
    path = handle_path(env, session_id)
    if path is None:
        return None
    try:
        fd = open_regular(path)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle_file:
        text = handle_file.read(1024).decode("utf-8", "replace").strip()
    # A handle is the session id, "~" and its proof; anything else is not ours.
    return text if text.startswith(session_id + "~") else None


def save_handle(env: Mapping[str, str], session_id: str, handle: str) -> None:
    path = handle_path(env, session_id)
    if path is None or not handle.startswith(session_id + "~"):
        return
    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    temp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, handle.encode())
    finally:
        os.close(fd)
    os.replace(temp, path)


def prune_handles(env: Mapping[str, str], now: float) -> None:
    folder = handle_dir(env)
    if folder is None:
        return
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        path = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if now - os.lstat(path).st_mtime > HANDLE_KEEP_S:
                os.unlink(path)


def remember(env: Mapping[str, str], session_id: str, answer: dict[str, object]) -> None:
    handle = answer.get("handle")
    if isinstance(handle, str) and handle != load_handle(env, session_id):
        try:
            save_handle(env, session_id, handle)
        except OSError as exc:
            debug(env, f"handle not kept: {exc}")


# -------------------------------------------------------------------- modes


def cap(text: str, limit: int = PAYLOAD_CAP) -> str:
    if len(text) <= limit:
        return text
    return text[: limit - 1] + "…"


# C0 and C1 control characters but tab and newline: a terminal acts on them
# (ESC and CSI sequences, OSC 52 writes the clipboard), a model has no use for them.
CONTROLS = dict.fromkeys([*range(0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0)])


def printable(text: str) -> str:
    """``text`` with no control characters and no lone surrogate.

    What the hook prints joins the conversation Claude Code sends to the model; a
    lone surrogate there makes every later request invalid JSON to the API, so one
    bad answer would break the session rather than one infusion.
    """
    return text.encode("utf-8", "replace").decode("utf-8").translate(CONTROLS)


# Claude Code hands hook context to the model inside <system-reminder> tags. Stored
# text (a name, a description, a purpose) that closed the tag, or opened one, would read
# as the harness's own words; its "<" is shown as "&lt;", as Claude Code's own does.
# An invisible character (a joiner, a soft hyphen) between its letters hides the tag
# from a plain match but not from the model; so may U+FFFD, which the server shows in
# place of one.
_INVISIBLE = "\u00ad\u200b-\u200f\u2060-\u2064\ufeff\ufffd"  # a character class's body
_TAG_NAME = f"[{_INVISIBLE}]*".join("system-reminder")
HARNESS_TAG = re.compile(f"<(?=[\\s/{_INVISIBLE}]*{_TAG_NAME})", re.IGNORECASE)


def unframed(text: str) -> str:
    """``text`` with no tag that opens or closes Claude Code's wrapper around it."""
    return HARNESS_TAG.sub("&lt;", text) if "<" in text else text


def emit(event: str, context: str) -> None:
    # Bounded and printable whatever the server, the event or the settings held, with
    # nothing that closes the wrapper around it; ASCII-escaped JSON survives any stdout
    # encoding.
    context = cap(unframed(printable(context)), CONTEXT_CAP)
    output = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}
    sys.stdout.write(json.dumps(output) + "\n")


def short_text(value: object) -> str | None:
    """An event field passed on: a string of at most FIELD_CHARS, else nothing.

    The server validates what it is sent; a field of the wrong type or size would
    cost the whole infusion, though the server needs none of them to infuse.
    """
    return value if isinstance(value, str) and len(value) <= FIELD_CHARS else None


def run_prompt(options: Options, event: dict[str, object], env: Mapping[str, str]) -> None:
    closed = gate(env)
    if closed is not None:
        debug(env, f"gate closed: {closed}")
        return
    prompt = event.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        return
    path = event.get("transcript_path")
    turns: list[str] = []
    if isinstance(path, str):
        try:
            turns = trajectory(path, prompt, options.turns, options.deadline)
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            debug(env, f"transcript unreadable: {exc}")
    debug(env, f"{len(turns)} previous turns")
    session_id = event.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return
    body = {
        "session_id": load_handle(env, session_id) or session_id,
        "prompt": clip(prompt, PROMPT_CHARS),
        "trajectory": turns,
        "cwd": short_text(event.get("cwd")),
        # What is left of the run's deadline, less what parsing the answer needs.
        "deadline_ms": max(1, int((options.deadline - time.monotonic() - DEADLINE_MARGIN) * 1000)),
    }
    if env.get("KENNING_ENCOUNTER_INFUSE_COLD", "").strip() == "1":
        body["include_cold"] = True
    try:
        answer = post_json(options, "/infuse", body, env, options.timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("payload"), str):
            raise HookFailure("bad", "no payload")
        if answer.get("status") == "failed":
            meta = answer.get("meta")
            reason = meta.get("degraded_reason") if isinstance(meta, dict) else None
            raise HookFailure("failed", one_line(reason or "no reason given"))
    except HookFailure as failure:
        debug(env, f"infuse failed: {failure}")
        emit("UserPromptSubmit", failure_line(options, failure))
        return
    remember(env, session_id, answer)
    payload: str = cap(answer["payload"])
    if not payload.strip():
        return
    meta = answer.get("meta")
    if isinstance(meta, dict) and meta.get("degraded") is True:
        channel = meta.get("channel")
        label = (
            "lexical fallback" if channel == "lexical" else f"degraded channel {one_line(channel)}"
        )
        reason = meta.get("degraded_reason") or "no reason given"
        payload = f"[kenning-encounter: {label} — {one_line(reason)}]\n{payload}"
    emit("UserPromptSubmit", payload)


def own_digest() -> str | None:
    """What this script is, for the server to tell a copy an older install left behind
    (the first 16 hex digits of its SHA-256); None when it cannot be read."""
    import hashlib  # once a session, never on a prompt

    try:
        with open(os.path.abspath(__file__), "rb") as script:
            return hashlib.sha256(script.read()).hexdigest()[:16]
    except OSError:
        return None


def run_session_start(options: Options, event: dict[str, object], env: Mapping[str, str]) -> None:
    session_id = event.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return
    source = event.get("source")
    held = load_handle(env, session_id)
    body = {"session_id": held or session_id, "source": short_text(source), "hook": own_digest()}
    notice = gate_notice(env)
    try:
        answer = post_json(options, "/session-start", body, env, options.timeout)
        if not isinstance(answer, dict) or not isinstance(answer.get("context"), str):
            raise HookFailure("bad", "no context")
    except HookFailure as failure:
        debug(env, f"session-start failed: {failure}")
        problem = {
            "unreachable": "memory server unreachable",
            "timeout": "memory server did not answer in time",
            "setting": failure.detail,
        }.get(failure.kind, f"memory server answered badly: {failure.detail}")
        # A setting's failure names the setting, not the address (it may not be one).
        where = "" if failure.kind == "setting" else f" at {options.url}"
        lines = [
            f"Your kenning-encounter session_id is {held or session_id}; pass it as "
            f"session_id to the memory tools. ({problem}{where}; no re-entry note.)"
        ]
        emit("SessionStart", "\n".join([*lines, notice] if notice else lines))
        return
    remember(env, session_id, answer)
    with contextlib.suppress(OSError):
        prune_handles(env, time.time())
    context: str = cap(answer["context"])
    if notice:
        context = f"{context}\n{notice}" if context.strip() else notice
    if context.strip():
        emit("SessionStart", context)


def run_session_end(options: Options, event: dict[str, object], env: Mapping[str, str]) -> None:
    session_id = event.get("session_id")
    if not isinstance(session_id, str) or not session_id:
        return
    # The handle stays: a --resume of this session needs it again.
    reason = short_text(event.get("reason"))
    body = {"session_id": load_handle(env, session_id) or session_id, "reason": reason}
    try:
        post_json(options, "/session-end", body, env, min(options.timeout, SESSION_END_TIMEOUT))
    except HookFailure as failure:
        debug(env, f"session-end failed: {failure}")


def read_stdin(deadline: float) -> bytes:
    """The hook event, read within the deadline: stdin may be left open by the caller.

    Claude Code closes stdin after writing the event; a caller that does not
    must not hang the hook, so a read past the deadline gives up with what it has.
    """
    fd = sys.stdin.fileno()
    data = b""
    while len(data) < MAX_STDIN_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("stdin still open at the deadline")
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except (OSError, ValueError):  # not selectable (a Windows pipe): a plain bounded read
            return data + sys.stdin.buffer.read(MAX_STDIN_BYTES - len(data))
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk
    return data


def main(argv: list[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run one hook event. Always returns 0."""
    env = os.environ if env is None else env
    try:
        options = parse_args(sys.argv[1:] if argv is None else argv, env)
        if options is None:
            debug(env, "unusable arguments; staying silent")
            return 0
        event = json.loads(read_stdin(options.deadline) or b"null")
        if not isinstance(event, dict):
            debug(env, "stdin held no hook event")
            return 0
        if options.mode == "prompt":
            run_prompt(options, event, env)
        elif options.mode == "session-start":
            run_session_start(options, event, env)
        else:
            run_session_end(options, event, env)
    except BaseException as exc:  # the one contract: never fail a turn
        with contextlib.suppress(BaseException):
            debug(env, f"unexpected {type(exc).__name__}: {exc}")
    return 0


def run_as_script() -> None:
    main()
    with contextlib.suppress(BaseException):
        sys.stdout.flush()
    # Skips interpreter teardown: it costs time and could turn a late stdout
    # error into a non-zero status.
    os._exit(0)


if __name__ == "__main__":
    run_as_script()
