"""The Neo4j store's one execute path: every statement sent to the server goes here.

Domain operations, schema preparation, the lexical index, read_cypher (its
EXPLAIN and its run) and GDS all call ``execute`` (or ``rows`` over it), on a
session, an explicit transaction or a managed one alike, so the tracer sees
every statement and a test can hold the rest of the package to it (no other
``.run(`` or ``execute_query`` under store/neo4j).

The driver streams results, so the time traced covers reading them too: the
caller says how (``read``), and the statement counts as done once it is read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, LiteralString, TypeVar

from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.tracing import QueryLog, Tracer

if TYPE_CHECKING:
    from neo4j import ManagedTransaction, Result, Session, Transaction

    Runner = Session | Transaction | ManagedTransaction

T = TypeVar("T")

DEFAULT_TRACER: Tracer = QueryLog(backend="neo4j")


def all_rows(result: Result) -> list[list[Any]]:
    return [list(record.values()) for record in result]


def execute(
    runner: Runner,
    statement: LiteralString,
    params: dict[str, Any] | None,
    *,
    read: Callable[[Result], T],
    tracer: Tracer = DEFAULT_TRACER,
    ns: Namespace | None = None,
) -> T:
    """Send one statement on ``runner`` and read its result with ``read``.

    With a namespace, the statement is one of ours, made that memory's (label,
    ``_memory`` and ``$memory``: namespace.py); without one it is sent as given
    (schema commands, GDS, read_cypher's own text).

    Driver errors pass through untouched: each caller translates them in the
    terms of what it was doing.
    """
    if ns is not None:
        statement = ns.statement(statement)
        params = ns.params(statement, params)
    started = time.perf_counter()
    try:
        return read(runner.run(statement, params or {}))
    finally:
        tracer(statement, params, time.perf_counter() - started)


def rows(
    runner: Runner,
    statement: LiteralString,
    params: dict[str, Any] | None = None,
    *,
    tracer: Tracer = DEFAULT_TRACER,
    ns: Namespace | None = None,
) -> list[list[Any]]:
    """Send one statement and read all its rows, each a list of values."""
    return execute(runner, statement, params, read=all_rows, tracer=tracer, ns=ns)
