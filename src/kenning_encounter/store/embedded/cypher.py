"""read_cypher on LadybugDB: the layers behind the shared gate, and how rows come back.

Layers, each named on the refusal it raises (``ReadOnlyViolation.layer``):

1. "size", "gate", "params": the shared token gate (``cypher_guard``);
2. "engine-readonly": the query runs inside ``BEGIN TRANSACTION READ ONLY`` and is
   always prepared, never sent as a script: a prepared statement is exactly one
   statement, so nothing can follow a ``COMMIT``. A statement that ends the
   transaction anyway is reported, and nothing ran after it;
3. "timeout": the engine's own query timeout, and a timer that interrupts the
   connection, whichever comes first.

The engine has no switch for file access and no per-query memory limit, so
COPY, LOAD, EXPORT and friends are refused by the gate alone (they write files
even inside a read-only transaction), and range() is bounded there too. What
the gate lets through runs in a sandbox process over a snapshot (``sandbox``),
whose memory is capped and which is killed at the deadline: layers "memory"
and, once more, "timeout".
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Mapping
from typing import Any, Final

import ladybug

from kenning_encounter.errors import ReadOnlyViolation, StoreError
from kenning_encounter.store.cypher_guard import (
    LADYBUG_RULES,
    check_params,
    check_read_only,
    deeper,
)
from kenning_encounter.store.embedded.engine import DEFAULT_TRACER, execute
from kenning_encounter.store.port import CypherResult
from kenning_encounter.store.tracing import Tracer

CYPHER_CONCURRENCY: Final = 2
# Always passed, so the driver prepares the text (one statement) instead of running a script.
ONE_STATEMENT_PARAM: Final = "_kenning_one_statement"


def _jsonable(value: Any, depth: int = 0) -> Any:
    """A row's value as JSON-safe data; one nested too deep is refused (``deeper``)."""
    if isinstance(value, dict):
        # A node or relation (it has a _LABEL) shows the properties it holds, as on Neo4j,
        # which stores no nulls: a column the node never set is not one of them.
        entity = "_LABEL" in value and "_ID" in value
        held = deeper(depth)
        return {
            str(k): _jsonable(v, held)
            for k, v in value.items()
            if k not in ("_ID", "_SRC", "_DST") and not (entity and v is None)
        }
    if isinstance(value, list | tuple):
        held = deeper(depth)
        return [_jsonable(v, held) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


class _Interrupter:
    """Interrupts one connection after a deadline, and never once the query is done."""

    def __init__(self, conn: ladybug.Connection, timeout_s: float | None) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        # None: no timer (a test proving the engine's own timeout holds alone).
        self._timer = None if timeout_s is None else threading.Timer(timeout_s, self._fire)
        if self._timer is not None:
            self._timer.daemon = True

    def _fire(self) -> None:
        with self._lock:
            if not self._done:
                self.fired = True
                self._conn.interrupt()

    def __enter__(self) -> _Interrupter:
        if self._timer is not None:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._done = True
        if self._timer is not None:
            self._timer.cancel()


def _engine_error(exc: Exception, timeout_s: float, fired: bool) -> ReadOnlyViolation:
    text = str(exc)
    if fired or "interrupt" in text.lower() or "timeout" in text.lower():
        return ReadOnlyViolation(
            f"the query ran past the {timeout_s:g}s limit (KENNING_ENCOUNTER_CYPHER_TIMEOUT) "
            "and was stopped; narrow it with LIMIT or a WHERE",
            layer="timeout",
        )
    if any(
        m in text for m in ("read-only transaction", "multiple statements", "active transaction")
    ):
        return ReadOnlyViolation(
            f"the engine's read-only transaction refused it ({text})", layer="engine-readonly"
        )
    if not isinstance(exc, RuntimeError):  # the driver could not convert a value
        return ReadOnlyViolation(
            f"a value could not be passed to the engine ({text}); give each list items of one type",
            layer="params",
            field="params",
        )
    return ReadOnlyViolation(f"the engine refused the query: {text}", layer="engine")


def run_read_cypher(
    conn: ladybug.Connection,
    query: str,
    params: Mapping[str, Any] | None,
    *,
    row_cap: int,
    char_cap: int,
    timeout_s: float,
    gate: bool = True,
    read_only: bool = True,
    engine_timeout: bool = True,
    interrupter: bool = True,
    tracer: Tracer = DEFAULT_TRACER,
) -> CypherResult:
    """One read_cypher call on ``conn``. ``gate``, ``read_only``, ``engine_timeout`` and
    ``interrupter`` switch a layer off, for tests that prove each remaining layer holds
    on its own."""
    if gate:
        check_params(params, homogeneous_lists=True)
        check_read_only(query, LADYBUG_RULES, params)
    args = {**(params or {}), ONE_STATEMENT_PARAM: True}
    rows: list[list[Any]] = []
    truncated = False
    conn.set_query_timeout(max(1, int(timeout_s * 1000)) if engine_timeout else 0)
    begin = "BEGIN TRANSACTION READ ONLY" if read_only else "BEGIN TRANSACTION"
    execute(conn, begin, tracer=tracer).close()
    try:
        with _Interrupter(conn, timeout_s if interrupter else None) as timer:
            try:
                result = execute(conn, query, args, tracer=tracer)
            except StoreError as exc:  # unreachable while the text is prepared
                raise ReadOnlyViolation(
                    "only one statement is allowed", layer="engine-readonly"
                ) from exc
            except Exception as exc:
                raise _engine_error(exc, timeout_s, timer.fired) from exc
            try:
                columns = list(result.get_column_names())
                size = 0
                while result.has_next():
                    row = [_jsonable(v) for v in result.get_next()]
                    size += len(json.dumps(row, default=str))
                    if len(rows) >= row_cap or size > char_cap:
                        truncated = True
                        break
                    rows.append(row)
            except RuntimeError as exc:
                raise _engine_error(exc, timeout_s, timer.fired) from exc
            finally:
                result.close()
        try:
            execute(conn, "ROLLBACK", tracer=tracer).close()
        except RuntimeError as exc:
            # The statement itself ended the transaction (a lone COMMIT): it was the
            # only statement, so nothing ran outside it, but it is no read.
            raise ReadOnlyViolation(
                "the statement ended its read-only transaction; transaction control is not a read",
                layer="engine-readonly",
            ) from exc
    except BaseException:
        # A failed or interrupted query has already ended its transaction.
        with contextlib.suppress(RuntimeError):
            execute(conn, "ROLLBACK", tracer=tracer).close()
        raise
    finally:
        conn.set_query_timeout(0)
    note = (
        f"result cut at {len(rows)} rows (caps: {row_cap} rows, {char_cap} characters)"
        if truncated
        else ""
    )
    return CypherResult(columns, rows, truncated, row_cap, char_cap, note)
