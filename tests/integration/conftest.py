"""Neo4j-only fixtures: a store on an emptied database, and a raw driver beside it.

The server is the one named by KENNING_ENCOUNTER_TEST_NEO4J_URI (the launcher's,
in CI), emptied only when it carries the test marker. When none is named or
nothing answers, these tests skip with the URI tried, or fail when
KENNING_ENCOUNTER_REQUIRE_NEO4J=1, as the contract suite does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.backends import (
    HAVE_NEO4J_BACKEND,
    neo4j_target,
    neo4j_unavailable,
    open_neo4j_store,
)
from tests.support.neo4j_target import at


def credentials() -> tuple[str, str]:
    """The test user and password (never NEO4J_USERNAME / NEO4J_PASSWORD)."""
    return at("").auth


@pytest.fixture
def neo4j_store() -> Iterator[Any]:
    if not HAVE_NEO4J_BACKEND:
        neo4j_unavailable(f"the Neo4j backend is not importable; tried {neo4j_target().uri}")
    opened = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def raw_driver(neo4j_store: Any) -> Iterator[Any]:
    """The official driver on the same server, for checks the store does not offer."""
    import neo4j

    target = neo4j_target()
    driver = neo4j.GraphDatabase.driver(
        target.uri, auth=target.auth, notifications_min_severity="OFF"
    )
    try:
        yield driver
    finally:
        driver.close()
