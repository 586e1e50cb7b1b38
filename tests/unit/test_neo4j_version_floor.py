"""A Neo4j older than the statements need is refused when the store opens, by name,
with the fix; any version from the floor on, calendar versions included, is taken."""

from __future__ import annotations

import pytest

from kenning_encounter.store.neo4j.backend import MIN_SERVER_VERSION, server_too_old

FLOOR = ".".join(map(str, MIN_SERVER_VERSION))


@pytest.mark.parametrize("version", ["4.4.40", "5.0.0", "5.13.0", "5.25.1"])
def test_an_older_server_is_refused_naming_the_floor_and_the_fix(version: str) -> None:
    why = server_too_old(version)
    assert why is not None
    assert f"Neo4j {version} is older than {FLOOR}" in why
    assert "nothing was written" in why and "--store embedded" in why


@pytest.mark.parametrize(
    "version", ["5.26.0", "5.26.30", "5.27-aura", "2025.01.0", "2026.10.1", "", "dev"]
)
def test_the_floor_and_newer_are_taken_and_an_unknown_form_is_let_through(version: str) -> None:
    assert server_too_old(version) is None
