"""doctor reads this project's and this user's Claude Code wiring: an entry an older
install wrote, a hook script gone or not this version's. The real CLI, in a project and
a home of the test's own."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from tests.support.cli import ROOT

HOOK = ROOT / "src" / "kenning_encounter" / "hooks" / "infuse_hook.py"


def _cli(project: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    env |= {"HOME": str(home), "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "kenning_encounter", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _wiring(project: Path, home: Path) -> list[str]:
    done = _cli(project, home, "doctor", "--data-dir", str(project / "memory"))
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.strip() for line in done.stdout.splitlines() if "claude code" in line]


def test_doctor_names_what_is_wrong_with_the_wiring(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    assert _wiring(project, home) == []  # no Claude Code here: nothing said
    # What 0.1.0 wrote: python3 on the package's script, nothing between it and a prompt.
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    old = f"python3 -S {HOOK} --mode prompt"
    entry = {"hooks": [{"type": "command", "command": old, "timeout": 10}]}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [entry]}}))
    [unguarded] = _wiring(project, home)
    assert unguarded.startswith("WARN") and "runs its script unguarded" in unguarded
    installed = _cli(project, home, "install", "claude-code", "--project", ".")
    assert installed.returncode == 0, installed.stderr
    assert _wiring(project, home) == [f"OK    claude code hooks wired in {settings}"]
    copy = project / ".claude" / "hooks" / "kenning_encounter_infuse_hook.py"
    copy.write_bytes(copy.read_bytes() + b"# older\n")
    [older] = _wiring(project, home)
    assert older.startswith("WARN") and f"its hook script {copy} is not this version's" in older
    copy.unlink()
    [gone] = _wiring(project, home)
    assert f"its hook script {copy} is missing" in gone
    # The user scope is read from HOME, beside the project's.
    assert _cli(project, home, "install", "claude-code", "--user").returncode == 0
    user = home / ".claude" / "settings.json"
    assert f"OK    claude code hooks wired in {user}" in _wiring(project, home)


def test_doctor_shows_a_hostile_script_path_escaped(tmp_path: Path) -> None:
    """A project's settings are anybody's text: a hook script path holding a line break
    and terminal escapes is shown escaped, on the finding's own line."""
    from kenning_encounter.install import guarded_command

    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    script = str(project / "kenning_encounter_infuse_hook.py\nOK    all\x1b[2J\x9b31m.py")
    command = guarded_command(shlex.quote(script), "--mode prompt", "prompt")
    entry = {"hooks": [{"type": "command", "command": command, "timeout": 10}]}
    settings.write_text(json.dumps({"hooks": {"UserPromptSubmit": [entry]}}))
    done = _cli(project, home, "doctor", "--data-dir", str(project / "memory"))
    assert done.returncode == 0, done.stdout + done.stderr
    [missing] = [line for line in done.stdout.splitlines() if "claude code" in line]
    assert "is missing" in missing
    assert "\\nOK    all\\x1b[2J\\x9b31m.py is missing" in missing
    assert not any(ch in done.stdout for ch in "\x1b\x9b")
    assert not any(line.startswith("OK    all") for line in done.stdout.splitlines())
