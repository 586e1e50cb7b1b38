"""`kenning-encounter install claude-code`: wire the server and hooks into Claude Code.

Two files per scope, because Claude Code keeps MCP servers and hooks apart:

    scope     MCP servers                  hooks
    project   <DIR>/.mcp.json              <DIR>/.claude/settings.json
    user      ~/.claude.json               ~/.claude/settings.json

What is ours: the MCP server entry named ``kenning-encounter``, and every hook
command that runs our hook script (recognised by its file name, so entries a
previous installation left at another path are recognised too). Everything
else in those files is kept as it was, key order included. Installing twice
writes nothing the second time; ``--uninstall`` removes what is ours, drops
containers only our entries filled, and deletes a file left holding ``{}``.
A file that is not valid JSON is refused before anything is written; writes go
through a temporary file and ``os.replace`` so a crash never leaves half a file.

The hook script is standard-library Python. At user scope the hooks run it
where the package is installed. At project scope the settings file is usually
committed, and an absolute path into one person's site-packages would break for
everyone else, so the script is copied to ``<DIR>/.claude/hooks/`` and run
through ``$CLAUDE_PROJECT_DIR``; installing again refreshes the copy, and
``--uninstall`` removes it.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import shlex
import stat
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar
from urllib.parse import urlsplit

from kenning_encounter.errors import ConfigError
from kenning_encounter.urlcheck import shown, url_problem

SERVER_NAME = "kenning-encounter"
DEFAULT_MCP_URL = "http://127.0.0.1:8765/mcp/"
DEFAULT_HOOK_URL = "http://127.0.0.1:8765"
TOKEN_ENV = "KENNING_ENCOUNTER_TOKEN"

# (Claude Code event, hook --mode, Claude Code's own timeout in seconds). The
# hook bounds itself at a few seconds; these are a backstop.
HOOK_EVENTS = (
    ("UserPromptSubmit", "prompt", 10),
    ("SessionStart", "session-start", 10),
    ("SessionEnd", "session-end", 5),
)

JsonObject = dict[str, object]
C = TypeVar("C")


@dataclass(frozen=True)
class Target:
    scope: str
    mcp_file: Path
    settings_file: Path


VENDORED_HOOK = Path(".claude") / "hooks" / "kenning_encounter_infuse_hook.py"
# Claude Code sets this for every hook command; it is the project's root.
PROJECT_DIR_REF = '"$CLAUDE_PROJECT_DIR"'


def hook_script() -> Path:
    return Path(__file__).resolve().parent / "hooks" / "infuse_hook.py"


def is_our_command(command: object) -> bool:
    return (
        isinstance(command, str) and "kenning_encounter" in command and "infuse_hook.py" in command
    )


def hook_base_url(mcp_url: str) -> str:
    """Where the hook endpoints live: beside the MCP endpoint, on the same server."""
    parts = urlsplit(mcp_url)
    path = parts.path.rstrip("/")
    path = path[: -len("/mcp")] if path.endswith("/mcp") else ""
    return f"{parts.scheme}://{parts.netloc}{path}"


def missing_script_notice(mode: str) -> str:
    """What the registered command prints when the hook script is gone.

    Claude Code adds a prompt or session-start hook's plain stdout to the
    context, so the model (and the person) learn the memory is not wired;
    a session-end hook has no one to tell.
    """
    if mode == "session-end":
        return ""
    return (
        "[kenning-encounter: hook script missing; run 'kenning-encounter install claude-code' "
        "again — running without the memory hook]"
    )


def guarded_command(script: str, args: str, mode: str) -> str:
    """A shell command that runs the hook and can never block a prompt.

    Claude Code blocks the prompt when a UserPromptSubmit hook exits 2, which is
    what ``python3`` does when it cannot open the script (a checkout committed
    without .claude/hooks/, a moved venv, an uninstalled package). So the shell
    checks the script first, and the command ends with ``exit 0`` whatever
    python3 did (missing interpreter included).
    """
    notice = missing_script_notice(mode)
    otherwise = f"echo {shlex.quote(notice)}" if notice else ":"
    # -S skips site-packages processing, which is most of Python's start-up
    # time on a machine with many packages; the hook needs only the stdlib.
    return f"if [ -r {script} ]; then python3 -S {script} {args}; else {otherwise}; fi; exit 0"


def hook_commands(mcp_url: str, script: str | None = None) -> dict[str, JsonObject]:
    """The hook entry wanted under each event; ``script`` as the shell should see it."""
    base = hook_base_url(mcp_url)
    url_arg = "" if base == DEFAULT_HOOK_URL else f" --url {shlex.quote(base)}"
    script = script or shlex.quote(str(hook_script()))
    return {
        event: {
            "type": "command",
            "command": guarded_command(script, f"--mode {mode}{url_arg}", mode),
            "timeout": timeout,
        }
        for event, mode, timeout in HOOK_EVENTS
    }


def server_entry(mcp_url: str, env: dict[str, str]) -> JsonObject:
    entry: JsonObject = {"type": "http", "url": mcp_url}
    if env.get(TOKEN_ENV):
        # Claude Code expands the variable when it connects; the token itself
        # is never written into a settings file.
        entry["headers"] = {"Authorization": f"Bearer ${{{TOKEN_ENV}}}"}
    return entry


# ------------------------------------------------------------------- merging


def object_at(doc: JsonObject, key: str, path: Path) -> JsonObject | None:
    value = doc.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ConfigError(
            f'{path}: "{key}" should be a JSON object but is {type(value).__name__}; '
            "fix the file, then run the install again (nothing was written)"
        )
    return value


def apply_server(doc: JsonObject, entry: JsonObject | None, path: Path) -> None:
    """Make our server entry ``entry``, or remove it when ``entry`` is None."""
    servers = object_at(doc, "mcpServers", path)
    if entry is None:
        if servers is not None and SERVER_NAME in servers:
            del servers[SERVER_NAME]
            if not servers:
                del doc["mcpServers"]
        return
    if servers is None:
        servers = doc["mcpServers"] = {}
    if servers.get(SERVER_NAME) != entry:
        servers[SERVER_NAME] = entry


def prune_groups(groups: list[object], want: JsonObject | None) -> tuple[list[object], bool]:
    """Drop our entries from a matcher-group list except the first one equal to ``want``.

    Returns the groups kept and whether ``want`` was among them. A group that
    only our entries filled goes; a group that was empty already stays.
    """
    found = False
    kept_groups: list[object] = []
    for group in groups:
        entries = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(group, dict) or not isinstance(entries, list):
            kept_groups.append(group)
            continue
        kept: list[object] = []
        for entry in entries:
            if isinstance(entry, dict) and is_our_command(entry.get("command")):
                if found or entry != want:
                    continue
                found = True
            kept.append(entry)
        if kept or not entries:
            if len(kept) != len(entries):
                group["hooks"] = kept
            kept_groups.append(group)
    return kept_groups, found


def apply_hooks(doc: JsonObject, wanted: dict[str, JsonObject], path: Path) -> None:
    """Leave exactly one of each wanted entry of ours and no other entry of ours."""
    hooks = object_at(doc, "hooks", path)
    if hooks is None:
        if not wanted:
            return
        hooks = doc["hooks"] = {}
    emptied = False
    placed: set[str] = set()
    for event in list(hooks):
        groups = hooks[event]
        if not isinstance(groups, list):
            raise ConfigError(
                f'{path}: hooks."{event}" should be a list of matcher groups; '
                "fix the file, then run the install again (nothing was written)"
            )
        kept, found = prune_groups(groups, wanted.get(event))
        if event in wanted and not found:
            kept.append({"hooks": [wanted[event]]})
        if event in wanted:
            placed.add(event)
        if kept or not groups:
            hooks[event] = kept
        else:
            del hooks[event]
            emptied = True
    for event, entry in wanted.items():
        if event not in placed:
            hooks[event] = [{"hooks": [entry]}]
    if emptied and not hooks:
        del doc["hooks"]


# --------------------------------------------------------------------- files


def read_json(path: Path) -> JsonObject | None:
    """The file's object, None when it does not exist; ConfigError when unusable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was written") from exc
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno}); "
            "fix or move the file, then run the install again (nothing was written)"
        ) from exc
    except (ValueError, RecursionError) as exc:  # a number past int()'s digits, deep nesting
        raise ConfigError(
            f"{path} cannot be read as JSON here ({str(exc)[:120]}); "
            "fix or move the file, then run the install again (nothing was written)"
        ) from None
    if not isinstance(doc, dict):
        raise ConfigError(
            f"{path} should hold a JSON object, not {type(doc).__name__}; "
            "fix or move the file, then run the install again (nothing was written)"
        )
    return doc


def _replace(real: Path, data: bytes, mode: int) -> None:
    """Write ``data`` to ``real`` through a temporary file, so a crash leaves no half file."""
    real.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        os.replace(temp, real)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def write_json(path: Path, doc: JsonObject) -> None:
    # A dotfile manager often symlinks these files; write through the link.
    real = Path(os.path.realpath(path))
    try:
        mode = stat.S_IMODE(real.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    _replace(real, text.encode("utf-8"), mode)


@dataclass
class _FileChange(Generic[C]):
    """One file's content before and after the install; ``commit`` writes the difference."""

    path: Path
    before: C | None
    after: C | None

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def commit(self) -> None:
        if not self.changed:
            return
        if self.after is None:
            self._remove()
        else:
            self._write(self.after)

    def _remove(self) -> None:
        raise NotImplementedError

    def _write(self, after: C) -> None:
        raise NotImplementedError


class ScriptChange(_FileChange[bytes]):
    """The project's copy of the hook script: written, refreshed or removed."""

    def _remove(self) -> None:
        self.path.unlink(missing_ok=True)
        # .claude/hooks, then .claude: rmdir refuses a directory that holds anything.
        with contextlib.suppress(OSError):
            self.path.parent.rmdir()
            self.path.parent.parent.rmdir()

    def _write(self, after: bytes) -> None:
        _replace(self.path, after, 0o644)


def plan_script(path: Path, uninstall: bool) -> ScriptChange:
    try:
        before = path.read_bytes()
    except FileNotFoundError:
        before = None
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc}; nothing was written") from exc
    return ScriptChange(path, before, None if uninstall else hook_script().read_bytes())


class Change(_FileChange[JsonObject]):
    """A settings file of Claude Code."""

    def _remove(self) -> None:
        real = Path(os.path.realpath(self.path))
        real.unlink(missing_ok=True)
        # An empty .claude directory is one the install created; rmdir
        # refuses any directory that holds something.
        if real.parent.name == ".claude":
            with contextlib.suppress(OSError):
                real.parent.rmdir()

    def _write(self, after: JsonObject) -> None:
        write_json(self.path, after)


def plan(path: Path, edit: Callable[[JsonObject], None], uninstall: bool) -> Change:
    before = read_json(path)
    if before is None and uninstall:
        return Change(path, None, None)
    after = copy.deepcopy(before or {})
    edit(after)
    # A file our entries alone filled goes with them; one that was empty stays.
    if uninstall and before and not after:
        return Change(path, before, None)
    return Change(path, before, after)


# ----------------------------------------------------------------------- CLI


def resolve_target(args: argparse.Namespace) -> Target:
    if args.user:
        home = Path.home()
        return Target("user", home / ".claude.json", home / ".claude" / "settings.json")
    # realpath, not Path.resolve: the latter raises RuntimeError on a loop of links.
    root = Path(os.path.realpath(args.project or os.getcwd()))
    try:
        found = os.stat(root)
    except FileNotFoundError:
        raise ConfigError(
            f"--project {root}: no such directory; name an existing project"
        ) from None
    except OSError as exc:
        raise ConfigError(
            f"--project {root}: cannot be used ({exc.strerror}); name an existing project"
        ) from None
    if not stat.S_ISDIR(found.st_mode):
        raise ConfigError(f"--project {root}: is a file, not a directory; name the project's")
    return Target("project", root / ".mcp.json", root / ".claude" / "settings.json")


def check_url(url: str) -> str:
    """The MCP endpoint as written into the harness's files and the hook's command line
    (urlcheck.py); the server's token is read from the environment, never the URL, where
    it would sit in a settings file and, through the hook's --url, the process list."""
    problem = url_problem(url, secret_from=f"{TOKEN_ENV} for the server's token")
    if problem is not None:
        raise ConfigError(
            f"--url {shown(url)}: {problem}; give the server's MCP endpoint as an http(s) "
            f"URL, e.g. {DEFAULT_MCP_URL}"
        )
    return url


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kenning-encounter install",
        description="Register the kenning-encounter MCP server and hooks with Claude Code.",
    )
    parser.add_argument("target", choices=["claude-code"], help="the harness to wire")
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--project",
        metavar="DIR",
        help="project scope: DIR/.mcp.json and DIR/.claude/settings.json (default: .)",
    )
    where.add_argument(
        "--user",
        action="store_true",
        help="user scope: ~/.claude.json and ~/.claude/settings.json",
    )
    parser.add_argument(
        "--url", default=DEFAULT_MCP_URL, help=f"MCP endpoint (default {DEFAULT_MCP_URL})"
    )
    parser.add_argument(
        "--uninstall", action="store_true", help="remove what the install added, nothing else"
    )
    return parser


def run_install(argv: list[str]) -> int:
    """Entry point of ``kenning-encounter install``; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        target = resolve_target(args)
        url = check_url(args.url)
        entry = None if args.uninstall else server_entry(url, dict(os.environ))
        script: ScriptChange | None = None
        shell_path: str | None = None
        if target.scope == "project":
            script = plan_script(target.mcp_file.parent / VENDORED_HOOK, args.uninstall)
            shell_path = f"{PROJECT_DIR_REF}/{VENDORED_HOOK.as_posix()}"
        wanted = {} if args.uninstall else hook_commands(url, shell_path)
        mcp_change = plan(
            target.mcp_file,
            lambda doc: apply_server(doc, entry, target.mcp_file),
            args.uninstall,
        )
        changes: list[Change | ScriptChange] = [
            mcp_change,
            plan(
                target.settings_file,
                lambda doc: apply_hooks(doc, wanted, target.settings_file),
                args.uninstall,
            ),
        ]
        # The script before the settings that run it (and after them on the way out).
        if script is not None:
            changes = [*changes, script] if args.uninstall else [script, *changes]
        # Every file was read and checked before any is written.
        for change in changes:
            change.commit()
    except (ConfigError, OSError) as exc:
        print(f"kenning-encounter install: error: {exc}", file=sys.stderr)
        return 1
    verb = "removed from" if args.uninstall else "registered in"
    for change in changes:
        state = f"{verb} {change.path}" if change.changed else f"{change.path} unchanged"
        print(f"kenning-encounter ({target.scope} scope): {state}")
    if not args.uninstall and target.scope == "project" and mcp_change.changed:
        print("Claude Code asks once to approve project MCP servers from .mcp.json.")
    if not args.uninstall:
        print(gate_summary(os.environ.get("KENNING_ENCOUNTER_INFUSE", "auto")))
    return 0


def gate_summary(setting: str) -> str:
    """What the prompt hook will do, as the installer says it (the hook decides per prompt)."""
    setting = setting.strip().lower()
    if setting == "on":
        return "Prompt infusion: on (KENNING_ENCOUNTER_INFUSE=on): every prompt is infused."
    if setting == "off":
        return "Prompt infusion: off (KENNING_ENCOUNTER_INFUSE=off): no prompt is infused."
    return (
        "Prompt infusion: auto: prompts a person types in the terminal, the IDE extensions, "
        "the desktop app and remote sessions are infused; claude -p, the SDKs and CI are not "
        "(KENNING_ENCOUNTER_INFUSE=on infuses every prompt, off none)."
    )
