"""Fixtures for the real-harness scenarios: the pinned Claude Code CLI and a wired workspace.

When the CLI is not installed (npm missing or unreachable) the scenarios skip
with the reason (KENNING_CLAUDE_CODE_DIR names another install folder); under CI=true that skip is a failure, so CI can never pass
with the harness silently left out.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.claude import Workspace, workspace
from tests.harness.install_claude import DEFAULT_DIR, find_binary, unavailable_reason


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "claude_code: drives the real Claude Code CLI (make claude-code installs it); "
        "skipped with the reason when it is missing, a failure under CI=true",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.claude_code)


def require_cli() -> Path:
    folder = Path(os.environ.get("KENNING_CLAUDE_CODE_DIR") or DEFAULT_DIR)
    binary = find_binary(folder)
    if binary is not None:
        return binary
    reason = unavailable_reason(folder) or "the Claude Code CLI could not be found"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true: the Claude Code harness must run here, but {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def claude_binary() -> Path:
    return require_cli()


@pytest.fixture
def space(tmp_path: Path, claude_binary: Path) -> Iterator[Workspace]:
    """A project wired to a real server of its own, and the stand-in model."""
    with workspace(tmp_path, claude_binary) as ws:
        yield ws
        # 2.1.332 to 2.1.337 call nothing but /v1/messages here; a new pin that does is worth a look.
        assert not ws.fake.unknown, f"Claude Code asked the stand-in for {ws.fake.unknown}"


@pytest.fixture
def dead_space(tmp_path: Path, claude_binary: Path) -> Iterator[Workspace]:
    """A project wired to a server that is not running."""
    with workspace(tmp_path, claude_binary, serve=False) as ws:
        yield ws


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, config: pytest.Config
) -> None:
    from tests.harness.test_tool_chars import summary

    lines = summary(config)
    if lines:
        terminalreporter.section("characters per tool result under Claude Code")
        for line in lines:
            terminalreporter.write_line(line)
