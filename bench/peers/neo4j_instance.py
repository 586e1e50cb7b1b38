"""The Neo4j the two Neo4j-backed servers share, and emptying it between them.

Both servers expect a database of their own, and the benchmark empties it
before each one and holds it while each is measured (``holding``), so by default it runs a private server (the project's own
launcher, scripts/neo4j-test-server, in a run directory of its own on a free
port) and stops it afterwards. A URI passed in is reached with the test
settings (KENNING_ENCOUNTER_TEST_NEO4J_USERNAME / _PASSWORD, never NEO4J_*) and
emptied only when it carries the test marker (tests/support/neo4j_target.py).
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from tests.support.neo4j_target import ScratchNeo4j, at, empty_marked, held

from bench.peers.servers import REPO, Neo4jTarget

log = logging.getLogger(__name__)

LAUNCHER = REPO / "scripts" / "neo4j-test-server"
START_TIMEOUT_S = 600  # a first start builds the launcher from Maven Central


def _launcher_password() -> str:
    return os.environ.get("NEO4J_TEST_PASSWORD", "kenning-test-pw")


def given(uri: str) -> Neo4jTarget:
    """A server named by the caller, with the credentials the test suite uses for it."""
    target = at(uri)
    return Neo4jTarget(uri, target.username, target.password, target.database)


class PrivateNeo4j:
    """A Neo4j started for this run only, in ``run_dir``; ``stop`` ends only that one."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        # Both JIT tiers, as a production server runs (the launcher's default is the quick
        # one alone, for a test's short-lived server).
        self._env = dict(
            os.environ, NEO4J_TEST_DIR=str(run_dir), NEO4J_TEST_PORT="0", NEO4J_TEST_JIT="full"
        )
        self.target: Neo4jTarget | None = None

    def start(self) -> Neo4jTarget | str:
        """The server's target, or why none could be started."""
        missing = [tool for tool in ("bash", "java", "mvn") if shutil.which(tool) is None]
        if missing:
            return f"no Neo4j: {', '.join(missing)} not on PATH (the launcher needs Java 17+ and Maven)"
        try:
            done = subprocess.run(
                ["bash", str(LAUNCHER), "start"],
                env=self._env,
                capture_output=True,
                text=True,
                timeout=START_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            self.stop()
            return f"no Neo4j: {LAUNCHER} start took longer than {START_TIMEOUT_S} s"
        lines = done.stdout.strip().splitlines()
        if done.returncode != 0 or not lines or not lines[-1].startswith("bolt://"):
            tail = " | ".join(done.stderr.strip().splitlines()[-5:])
            return f"no Neo4j: {LAUNCHER} start failed ({done.returncode}): {tail}"
        self.target = Neo4jTarget(lines[-1], "neo4j", _launcher_password())
        log.info("private Neo4j for the peers benchmark at %s", self.target.uri)
        return self.target

    def stop(self) -> None:
        subprocess.run(
            ["bash", str(LAUNCHER), "stop"],
            env=self._env,
            capture_output=True,
            timeout=120,
            check=False,
        )
        self.target = None


def _scratch(target: Neo4jTarget) -> ScratchNeo4j:
    return ScratchNeo4j(target.uri, target.username, target.password, target.database)


@contextmanager
def holding(target: Neo4jTarget) -> Generator[None]:
    """The database to this run alone while the block runs: a test or another benchmark
    that empties it (tests/support/neo4j_target.py) waits until the block ends, rather than
    wiping a server's memory between two of its calls."""
    with held(_scratch(target), "bench.peers_bench"):
        yield


def empty(target: Neo4jTarget) -> str:
    """Delete every node but the test marker, in a block ``holding`` the database (refusing
    an unmarked one, which raises UnmarkedDatabase); returns the server's name and version."""
    import neo4j

    from kenning_encounter.store.neo4j.queries import SERVER_VERSION

    empty_marked(_scratch(target), holding=True)
    with (
        neo4j.GraphDatabase.driver(
            target.uri, auth=(target.username, target.password), notifications_min_severity="OFF"
        ) as driver,
        driver.session(database=target.database) as session,
    ):
        row = session.run(SERVER_VERSION).single()
    return "unknown" if row is None else f"{row['name']} {row['version']} ({row['edition']})"


def reachable(target: Neo4jTarget) -> str | None:
    """None when the server answers with these credentials, why not when nothing answers;
    any other failure (a refused login, say) raises."""
    import neo4j
    from neo4j.exceptions import ServiceUnavailable

    try:
        with neo4j.GraphDatabase.driver(
            target.uri, auth=(target.username, target.password)
        ) as driver:
            driver.verify_connectivity()
    except ServiceUnavailable as exc:
        return f"no Neo4j answered at {target.uri}: {exc}"
    return None
