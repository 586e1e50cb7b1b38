"""Test-only ways into a Neo4j store, kept out of the production class.

Settings and the emptying guard are tests/support/neo4j_target.py's: the test
credentials (never NEO4J_*), and a database emptied only when it carries the
test marker.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.tracing import Tracer
from tests.support.neo4j_target import at, empty_marked


def open_emptied(
    uri: str, clock: Callable[[], str] | None = None, tracer: Tracer | None = None
) -> Neo4jStore:
    """A store on an emptied database: every node but the test marker deleted (the clock
    and meta too, so the store starts at tick 0), constraints and indexes kept.

    Raises UnmarkedDatabase, touching nothing, when the database carries no marker."""
    target = at(uri)
    empty_marked(target)
    timed: dict[str, Any] = {} if clock is None else {"clock": clock}
    if tracer is not None:
        timed["tracer"] = tracer
    return Neo4jStore.open(
        target.uri,
        target.username,
        target.password,
        target.database,
        connection_timeout_s=5.0,
        **timed,
    )


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
