"""The plugin in plugin/kenning-encounter: validated by Claude Code itself, then used by it.

The plugin is the installer's wiring as one unit (MCP server and the three
hooks); these tests load it with ``--plugin-dir`` in a project the installer
never touched, so everything the model gets comes through the plugin.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.claude import (
    PLUGIN_TOOL_PREFIX,
    START_CONTEXT,
    Agent,
    Workspace,
    call_memory,
    infusion_of,
    notices,
    workspace,
)
from tests.harness.test_sessions import FALCON, advance, observation, record
from tests.support.handles import handle

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "plugin" / "kenning-encounter"
HOOK_SOURCE = ROOT / "src" / "kenning_encounter" / "hooks" / "infuse_hook.py"
PLUGIN_HOOK = Path("hooks") / "kenning_encounter_infuse_hook.py"


def test_the_plugin_hook_is_the_package_hook() -> None:
    assert (PLUGIN / PLUGIN_HOOK).read_bytes() == HOOK_SOURCE.read_bytes(), (
        f"copy {HOOK_SOURCE} to {PLUGIN / PLUGIN_HOOK}"
    )


def test_claude_validates_the_plugin_strictly(claude_binary: Path, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(claude_binary), "plugin", "validate", "--strict", "--json", str(PLUGIN)],
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(done.stdout)
    assert report["success"] is True
    assert report["manifest"]["errors"] == [] and report["manifest"]["warnings"] == []
    events = sorted(h["event"] for h in report["provides"]["hooks"])
    assert events == ["SessionEnd", "SessionStart", "UserPromptSubmit"]
    [server] = report["provides"]["mcpServers"]
    assert server["name"] == "kenning-encounter" and server["type"] == "http"


@pytest.fixture
def bare(tmp_path: Path, claude_binary: Path) -> Iterator[Workspace]:
    """A workspace whose project the installer has not wired: only the plugin wires it."""
    with workspace(tmp_path, claude_binary) as space:
        for wired in (space.project / ".mcp.json", space.project / ".claude"):
            if wired.is_dir():
                shutil.rmtree(wired)
            else:
                wired.unlink()
        yield space


def test_the_plugin_wires_claude_code(bare: Workspace) -> None:
    assert bare.server is not None
    env = {"KENNING_ENCOUNTER_URL": bare.server.url}
    plugin = ("--plugin-dir", str(PLUGIN))
    bare.fake.responder = Agent(
        advance("plugin", PLUGIN_TOOL_PREFIX),
        record(observation("peregrine dive", FALCON), prefix=PLUGIN_TOOL_PREFIX),
    )
    run = bare.print_run("note the falcon", *plugin, **env)
    session = run.session_id()
    first = bare.fake.agent_requests()[0].text()
    assert START_CONTEXT in first and f"session_id is {session}" in first
    results = bare.fake.tool_results()
    assert [r.is_error for r in results] == [False, False], results
    before = len(bare.fake.agent_requests())
    bare.print_run("how fast does the peregrine falcon dive?", *plugin, **env)
    [request] = bare.fake.agent_requests()[before:]
    assert "390 km/h" in (infusion_of(request) or ""), request.text()[-3000:]
    sealed = call_memory(
        bare.server.url,
        "create_entities",
        {"session_id": handle(session), "entities": [observation("late", "after the end")]},
    )
    assert sealed.is_error and "dissolved" in sealed.text, sealed.text


def test_a_plugin_missing_its_script_does_not_block(bare: Workspace, tmp_path: Path) -> None:
    assert bare.server is not None
    broken = tmp_path / "broken-plugin"
    shutil.copytree(PLUGIN, broken)
    (broken / PLUGIN_HOOK).unlink()
    bare.fake.responder = Agent()
    run = bare.print_run(
        "the estuary survey", "--plugin-dir", str(broken), KENNING_ENCOUNTER_URL=bare.server.url
    )
    assert "blocked" not in run.stdout + run.stderr, run.explain()
    [request] = bare.fake.agent_requests()
    text = request.text()
    assert "the estuary survey" in text
    assert [n for n in notices(text) if "missing" in n], text[-3000:]
