"""The Neo4j the tests and benchmarks may use, and the marker that lets them empty it.

The tests never read NEO4J_URI, NEO4J_USERNAME or NEO4J_PASSWORD: those are the
settings the README gives users for their real memory, and the suite empties the
database it runs on. Their own settings are KENNING_ENCOUNTER_TEST_NEO4J_URI
(unset: no Neo4j for the tests, and no default), ..._USERNAME (neo4j),
..._PASSWORD (kenning-test-pw, the launcher's) and ..._DATABASE (neo4j).

A database is emptied only when it holds a :KenningEncounterTestMarker node, which
scripts/neo4j-test-server writes into the server it starts, or into a scratch
server a user names with its ``mark`` command (only while that holds nothing
else). The marker survives the emptying, and read_cypher never sees it: it is not
one of the memory's labels.

Command line (what scripts/neo4j-test-server runs; the target is read from the
KENNING_ENCOUNTER_TEST_NEO4J_* settings):

    python -m tests.support.neo4j_target stamp   # the launcher's own server: mark it
    python -m tests.support.neo4j_target mark    # a scratch server: mark it if it is empty
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Generator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from neo4j import Driver, Session

URI_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_URI"
# One test Neo4j per pytest-xdist worker, comma-separated (tests/conftest.py hands each
# worker its own as URI_VAR): two workers emptying one database would wreck each other.
URIS_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_URIS"
USERNAME_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_USERNAME"
PASSWORD_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_PASSWORD"
DATABASE_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_DATABASE"
REQUIRE_VAR: Final = "KENNING_ENCOUNTER_REQUIRE_NEO4J"
DEFAULT_PASSWORD: Final = "kenning-test-pw"

MARKER_LABEL: Final = "KenningEncounterTestMarker"
MARKED: Final = f"MATCH (m:{MARKER_LABEL}) RETURN count(m) > 0 AS marked"
# Every node but the marker; batched deletes need an auto-commit run.
# A batch per transaction, repeated until none is left, relationships first: one
# statement over a large memory (even in transactions of its own) overran the server's
# transaction memory, and so did detaching a node with very many relationships.
EMPTY_BATCH: Final = 10_000
EMPTY_RELATIONSHIPS: Final = f"MATCH ()-[r]->() WITH r LIMIT {EMPTY_BATCH} DELETE r RETURN count(*)"
EMPTY_ALL_BUT_MARKER: Final = (
    f"MATCH (n) WHERE NOT n:{MARKER_LABEL} WITH n LIMIT {EMPTY_BATCH} DETACH DELETE n "
    "RETURN count(*)"
)
OTHER_NODES: Final = f"MATCH (n) WHERE NOT n:{MARKER_LABEL} RETURN count(n) AS others"
# Writing the marker takes its lock until the transaction ends (it is rolled back, so
# nothing is written): whoever empties waits while a run holds the database.
HOLD_MARKER: Final = f"MATCH (m:{MARKER_LABEL}) SET m.held_by = $by RETURN count(m) > 0 AS marked"
WRITE_MARKER: Final = (
    f"MERGE (m:{MARKER_LABEL}) ON CREATE SET m.by = $by, m.at = datetime() RETURN m.by AS by"
)

HOW_TO_GET_ONE: Final = (
    "start the project's test server with `bash scripts/neo4j-test-server start` (it prints "
    f"the {URI_VAR} line to export), or run `make test`, which does both"
)


@dataclass(frozen=True)
class ScratchNeo4j:
    """A Neo4j the tests may use, with the credentials to reach it."""

    uri: str
    username: str = "neo4j"
    password: str = DEFAULT_PASSWORD
    database: str = "neo4j"

    @property
    def auth(self) -> tuple[str, str]:
        return (self.username, self.password)

    def server_env(self) -> dict[str, str]:
        """The production settings a server child reads, filled in from the test ones."""
        return {
            "NEO4J_URI": self.uri,
            "NEO4J_USERNAME": self.username,
            "NEO4J_PASSWORD": self.password,
            "NEO4J_DATABASE": self.database,
        }


class UnmarkedDatabase(RuntimeError):
    """The database carries no test marker, so nothing of ours may empty it."""


def at(uri: str) -> ScratchNeo4j:
    """``uri`` with the test credentials (a URI given on a command line, say)."""
    return ScratchNeo4j(
        uri,
        os.environ.get(USERNAME_VAR) or "neo4j",
        os.environ.get(PASSWORD_VAR) or DEFAULT_PASSWORD,
        os.environ.get(DATABASE_VAR) or "neo4j",
    )


def worker_uri(worker: str, count: int, uris: str, single: str) -> str | None:
    """The test Neo4j of pytest-xdist worker ``worker`` (gw0, gw1, ...) of ``count``, from
    the URIS list; None when the run names none. Raises ValueError when workers would
    have to share one, which would let one empty the other's database mid-test."""
    listed = [u.strip() for u in uris.split(",") if u.strip()]
    if not listed:
        if single and count > 1:
            raise ValueError(
                f"{count} test workers cannot share the one Neo4j {URI_VAR} names: each "
                f"empties its database; name one per worker in {URIS_VAR} (make test does)"
            )
        return None
    if len(set(listed)) < count:
        raise ValueError(
            f"{count} test workers need {count} different Neo4j servers; {URIS_VAR} names "
            f"{len(set(listed))}"
        )
    return listed[int(worker.removeprefix("gw"))]


# A parallel run's Neo4j tests all go to one worker (``--dist loadgroup``, as make test
# runs): one server serves the run, planning each statement and warming its JIT once
# instead of once per worker (about 150 CPU-seconds a server on a 2-core machine).
# tests/conftest.py schedules by test id and hands the URI to the group's tests alone;
# any other test sees none, and is told why (ELSEWHERE_VAR).
NEO4J_GROUP: Final = "neo4j"
ELSEWHERE_VAR: Final = "KENNING_ENCOUNTER_TEST_NEO4J_ELSEWHERE"
# Files whose tests need Neo4j though their ids do not say so (marked ``neo4j`` whole).
NEO4J_FILES: Final = frozenset(
    {
        "tests/integration/test_gds_engine.py",
        "tests/integration/test_gds_sweep_race.py",
        "tests/unit/test_peers_bench.py",
        "tests/unit/test_peers_bench_race.py",
    }
)


def in_neo4j_group(nodeid: str) -> bool:
    """Whether a test runs with the Neo4j group, read from its id alone (the scheduler
    sees nothing else): the id names Neo4j (its file, its name or a parameter, such as
    the ``neo4j`` backend), or its file is one of NEO4J_FILES."""
    return NEO4J_GROUP in nodeid.lower() or nodeid.split("::", 1)[0] in NEO4J_FILES


def group_of(nodeid: str) -> str:
    """A test's work unit: the Neo4j group, or else its file (as ``--dist loadfile``)."""
    return NEO4J_GROUP if in_neo4j_group(nodeid) else nodeid.split("::", 1)[0]


def configured() -> ScratchNeo4j | None:
    """The test Neo4j the environment names, or None: unset means none, never a default."""
    uri = os.environ.get(URI_VAR, "").strip()
    return at(uri) if uri else None


def unset_reason() -> str:
    if os.environ.get(ELSEWHERE_VAR) == "1":
        return (
            "no Neo4j for this test: in a parallel run only the Neo4j group's tests reach "
            f"the server; name Neo4j in the test's id or mark it @pytest.mark.{NEO4J_GROUP}"
        )
    return (
        f"no Neo4j for the tests: {URI_VAR} is unset (the tests never use NEO4J_URI, "
        f"which names a real memory); {HOW_TO_GET_ONE}"
    )


def refusal(target: ScratchNeo4j) -> str:
    return (
        f"refusing to empty the Neo4j database {target.database!r} at {target.uri}: it has no "
        f":{MARKER_LABEL} node, so it may be somebody's real data. If it is a scratch server "
        f"for the tests, mark it while it is empty with `{URI_VAR}={target.uri} "
        f"bash scripts/neo4j-test-server mark`; otherwise point {URI_VAR} at the "
        f"project's own server ({HOW_TO_GET_ONE})"
    )


def is_marked(session: Session) -> bool:
    row = session.run(MARKED).single()
    return bool(row and row["marked"])


def _driver(target: ScratchNeo4j) -> Driver:
    import neo4j

    return neo4j.GraphDatabase.driver(
        target.uri, auth=target.auth, connection_timeout=5.0, notifications_min_severity="OFF"
    )


@contextmanager
def held(target: ScratchNeo4j, by: str, driver: Driver | None = None) -> Generator[None]:
    """The marked database held for a run that needs it to itself (a benchmark's): until
    the block ends, ``empty_marked`` anywhere waits. Raises UnmarkedDatabase when unmarked.

    ``driver``, when given, is one already open on ``target`` (the hold takes a session
    of its own on it)."""
    with ExitStack() as stack:
        if driver is None:
            driver = stack.enter_context(_driver(target))
        session = stack.enter_context(driver.session(database=target.database))
        tx = stack.enter_context(session.begin_transaction())
        row = tx.run(HOLD_MARKER, by=by).single()
        if not (row and row["marked"]):
            raise UnmarkedDatabase(refusal(target))
        try:
            yield
        finally:
            tx.rollback()


# The emptying's driver, one per target and process, kept for the run: a new driver for
# every test (a connection and a login) cost as much again as the emptying itself (on a
# warm test server 20-27 against 8-10 ms a test, a third of it the server's CPU).
_EMPTYING: dict[ScratchNeo4j, Driver] = {}
_EMPTYING_LOCK = threading.Lock()


def _emptying_driver(target: ScratchNeo4j) -> Driver:
    with _EMPTYING_LOCK:
        driver = _EMPTYING.get(target)
        if driver is None:
            driver = _EMPTYING[target] = _driver(target)
        return driver


def _drop_emptying_driver(target: ScratchNeo4j, driver: Driver) -> None:
    with _EMPTYING_LOCK:
        if _EMPTYING.get(target) is driver:
            del _EMPTYING[target]
    driver.close()


@atexit.register
def _close_emptying_drivers() -> None:
    with _EMPTYING_LOCK:
        drivers = list(_EMPTYING.values())
        _EMPTYING.clear()
    for driver in drivers:
        driver.close()


def empty_marked(target: ScratchNeo4j, *, holding: bool = False) -> None:
    """Delete every node but the marker, or raise UnmarkedDatabase having touched nothing.

    It first waits for any run that holds the database (``held``); ``holding`` says the
    caller holds it already. A server that does not answer raises the driver's
    ServiceUnavailable, which callers turn into a skip; every other failure is theirs to
    report as one. The marker is asked for at every call, on a driver kept from the
    last (``_emptying_driver``); one whose server went away since is made again, once."""
    from neo4j.exceptions import ServiceUnavailable, SessionExpired

    driver = _emptying_driver(target)
    try:
        _empty_on(driver, target, holding)
    except (ServiceUnavailable, SessionExpired):
        # Its connections may be a restarted server's: the emptying, anew (it is idempotent).
        _drop_emptying_driver(target, driver)
        _empty_on(_emptying_driver(target), target, holding)


def _empty_on(driver: Driver, target: ScratchNeo4j, holding: bool) -> None:
    with driver.session(database=target.database) as session:
        if not is_marked(session):
            raise UnmarkedDatabase(refusal(target))
        if holding:
            _empty(session)
            return
        with held(target, "emptying", driver):
            _empty(session)


def _empty(session: Any) -> None:
    # A batch short of the limit deleted all there was: no statement only to count none left.
    for statement in (EMPTY_RELATIONSHIPS, EMPTY_ALL_BUT_MARKER):
        while True:
            row = session.run(statement).single()
            if row is None or int(row[0]) < EMPTY_BATCH:
                break


def mark(target: ScratchNeo4j, by: str, only_if_empty: bool) -> str:
    """Write the marker (once); with ``only_if_empty`` refuse a database holding anything else."""
    import neo4j

    with (
        neo4j.GraphDatabase.driver(
            target.uri, auth=target.auth, connection_timeout=5.0, notifications_min_severity="OFF"
        ) as driver,
        driver.session(database=target.database) as session,
    ):
        if is_marked(session):
            return f"{target.uri} already carries the test marker; the tests may empty it"
        if only_if_empty:
            row = session.run(OTHER_NODES).single()
            others = 0 if row is None else int(row["others"])
            if others:
                raise UnmarkedDatabase(
                    f"refusing to mark {target.uri}: its database {target.database!r} holds "
                    f"{others} node(s), and the tests empty every database they find marked. "
                    "Mark only a scratch server that is empty; or use the project's own "
                    "(`bash scripts/neo4j-test-server start`)"
                )
        session.run(WRITE_MARKER, by=by).consume()
    return f"marked {target.uri}: the tests may now empty its database {target.database!r}"


def main(argv: list[str]) -> int:
    command = argv[0] if argv else ""
    if command not in ("stamp", "mark"):
        print("usage: python -m tests.support.neo4j_target stamp|mark", file=sys.stderr)
        return 2
    target = configured()
    if target is None:
        print(f"{command}: set {URI_VAR} to the server to mark", file=sys.stderr)
        return 2
    try:
        import neo4j.exceptions
    except ImportError:
        print(
            f"{command}: {sys.executable} has no neo4j driver; run `make install`, or set "
            "NEO4J_TEST_PYTHON to a Python that has it",
            file=sys.stderr,
        )
        return 1
    by = f"scripts/neo4j-test-server {'start' if command == 'stamp' else 'mark'}"
    try:
        print(mark(target, by, only_if_empty=command == "mark"), file=sys.stderr)
    except UnmarkedDatabase as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except neo4j.exceptions.Neo4jError as exc:
        print(f"could not mark {target.uri}: {exc}", file=sys.stderr)
        return 1
    except neo4j.exceptions.DriverError as exc:
        print(f"could not reach {target.uri} to mark it: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
