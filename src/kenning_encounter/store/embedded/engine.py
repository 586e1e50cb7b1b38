"""The embedded store's one execute path: every statement sent to the engine goes here.

Domain operations, migrations, the transaction brackets, snapshots, the node
cache's snapshot reads and read_cypher all call ``execute`` (or ``rows`` over
it), so the tracer sees every statement and a test can hold the rest of the
package to it (no other ``.execute(`` under store/embedded).
"""

from __future__ import annotations

import time
from typing import Any

import ladybug

from kenning_encounter.errors import StoreError
from kenning_encounter.store.tracing import QueryLog, Tracer

DEFAULT_TRACER: Tracer = QueryLog(backend="embedded")


def execute(
    conn: ladybug.Connection,
    statement: str,
    params: dict[str, Any] | None = None,
    *,
    tracer: Tracer = DEFAULT_TRACER,
) -> ladybug.QueryResult:
    """Run one statement; the caller reads and closes the result.

    The engine's own errors pass through untouched: each caller knows what it was
    doing and turns them into the refusal that fits.
    """
    started = time.perf_counter()
    try:
        result = conn.execute(statement, params or {})
    finally:
        tracer(statement, params, time.perf_counter() - started)
    if isinstance(result, list):
        for extra in result:
            extra.close()
        raise StoreError("internal: one statement expected")
    return result


def rows(
    conn: ladybug.Connection,
    statement: str,
    params: dict[str, Any] | None = None,
    *,
    tracer: Tracer = DEFAULT_TRACER,
) -> list[list[Any]]:
    """Run one statement and read all its rows.

    The rows are taken from the engine's own result, each a new list: the wrapper's
    iterator checks twice a row that the result is still open, which was a third of
    the time a read of a million rows took."""
    result = execute(conn, statement, params, tracer=tracer)
    try:
        result.check_for_query_result_close()
        native = result._query_result  # pyright: ignore[reportPrivateUsage]
        more, take = native.hasNext, native.getNext
        found: list[list[Any]] = []
        while more():
            found.append(take())
        return found
    finally:
        result.close()
