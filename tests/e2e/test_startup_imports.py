"""The server starts light: nothing heavy is imported before a tool needs it (issue 19).

Every stdio client launches the server anew, and waits for every module it
imports before its first answer. The numeric stack (numpy, scipy, igraph) is
needed only by orient, the projection tools and infusion's ranking; the matcher
(and its SDKs) only by a matcher that runs; the inspector's templates only by a
request to /ui/; the Neo4j driver only by store=neo4j. These tests read what a
real server process imported, from ``python -X importtime``: a structural check,
not a timing one.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import (
    LISTENING,
    clean_environ,
    modules_after_import,
    run_server,
    server_command,
)

pytestmark = [pytest.mark.usefixtures("clean_env")]

# Third-party stacks, and our modules that bring them.
HEAVY = (
    "numpy",
    "scipy",
    "igraph",
    "google.genai",
    "openai",
    "rich",  # the SDK's log handler, which a configured command line never installs
    "websockets",  # uvicorn's WebSocket protocol; nothing of ours speaks it
    "tomllib",  # nothing a start reads is TOML (the version is held in the package)
    "xml.etree",  # the manual is served as text; only checks parse it
    "httpx",  # doctor's probe and the OpenAI-compatible matcher, not the server
    "jinja2",  # the inspector's pages load on the first request to /ui/
    "neo4j",  # the driver, only for store=neo4j
    "kenning_encounter.meaning",  # the matcher, off without a key
    "kenning_encounter.store.neo4j",
    "kenning_encounter.ui.app",
    "kenning_encounter.server.doctor",
    "kenning_encounter.analytics.algorithms",
    "kenning_encounter.analytics.catalog",
    "kenning_encounter.analytics.orient",
    "kenning_encounter.infusion.pipeline",
    "kenning_encounter.infusion.rank",
    # export and import: the dump format, only for those commands and tools
    "kenning_encounter.memory.load",
    "kenning_encounter.memory.dump",
    "kenning_encounter.memory.dump_format",
    "kenning_encounter.memory.dump_lines",
)
# The modules a client's launch reaches before any tool runs: the command line, both
# transports, the server with every tool group.
ENTRY = (
    "kenning_encounter.cli",
    "kenning_encounter.server.app",
    "kenning_encounter.server.transports",
)
IMPORTED = re.compile(r"^import time:\s+\d+ \|\s+\d+ \|\s*(\S+)\s*$")


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def _request(ident: int, method: str, params: dict[str, Any]) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": ident, "method": method, "params": params}) + "\n"


def _serve_importing(
    data_dir: Path, *calls: tuple[str, dict[str, Any]]
) -> tuple[set[str], dict[int, Any]]:
    """A real stdio server answering initialize, tools/list and ``calls``: what it
    imported, and its answers by request id."""
    script = _request(
        1,
        "initialize",
        {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "import check", "version": "1"},
        },
    )
    script += json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n"
    script += _request(2, "tools/list", {})
    for ident, (name, arguments) in enumerate(calls, start=3):
        script += _request(ident, "tools/call", {"name": name, "arguments": arguments})
    command = server_command("serve", "--transport", "stdio", "--data-dir", str(data_dir))
    done = subprocess.run(
        [sys.executable, "-X", "importtime", *command[1:]],
        input=script,
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-4_000:]
    answers = {m["id"]: m for m in map(json.loads, done.stdout.splitlines()) if "id" in m}
    modules = {m.group(1) for m in map(IMPORTED.match, done.stderr.splitlines()) if m}
    return modules, answers


def test_importing_the_entry_modules_loads_nothing_heavy() -> None:
    modules = modules_after_import(*ENTRY)
    assert set(ENTRY) <= modules
    assert _heavy(modules) == []


# Ours that are not result models: the settings (read at every start) and the SDK's own
# classes we extend.
NOT_LAZY = frozenset(
    {
        "kenning_encounter.config.Settings",
        "kenning_encounter.server.app_tools.DeferredTool",
        "kenning_encounter.server.registry._CheckedInCall",
    }
)
# Made at import on purpose: the infusion presets are instances.
BUILT_AT_IMPORT = frozenset({"kenning_encounter.infusion.config.InfusionConfig"})
_MODELS_PROBE = """
import json, sys
from pydantic import BaseModel
from kenning_encounter.lazymodel import LazyModel
for name in sys.argv[1:]:
    __import__(name)
def below(c):
    for s in c.__subclasses__():
        yield s
        yield from below(s)
found = []
for c in set(below(BaseModel)):
    meta = c.__pydantic_generic_metadata__
    if not c.__module__.startswith("kenning_encounter") or meta["origin"] is not None:
        continue  # a parametrization (Listing[Ranked]) is built with the model holding it
    found.append({
        "name": c.__module__ + "." + c.__qualname__.split("[")[0],
        "lazy": issubclass(c, LazyModel),
        "built": c.__pydantic_complete__,
        "generic": bool(meta["parameters"]),
    })
print(json.dumps(found))
"""


def test_importing_the_entry_modules_builds_none_of_our_result_models() -> None:
    """Our pydantic models are built on first use (lazymodel.py): a start builds none of
    them, and a model of ours on plain ``BaseModel`` is named here."""
    done = subprocess.run(
        [sys.executable, "-c", _MODELS_PROBE, *ENTRY],
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=120,
        check=True,
    )
    models: list[dict[str, Any]] = json.loads(done.stdout)
    assert len(models) > 40  # the probe saw our models
    plain = sorted(m["name"] for m in models if not m["lazy"])
    assert set(plain) == NOT_LAZY, "a model of ours not on LazyModel"
    built = sorted(
        m["name"]
        for m in models
        if m["lazy"] and m["built"] and not m["generic"] and m["name"] not in BUILT_AT_IMPORT
    )
    assert built == []


def test_a_server_answering_initialize_a_listing_and_a_search_loads_nothing_heavy(
    tmp_path: Path,
) -> None:
    modules, answers = _serve_importing(tmp_path / "memory", ("search", {"query": "retry"}))
    assert set(answers) == {1, 2, 3}
    assert "orient" in {t["name"] for t in answers[2]["result"]["tools"]}
    assert answers[3]["result"]["structuredContent"]["hits"] == []
    assert "kenning_encounter.server.app" in modules  # the check reads this process's imports
    assert _heavy(modules) == []


def test_an_http_server_listens_having_loaded_nothing_heavy(tmp_path: Path) -> None:
    """Over HTTP the infuser is readied on a thread once the server listens (its numeric
    stack is imported then); what the start imported before it listens is checked."""
    with run_server(tmp_path / "memory", env={"PYTHONPROFILEIMPORTTIME": "1"}) as server:
        lines = list(server.lines)
    before = lines[: next(i for i, line in enumerate(lines) if LISTENING.search(line))]
    modules = {m.group(1) for m in map(IMPORTED.match, before) if m}
    assert {"uvicorn", "kenning_encounter.server.app"} <= modules
    assert _heavy(modules) == []


def test_orient_loads_the_analytics_stack_when_it_runs(tmp_path: Path) -> None:
    """The other side of the check: the stack is deferred, not gone, and the tool works."""
    modules, answers = _serve_importing(tmp_path / "memory", ("orient", {}))
    assert "error" not in answers[3] and not answers[3]["result"].get("isError"), answers[3]
    assert {"numpy", "igraph", "kenning_encounter.analytics.orient"} <= set(_heavy(modules))


def test_a_launch_starts_with_the_collector_off_and_serves_with_it_on(tmp_path: Path) -> None:
    """cli.main turns the garbage collector off for a launch's start; the built server turns
    it back on, the start's objects frozen out of its walks (server/app.py settle_start)."""
    script = (
        "import gc, sys\n"
        "from kenning_encounter.cli import main\n"
        f"sys.argv = ['kenning-encounter', 'serve', '--transport', 'stdio', "
        f"'--data-dir', {str(tmp_path / 'memory')!r}]\n"
        "code = main()\n"
        "sys.stderr.write(f'after: {code} {gc.isenabled()} {gc.get_freeze_count()}\\n')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        input="",
        capture_output=True,
        text=True,
        env=clean_environ(KENNING_ENCOUNTER_QUICK_START="off"),
        timeout=180,
    )
    [after] = [line for line in done.stderr.splitlines() if line.startswith("after: ")]
    code, enabled, frozen = after.split()[1:]
    assert (code, enabled) == ("0", "True"), done.stderr[-4_000:]
    assert int(frozen) > 50_000  # the start's objects, out of the collector's walks
