"""`kenning-encounter install claude-code` against real settings files on disk."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from kenning_encounter.install import (
    SERVER_NAME,
    VENDORED_HOOK,
    guarded_command,
    hook_commands,
    hook_script,
    run_install,
)

OTHER_SETTINGS: dict[str, object] = {
    "permissions": {"allow": ["Bash(ls:*)"]},
    "hooks": {
        "UserPromptSubmit": [
            {"hooks": [{"type": "command", "command": "~/bin/prompt-guard.sh"}]},
        ],
        "SessionStart": [
            {"matcher": "startup", "hooks": [{"type": "command", "command": "echo hi"}]},
        ],
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": "lint.sh", "timeout": 30}],
            },
        ],
    },
    "model": "opus",
}
OTHER_MCP: dict[str, object] = {
    "mcpServers": {"github": {"type": "http", "url": "https://api.example.com/mcp"}},
    "unknownKey": [1, 2, 3],
}


@pytest.fixture(autouse=True)
def _no_token(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KENNING_ENCOUNTER_TOKEN", raising=False)


def write(path: Path, doc: object) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = (json.dumps(doc, indent=4) + "\n").encode()
    path.write_bytes(data)
    return data


def load(path: Path) -> dict[str, object]:
    doc = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(doc, dict)
    return doc


def ordered(doc: object) -> str:
    """Content and key order: two documents with equal output mean the same thing."""
    return json.dumps(doc)


def our_commands(settings: dict[str, object]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    hooks = settings.get("hooks", {})
    assert isinstance(hooks, dict)
    for event, groups in hooks.items():
        for group in groups:
            for entry in group["hooks"]:
                if "infuse_hook.py" in entry["command"]:
                    found.setdefault(event, []).append(entry["command"])
    return found


def project_files(root: Path) -> tuple[Path, Path]:
    return root / ".mcp.json", root / ".claude" / "settings.json"


def test_fresh_project_gets_server_and_three_hooks(tmp_path: Path) -> None:
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    mcp, settings = project_files(tmp_path)

    assert load(mcp) == {
        "mcpServers": {SERVER_NAME: {"type": "http", "url": "http://127.0.0.1:8765/mcp/"}}
    }
    # The settings are committed with the project: the hook runs from the project's copy.
    script = '"$CLAUDE_PROJECT_DIR"/.claude/hooks/kenning_encounter_infuse_hook.py'
    assert (tmp_path / VENDORED_HOOK).read_bytes() == hook_script().read_bytes()
    assert our_commands(load(settings)) == {
        "UserPromptSubmit": [guarded_command(script, "--mode prompt", "prompt")],
        "SessionStart": [guarded_command(script, "--mode session-start", "session-start")],
        "SessionEnd": [guarded_command(script, "--mode session-end", "session-end")],
    }
    assert settings.read_text(encoding="utf-8").startswith('{\n  "hooks": {\n    "')


def test_install_merges_with_what_is_there(tmp_path: Path) -> None:
    mcp, settings = project_files(tmp_path)
    write(mcp, OTHER_MCP)
    write(settings, OTHER_SETTINGS)

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    merged_mcp, merged = load(mcp), load(settings)

    assert list(merged_mcp) == ["mcpServers", "unknownKey"]
    servers = merged_mcp["mcpServers"]
    assert isinstance(servers, dict)
    assert list(servers) == ["github", SERVER_NAME]
    assert merged_mcp["unknownKey"] == [1, 2, 3]

    assert list(merged) == ["permissions", "hooks", "model"]
    hooks = merged["hooks"]
    assert isinstance(hooks, dict)
    assert list(hooks) == ["UserPromptSubmit", "SessionStart", "PreToolUse", "SessionEnd"]
    # Existing groups stay first and untouched; ours follow.
    assert hooks["UserPromptSubmit"][0] == OTHER_SETTINGS["hooks"]["UserPromptSubmit"][0]  # type: ignore[index]
    assert hooks["SessionStart"][0] == OTHER_SETTINGS["hooks"]["SessionStart"][0]  # type: ignore[index]
    assert hooks["PreToolUse"] == OTHER_SETTINGS["hooks"]["PreToolUse"]  # type: ignore[index]
    assert {event: len(commands) for event, commands in our_commands(merged).items()} == {
        "UserPromptSubmit": 1,
        "SessionStart": 1,
        "SessionEnd": 1,
    }


def test_second_install_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    mcp, settings = project_files(tmp_path)
    write(mcp, OTHER_MCP)
    write(settings, OTHER_SETTINGS)
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    first = (mcp.read_bytes(), settings.read_bytes())
    stats = (mcp.stat().st_mtime_ns, settings.stat().st_ino)
    capsys.readouterr()

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    assert (mcp.read_bytes(), settings.read_bytes()) == first
    assert (mcp.stat().st_mtime_ns, settings.stat().st_ino) == stats
    assert capsys.readouterr().out.count("unchanged") == 3


def test_uninstall_restores_the_original(tmp_path: Path) -> None:
    mcp, settings = project_files(tmp_path)
    write(mcp, OTHER_MCP)
    write(settings, OTHER_SETTINGS)

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    assert run_install(["claude-code", "--project", str(tmp_path), "--uninstall"]) == 0

    assert ordered(load(mcp)) == ordered(OTHER_MCP)
    assert ordered(load(settings)) == ordered(OTHER_SETTINGS)


def test_uninstall_of_a_fresh_install_leaves_no_files(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("a project")
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    assert run_install(["claude-code", "--project", str(tmp_path), "--uninstall"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README"]


def test_uninstall_without_an_install_writes_nothing(tmp_path: Path) -> None:
    mcp, settings = project_files(tmp_path)
    originals = (write(mcp, {}), write(settings, OTHER_SETTINGS))
    assert run_install(["claude-code", "--project", str(tmp_path), "--uninstall"]) == 0
    assert (mcp.read_bytes(), settings.read_bytes()) == originals


def test_stale_entries_from_another_path_are_replaced(tmp_path: Path) -> None:
    _, settings = project_files(tmp_path)
    stale = "python3 /old/venv/lib/kenning_encounter/hooks/infuse_hook.py --mode prompt"
    linked = "python3 /src/repo/scripts/kenning_encounter_infuse_hook.py --mode session-start"
    doc = {
        "hooks": {
            "UserPromptSubmit": [
                {
                    "hooks": [
                        {"type": "command", "command": "~/bin/prompt-guard.sh"},
                        {"type": "command", "command": stale},
                    ]
                },
                {"hooks": [{"type": "command", "command": stale}]},
            ],
            "SessionStart": [{"hooks": [{"type": "command", "command": linked}]}],
            "Stop": [{"hooks": [{"type": "command", "command": stale}]}],
        }
    }
    write(settings, doc)

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    merged = load(settings)
    hooks = merged["hooks"]
    assert isinstance(hooks, dict)
    assert "Stop" not in hooks
    assert hooks["UserPromptSubmit"][0] == {
        "hooks": [{"type": "command", "command": "~/bin/prompt-guard.sh"}]
    }
    commands = our_commands(merged)
    assert len(commands["UserPromptSubmit"]) == 1
    assert stale not in commands["UserPromptSubmit"]
    assert len(commands["SessionStart"]) == 1
    assert linked not in commands["SessionStart"]


def test_duplicated_entries_of_ours_collapse_to_one(tmp_path: Path) -> None:
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    _, settings = project_files(tmp_path)
    doc = load(settings)
    hooks = doc["hooks"]
    assert isinstance(hooks, dict)
    hooks["UserPromptSubmit"].append(hooks["UserPromptSubmit"][0])
    write(settings, doc)

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    assert len(our_commands(load(settings))["UserPromptSubmit"]) == 1


def test_non_default_url_reaches_the_hooks(tmp_path: Path) -> None:
    url = "http://memory.internal:9000/mcp/"
    assert run_install(["claude-code", "--project", str(tmp_path), "--url", url]) == 0
    mcp, settings = project_files(tmp_path)

    servers = load(mcp)["mcpServers"]
    assert isinstance(servers, dict)
    assert servers[SERVER_NAME] == {"type": "http", "url": url}
    for commands in our_commands(load(settings)).values():
        assert " --url http://memory.internal:9000;" in commands[0]

    # A new URL replaces ours in place rather than adding a second set.
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    for commands in our_commands(load(settings)).values():
        assert len(commands) == 1
        assert "--url" not in commands[0]


def test_token_is_referenced_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_TOKEN", "s3cret-value")
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    mcp, settings = project_files(tmp_path)

    assert "s3cret-value" not in mcp.read_text() + settings.read_text()
    servers = load(mcp)["mcpServers"]
    assert isinstance(servers, dict)
    assert servers[SERVER_NAME]["headers"] == {"Authorization": "Bearer ${KENNING_ENCOUNTER_TOKEN}"}


@pytest.mark.parametrize(
    "text",
    ['{"hooks": {,}', '{"n": ' + "9" * 5_000 + "}", "[" * 100_000 + "]" * 100_000],
    ids=["not JSON", "a number int() refuses", "nested past the parser"],
)
def test_json_this_cannot_read_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    mcp, _ = project_files(tmp_path)
    mcp.parent.mkdir(parents=True, exist_ok=True)
    mcp.write_text(text)
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(mcp) in err and "nothing was written" in err
    assert mcp.read_text() == text


@pytest.mark.parametrize("broken", ["mcp", "settings"])
def test_malformed_file_is_refused_and_nothing_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    mcp, settings = project_files(tmp_path)
    bad, good = (mcp, settings) if broken == "mcp" else (settings, mcp)
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"hooks": {,}')
    good_bytes = write(good, OTHER_MCP if good == mcp else OTHER_SETTINGS)

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "not valid JSON" in err
    assert "nothing was written" in err
    assert bad.read_text() == '{"hooks": {,}'
    assert good.read_bytes() == good_bytes
    assert sorted(p.name for p in bad.parent.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([1, 2], "should hold a JSON object"),
        ({"hooks": []}, '"hooks" should be a JSON object'),
        ({"hooks": {"UserPromptSubmit": {}}}, "should be a list of matcher groups"),
    ],
)
def test_wrong_shapes_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], doc: object, message: str
) -> None:
    _, settings = project_files(tmp_path)
    original = write(settings, doc)
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 1
    assert message in capsys.readouterr().err
    assert settings.read_bytes() == original
    assert not (tmp_path / ".mcp.json").exists()


def test_user_scope_uses_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    claude_json = home / ".claude.json"
    write(claude_json, {"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}})

    assert run_install(["claude-code", "--user"]) == 0
    doc = load(claude_json)
    assert list(doc) == ["numStartups", "projects", "mcpServers"]
    assert SERVER_NAME in doc["mcpServers"]  # type: ignore[operator]
    assert len(our_commands(load(home / ".claude" / "settings.json"))) == 3

    assert run_install(["claude-code", "--user", "--uninstall"]) == 0
    assert load(claude_json) == {"numStartups": 3, "projects": {"/x": {"mcpServers": {}}}}


def test_file_mode_and_symlinks_are_kept(tmp_path: Path) -> None:
    real_dir = tmp_path / "dotfiles"
    real_dir.mkdir()
    real = real_dir / "settings.json"
    write(real, OTHER_SETTINGS)
    real.chmod(0o640)
    _, settings = project_files(tmp_path / "project")
    settings.parent.mkdir(parents=True)
    settings.symlink_to(real)

    assert run_install(["claude-code", "--project", str(tmp_path / "project")]) == 0
    assert settings.is_symlink()
    assert len(our_commands(load(real))) == 3
    assert real.stat().st_mode & 0o777 == 0o640


def test_new_files_follow_the_umask(tmp_path: Path) -> None:
    umask = os.umask(0o027)
    try:
        assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    finally:
        os.umask(umask)
    for path in project_files(tmp_path):
        assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize(
    "argv",
    [
        ["claude-code", "--user", "--project", "."],
        ["cursor"],
        [],
    ],
)
def test_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert run_install(argv) == 2
    assert "usage" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("ftp://host/mcp", "not an http(s) URL"),
        ("127.0.0.1:8765/mcp", "not an http(s) URL"),
        ("http:///mcp", "not an http(s) URL"),
        # Before, each of these was written into .mcp.json (or raised a traceback).
        ("http://[::1/mcp", "does not parse"),
        ("http://127.0.0.1:99999/mcp", "does not parse"),
        ("http://127.0.0.1:８７６５/mcp", "does not parse"),
        ("http://127.0.0.1:8765/mcp\n", "white space or a control character"),
        ("http://127.0.0.1:8765/m cp", "white space or a control character"),
        ("http://127.0.0.1:8765/\x1b[2Jmcp", "white space or a control character"),
        ("http://ada:secret@127.0.0.1:8765/mcp", "carries credentials"),
        ("http://ada@127.0.0.1:8765/mcp", "carries credentials"),
    ],
)
def test_bad_url_is_refused(
    tmp_path: Path, url: str, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_install(["claude-code", "--project", str(tmp_path), "--url", url]) == 1
    err = capsys.readouterr().err
    assert "--url" in err and said in err
    assert "secret" not in err  # the refusal quotes what was given, credentials masked
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda t: (t / "f").write_text("x") and t / "f", "is a file, not a directory"),
        (lambda t: t / "missing", "no such directory"),
        (lambda t: t / ("n" * 300), "cannot be used"),
        (lambda t: (t / "loop").symlink_to(t / "loop") or t / "loop", "cannot be used"),
        (lambda t: (t / "loop").symlink_to(t / "loop") or t / "loop" / "x", "cannot be used"),
    ],
)
def test_a_project_that_cannot_be_one_is_refused_by_name(
    tmp_path: Path,
    make: Callable[[Path], Path],
    said: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before, a loop of links raised RuntimeError out of Path.resolve and a name too
    long printed a bare errno; a file was 'no such directory'."""
    project = make(tmp_path)
    before = sorted(tmp_path.iterdir())
    assert run_install(["claude-code", "--project", str(project)]) == 1
    err = capsys.readouterr().err
    assert "--project" in err and said in err and "Traceback" not in err
    assert sorted(tmp_path.iterdir()) == before


def test_missing_project_directory_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_install(["claude-code", "--project", str(tmp_path / "nope")]) == 1
    assert "no such directory" in capsys.readouterr().err


def test_registered_command_runs_through_a_shell(tmp_path: Path) -> None:
    """Run as Claude Code runs it, from a clone of the project somewhere else."""
    first = tmp_path / "alice" / "project"
    first.mkdir(parents=True)
    assert run_install(["claude-code", "--project", str(first)]) == 0
    clone = tmp_path / "bob" / "checkout"
    shutil.copytree(first, clone)
    shutil.rmtree(first)
    [command] = our_commands(load(clone / ".claude" / "settings.json"))["SessionStart"]
    env = {key: value for key, value in os.environ.items() if key != "KENNING_ENCOUNTER_URL"}
    env["KENNING_ENCOUNTER_URL"] = "http://127.0.0.1:1"
    env["CLAUDE_PROJECT_DIR"] = str(clone)
    done = subprocess.run(
        command,
        shell=True,
        input=b'{"session_id": "s-42"}',
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    output = json.loads(done.stdout)
    assert "session_id is s-42" in output["hookSpecificOutput"]["additionalContext"]


def test_user_scope_runs_the_installed_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    assert run_install(["claude-code", "--user"]) == 0
    [command] = our_commands(load(home / ".claude" / "settings.json"))["UserPromptSubmit"]
    assert command == guarded_command(shlex.quote(str(hook_script())), "--mode prompt", "prompt")
    assert not (home / VENDORED_HOOK).exists()


def test_the_project_copy_is_refreshed_and_removed_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vendored = tmp_path / VENDORED_HOOK
    neighbour = vendored.parent / "format-on-save.sh"
    vendored.parent.mkdir(parents=True)
    neighbour.write_text("#!/bin/sh\n")
    vendored.write_text("# an older version of our hook\n")

    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    assert vendored.read_bytes() == hook_script().read_bytes()
    assert f"registered in {vendored}" in capsys.readouterr().out

    assert run_install(["claude-code", "--project", str(tmp_path), "--uninstall"]) == 0
    assert not vendored.exists()
    assert neighbour.read_text() == "#!/bin/sh\n"


@pytest.mark.parametrize("scope", ["project", "user"])
def test_a_missing_hook_script_never_blocks_a_prompt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scope: str
) -> None:
    """python3 exits 2 on a script it cannot open, and exit 2 blocks the prompt.

    The exact registered commands run through a shell with the script gone, and
    once more with no python3 on PATH at all: every one exits 0, and the prompt
    and session-start commands say in one line that the hook is not there.
    """
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    project = tmp_path / "project"
    project.mkdir()
    if scope == "project":
        assert run_install(["claude-code", "--project", str(project)]) == 0
        settings = load(project / ".claude" / "settings.json")
        script = project / VENDORED_HOOK
        # A checkout committed without .claude/hooks/.
        script.unlink()
    else:
        # The installed package moved away: point the registration at a copy, then remove it.
        copy = tmp_path / "site" / "kenning_encounter" / "hooks" / "infuse_hook.py"
        copy.parent.mkdir(parents=True)
        shutil.copy(hook_script(), copy)
        settings = {
            "hooks": {
                event: [{"hooks": [entry]}]
                for event, entry in hook_commands(
                    "http://127.0.0.1:8765/mcp/", shlex.quote(str(copy))
                ).items()
            }
        }
        copy.unlink()
    commands = our_commands(settings)
    assert set(commands) == {"UserPromptSubmit", "SessionStart", "SessionEnd"}
    env = {
        **os.environ,
        "CLAUDE_PROJECT_DIR": str(project),
        "KENNING_ENCOUNTER_URL": "http://127.0.0.1:1",
    }
    no_python = {**env, "PATH": str(tmp_path / "empty-bin")}
    for event, [command] in commands.items():
        for environment in (env, no_python):
            done = subprocess.run(
                ["/bin/sh", "-c", command],
                input=b'{"session_id": "s-1", "prompt": "hello"}',
                capture_output=True,
                env=environment,
                timeout=30,
                check=False,
            )
            assert done.returncode == 0, (event, done.stderr)
            if event == "SessionEnd":
                assert done.stdout == b""
            else:
                assert b"hook script missing" in done.stdout


def test_the_guard_still_runs_a_present_script(tmp_path: Path) -> None:
    command = guarded_command(shlex.quote(str(hook_script())), "--mode prompt", "prompt")
    env = {
        **os.environ,
        "KENNING_ENCOUNTER_INFUSE": "on",
        "KENNING_ENCOUNTER_URL": "http://127.0.0.1:1",
    }
    done = subprocess.run(
        ["/bin/sh", "-c", command],
        input=b'{"session_id": "s-1", "prompt": "hello"}',
        capture_output=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0
    assert b"unreachable" in done.stdout


@pytest.mark.parametrize(
    ("setting", "says"),
    [(None, "Prompt infusion: auto"), ("on", "every prompt is infused"), ("off", "no prompt")],
)
def test_the_installer_says_what_the_gate_will_do(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setting: str | None,
    says: str,
) -> None:
    if setting is None:
        monkeypatch.delenv("KENNING_ENCOUNTER_INFUSE", raising=False)
    else:
        monkeypatch.setenv("KENNING_ENCOUNTER_INFUSE", setting)
    assert run_install(["claude-code", "--project", str(tmp_path)]) == 0
    [line] = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("Prompt infusion")]
    assert says in line
