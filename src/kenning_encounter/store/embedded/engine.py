"""The embedded store's one execute path: every statement sent to the engine goes here.

Domain operations, migrations, the transaction brackets, snapshots, the node
cache's snapshot reads and read_cypher all call ``execute`` (or ``rows``), so the
tracer sees every statement and a test can hold the rest of the package to it (no
other ``.execute(`` under store/embedded).

``rows`` runs the store's own statements on the engine's native connection, their
prepared statements in the wrapper's own cache. The wrapper's ``execute`` works out,
on every call, whether the text scans a Python object or casts a parameter to JSON,
and the type of every element of every list parameter; for a batch's statements that
was about a tenth of a millisecond each, seventeen times a write. None of that applies
to our statements, and the one type a prepared statement cannot take changed is kept
in its key (``signature``). read_cypher's text is a caller's, and goes through the
wrapper.
"""

from __future__ import annotations

import time
from typing import Any, Final

import ladybug
from ladybug import connection as _wrapper

from kenning_encounter.errors import StoreError
from kenning_encounter.store.tracing import QueryLog, Tracer

DEFAULT_TRACER: Tracer = QueryLog(backend="embedded")

# A prepared statement keeps what its last run took from the buffer pool (its tables,
# its result) until it runs again. Four reader connections, each with its own copy of
# a read of the whole graph, held four times that read's pages: at a million nodes the
# third orient in one server found the 1 GiB pool full. So a statement that ran long or
# answered many rows is prepared again when next sent (a millisecond or two, beside a
# run that took this long); the many small statements of a write or a prompt keep theirs.
HEAVY_S: Final = 0.05
HEAVY_ROWS: Final = 10_000


def _forget_plan(conn: ladybug.Connection, key: tuple[Any, ...]) -> None:
    """Drop one prepared statement from the connection's cache: its pool pages are freed
    with its last reference (a result still being read holds one)."""
    with conn._prepared_cache_lock:  # pyright: ignore[reportPrivateUsage]
        kept: dict[Any, Any] = conn._pybind_implicit_prepared_cache  # pyright: ignore[reportPrivateUsage]
        kept.pop(key, None)


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
        took = time.perf_counter() - started
        tracer(statement, params, took)
        if took >= HEAVY_S and params:
            _forget_plan(conn, (statement, _wrapper._pybind_param_signature(params)))  # pyright: ignore[reportPrivateUsage]
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
    if not conn._using_pybind_backend():  # pyright: ignore[reportPrivateUsage]
        return _wrapped_rows(conn, statement, params, tracer)
    started = time.perf_counter()
    try:
        native = _run(conn, statement, params or {})
    finally:
        tracer(statement, params, time.perf_counter() - started)
    found: list[list[Any]] = []
    try:
        if native.hasNextQueryResult():
            raise StoreError("internal: one statement expected")
        found = _drain(native)
        return found
    finally:
        native.close()
        heavy = time.perf_counter() - started >= HEAVY_S or len(found) >= HEAVY_ROWS
        if heavy and params:
            _forget_plan(conn, (statement, signature(params)))


def _drain(native: Any) -> list[list[Any]]:
    more, take = native.hasNext, native.getNext
    found: list[list[Any]] = []
    while more():
        found.append(take())
    return found


def _wrapped_rows(
    conn: ladybug.Connection, statement: str, params: dict[str, Any] | None, tracer: Tracer
) -> list[list[Any]]:
    result = execute(conn, statement, params, tracer=tracer)
    try:
        result.check_for_query_result_close()
        return _drain(result._query_result)  # pyright: ignore[reportPrivateUsage]
    finally:
        result.close()


# What a list parameter's element types bind as when they are all of one kind (or
# null): the wrapper's own signature of such a list, found with one pass in C.
_LIST_KIND: Final[dict[frozenset[type], tuple[Any, ...]]] = {
    frozenset({str}): ("list", ("string",)),
    frozenset({str, type(None)}): ("list", ("string",)),
    frozenset({int}): ("list", ("int64",)),
    frozenset({int, type(None)}): ("list", ("int64",)),
    frozenset({float}): ("list", ("double",)),
    frozenset({float, type(None)}): ("list", ("double",)),
    frozenset({type(None)}): ("list", ("any",)),
    frozenset(): ("list", ("any",)),
}


def value_signature(value: Any) -> tuple[Any, ...]:
    """The type a parameter binds as, as the wrapper's ``_pybind_value_signature`` says
    it (a prepared statement narrows a whole number to the width of the value it was
    prepared with, and taking another width after that corrupts the value): the
    common lists are typed in one pass, anything else by the wrapper itself."""
    if isinstance(value, list):
        kind = _LIST_KIND.get(frozenset(map(type, value)))  # pyright: ignore[reportUnknownArgumentType]
        if kind is not None:
            return kind
    elif type(value) is str:
        return ("string",)
    return _wrapper._pybind_value_signature(value)  # pyright: ignore[reportPrivateUsage]


def signature(params: dict[str, Any]) -> tuple[tuple[str, tuple[Any, ...]], ...]:
    return tuple(sorted((k, value_signature(v)) for k, v in params.items()))


def _run(conn: ladybug.Connection, statement: str, params: dict[str, Any]) -> Any:
    """The engine's result of one statement, run on the native connection; raises as the
    wrapper does. Prepared statements go in the wrapper's own cache, under the key it
    gives them, so closing the connection frees them (held elsewhere, they kept the
    database file locked after its close)."""
    conn.init_connection()  # raises "Connection is closed." as the wrapper does
    # A setting read_cypher left pending (its timeout, set back to none) applies first.
    conn._apply_pending_settings()  # pyright: ignore[reportPrivateUsage]
    native: Any = conn._get_pybind_connection()  # pyright: ignore[reportPrivateUsage]
    with conn._prepared_cache_lock:  # pyright: ignore[reportPrivateUsage]
        if not params:
            result = native.query(statement)
        else:
            kept: dict[Any, Any] = conn._pybind_implicit_prepared_cache  # pyright: ignore[reportPrivateUsage]
            key = (statement, signature(params))
            prepared = kept.get(key)
            if prepared is None:
                prepared = native.prepare(statement, params)
                if not prepared.is_success():
                    raise RuntimeError(prepared.get_error_message())
                kept[key] = prepared
            result = native.execute(prepared, params)
    if not result.isSuccess():
        message = result.getErrorMessage()
        result.close()
        raise RuntimeError(message)
    return result
