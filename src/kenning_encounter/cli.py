"""``kenning-encounter``: the command line.

    kenning-encounter [serve] [flags]      serve the memory (the default command)
    kenning-encounter ui [flags]           open the inspector (/ui/) in a browser
    kenning-encounter doctor [flags]       check the configuration; exit 0 when all is well
    kenning-encounter export FILE|-        dump the whole memory (memory/dump.py)
    kenning-encounter import FILE          load a dump into an empty memory (memory/load.py)
    kenning-encounter kndl export|import   KNDL JSON-LD facts out and in (memory/kndl.py)
    kenning-encounter install ...          wire the server into Claude Code (install.py)

Every setting is a flag here and an environment variable (config.py); a flag
not given is passed as None, so the environment or the default decides.
Commands are a table (``COMMANDS``); a command with its own argument parser
(like ``install``) goes in ``PASSTHROUGH`` and is imported only when run.
Logging is configured here and only here, to stderr.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import gc
import logging
import os
import re
import sys
import time
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from kenning_encounter.errors import ConfigError, KenningError, StoreLocked
from kenning_encounter.plaintext import escaped
from kenning_encounter.server.front import Launch
from kenning_encounter.server.info import package_version
from kenning_encounter.vocabulary import CLASSIFICATIONS

if typing.TYPE_CHECKING:
    from kenning_encounter.config import Settings
    from kenning_encounter.store.port import GraphStore

PROG: Final = "kenning-encounter"
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
EXIT_OK, EXIT_FAILED, EXIT_CONFIG = 0, 1, 2


@dataclass(frozen=True)
class Flag:
    setting: str
    help: str
    type: Callable[[str], Any] = str
    metavar: str | None = None
    switch: bool = False  # --x / --no-x

    @property
    def option(self) -> str:
        return "--" + self.setting.replace("_", "-")


# One line per setting. Secrets that belong only in the environment are left
# out on purpose (a flag shows in the process list): see NOT_FLAGS.
SETTING_FLAGS: Final[tuple[Flag, ...]] = (
    Flag("memory", "name of the memory: a folder under the data root", metavar="NAME"),
    Flag(
        "data_dir",
        "directory of the embedded store (default: <user data dir>/<memory>)",
        metavar="DIR",
    ),
    Flag("store", "backend holding the graph"),
    Flag("neo4j_uri", "Neo4j URL, e.g. bolt://127.0.0.1:7687", metavar="URI"),
    Flag("neo4j_username", "Neo4j user", metavar="USER"),
    Flag(
        "neo4j_password", "Neo4j password (prefer the NEO4J_PASSWORD variable)", metavar="PASSWORD"
    ),
    Flag("neo4j_database", "Neo4j database", metavar="NAME"),
    Flag("transport", "how clients connect"),
    Flag("namespace", "tool-name prefix: 'myapp' serves 'myapp-search'", metavar="PREFIX"),
    Flag("host", "address to listen on; a non-loopback one needs --token", metavar="HOST"),
    Flag("port", "port to listen on (0 picks a free one)", type=int, metavar="PORT"),
    Flag("path", "HTTP path of the MCP endpoint", metavar="PATH"),
    Flag("allowed_origins", "comma-separated Origins allowed (CORS)", metavar="LIST"),
    Flag(
        "allowed_hosts",
        "comma-separated Host headers allowed besides loopback "
        "(DNS-rebinding protection; '*' turns the check off)",
        metavar="LIST",
    ),
    Flag(
        "read_timeout",
        "seconds a read tool or an inspector page may take before it is answered with an error",
        type=float,
        metavar="SECONDS",
    ),
    Flag(
        "request_timeout",
        "seconds an HTTP client has to send a request's head, and may pause within its body, "
        "before its connection is closed",
        type=float,
        metavar="SECONDS",
    ),
    Flag(
        "token", "bearer token every HTTP request must carry (prefer the variable)", metavar="TOKEN"
    ),
    Flag(
        "http_sessions",
        "stateful keeps MCP sessions in this process; stateless lets any replica answer "
        "any request (several servers behind one load balancer)",
    ),
    Flag("face", "full serves every tool; reader serves only the read tools"),
    Flag(
        "hide_loci",
        "reader face: comma-separated session ids whose nodes no read shows",
        metavar="LIST",
    ),
    Flag(
        "grant",
        "full face: classes of classified nodes its reads may show (pii,phi,pci,secret; all)",
        metavar="LIST",
    ),
    Flag(
        "reader_grant",
        "reader face: classes its reads may show; it never inherits --grant",
        metavar="LIST",
    ),
    Flag(
        "export_grant",
        "export: classes of classified nodes a dump may carry (others are held back)",
        metavar="LIST",
    ),
    Flag(
        "director",
        "who directs a session that names no one (default: the operating-system user)",
        metavar="NAME",
    ),
    Flag(
        "director_key",
        "what identifies that director (e.g. an email); sessions meet one person by it",
        metavar="KEY",
    ),
    Flag("require_director", "refuse a session no director can be found for", switch=True),
    Flag("log_level", "log level (logs go to stderr)", metavar="LEVEL"),
    Flag(
        "idle_horizon",
        "seconds without activity after which an open encounter is dissolved",
        type=float,
        metavar="SECONDS",
    ),
    Flag(
        "slow_query_ms",
        "a store statement slower than this many ms is logged as slow (0: off)",
        type=float,
        metavar="MS",
    ),
    Flag(
        "buffer_pool_mib",
        "embedded: MiB of page memory the engine may hold (raise it for several million nodes)",
        type=int,
        metavar="MIB",
    ),
    Flag(
        "neo4j_cache_nodes",
        "Neo4j: nodes kept in memory, read in newest first at start (0: none)",
        type=int,
        metavar="N",
    ),
    Flag("cypher_row_cap", "most rows read_cypher returns", type=int, metavar="N"),
    Flag("cypher_char_cap", "most characters read_cypher returns", type=int, metavar="N"),
    Flag("cypher_timeout", "seconds a read_cypher query may run", type=float, metavar="SECONDS"),
    Flag(
        "matcher", "meaning matcher: auto (Gemini when GEMINI_API_KEY is set), gemini, openai, off"
    ),
    Flag("matcher_model", "matcher model name", metavar="MODEL"),
    Flag("matcher_timeout", "seconds the matcher may take", type=float, metavar="SECONDS"),
    Flag("matcher_reasons", "ask the matcher for its reasons", switch=True),
    Flag("matcher_base_url", "OpenAI-compatible endpoint for --matcher openai", metavar="URL"),
    Flag("matcher_api_key_env", "environment variable holding that endpoint's key", metavar="NAME"),
    Flag(
        "matcher_prompt_budget",
        "most characters of meanings the matcher reads",
        type=int,
        metavar="N",
    ),
    Flag(
        "activation_half_life_days",
        "days after which an unused node's activation has halved (hot, warm, cold, frozen)",
        type=float,
        metavar="DAYS",
    ),
    Flag("infusion_budget", "characters an infusion payload may take", type=int, metavar="N"),
    Flag("infusion_preset", "infusion pipeline preset", metavar="NAME"),
    Flag(
        "infusion_log_prompts",
        "keep each prompt's text in the infusion log (default: its SHA-256 and length only)",
        switch=True,
    ),
    Flag(
        "infusion_log_days",
        "days the infusion log keeps an entry",
        type=float,
        metavar="DAYS",
    ),
    Flag(
        "infusion_log_per_session",
        "most infusion log entries kept per session",
        type=int,
        metavar="N",
    ),
)
NOT_FLAGS: Final = frozenset({"gemini_api_key", "session_key"})


def env_name(setting: str) -> str:
    from kenning_encounter.config import env_name as named

    return named(setting)


def _choices(setting: str) -> list[str] | None:
    from kenning_encounter.config import Settings

    annotation = Settings.model_fields[setting].annotation
    if typing.get_origin(annotation) is typing.Literal:
        return [str(a) for a in typing.get_args(annotation)]
    return None


@functools.cache
def _flag_texts() -> tuple[tuple[str, list[str] | None], ...]:
    """Each flag's help text and choices, read from the settings once per process."""
    from kenning_encounter.config import Settings

    found: list[tuple[str, list[str] | None]] = []
    for flag in SETTING_FLAGS:
        value = Settings.model_fields[flag.setting].get_default(call_default_factory=True)
        default = f"; default {value!r}" if value not in (None, "", []) else ""
        found.append((f"{flag.help} [{env_name(flag.setting)}{default}]", _choices(flag.setting)))
    return tuple(found)


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("settings (flag > environment variable > .env > default)")
    for flag, (text, choices) in zip(SETTING_FLAGS, _flag_texts(), strict=True):
        if flag.switch:
            group.add_argument(
                flag.option,
                dest=flag.setting,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=text,
            )
            continue
        group.add_argument(
            flag.option,
            dest=flag.setting,
            type=flag.type,
            default=None,
            choices=choices,
            metavar=flag.metavar,
            help=text,
        )


def settings_from(ns: argparse.Namespace) -> Settings:
    from kenning_encounter.config import load_settings

    settings = load_settings(**{flag.setting: getattr(ns, flag.setting) for flag in SETTING_FLAGS})
    if settings.log_level.upper() not in LOG_LEVELS:
        raise ConfigError(
            f"log_level: {settings.log_level!r} is not a level; use one of {', '.join(LOG_LEVELS)}"
        )
    return settings


def _error(message: str) -> None:
    # One line, with nothing a terminal acts on: a message may quote what a file held (a
    # dump's or a KNDL file's unknown field, a fact's id), and an escape sequence there
    # would set the title, write the clipboard or clear the screen; a line break, forge
    # a line of the command's own.
    sys.stderr.write(f"{PROG}: error: {escaped(message)}\n")


# Loggers quieted below DEBUG: uvicorn repeats the start-up announcement, and the SDK
# logs each refused tool call with its message, which can quote memory content.
QUIET_LOGGERS: Final = ("uvicorn.error", "mcp.server.mcpserver.server")


# The SDK's streamable HTTP transport names each session by its id when it opens,
# ends, idles out or crashes. The id is what lets a client act in that session over
# HTTP: a log shows its first characters only, enough to tell sessions apart.
SESSION_LOGGERS: Final = ("mcp.server.streamable_http",)
_SESSION_ID: Final = re.compile(r"(?<![0-9A-Za-z])([0-9a-f]{6})[0-9a-f]{26}(?![0-9A-Za-z])")


class _OneRecordALine(logging.Formatter):
    """Each record's message on its own line, its line breaks and control characters
    escaped: a library may log client text as it came (the MCP SDK's SSE transport logs
    a malformed session_id at WARNING), and ``%0a`` in it must not forge a line of the
    operator's log. A traceback after the message keeps its lines. A session id the
    SDK's HTTP transport logs is cut to its first characters."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        message = record.message
        if record.name.startswith(SESSION_LOGGERS):
            message = _SESSION_ID.sub(r"\1…", message)
        record.message = escaped(message)
        return super().formatMessage(record)

    def formatException(self, ei: Any) -> str:
        """The traceback as Python writes it, but each exception's own words escaped: an
        exception may quote what it read (an engine's error, a client's value), and a
        line break there would forge a line of the log as one in a message would."""
        value = ei[1]
        if not isinstance(value, BaseException):
            return super().formatException(ei)
        return "".join(_traceback(value, set())).rstrip("\n")


def _traceback(exc: BaseException, seen: set[int]) -> list[str]:
    """``exc``'s traceback, the exceptions it was raised from or during first (as Python
    chains them), each exception's line escaped (plaintext.escaped)."""
    import traceback

    seen.add(id(exc))
    lines: list[str] = []
    cause, context = exc.__cause__, exc.__context__
    if cause is not None and id(cause) not in seen:
        lines += _traceback(cause, seen)
        lines.append("\nThe above exception was the direct cause of the following exception:\n\n")
    elif context is not None and not exc.__suppress_context__ and id(context) not in seen:
        lines += _traceback(context, seen)
        lines.append("\nDuring handling of the above exception, another exception occurred:\n\n")
    if exc.__traceback__ is not None:
        lines.append("Traceback (most recent call last):\n")
        lines += traceback.format_tb(exc.__traceback__)
    lines += [
        escaped(line.removesuffix("\n")) + "\n"
        for line in traceback.format_exception_only(type(exc), exc)
    ]
    return lines


def configure_logging(level: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneRecordALine("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level.upper(), handlers=[handler])
    if level.upper() != "DEBUG":
        for name in QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.WARNING)


# --- serve ---------------------------------------------------------------------
def run_serve(ns: argparse.Namespace) -> int:
    # The quick start (server/front.py) may be answering already; main() started it.
    launch: Launch | None = getattr(ns, "launch", None)
    try:
        return _serve(ns, launch)
    finally:
        if launch is not None:
            launch.abandon()  # when the start failed before serving took the wire


def _serve(ns: argparse.Namespace, launch: Launch | None) -> int:
    # Light: the memory and the store, no MCP SDK yet.
    from kenning_encounter.config import read_env_names
    from kenning_encounter.memory.directors import director_policy
    from kenning_encounter.server.context import Runtime, check_face, place_problem

    try:
        settings = settings_from(ns)
        settings.require_safe_bind()
        check_face(settings)
        director_policy(settings)  # the operating-system user's name may not be a name
        problem = place_problem(settings)
        if problem is not None:
            raise ConfigError(problem)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    configure_logging(settings.log_level)
    from kenning_encounter.memory import scrub

    unfinished = scrub.unfinished(settings.resolved_data_dir)
    if unfinished is not None:
        logging.getLogger(PROG).warning("%s", unfinished)
    if launch is not None:
        if settings.transport == "stdio":
            launch.configure(read_env_names(settings))
        else:
            launch.abandon()
            launch = None
    runtime = Runtime(settings)
    # The store opens while the SDK is imported; serve still waits for it, and fails on
    # its error, before it binds anything (over stdio the quick start may have answered
    # initialize by then; the error then ends the process as it would have before).
    runtime.begin_open()
    try:
        import anyio

        from kenning_encounter.server.transports import serve

        anyio.run(lambda: serve(settings, runtime=runtime, launch=launch))
    except KenningError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except OSError as exc:
        _error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        runtime.close_unclaimed()
    return EXIT_OK


# --- ui --------------------------------------------------------------------------
def run_ui_command(ns: argparse.Namespace) -> int:
    """Open the inspector in a browser; serve too when no server answers."""
    try:
        settings = settings_from(ns)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    if settings.transport == "stdio":
        _error("the inspector is served over HTTP: drop --transport stdio")
        return EXIT_CONFIG
    from kenning_encounter.ui.launch import run_ui

    return run_ui(settings, lambda: run_serve(ns))


# --- doctor ----------------------------------------------------------------------
def run_doctor_command(ns: argparse.Namespace) -> int:
    from kenning_encounter.plaintext import escaped

    out = sys.stdout
    out.write(f"{PROG} doctor {package_version()}\n")
    try:
        settings = settings_from(ns)
    except ConfigError as exc:
        out.write(
            f"  FAIL  config   {escaped(str(exc))}\n        fix: correct that flag or environment "
            "variable (kenning-encounter serve --help lists them)\n"
        )
        return EXIT_FAILED
    from kenning_encounter.server.doctor import run_doctor

    findings = run_doctor(settings)
    for f in findings:
        # A finding quotes what it found (a path a project's settings name, an error's
        # words): escaped, it cannot start a line of its own or drive the terminal.
        out.write(f"  {f.status.upper():<5} {f.topic:<8} {escaped(f.detail)}\n")
        if f.fix and f.status != "ok":
            out.write(f"        fix: {escaped(f.fix)}\n")
    failed = sum(f.status == "fail" for f in findings)
    out.write("all good\n" if not failed else f"{failed} problem(s) found\n")
    return EXIT_FAILED if failed else EXIT_OK


# --- forget (operator hard deletion) ----------------------------------------------
def _configure_forget(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument(
        "refs", nargs="+", metavar="REF", help="names or ids of the nodes to remove"
    )
    parser.add_argument(
        "--with-history", action="store_true", help="also remove the older revisions of each node"
    )
    parser.add_argument(
        "--yes", action="store_true", help="do not ask for confirmation (needed without a terminal)"
    )


def run_forget(ns: argparse.Namespace) -> int:
    """Hard-delete nodes for a human operator; the spine keeps a tombstone count."""
    from kenning_encounter.memory import operator
    from kenning_encounter.plaintext import quoted  # a name imported before the text checks

    opened = open_alone(ns, "forgetting")
    if isinstance(opened, int):
        return opened
    store = opened[1]
    try:
        targets = operator.plan(store, ns.refs, with_history=ns.with_history)
        for node in targets:
            sys.stderr.write(
                f"  {node.type} {quoted(node.name)} {node.id} (recorded in {node.encounter})\n"
            )
        if not ns.yes:
            if not sys.stdin.isatty():
                _error("refusing to delete without confirmation: pass --yes")
                return EXIT_FAILED
            answer = input(f"permanently delete these {len(targets)} node(s)? type 'forget': ")
            if answer.strip() != "forget":
                sys.stderr.write("nothing deleted\n")
                return EXIT_FAILED
        done = operator.forget(store, ns.refs, with_history=ns.with_history)
        tombs = ", ".join(f"{enc} +{n}" for enc, n in done.tombstones.items())
        sys.stderr.write(f"deleted {len(done.ids)} node(s); tombstones: {tombs or 'none'}\n")
        sys.stderr.write(
            "purpose and summary withdrawn (the encounter drew on what was deleted): "
            f"{', '.join(done.withdrawn) or 'none'}\n"
        )
        return EXIT_OK
    except KenningError as exc:
        _error(str(exc))
        return EXIT_FAILED
    finally:
        store.close()


# --- handle ----------------------------------------------------------------------------
def _configure_handle(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument("session_id", metavar="SESSION_ID", help="the session's plain id")
    parser.add_argument(
        "--keep-for-hook",
        action="store_true",
        help="also keep it where the Claude Code hook looks (XDG_STATE_HOME, else "
        "~/.local/state: kenning-encounter/handles/), so the session's next event sends it",
    )


def run_handle(ns: argparse.Namespace) -> int:
    """Print a session's handle, made from the memory's session key: for a session whose
    client lost its handle, or one opened before handles existed (0.1.0)."""
    from kenning_encounter.errors import InvalidInput
    from kenning_encounter.memory import validate
    from kenning_encounter.server.context import no_memory
    from kenning_encounter.server.holds import load_session_key, split_handle

    try:
        settings = settings_from(ns)
        locus = validate.session_id(split_handle(ns.session_id.strip())[0], "SESSION_ID")
    except (ConfigError, InvalidInput) as exc:
        _error(str(exc))
        return EXIT_CONFIG
    absent = no_memory(settings)
    if absent is not None:
        _error(absent)
        return EXIT_CONFIG
    try:
        handle = load_session_key(settings).handle(locus)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    except OSError as exc:
        _error(f"the session key could not be read or made: {exc}")
        return EXIT_FAILED
    sys.stdout.write(handle + "\n")
    if ns.keep_for_hook:
        from kenning_encounter.hooks.infuse_hook import handle_path, save_handle

        path = handle_path(os.environ, locus)
        if path is None:
            _error("no folder to keep it in: set HOME or XDG_STATE_HOME to an absolute path")
            return EXIT_CONFIG
        try:
            save_handle(os.environ, locus, handle)
        except OSError as exc:
            _error(f"could not keep it at {path}: {exc}")
            return EXIT_FAILED
        sys.stderr.write(f"kept at {path} for the hook (mode 0600)\n")
    sys.stderr.write(
        "whoever holds this handle may write as the session, seal it and take its "
        "infusions: give it only to that session's client\n"
    )
    return EXIT_OK


# --- erase / purge (operator_cli.py) ---------------------------------------------------
def _confirm_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--yes", action="store_true", help="erase without asking (else a dry run, or a prompt)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the plan and the report as JSON on stdout"
    )


def _configure_erase(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument("refs", nargs="*", metavar="REF", help="name or id of each referent")
    parser.add_argument(
        "--resume", action="store_true", help="finish an erasure whose scrubbing was cut short"
    )
    _confirm_flags(parser)


def _configure_purge(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument(
        "--due", action="store_true", required=True, help="the nodes whose retention ran out"
    )
    _confirm_flags(parser)


def _configure_review(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    _confirm_flags(parser)


# --- sidecar rebuild -------------------------------------------------------------------
def _configure_sidecar(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument("action", choices=["rebuild"], help="rebuild: make every meaning again")
    parser.add_argument(
        "--only-gaps", action="store_true", help="only make missing or stale meanings"
    )


def run_sidecar(ns: argparse.Namespace) -> int:
    try:
        settings = settings_from(ns)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    configure_logging(settings.log_level)
    if settings.matcher_provider == "off":
        _error(
            "the matcher is off (KENNING_ENCOUNTER_MATCHER=off, or auto without GEMINI_API_KEY): "
            "there is no sidecar to build; set GEMINI_API_KEY or choose --matcher openai"
        )
        return EXIT_CONFIG
    from kenning_encounter.meaning import (
        MeaningStore,
        SidecarStore,
        StoredMeanings,
        make_provider,
        run_sidecar_rebuild,
    )
    from kenning_encounter.server.context import no_memory, open_store
    from kenning_encounter.server.services import api_key
    from kenning_encounter.store.meanings import KeepsDerived

    absent = no_memory(settings)
    if absent is not None:
        _error(absent)
        return EXIT_CONFIG
    try:
        provider = make_provider(
            settings.matcher_provider,
            model=settings.matcher_model,
            api_key=api_key(settings),
            base_url=settings.matcher_base_url,
            timeout_s=settings.matcher_timeout,
        )
        store = open_store(settings)
    except KenningError as exc:
        _error(str(exc))
        return EXIT_FAILED
    try:
        # A classified node's text never goes to the meaning model (memory/gates.py).
        nodes = [
            n
            for n in store.read(lambda tx: tx.authored_graph().nodes)
            if not n.props.get("classification")
        ]
        # Where the store keeps the meanings (Neo4j), the rebuild writes them there.
        sidecar: MeaningStore = (
            StoredMeanings(store.meanings)
            if isinstance(store, KeepsDerived)
            else SidecarStore(settings.resolved_data_dir / "sidecar")
        )
        try:
            return run_sidecar_rebuild(nodes, provider, sidecar, only_gaps=ns.only_gaps)
        finally:
            sidecar.close()
    finally:
        provider.close()
        store.close()


# --- export / import (moving a whole memory) ---------------------------------------------
def progress_line(verb: str, done: int, total: int, elapsed_s: float, *, bar: bool) -> str:
    """One progress report: with ``bar`` (a terminal), a bar with the rate and the time
    left; otherwise the counts alone, which read well in a log."""
    share = 100 * done // total if total else 100
    counts = f"{done:,} of {total:,} records"
    if not bar:
        return f"{verb}: {counts}" + (f" ({share}%)" if total else "")
    width = 24
    filled = width * done // total if total else width
    rate = done / elapsed_s if elapsed_s > 0 else 0.0
    left = f", {max(total - done, 0) / rate:,.0f} s left" if rate > 0 and done < total else ""
    return (
        f"{verb} [{'#' * filled}{'.' * (width - filled)}] {share:3d}% {counts}, {rate:,.0f}/s{left}"
    )


class _Counter:
    """Progress on stderr: a bar rewritten in place on a terminal, a line per step otherwise."""

    def __init__(self, verb: str) -> None:
        self._verb = verb
        self._tty = sys.stderr.isatty()
        self._started = time.monotonic()

    def __call__(self, done: int, total: int) -> None:
        line = progress_line(
            self._verb, done, total, time.monotonic() - self._started, bar=self._tty
        )
        end = "\r" if self._tty and done < total else "\n"
        sys.stderr.write(line + end)
        sys.stderr.flush()


def _configure_export(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument(
        "file",
        metavar="FILE",
        help="where the dump goes ('-': standard output, a file or a pipe, not a terminal)",
    )


def _configure_import(parser: argparse.ArgumentParser) -> None:
    add_setting_flags(parser)
    parser.add_argument("file", metavar="FILE", help="a dump written by export")
    parser.add_argument(
        "--restart",
        action="store_true",
        help="remove what an interrupted import wrote into this memory, then import FILE",
    )


def open_alone(
    ns: argparse.Namespace, doing: str, *, makes: bool = False
) -> tuple[Settings, GraphStore] | int:
    """The settings and the store an operator command needs to itself, or an exit code.
    Only a command that ``makes`` a memory (an import) opens one that is not there yet."""
    try:
        settings = settings_from(ns)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    from kenning_encounter.server.context import no_memory, open_store

    absent = None if makes else no_memory(settings)
    if absent is not None:
        _error(absent)
        return EXIT_CONFIG
    try:
        return settings, open_store(settings)
    except ConfigError as exc:
        _error(str(exc))
        return EXIT_CONFIG
    except StoreLocked as exc:
        _error(f"{exc} (stop the server first: {doing} needs the store to itself)")
        return EXIT_FAILED
    except KenningError as exc:
        _error(str(exc))
        return EXIT_FAILED


def run_export(ns: argparse.Namespace) -> int:
    """Dump the whole memory as JSON Lines; the file appears only once it is whole."""
    from pathlib import Path

    from kenning_encounter.memory.dump import Exported, export

    if ns.file == "-" and sys.stdout.isatty():
        # A dump keeps its text as written: on a terminal, a stored name's controls or
        # direction overrides would act on it. Refused before the memory is read.
        _error(
            "FILE -: standard output is a terminal, and a dump is for a file or a pipe; "
            "name a file (export memory.jsonl) or pipe it on (export - | gzip > memory.jsonl.gz)"
        )
        return EXIT_CONFIG
    opened = open_alone(ns, "an export")
    if isinstance(opened, int):
        return opened
    settings, store = opened
    withheld = frozenset(CLASSIFICATIONS) - set(settings.export_grant)
    target = None if ns.file == "-" else Path(ns.file)
    partial = None if target is None else target.with_name(target.name + ".partial")

    def write() -> Exported:
        progress = _Counter("export")
        if target is None or partial is None:
            return export(
                store,
                sys.stdout.buffer,
                app_version=package_version(),
                progress=progress,
                withheld=withheld,
            )
        if target.is_dir():  # found before the memory is read, not at the rename after it
            raise IsADirectoryError(errno.EISDIR, "is a folder; name a file to write", target)
        with partial.open("wb") as out:
            done = export(
                store, out, app_version=package_version(), progress=progress, withheld=withheld
            )
        partial.replace(target)
        return done

    try:
        done = write()
    except BaseException as exc:
        if partial is not None:  # an interrupted export leaves no half file behind
            with contextlib.suppress(OSError):
                partial.unlink(missing_ok=True)
        if isinstance(exc, OSError):
            _error(f"FILE {ns.file}: {exc.strerror or exc}; nothing was written")
            return EXIT_FAILED
        if isinstance(exc, KenningError):
            _error(str(exc))
            return EXIT_FAILED
        raise
    finally:
        store.close()
    counts = ", ".join(f"{n} {kind}" for kind, n in done.counts.items())
    sys.stderr.write(f"exported {counts} at clock {done.clock}; sha256 {done.digest}\n")
    if done.held_back:
        sys.stderr.write(
            f"held back {done.held_back} classified node(s) of {', '.join(sorted(withheld))} "
            "and their relations; export them with --export-grant (e.g. pii,phi or all)\n"
        )
    return EXIT_OK


def run_import(ns: argparse.Namespace) -> int:
    """Load a dump into an empty memory; an interrupted import resumes when run again."""
    from pathlib import Path

    from kenning_encounter.memory.load import load, verify

    try:
        dump = verify(Path(ns.file))
    except KenningError as exc:
        _error(f"{exc} (nothing was written)")
        return EXIT_FAILED
    except OSError as exc:
        _error(f"cannot read the dump: {exc}")
        return EXIT_FAILED
    sys.stderr.write(f"{ns.file}: checked, {sum(dump.counts.values()):,} records\n")
    opened = open_alone(ns, "an import", makes=True)
    if isinstance(opened, int):
        return opened
    settings, store = opened
    try:
        done = load(store, dump, restart=ns.restart, progress=_Counter("import"))
    except (KenningError, OSError) as exc:
        _error(str(exc))
        return EXIT_FAILED
    finally:
        store.close()
    if done.cleared:
        sys.stderr.write(f"removed {done.cleared} node(s) an interrupted import left\n")
    if done.resumed_at:
        sys.stderr.write(f"resumed an interrupted import after {done.resumed_at:,} records\n")
    if settings.store == "embedded":
        # Opening derives the text index again: its tick lags the clock just imported.
        from kenning_encounter.server.context import open_store

        open_store(settings).close()
        sys.stderr.write("text index rebuilt\n")
    counts = ", ".join(f"{n} {kind}" for kind, n in done.counts.items())
    sys.stderr.write(f"imported {counts}; clock {done.clock}\n")
    return EXIT_OK


# --- kndl (KNDL JSON-LD facts in and out: memory/kndl.py) ---------------------------
def _configure_kndl(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="kndl_action", metavar="ACTION", required=True)
    out = actions.add_parser("export", help="write the memory's facts as KNDL JSON-LD")
    add_setting_flags(out)
    out.add_argument(
        "--out",
        metavar="DIR|FILE",
        help="a directory (facts/*.fact.json and context/v1.jsonld) or a .json/.jsonld file "
        "(one @graph document); default: the @graph document on standard output",
    )
    into = actions.add_parser("import", help="record KNDL facts as observations with citations")
    add_setting_flags(into)
    into.add_argument("path", metavar="DIR|FILE", help="a KNDL memory directory or a fact file")


def run_kndl(ns: argparse.Namespace) -> int:
    from kenning_encounter.memory import kndl_cli

    facts = None
    if ns.kndl_action == "import":
        # The facts are read and checked before the store is opened: opening makes a
        # memory where none is, and a refused import leaves nothing behind.
        try:
            facts = kndl_cli.read(settings_from(ns), ns.path)
        except ConfigError as exc:
            _error(str(exc))
            return EXIT_CONFIG
        if facts is None:
            return EXIT_FAILED
    opened = open_alone(ns, f"a KNDL {ns.kndl_action}", makes=ns.kndl_action == "import")
    if isinstance(opened, int):
        return opened
    settings, store = opened
    try:
        if facts is None:  # an export
            return kndl_cli.export(store, settings, ns.out)
        return kndl_cli.import_(store, settings, ns.path, facts)
    except (KenningError, OSError) as exc:
        _error(str(exc))
        return EXIT_FAILED
    finally:
        store.close()


# --- the command table -------------------------------------------------------------
@dataclass(frozen=True)
class Command:
    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    configure: Callable[[argparse.ArgumentParser], None] = add_setting_flags


COMMANDS: Final[tuple[Command, ...]] = (
    Command("serve", "serve the memory over MCP (the default command)", run_serve),
    Command(
        "ui",
        "open the inspector (read-only web pages at /ui/) in a browser; serves first "
        "when no server answers",
        run_ui_command,
    ),
    Command(
        "doctor",
        "check store, configuration, Neo4j and matcher; say what to fix",
        run_doctor_command,
    ),
    Command(
        "sidecar",
        "rebuild the meaning sidecar (shows the number of model calls, then progress)",
        run_sidecar,
        _configure_sidecar,
    ),
    Command(
        "export",
        "write the whole memory to FILE as JSON Lines ('-': standard output), with a checksum",
        run_export,
        _configure_export,
    ),
    Command(
        "import",
        "load a dump written by export into an empty memory (resumes an interrupted import)",
        run_import,
        _configure_import,
    ),
    Command(
        "kndl",
        "KNDL JSON-LD facts: 'kndl export [--out DIR|FILE]' writes them, 'kndl import DIR' "
        "records them as observations with citations",
        run_kndl,
        _configure_kndl,
    ),
    Command(
        "handle",
        "operator only: print the handle of a session whose client lost it (or never had "
        "one: a session opened before 0.2.0), from the memory's session key",
        run_handle,
        _configure_handle,
    ),
    Command(
        "forget",
        "operator only: permanently delete nodes (privacy requests); leaves a tombstone count",
        run_forget,
        _configure_forget,
    ),
    Command(
        "erase",
        "operator only: erase referents and what is only about them (a plan first; "
        "--yes to delete); scrubs indexes, meanings and baselines, leaves tombstones",
        lambda ns: _operator().run_erase(ns),
        _configure_erase,
    ),
    Command(
        "purge",
        "operator only: with --due, erase every node whose retention has run out, and what "
        "is only about it (the same plan, confirmation and report as erase)",
        lambda ns: _operator().run_purge(ns),
        _configure_purge,
    ),
    Command(
        "review",
        "operator only: the review queue of frozen nodes (unused for 8 half-lives, not "
        "pinned) and the erasure they would make; a dry run unless --yes or typed",
        lambda ns: _operator().run_review(ns),
        _configure_review,
    ),
)


def _operator() -> Any:
    # Imported only when an erasure command runs.
    from kenning_encounter import operator_cli

    return operator_cli


def _run_install(argv: list[str]) -> int:
    from kenning_encounter.install import run_install

    return run_install(argv)


# Commands that parse their own arguments; imported only when run.
PASSTHROUGH: Final[dict[str, tuple[str, Callable[[list[str]], int]]]] = {
    "install": ("wire the server and its hooks into Claude Code", _run_install),
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with ``only``, the other commands are listed but not configured
    (their flags are not needed to parse ``only``'s arguments)."""
    version = f"{PROG} {package_version()}"
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Persistent, encounter-ordered memory for LLM agents, served over MCP. "
        "With no command, serves.",
    )
    parser.add_argument("--version", action="version", version=version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        sub = commands.add_parser(command.name, help=command.help, description=command.help)
        sub.add_argument("--version", action="version", version=version)
        if only is None or only == command.name:
            command.configure(sub)
        sub.set_defaults(run=command.run)
    for name, (text, _) in PASSTHROUGH.items():
        commands.add_parser(name, help=f"{text} ({PROG} {name} --help)", add_help=False)
    return parser


def _undecodable(args: Sequence[str]) -> str | None:
    """Why an argument is no text, or None. Python hands an argument's bytes that are not
    UTF-8 over as lone surrogates, which no store, file name check or terminal takes."""
    from kenning_encounter.plaintext import lone_surrogate

    for number, arg in enumerate(args, start=1):
        at = lone_surrogate(arg)
        if at is not None:
            code = ord(arg[at])
            byte = f" (byte 0x{code - 0xDC00:02x})" if code >= 0xDC80 else ""
            return (
                f"argument {number} ({arg[:at]!r}...) is not UTF-8 text at character "
                f"{at + 1}{byte}; pass it in UTF-8"
            )
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if (undecodable := _undecodable(args)) is not None:
        _error(undecodable)
        return EXIT_CONFIG
    if args and args[0] in PASSTHROUGH:
        return PASSTHROUGH[args[0]][1](args[1:])
    names = {c.name for c in COMMANDS}
    if not args or (args[0] not in names and args[0] not in ("-h", "--help", "--version")):
        args = ["serve", *args]
    # A launch (not a call from Python) of serve: answer at once when an earlier launch with
    # this command line kept its answers (server/front.py), before anything heavy is imported.
    launch = None
    launched = argv is None and args[0] == "serve" and not {"-h", "--help", "--version"} & set(args)
    if launched:
        # The start makes ~150k objects that live as long as the process; collecting among
        # them while they are made costs a tenth of the start. The collector stays off
        # until the server is built (server/app.py: settle_start).
        gc.disable()
        launch = Launch.start(args)
    ns = build_parser(args[0] if args[0] in names else None).parse_args(args)
    ns.launch = launch
    run: Callable[[argparse.Namespace], int] = ns.run
    code = run(ns)
    if launched:  # the memory is closed: end without the reads the server gave up on
        from kenning_encounter.server.leaving import leave

        return leave(code)
    return code
