"""The query log on every backend: each statement at DEBUG, a slow one at WARNING,
parameters in neither.

Parameters carry memory content, and the log may go to a file an operator shares,
so a distinctive parameter value is sent through every kind of statement (a port
read, a write bracket, the text search, read_cypher) and must show up in no record
at DEBUG or above, while the statements themselves do.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.config import Settings
from kenning_encounter.errors import KenningError
from kenning_encounter.server.context import open_store
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, ReadTx, WriteTx
from kenning_encounter.store.tracing import SLOW_TEXT_CHARS
from tests.support.backends import BACKENDS, require_answering

SECRET = "parameter-value-q7xw-never-logged"
QUERY_LOGGER = "kenning_encounter.store.queries"
MARKER = "marker_column_q7xw"
LIMITS = {"row_cap": 10, "char_cap": 10_000, "timeout_s": 10.0}


def _open(backend: str, tmp_path: Path, slow_query_ms: float) -> GraphStore:
    if backend == "embedded":
        return EmbeddedStore.open(tmp_path / "memory", slow_query_ms=slow_query_ms)
    from kenning_encounter.store.neo4j import Neo4jStore

    target = require_answering()  # skips (or fails in CI) only when nothing answers
    return Neo4jStore.open(
        target.uri,
        target.username,
        target.password,
        target.database,
        slow_query_ms=slow_query_ms,
        connection_timeout_s=5.0,
    )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def caplog_debug(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    caplog.set_level(logging.DEBUG, logger="kenning_encounter")
    yield caplog


def _exercise(store: GraphStore) -> None:
    """Statements of every kind, each carrying SECRET as a parameter (never in its text)."""

    def reading(tx: ReadTx) -> None:
        tx.head_ids_by_names([SECRET])

    def writing(tx: WriteTx) -> None:
        tx.head_ids_by_names([SECRET])

    store.read(reading)
    store.write(writing)
    store.fulltext(SECRET, limit=3)
    columns = ", ".join(f"{i} AS pad_{i:03d}" for i in range(60))  # a text past the cut
    found = store.read_cypher(
        f"RETURN $needle AS {MARKER}, {columns}", {"needle": SECRET}, **LIMITS
    )
    assert found.rows[0][0] == SECRET  # the parameter did reach the engine


def _ours(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name.startswith("kenning_encounter")]


def _assert_no_parameters(caplog: pytest.LogCaptureFixture) -> None:
    leaked = [r.getMessage() for r in caplog.records if SECRET in r.getMessage()]
    assert leaked == []
    assert all(SECRET not in str(r.args) for r in caplog.records)


def test_each_statement_is_logged_at_debug_without_its_parameters(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    store = _open(backend, tmp_path, slow_query_ms=0)  # the slow log off: DEBUG only
    try:
        caplog_debug.clear()
        _exercise(store)
    finally:
        store.close()
    statements = [r for r in _ours(caplog_debug) if r.name == QUERY_LOGGER]
    assert statements, "no statement reached the query log"
    assert {r.levelno for r in statements} == {logging.DEBUG}
    texts = [r.getMessage() for r in statements]
    assert any(MARKER in t for t in texts), "read_cypher's statement was not logged"
    assert any("ms:" in t for t in texts)
    _assert_no_parameters(caplog_debug)


def test_a_slow_statement_is_logged_at_warning_cut_short_without_parameters(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    store = _open(backend, tmp_path, slow_query_ms=0.001)  # every statement is slow
    try:
        caplog_debug.clear()
        _exercise(store)
    finally:
        store.close()
    slow = [
        r.getMessage()
        for r in _ours(caplog_debug)
        if r.name == QUERY_LOGGER and r.levelno == logging.WARNING
    ]
    assert slow, "no slow statement was logged"
    assert all("slow" in m and " ms" in m for m in slow)
    cypher = [m for m in slow if MARKER in m]
    assert cypher, "read_cypher's slow statement was not logged"
    statement = cypher[0].split("): ", 1)[1]
    assert len(statement) <= SLOW_TEXT_CHARS and statement.endswith("…")
    _assert_no_parameters(caplog_debug)


def test_what_a_read_cypher_text_quotes_stays_out_of_the_slow_log(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    # The text is an agent's: a string or comment it writes may quote the memory. The
    # slow log shows the statement's shape; only DEBUG shows it whole.
    store = _open(backend, tmp_path, slow_query_ms=0.001)
    quoted = [
        f"RETURN '{SECRET}' AS {MARKER}",
        f'RETURN "it\\"s {SECRET}" AS {MARKER}',
        f"RETURN 1 AS {MARKER} // {SECRET}",
        f"RETURN 1 AS {MARKER} /* {SECRET} */",
        f"RETURN 1 AS {MARKER}, '{SECRET}",  # left open: refused by the engine
    ]
    try:
        caplog_debug.clear()
        for text in quoted:
            with contextlib.suppress(KenningError):
                store.read_cypher(text, {}, **LIMITS)
    finally:
        store.close()
    records = [r for r in _ours(caplog_debug) if r.name == QUERY_LOGGER]
    slow = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert len([m for m in slow if MARKER in m]) >= 3, slow  # those the engine was sent
    assert [m for m in slow if SECRET in m] == []
    assert any(SECRET in r.getMessage() for r in records if r.levelno == logging.DEBUG)


def test_the_slow_log_is_quiet_below_its_threshold(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    store = _open(backend, tmp_path, slow_query_ms=3_600_000)  # an hour: nothing is slow
    try:
        caplog_debug.clear()
        _exercise(store)
    finally:
        store.close()
    assert [r for r in _ours(caplog_debug) if r.levelno >= logging.WARNING] == []


def test_opening_and_snapshots_go_through_the_same_log(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    """Schema preparation, snapshot brackets and analytics are statements like any other."""
    store = _open(backend, tmp_path, slow_query_ms=0)
    try:
        store.read(lambda tx: tx.clock())
        executor = store.analytics_executor()
        if executor is not None:
            executor.run("RETURN gds.version() AS version", doing="reading the version")
    finally:
        store.close()
    texts = [r.getMessage() for r in _ours(caplog_debug) if r.name == QUERY_LOGGER]
    if backend == "embedded":
        expected = ["CREATE NODE TABLE", "CHECKPOINT", "BEGIN TRANSACTION READ ONLY", "ROLLBACK"]
    else:
        expected = ["SHOW CONSTRAINTS", "gds.version()"]
    for part in expected:
        assert any(part in t for t in texts), f"no logged statement holds {part!r}"


def test_the_threshold_setting_reaches_the_store(
    backend: str, tmp_path: Path, caplog_debug: pytest.LogCaptureFixture
) -> None:
    """KENNING_ENCOUNTER_SLOW_QUERY_MS travels from Settings through open_store."""
    server: dict[str, str] = {}
    if backend == "neo4j":
        _open(backend, tmp_path, slow_query_ms=0).close()  # skips (or fails) with no server
        target = require_answering()
        server = {
            "neo4j_uri": target.uri,
            "neo4j_username": target.username,
            "neo4j_password": target.password,
            "neo4j_database": target.database,
        }
    settings = Settings(store=backend, data_dir=tmp_path / "memory", slow_query_ms=0.001, **server)
    store = open_store(settings)
    try:
        caplog_debug.clear()
        store.read(lambda tx: tx.clock())
    finally:
        store.close()
    assert any(
        r.name == QUERY_LOGGER and r.levelno == logging.WARNING for r in caplog_debug.records
    )
