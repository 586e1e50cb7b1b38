"""Neo4j-only fixtures: a store on an emptied database, and a raw driver beside it.

The server is the one named by NEO4J_URI (the launcher's, in CI). When none
answers, these tests skip with the URI tried, or fail when
KENNING_ENCOUNTER_REQUIRE_NEO4J=1, as the contract suite does.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.backends import HAVE_NEO4J_BACKEND, neo4j_uri, open_neo4j_store


def _unavailable(reason: str) -> None:
    if os.environ.get("KENNING_ENCOUNTER_REQUIRE_NEO4J") == "1":
        pytest.fail(f"Neo4j is required here (KENNING_ENCOUNTER_REQUIRE_NEO4J=1): {reason}")
    pytest.skip(reason)


def credentials() -> tuple[str, str]:
    return (
        os.environ.get("NEO4J_USERNAME", "neo4j"),
        os.environ.get("NEO4J_PASSWORD", "kenning-test-pw"),
    )


@pytest.fixture
def neo4j_store() -> Iterator[Any]:
    if not HAVE_NEO4J_BACKEND:
        _unavailable(f"the Neo4j backend is not importable; tried {neo4j_uri()}")
    opened = open_neo4j_store()
    if isinstance(opened, str):
        _unavailable(opened)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def raw_driver(neo4j_store: Any) -> Iterator[Any]:
    """The official driver on the same server, for checks the store does not offer."""
    import neo4j

    driver = neo4j.GraphDatabase.driver(
        neo4j_uri(), auth=credentials(), notifications_min_severity="OFF"
    )
    try:
        yield driver
    finally:
        driver.close()
