"""The installer's word on why the harness cannot run: each cause named, with the fix."""

from __future__ import annotations

import json
from pathlib import Path

from tests.harness.install_claude import (
    FAILURE_NOTE,
    PACKAGE,
    VERSION,
    find_binary,
    install_command,
    unavailable_reason,
)


def test_nothing_installed_says_how_to_install(tmp_path: Path) -> None:
    reason = unavailable_reason(tmp_path)
    assert reason is not None and find_binary(tmp_path) is None
    assert "not installed" in reason and "make claude-code" in reason


def test_a_failed_npm_install_is_quoted(tmp_path: Path) -> None:
    (tmp_path / FAILURE_NOTE).write_text("code ECONNREFUSED / syscall connect\n")
    reason = unavailable_reason(tmp_path)
    assert reason is not None and "ECONNREFUSED" in reason and "make claude-code" in reason


def test_another_version_is_not_taken_for_the_pinned_one(tmp_path: Path) -> None:
    manifest = tmp_path / "node_modules" / PACKAGE / "package.json"
    manifest.parent.mkdir(parents=True)
    manifest.write_text(json.dumps({"name": PACKAGE, "version": "0.0.1"}))
    reason = unavailable_reason(tmp_path)
    assert reason is not None and "0.0.1" in reason and VERSION in reason
    assert find_binary(tmp_path) is None


def test_the_install_pins_one_exact_version(tmp_path: Path) -> None:
    command = install_command(tmp_path)
    assert command[:2] == ["npm", "install"] and "--save-exact" in command
    assert command[-1] == f"{PACKAGE}@{VERSION}"
