"""The checks behind ``kenning-encounter doctor``: is this configuration ready to serve?

Each check yields a finding: ok, warn (works, but not as configured) or fail
(what is missing and how to fix it). Doctor changes nothing: it opens an
existing embedded store only to see that it opens, and never creates one.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import shlex
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx

from kenning_encounter.config import ENV_PREFIX, Settings
from kenning_encounter.errors import ConfigError, KenningError, StoreLocked

Status = Literal["ok", "warn", "fail"]
PROBE_TIMEOUT = 3.0


@dataclass(frozen=True)
class Finding:
    status: Status
    topic: str
    detail: str
    fix: str = ""


def _serving(settings: Settings) -> Iterator[Finding]:
    from kenning_encounter.memory.directors import director_policy
    from kenning_encounter.server.app import check_face

    yield Finding(
        "ok",
        "config",
        f"store={settings.store}, transport={settings.transport}, face={settings.face}, "
        f"host={settings.host}, port={settings.port}",
    )
    try:
        settings.require_safe_bind()
    except ConfigError as exc:
        yield Finding("fail", "bind", str(exc), f"export {ENV_PREFIX}TOKEN=$(openssl rand -hex 32)")
    try:
        check_face(settings)
    except ConfigError as exc:
        yield Finding("fail", "face", str(exc), "add --face reader, or drop --hide-loci")
    try:
        director_policy(settings)  # the operating-system user's name, when none is set
    except ConfigError as exc:
        yield Finding("fail", "director", str(exc), f"export {ENV_PREFIX}DIRECTOR='Your Name'")
    if settings.token is not None and len(settings.token.get_secret_value()) < 16:
        yield Finding(
            "warn",
            "token",
            "the bearer token is shorter than 16 characters",
            "use a long random secret, e.g. openssl rand -hex 32",
        )


def _healthz(url: str) -> bool:
    parts = urlsplit(url)
    try:
        answer = httpx.get(f"{parts.scheme}://{parts.netloc}/healthz", timeout=PROBE_TIMEOUT)
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


def _embedded(settings: Settings) -> Iterator[Finding]:
    from kenning_encounter.store.embedded import place
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    data_dir = settings.resolved_data_dir
    problem = place.problem(data_dir)
    if problem is not None:
        yield Finding(
            "fail",
            "store",
            problem,
            f"choose a folder you can write with --data-dir or {ENV_PREFIX}DATA_DIR",
        )
        return
    if not EmbeddedStore.holds_memory(data_dir):
        yield Finding("ok", "store", f"no store yet at {data_dir}; serve creates it")
        return
    from kenning_encounter.memory import scrub

    unfinished = scrub.unfinished(data_dir)
    if unfinished is not None:
        said, _, fix = unfinished.partition("; ")
        yield Finding("warn", "erasure", said, fix)
    try:
        store = EmbeddedStore.open(data_dir, buffer_pool_mib=settings.buffer_pool_mib)
    except StoreLocked as exc:
        if exc.url and _healthz(exc.url):
            yield Finding(
                "ok",
                "store",
                f"{data_dir} is served by the running server "
                f"(process {exc.pid}) at {exc.url}; clients connect there",
            )
        elif exc.url:
            yield Finding(
                "fail",
                "store",
                f"{exc}, but nothing answers there",
                f"stop process {exc.pid} if it hangs, then start the server again",
            )
        else:
            yield Finding(
                "ok",
                "store",
                f"{data_dir} is in use by process {exc.pid} "
                "(a stdio server, which takes no network clients)",
            )
        return
    except KenningError as exc:
        yield Finding("fail", "store", str(exc))
        return
    try:
        yield Finding("ok", "store", f"{data_dir} opens (schema version {store.schema_version()})")
    finally:
        store.close()


def _neo4j(settings: Settings) -> Iterator[Finding]:
    uri = settings.neo4j_uri
    if not uri:
        return
    if importlib.util.find_spec("neo4j") is None:
        yield Finding(
            "fail",
            "neo4j",
            f"{uri} is configured but the neo4j driver is not installed",
            "pip install 'kenning-encounter[neo4j]'",
        )
        return
    neo4j: Any = importlib.import_module("neo4j")
    password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else ""
    try:
        driver = neo4j.GraphDatabase.driver(
            uri,
            auth=(settings.neo4j_username, password),
            connection_timeout=PROBE_TIMEOUT,
            connection_acquisition_timeout=PROBE_TIMEOUT,
        )
        try:
            driver.verify_connectivity()
            limit = _transaction_memory_limit(driver, settings.neo4j_database)
        finally:
            driver.close()
    except Exception as exc:  # every driver failure is a finding, not a crash
        yield Finding(
            "fail",
            "neo4j",
            f"cannot reach Neo4j at {uri}: {exc}",
            "start Neo4j, or correct NEO4J_URI / NEO4J_USERNAME / NEO4J_PASSWORD",
        )
        return
    yield Finding("ok", "neo4j", f"Neo4j answers at {uri} as {settings.neo4j_username}")
    yield transaction_memory_finding(limit)


def _transaction_memory_limit(driver: Any, database: str) -> str | None:
    try:
        with driver.session(database=database) as session:
            record = session.run(
                "SHOW SETTINGS YIELD name, value WHERE name = 'db.memory.transaction.max' "
                "RETURN value"
            ).single()
    except Exception:  # a user without SHOW SETTINGS: said as unknown, not as a failure
        return None
    return None if record is None else str(record[0])


def transaction_memory_finding(limit: str | None) -> Finding:
    """A single read_cypher query can take a Neo4j server's heap unless one transaction's
    memory is capped; past the heap the JVM exits, taking every client with it."""
    fix = (
        "set db.memory.transaction.max (a quarter of the heap, e.g. 256m for 1g) in neo4j.conf, "
        "so one query fails "
        "instead of the server"
    )
    if limit is None:
        return Finding("warn", "neo4j memory", "could not read db.memory.transaction.max", fix)
    if limit.strip().upper() in ("0", "0B"):
        return Finding(
            "warn",
            "neo4j memory",
            "db.memory.transaction.max is unlimited: one read_cypher query can exhaust the heap",
            fix,
        )
    return Finding("ok", "neo4j memory", f"one transaction may use at most {limit}")


def _matcher(settings: Settings) -> Iterator[Finding]:
    chosen = "matcher" in settings.model_fields_set
    # A matcher someone asked for and cannot run is a failure; the default one is a warning,
    # because infusion then falls back to the lexical path, which is a working state.
    missing: Status = "fail" if chosen else "warn"
    if settings.matcher == "auto" and settings.matcher_provider == "off":
        yield Finding(
            "ok",
            "matcher",
            "auto, no GEMINI_API_KEY: infusion selects lexically by choice. To turn the "
            "meaning matcher on, export GEMINI_API_KEY=... (pip install "
            "'kenning-encounter[gemini]'), or pass --matcher openai with "
            f"{ENV_PREFIX}MATCHER_BASE_URL for a local OpenAI-compatible model",
        )
        return
    if settings.matcher_provider == "off":
        yield Finding("ok", "matcher", "off: infusion selects lexically")
        return
    if settings.matcher_provider == "gemini":
        if importlib.util.find_spec("google.genai") is None:
            yield Finding(
                missing,
                "matcher",
                "the gemini matcher needs google-genai",
                f"pip install 'kenning-encounter[gemini]', or {ENV_PREFIX}MATCHER=off",
            )
        if settings.gemini_api_key is None:
            yield Finding(
                missing,
                "matcher",
                "the gemini matcher has no key (GEMINI_API_KEY); infusion falls back to "
                "lexical selection",
                f"export GEMINI_API_KEY=..., or {ENV_PREFIX}MATCHER=off",
            )
        else:
            yield Finding("ok", "matcher", "gemini, key present")
        return
    if not settings.matcher_base_url:
        yield Finding(
            missing,
            "matcher",
            "the openai matcher has no endpoint",
            f"set {ENV_PREFIX}MATCHER_BASE_URL, e.g. http://127.0.0.1:11434/v1",
        )
        return
    if not os.environ.get(settings.matcher_api_key_env):
        yield Finding(
            "warn",
            "matcher",
            f"{settings.matcher_api_key_env} is not set; fine for a "
            "local endpoint that needs no key",
            f"export {settings.matcher_api_key_env}=...",
        )
    else:
        yield Finding(
            "ok", "matcher", f"openai-compatible at {settings.matcher_base_url}, key present"
        )


def _hook_commands(path: Path) -> list[str]:
    """Our hook commands registered in a Claude Code settings file (none when unreadable)."""
    from kenning_encounter.install import is_our_command

    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    hooks = doc.get("hooks") if isinstance(doc, dict) else None
    found: list[str] = []
    for groups in hooks.values() if isinstance(hooks, dict) else ():
        for group in groups if isinstance(groups, list) else ():
            inner = group.get("hooks") if isinstance(group, dict) else None
            for hook in inner if isinstance(inner, list) else ():
                command = hook.get("command") if isinstance(hook, dict) else None
                if is_our_command(command):
                    found.append(str(command))
    return found


def _script_of(command: str, project: Path) -> Path | None:
    """The script a guarded command runs (install.guarded_command), or None."""
    head = command.removeprefix("if [ -r ").partition(" ]")[0]
    try:
        words = shlex.split(head.replace('"$CLAUDE_PROJECT_DIR"', shlex.quote(str(project))))
    except ValueError:
        return None
    return Path(words[0]) if len(words) == 1 else None


def _claude_code(_: Settings) -> Iterator[Finding]:
    """The Claude Code wiring of this project (the working directory) and this user: an
    entry an older install wrote, or a hook script that is gone or not this version's."""
    from kenning_encounter.install import guarded_command, hook_script

    project = Path.cwd()
    shipped = hook_script().read_bytes()
    scopes = (
        (project / ".claude" / "settings.json", "--project ."),
        (project / ".claude" / "settings.local.json", "--project ."),
        (Path.home() / ".claude" / "settings.json", "--user"),
    )
    guard = guarded_command("", "", "prompt").partition("]")[0].removesuffix(" ")
    for path, scope in scopes:
        commands = _hook_commands(path)
        if not commands:
            continue
        fix = f"kenning-encounter install claude-code {scope}"
        if any(not c.startswith(guard) for c in commands):
            yield Finding(
                "warn",
                "claude code",
                f"{path}: a hook entry from an older install runs its script unguarded, so "
                "Claude Code blocks every prompt if the script goes away",
                fix,
            )
            continue
        scripts = {_script_of(c, project) for c in commands}
        problems: list[str] = []
        for script in sorted(s for s in scripts if s is not None):
            try:
                held = script.read_bytes()
            except OSError:
                problems.append(f"its hook script {script} is missing")
                continue
            if held != shipped:
                problems.append(f"its hook script {script} is not this version's")
        if problems:
            yield Finding("warn", "claude code", f"{path}: {'; '.join(problems)}", fix)
        else:
            yield Finding("ok", "claude code", f"hooks wired in {path}")


CHECKS: tuple[Callable[[Settings], Iterator[Finding]], ...] = (
    _serving,
    _embedded,
    _neo4j,
    _matcher,
    _claude_code,
)


def run_doctor(settings: Settings) -> list[Finding]:
    findings: list[Finding] = []
    for check in CHECKS:
        if check is _embedded and settings.store != "embedded":
            continue
        findings.extend(check(settings))
    return findings
