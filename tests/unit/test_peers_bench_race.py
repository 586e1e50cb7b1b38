"""The peers benchmark's Neo4j run and whoever else empties the same test database.

The flaky failure of test_the_neo4j_peer_and_ours_share_one_emptied_neo4j ("session
'peers-bench' has no open encounter (this session has never advanced)") was this
interleaving: the bench empties the database, ours advances and records, and then
something else that uses the test Neo4j (a fixture of another suite run on the same
server, another benchmark) empties it again, taking ours' encounter with it. Here that
emptying is forced at that very moment, between ours' first and second batch: it must
wait until the bench is done with the database, and ours must be measured whole.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from bench import peers_bench
from bench.peers import neo4j_instance
from bench.peers.servers import ours
from bench.peers.workload import BATCH, Entity, build

from tests.support.backends import require_answering
from tests.support.neo4j_target import at, empty_marked

pytestmark = [pytest.mark.slow, pytest.mark.neo4j]

BLOCKED = "SHOW TRANSACTIONS YIELD status WHERE status STARTS WITH 'Blocked' RETURN count(*)"
WAIT_S = 120.0


def _blocked(uri: str) -> bool:
    import neo4j

    target = at(uri)
    with (
        neo4j.GraphDatabase.driver(
            uri, auth=target.auth, notifications_min_severity="OFF"
        ) as driver,
        driver.session(database=target.database) as session,
    ):
        row = session.run(BLOCKED).single()
        return bool(row and row[0])


def test_an_emptying_between_two_batches_waits_for_the_bench(tmp_path: Path) -> None:
    uri = require_answering().uri
    recipe = ours(tmp_path / "ours-neo4j", neo4j_instance.given(uri))
    emptied = threading.Event()
    failures: list[BaseException] = []

    def empty_elsewhere() -> None:
        try:
            empty_marked(at(uri))  # what every Neo4j fixture of the suite does
        except BaseException as exc:
            failures.append(exc)
        finally:
            emptied.set()

    other = threading.Thread(target=empty_elsewhere)
    calls = recipe.write_calls

    def write_calls(done_before: int, batch: list[Entity]) -> list[Any]:
        if done_before == BATCH:  # ours advanced and recorded its first batch
            other.start()
            # Either the emptying is done (ours' memory is gone) or it waits on the bench.
            for _ in range(int(WAIT_S / 0.1)):
                if emptied.wait(0.1) or _blocked(uri):
                    break
            else:
                pytest.fail(f"the emptying neither finished nor waited in {WAIT_S:g} s")
        return calls(done_before, batch)

    recipe.write_calls = write_calls
    figures = peers_bench._measure([recipe], build(3 * BATCH, 5), tmp_path)  # pyright: ignore[reportPrivateUsage]
    assert figures["ours_neo4j"]["status"] == "ok", figures
    assert figures["ours_neo4j"]["write"]["entities"] == 3 * BATCH
    other.join(timeout=WAIT_S)
    assert emptied.is_set() and failures == [], failures  # it ran, once the bench let go
