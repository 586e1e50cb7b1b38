"""The suite can never empty a user's Neo4j (issue #15, item 4).

The tests reach Neo4j through KENNING_ENCOUNTER_TEST_NEO4J_* only, never the
production NEO4J_* settings; they empty a database only when it carries the test
marker, and keep the marker when they do; they skip only when nothing answers.
Two tests take the marker off the test server for a moment and put it back in a
``finally``: a Neo4j test running beside them in another process is refused, not
let loose on data.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from bench.peers import neo4j_instance

from tests.support.backends import open_neo4j_store, require_answering
from tests.support.neo4j_store import open_emptied
from tests.support.neo4j_target import (
    MARKER_LABEL,
    PASSWORD_VAR,
    REQUIRE_VAR,
    URI_VAR,
    USERNAME_VAR,
    ScratchNeo4j,
    UnmarkedDatabase,
    empty_marked,
)

pytestmark = pytest.mark.neo4j

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "scripts" / "neo4j-test-server"
PROBE = "KenningSafetyProbe"  # a node of somebody else's, as far as the tests know
# the suite's own conftest as a plugin, for a test file written outside tests/
PYTEST = [sys.executable, "-m", "pytest", "-p", "tests.conftest", "-p", "no:cacheprovider"]
CAPS: dict[str, Any] = {"row_cap": 10, "char_cap": 10_000, "timeout_s": 5.0}


@pytest.fixture
def target() -> ScratchNeo4j:
    return require_answering()


@pytest.fixture
def driver(target: ScratchNeo4j) -> Iterator[Any]:
    import neo4j

    with neo4j.GraphDatabase.driver(
        target.uri, auth=target.auth, notifications_min_severity="OFF"
    ) as opened:
        yield opened


def _count(driver: Any, label: str, where: str = "", **params: Any) -> int:
    records, _, _ = driver.execute_query(f"MATCH (n:{label}) {where} RETURN count(n) AS c", params)
    return int(records[0]["c"])


@contextmanager
def _probe(driver: Any) -> Iterator[str]:
    token = uuid.uuid4().hex
    driver.execute_query(f"CREATE (:{PROBE} {{token: $t}})", {"t": token})
    try:
        yield token
    finally:
        driver.execute_query(f"MATCH (p:{PROBE} {{token: $t}}) DELETE p", {"t": token})


def _probe_left(driver: Any, token: str) -> bool:
    return _count(driver, PROBE, "WHERE n.token = $t", t=token) == 1


@contextmanager
def _unmarked(driver: Any) -> Iterator[None]:
    """The test server without its marker for a moment; the marker as it was afterwards."""
    records, _, _ = driver.execute_query(f"MATCH (m:{MARKER_LABEL}) RETURN properties(m) AS p")
    assert records, f"the test server carries no :{MARKER_LABEL} to take away"
    kept = dict(records[0]["p"])
    driver.execute_query(f"MATCH (m:{MARKER_LABEL}) DELETE m")
    try:
        yield
    finally:
        driver.execute_query(f"MERGE (m:{MARKER_LABEL}) SET m = $p", {"p": kept})


def test_an_unmarked_database_is_refused_and_left_as_it_was(
    target: ScratchNeo4j, driver: Any
) -> None:
    with _unmarked(driver), _probe(driver) as token:
        for emptying in (
            lambda: open_emptied(target.uri),
            open_neo4j_store,  # what every Neo4j fixture calls: a failure, not a skip reason
            lambda: neo4j_instance.empty(neo4j_instance.given(target.uri)),  # the peers bench
        ):
            with pytest.raises(UnmarkedDatabase) as refused:
                emptying()
            assert target.uri in str(refused.value)
            assert "neo4j-test-server mark" in str(refused.value)
            assert _probe_left(driver, token)


def test_a_process_that_emptied_before_still_asks_for_the_marker(
    target: ScratchNeo4j, driver: Any
) -> None:
    """The emptying keeps its driver from one test to the next (neo4j_target.py): what it
    asked of the database last time is not taken as still so."""
    empty_marked(target)
    with _unmarked(driver), _probe(driver) as token:
        with pytest.raises(UnmarkedDatabase):
            empty_marked(target)
        with pytest.raises(UnmarkedDatabase):
            open_emptied(target.uri)
        assert _probe_left(driver, token)


def test_emptying_keeps_the_marker_and_read_cypher_never_sees_it(
    target: ScratchNeo4j, driver: Any
) -> None:
    store = open_emptied(target.uri)
    try:
        assert _count(driver, MARKER_LABEL) == 1
        assert store.read_cypher("MATCH (n) RETURN count(n)", None, **CAPS).rows == [[0]]
        with pytest.raises(Exception, match=f"{MARKER_LABEL} is not a label of the memory"):
            store.read_cypher(f"MATCH (m:{MARKER_LABEL}) RETURN m", None, **CAPS)
    finally:
        store.close()


def test_the_production_settings_never_name_the_test_neo4j(
    target: ScratchNeo4j, driver: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A user's NEO4J_URI naming a (marked, even) server: the helpers do not touch it."""
    monkeypatch.delenv(URI_VAR)
    for name, value in target.server_env().items():
        monkeypatch.setenv(name, value)
    with _probe(driver) as token:
        reason = open_neo4j_store()
        assert isinstance(reason, str) and f"{URI_VAR} is unset" in reason
        assert _probe_left(driver, token)


def test_a_suite_run_with_only_the_production_settings_empties_nothing(
    target: ScratchNeo4j, driver: Any, tmp_path: Path
) -> None:
    """The whole chain, conftest included, in a pytest of its own."""
    (tmp_path / "test_tiny.py").write_text("def test_on_every_backend(store):\n    pass\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("KENNING_ENCOUNTER_")}
    env.update(target.server_env())
    with _probe(driver) as token:
        tiny = str(tmp_path / "test_tiny.py")
        done = subprocess.run(
            [*PYTEST, "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT), "-rs", tiny],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1 passed, 1 skipped" in done.stdout and f"{URI_VAR} is unset" in done.stdout, (
            done.stdout
        )
        assert _probe_left(driver, token)


def test_an_unreachable_uri_is_a_skip_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    silent = "bolt://127.0.0.1:1"
    monkeypatch.setenv(URI_VAR, silent)
    reason = open_neo4j_store()
    assert isinstance(reason, str) and reason.startswith(f"no Neo4j answered at {silent}")
    monkeypatch.delenv(REQUIRE_VAR, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"no Neo4j answered at {silent}"):
        require_answering()
    monkeypatch.setenv(REQUIRE_VAR, "1")
    with pytest.raises(pytest.fail.Exception, match=f"no Neo4j answered at {silent}"):
        require_answering()


def test_a_refused_login_is_a_failure_not_a_skip(
    target: ScratchNeo4j, monkeypatch: pytest.MonkeyPatch
) -> None:
    from neo4j.exceptions import AuthError

    # Another user name, so the failed logins cannot lock the test user out.
    monkeypatch.setenv(USERNAME_VAR, "kenning-nobody")
    monkeypatch.setenv(PASSWORD_VAR, "wrong")
    monkeypatch.delenv(REQUIRE_VAR, raising=False)
    with pytest.raises(AuthError):
        open_neo4j_store()
    with pytest.raises(AuthError):
        require_answering()


def _mark(target: ScratchNeo4j) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NEO4J_TEST_PYTHON=sys.executable)
    env.update({URI_VAR: target.uri, USERNAME_VAR: target.username, PASSWORD_VAR: target.password})
    return subprocess.run(
        ["bash", str(LAUNCHER), "mark"], env=env, capture_output=True, text=True, timeout=120
    )


def test_mark_refuses_a_database_holding_anything_and_marks_an_empty_one(
    target: ScratchNeo4j, driver: Any
) -> None:
    empty_marked(target)  # the database holds the marker alone
    with _unmarked(driver):
        with _probe(driver) as token:
            refused = _mark(target)
            assert refused.returncode == 1, refused.stderr
            assert f"refusing to mark {target.uri}" in refused.stderr
            assert _count(driver, MARKER_LABEL) == 0 and _probe_left(driver, token)
        marked = _mark(target)
        assert marked.returncode == 0, marked.stderr
        [[by]] = driver.execute_query(f"MATCH (m:{MARKER_LABEL}) RETURN m.by").records
        assert by == "scripts/neo4j-test-server mark"
    assert _count(driver, MARKER_LABEL) == 1
    again = _mark(target)
    assert again.returncode == 0 and "already carries the test marker" in again.stderr
