"""Who directs a session when advance_encounter names no one: the settings (#17)."""

from __future__ import annotations

import getpass

import pytest

from kenning_encounter.config import load_settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.memory.directors import Director, director_policy


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
