"""Shared fixtures: one store per test, parametrized over every backend.

The embedded backend always runs. The Neo4j backend runs against the server
named by NEO4J_URI; when none answers its tests skip with a reason naming the
URI tried, unless KENNING_ENCOUNTER_REQUIRE_NEO4J=1 (set by CI), which turns
that skip into a failure so CI can never pass with the Neo4j suite skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from tests.support.backends import BACKENDS, open_neo4j_store


@pytest.fixture(autouse=True, scope="session")
def _state_home_of_our_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every hook a test runs keeps its session handles in a test folder, never the user's."""
    before = os.environ.get("XDG_STATE_HOME")
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("xdg-state"))
    yield
    if before is None:
        os.environ.pop("XDG_STATE_HOME", None)
    else:
        os.environ["XDG_STATE_HOME"] = before


def _neo4j_unavailable(reason: str) -> None:
    if os.environ.get("KENNING_ENCOUNTER_REQUIRE_NEO4J") == "1":
        pytest.fail(f"Neo4j is required here (KENNING_ENCOUNTER_REQUIRE_NEO4J=1): {reason}")
    pytest.skip(reason)


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[GraphStore]:
    if request.param == "embedded":
        s: GraphStore = EmbeddedStore.open(tmp_path / "memory")
    else:
        opened = open_neo4j_store()
        if isinstance(opened, str):
            _neo4j_unavailable(opened)
            raise AssertionError("unreachable")
        s = opened
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def memory(store: GraphStore) -> Memory:
    m = Memory(store)
    return m


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[EmbeddedStore]:
    s = EmbeddedStore.open(tmp_path / "memory")
    try:
        yield s
    finally:
        s.close()
