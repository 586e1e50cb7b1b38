"""Test-only ways into a Neo4j store, kept out of the production class.

Credentials come from NEO4J_USERNAME / NEO4J_PASSWORD (defaults neo4j /
kenning-test-pw, the test launcher's), the database from NEO4J_DATABASE.
"""

from __future__ import annotations

import os
from typing import Any

from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j.queries import EMPTY_DATABASE


def _credentials() -> tuple[str, str, str]:
    return (
        os.environ.get("NEO4J_USERNAME", "neo4j"),
        os.environ.get("NEO4J_PASSWORD", "kenning-test-pw"),
        os.environ.get("NEO4J_DATABASE", "neo4j"),
    )


def open_emptied(uri: str) -> Neo4jStore:
    """A store on an emptied database: every node deleted (the clock and meta too, so the
    store starts at tick 0), constraints and indexes kept."""
    import neo4j

    username, password, database = _credentials()
    with (
        neo4j.GraphDatabase.driver(uri, auth=(username, password), connection_timeout=5.0) as d,
        d.session(database=database) as session,
    ):
        session.run(EMPTY_DATABASE).consume()  # batched deletes need an auto-commit run
    return Neo4jStore.open(uri, username, password, database, connection_timeout_s=5.0)


def check_read_only_plan(
    store: Neo4jStore, query: str, params: dict[str, Any] | None = None
) -> None:
    """read_cypher's EXPLAIN layer alone: refuse unless the planner proves ``query`` a read."""
    with (
        store._translate_errors("checking a plan"),  # pyright: ignore[reportPrivateUsage]
        store._session(write=False) as session,  # pyright: ignore[reportPrivateUsage]
    ):
        tx = session.begin_transaction()
        try:
            store._explain(tx, query, params or {}, scope=False)  # pyright: ignore[reportPrivateUsage]
        finally:
            tx.close()
