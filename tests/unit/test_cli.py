"""The command line: flags for every setting, precedence, refusals, doctor, passthrough."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from kenning_encounter import cli
from kenning_encounter.config import Settings
from kenning_encounter.server.info import package_version

_OURS = ("KENNING_ENCOUNTER_", "NEO4J_", "GEMINI_", "OPENAI_")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in list(os.environ):
        if key.startswith(_OURS):
            monkeypatch.delenv(key)
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exc:  # argparse's --help / --version / usage errors
        code = exc.code if isinstance(exc.code, int) else 1
    out, err = capsys.readouterr()
    return code, out, err


def test_every_setting_has_a_flag() -> None:
    flagged = {f.setting for f in cli.SETTING_FLAGS}
    assert flagged | cli.NOT_FLAGS == set(Settings.model_fields)
    assert not flagged & cli.NOT_FLAGS


@pytest.mark.parametrize("command", ["serve", "doctor"])
def test_help_lists_every_flag_with_its_variable(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    for flag in cli.SETTING_FLAGS:
        assert flag.option in out
    assert "KENNING_ENCOUNTER_PORT" in out and "NEO4J_URI" in out


@pytest.mark.parametrize("argv", [["--version"], ["serve", "--version"], ["doctor", "--version"]])
def test_version(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    code, out, _ = run(capsys, *argv)
    assert code == 0
    assert out.strip() == f"kenning-encounter {package_version()}"


def test_the_version_is_the_installed_one_and_asks_no_metadata(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from importlib import metadata

    installed = metadata.version("kenning-encounter")

    def scanned(name: str) -> str:
        raise AssertionError(f"a start asked the installed metadata for {name}")

    monkeypatch.setattr(metadata, "version", scanned)
    forget = getattr(package_version, "cache_clear", None)  # an answer kept from before
    if forget is not None:
        forget()
    assert package_version() == installed


def test_top_level_help_names_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in ("serve", "doctor", "install"):
        assert name in out


def test_serve_is_the_default_command(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--transport", "carrier-pigeon")
    assert code == 2
    assert "kenning-encounter serve" in err and "carrier-pigeon" in err


def test_flags_beat_the_environment_which_beats_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    parser = cli.build_parser()
    assert cli.settings_from(parser.parse_args(["serve"])).port == 8765
    monkeypatch.setenv("KENNING_ENCOUNTER_PORT", "7001")
    monkeypatch.setenv("KENNING_ENCOUNTER_ALLOWED_HOSTS", "a.example,b.example")
    from_env = cli.settings_from(parser.parse_args(["serve"]))
    assert from_env.port == 7001 and from_env.allowed_hosts == ["a.example", "b.example"]
    ns = parser.parse_args(
        [
            "serve",
            "--port",
            "7002",
            "--allowed-hosts",
            "c.example",
            "--no-matcher-reasons",
            "--hide-loci",
            "x,y",
            "--face",
            "reader",
            "--data-dir",
            "/tmp/somewhere",
        ]
    )
    given = cli.settings_from(ns)
    assert given.port == 7002 and given.allowed_hosts == ["c.example"]
    assert given.matcher_reasons is False and given.hide_loci == ["x", "y"]
    assert given.face == "reader" and given.resolved_data_dir == Path("/tmp/somewhere")


def test_a_public_bind_without_a_token_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "serve", "--host", "0.0.0.0", "--data-dir", "memory")
    assert code == 2
    assert "0.0.0.0" in err and "token" in err and "KENNING_ENCOUNTER_TOKEN" in err
    assert out == ""
    assert not Path("memory").exists()  # refused before anything was opened


def test_stdio_needs_no_token_whatever_the_host() -> None:
    parser = cli.build_parser()
    settings = cli.settings_from(
        parser.parse_args(["serve", "--transport", "stdio", "--host", "0.0.0.0"])
    )
    settings.require_safe_bind()  # no exception: stdio listens on nothing


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "--hide-loci", "a"], "reader"),
        (["serve", "--log-level", "LOUD"], "log_level"),
        (["serve", "--namespace", "my app"], "namespace"),
        (["serve", "--store", "neo4j"], "NEO4J_URI"),
    ],
)
def test_bad_configuration_exits_2_saying_why(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2
    assert says in err


def test_install_is_passed_through(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "install", "--help")
    assert code == 0
    assert "kenning-encounter install" in out and "claude-code" in out


# --- doctor --------------------------------------------------------------------------
def test_doctor_all_good_on_a_fresh_machine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "doctor", "--data-dir", str(tmp_path / "memory"), "--matcher", "off")
    assert code == 0, out
    assert "serve creates it" in out and out.rstrip().endswith("all good")
    assert not (tmp_path / "memory").exists()  # doctor creates nothing


def test_doctor_opens_an_existing_store(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from kenning_encounter.store.embedded.backend import EmbeddedStore

    EmbeddedStore.open(tmp_path / "memory").close()
    code, out, _ = run(capsys, "doctor", "--data-dir", str(tmp_path / "memory"), "--matcher", "off")
    assert code == 0, out
    assert "opens (schema version" in out


def test_doctor_reports_an_unreachable_neo4j(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys,
        "doctor",
        "--data-dir",
        str(tmp_path / "m"),
        "--matcher",
        "off",
        "--neo4j-uri",
        "bolt://127.0.0.1:1",
    )
    assert code == 1
    assert "cannot reach Neo4j at bolt://127.0.0.1:1" in out
    assert "fix: start Neo4j" in out and "1 problem(s) found" in out


def test_doctor_fails_a_chosen_matcher_without_its_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(capsys, "doctor", "--data-dir", str(tmp_path / "m"), "--matcher", "gemini")
    assert code == 1
    assert "GEMINI_API_KEY" in out and "fix:" in out


def test_doctor_says_how_to_turn_the_default_matcher_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The default (auto, no key) is a chosen lexical channel: no warning, and the way on."""
    code, out, _ = run(capsys, "doctor", "--data-dir", str(tmp_path / "m"))
    assert code == 0, out
    assert "WARN" not in out
    [line] = [ln for ln in out.splitlines() if "matcher" in ln]
    assert line.lstrip().startswith("OK") and "lexically by choice" in line
    assert "GEMINI_API_KEY" in line and "--matcher openai" in line


def test_doctor_flags_a_public_bind_without_a_token(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = run(
        capsys, "doctor", "--data-dir", str(tmp_path / "m"), "--matcher", "off", "--host", "0.0.0.0"
    )
    assert code == 1
    assert "FAIL  bind" in out and "TOKEN" in out


def test_doctor_reports_bad_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "doctor", "--store", "neo4j")
    assert code == 1
    assert "FAIL  config" in out and "NEO4J_URI" in out


@pytest.mark.parametrize(
    ("limit", "status"), [("0B", "warn"), ("0", "warn"), (None, "warn"), ("512.00MiB", "ok")]
)
def test_doctor_judges_neo4j_s_transaction_memory_cap(limit: str | None, status: str) -> None:
    from kenning_encounter.server.doctor import transaction_memory_finding

    finding = transaction_memory_finding(limit)
    assert finding.status == status
    if status == "warn":
        assert "db.memory.transaction.max" in finding.fix and "neo4j.conf" in finding.fix
    else:
        assert "512.00MiB" in finding.detail


_LOGS_AN_EXCEPTION = """
import logging
from kenning_encounter.cli import configure_logging
configure_logging("INFO")
try:
    try:
        raise OSError("read 'x'\\n2026-01-01 00:00:00,000 INFO kenning_encounter: inner")
    except OSError as inner:
        raise ValueError("bad\\x1b[2J\\n2026-01-01 00:00:00,000 ERROR kenning_encounter: ok") from inner
except ValueError:
    logging.getLogger("kenning_encounter.x").exception("infusion failed")
"""


def test_an_exceptions_words_cannot_forge_a_line_of_the_log() -> None:
    """A traceback keeps its lines; an exception's own words (which may quote what it
    read) are escaped as a message is, through every exception of the chain."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _LOGS_AN_EXCEPTION], capture_output=True, text=True, check=True
    )
    lines = done.stderr.splitlines()
    assert lines[0].endswith("ERROR kenning_encounter.x: infusion failed")
    assert not any(line.startswith("2026-01-01") for line in lines)
    assert "\x1b" not in done.stderr
    assert "ValueError: bad\\x1b[2J\\n2026-01-01 00:00:00,000 ERROR kenning_encounter: ok" in lines
    assert "OSError: read 'x'\\n2026-01-01 00:00:00,000 INFO kenning_encounter: inner" in lines
    assert "The above exception was the direct cause of the following exception:" in lines
    assert sum(line == "Traceback (most recent call last):" for line in lines) == 2
