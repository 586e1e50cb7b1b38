"""Who directs a session when advance_encounter names no one: the settings (#17)."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.memory.directors import Director, director_policy
from tests.support.cli import run_cli


@pytest.fixture(autouse=True)
def _no_director_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("DIRECTOR", "DIRECTOR_KEY", "REQUIRE_DIRECTOR"):
        monkeypatch.delenv(f"KENNING_ENCOUNTER_{name}", raising=False)


def test_unset_means_the_os_user_keyed_by_user_and_host() -> None:
    policy = director_policy(load_settings())
    assert policy.required
    assert policy.default is not None
    assert policy.default.name == getpass.getuser()
    assert policy.default.key is not None and policy.default.key.startswith("os-user:")


def test_the_environment_names_the_director_and_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_DIRECTOR", " Ada ")
    monkeypatch.setenv("KENNING_ENCOUNTER_DIRECTOR_KEY", "ada@example.org")
    assert director_policy(load_settings()).default == Director("Ada", "ada@example.org")
    # A flag beats the environment, as for every setting.
    assert director_policy(load_settings(director="Grace")).default == Director(
        "Grace", "ada@example.org"
    )


def test_empty_means_no_one_and_require_director_decides(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_DIRECTOR", "")
    strict = director_policy(load_settings())
    assert strict.default is None and strict.required
    monkeypatch.setenv("KENNING_ENCOUNTER_REQUIRE_DIRECTOR", "false")
    lax = director_policy(load_settings())
    assert lax.default is None and not lax.required


def test_a_key_without_a_director_is_refused_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KENNING_ENCOUNTER_DIRECTOR_KEY", "k")
    with pytest.raises(ConfigError, match="KENNING_ENCOUNTER_DIRECTOR"):
        director_policy(load_settings())


@pytest.mark.parametrize(
    ("setting", "value", "said"),
    [
        ("DIRECTOR", "Eve\x1b[31m", "U+001B"),
        ("DIRECTOR", "Jose\u0301", "composed form (NFC)"),
        ("DIRECTOR", "E" * 201, "the limit is 200"),
        ("DIRECTOR_KEY", "ada@example.org\u200b", "U+200B"),
    ],
)
def test_a_director_a_write_would_refuse_is_refused_at_the_start(
    monkeypatch: pytest.MonkeyPatch, setting: str, value: str, said: str
) -> None:
    """The configured director becomes a Person's name and key at a session's first
    advance; it is held to what an advance naming it would be, at the start. Before,
    it was written as given: a name with a terminal escape in it, or a key with a
    zero-width space, on every session's Person."""
    monkeypatch.setenv("KENNING_ENCOUNTER_DIRECTOR", "Ada")
    monkeypatch.setenv(f"KENNING_ENCOUNTER_{setting}", value)
    with pytest.raises(ConfigError) as refused:
        load_settings()
    assert f"KENNING_ENCOUNTER_{setting}" in str(refused.value)
    assert said in str(refused.value)


def test_an_os_user_name_that_cannot_be_a_name_asks_for_a_director(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # getpass reads LOGNAME and USER before the password file.
    for name in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.setenv(name, "eve\x1b[2J")
    with pytest.raises(ConfigError) as refused:
        director_policy(load_settings())
    assert "set KENNING_ENCOUNTER_DIRECTOR" in str(refused.value)
    assert "U+001B" in str(refused.value)


def test_serve_refuses_a_bad_director_before_it_makes_a_memory(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    serve = ("serve", "--transport", "stdio", "--data-dir", str(data_dir))
    done = run_cli(*serve, "--director", "Eve\x07")
    assert done.returncode == 2, done.stderr
    assert "director (KENNING_ENCOUNTER_DIRECTOR): holds U+0007" in done.stderr
    assert not data_dir.exists()
    # The operating-system user, the default, is read at the start too.
    done = run_cli(*serve, env={"LOGNAME": "eve\x07", "USER": "eve\x07"})
    assert done.returncode == 2, done.stderr
    assert "set KENNING_ENCOUNTER_DIRECTOR" in done.stderr
    assert not data_dir.exists()


def test_doctor_names_an_os_user_that_cannot_direct(tmp_path: Path) -> None:
    done = run_cli(
        "doctor", "--data-dir", str(tmp_path / "m"), env={"LOGNAME": "eve\x07", "USER": "eve\x07"}
    )
    assert done.returncode == 1
    line = next(x for x in done.stdout.splitlines() if " director " in x)
    assert line.lstrip().startswith("FAIL") and "set KENNING_ENCOUNTER_DIRECTOR" in line
