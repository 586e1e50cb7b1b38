"""The Neo4j the two Neo4j-backed servers share, and emptying it between them.

Both servers expect a database of their own, and the benchmark empties it
before each one, so by default it runs a private server (the project's own
launcher, scripts/neo4j-test-server, in a run directory of its own on a free
port) and stops it afterwards. It never empties a server it was not told it
may: a URI passed in is taken to be disposable, and says so in the help.
"""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
from pathlib import Path

from bench.peers.servers import REPO, Neo4jTarget

log = logging.getLogger(__name__)

LAUNCHER = REPO / "scripts" / "neo4j-test-server"
START_TIMEOUT_S = 600  # a first start builds the launcher from Maven Central


def _launcher_password() -> str:
    return os.environ.get("NEO4J_TEST_PASSWORD", "kenning-test-pw")


def given(uri: str) -> Neo4jTarget:
    """A server named by the caller, with the credentials the test suite uses for it."""
    return Neo4jTarget(
        uri,
        os.environ.get("NEO4J_USERNAME", "neo4j"),
        os.environ.get("NEO4J_PASSWORD") or _launcher_password(),
        os.environ.get("NEO4J_DATABASE", "neo4j"),
    )


class PrivateNeo4j:
    """A Neo4j started for this run only, in ``run_dir``; ``stop`` ends only that one."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self._env = dict(os.environ, NEO4J_TEST_DIR=str(run_dir), NEO4J_TEST_PORT="0")
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


def empty(target: Neo4jTarget) -> str:
    """Delete every node and relationship; returns the server's name and version."""
    import neo4j

    from kenning_encounter.store.neo4j.queries import EMPTY_DATABASE, SERVER_VERSION

    with (
        neo4j.GraphDatabase.driver(
            target.uri, auth=(target.username, target.password), notifications_min_severity="OFF"
        ) as driver,
        driver.session(database=target.database) as session,
    ):
        session.run(EMPTY_DATABASE).consume()
        row = session.run(SERVER_VERSION).single()
    return "unknown" if row is None else f"{row['name']} {row['version']} ({row['edition']})"


def reachable(target: Neo4jTarget) -> str | None:
    """None when the server answers with these credentials, else why not."""
    import neo4j

    try:
        with neo4j.GraphDatabase.driver(
            target.uri, auth=(target.username, target.password)
        ) as driver:
            driver.verify_connectivity()
    except Exception as exc:  # any failure to reach it is the reason to report
        return f"no Neo4j answered at {target.uri}: {exc}"
    return None
