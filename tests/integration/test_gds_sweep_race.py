"""Replicas sweeping dead GDS graphs at once, on one real Neo4j with GDS.

The graphs are made by real engines in child processes: one SIGKILLed (its graphs
are dead once its lease lapses), one alive (its graphs must survive every sweep and
stay usable), one of another memory (never touched by this memory's sweeps). Three
"replicas", each with a driver of its own, then sweep at the same instant.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from kenning_encounter.analytics.gds import GdsEngine, GdsGraph
from kenning_encounter.analytics.gds_owners import LeaseTimes, sweep
from kenning_encounter.store.neo4j import gds_queries as q
from kenning_encounter.store.neo4j.gds import GdsExecutor, open_gds
from tests.support.backends import require_answering
from tests.support.neo4j_target import ScratchNeo4j

if TYPE_CHECKING:
    from neo4j import Driver

pytestmark = pytest.mark.neo4j

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 60.0
REPLICAS = 3

# A server's engine in miniature: load graphs, say their names, run WCC on each when
# told (proving they are still there), and live until stdin closes.
CHILD = """
import json, sys
import neo4j
from kenning_encounter.analytics.gds import GdsEngine, GdsGraph
from kenning_encounter.analytics.gds_owners import LeaseTimes
from kenning_encounter.analytics.projection import build_projection
from kenning_encounter.store.neo4j.gds import open_gds
from kenning_encounter.store.records import EdgeRecord, NodeRecord

uri, password, memory, lease_s, renew_s, count = sys.argv[1:7]
driver = neo4j.GraphDatabase.driver(uri, auth=("neo4j", password))
executor = open_gds(driver, uri=uri, memory=memory)
engine = GdsEngine(executor, lease=LeaseTimes(float(lease_s), float(renew_s)))
nodes = [NodeRecord(id=f"n{i}", type="Concept", name=f"c{i}", description="", tick=i + 1,
                    created_at="2025-01-01T00:00:00+00:00") for i in range(4)]
edges = [EdgeRecord("n0", "n1", "ABOUT", 5), EdgeRecord("n1", "n2", "ABOUT", 6)]
graphs = [engine.load(build_projection(nodes, edges)) for _ in range(int(count))]
print(json.dumps({"owner": engine.owner, "graphs": [g.graph_name for g in graphs]}), flush=True)
for line in sys.stdin:
    print(json.dumps([len(g.wcc().sizes) for g in graphs]), flush=True)
"""


@dataclass
class Child:
    process: subprocess.Popen[str]
    owner: str
    graphs: list[str]

    def ask(self) -> Any:
        """Run WCC on every graph it holds; the answer, or the error it died of."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("go\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline() or "null")


@pytest.fixture(scope="module")
def target() -> ScratchNeo4j:
    return require_answering()


@pytest.fixture
def spawn(target: ScratchNeo4j) -> Iterator[Callable[..., Child]]:
    started: list[subprocess.Popen[str]] = []

    def start(memory: str, *, lease_s: float, renew_s: float, graphs: int = 2) -> Child:
        args = [target.uri, target.password, memory, str(lease_s), str(renew_s), str(graphs)]
        process = subprocess.Popen(
            [sys.executable, "-c", CHILD, *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line, f"the child engine of memory {memory!r} died before making its graphs"
        said = json.loads(line)
        return Child(process, said["owner"], said["graphs"])

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                stream.close()


@pytest.fixture
def drivers(target: ScratchNeo4j) -> Iterator[list[Driver]]:
    import neo4j

    opened = [
        neo4j.GraphDatabase.driver(target.uri, auth=target.auth, notifications_min_severity="OFF")
        for _ in range(REPLICAS)
    ]
    try:
        yield opened
    finally:
        for driver in opened:
            driver.close()


def _executor(driver: Driver, memory: str) -> GdsExecutor:
    found = open_gds(driver, memory=memory)
    if found is None:
        pytest.fail("the test Neo4j has no GDS plugin")
    return found


def _graphs(driver: Driver) -> set[str]:
    records, _, _ = driver.execute_query(q.LIST_GRAPHS)
    return set(records[0]["graphs"])


def _leases(driver: Driver, memory: str) -> dict[str, bool]:
    """Each lease of the memory: whether it is still running."""
    records, _, _ = driver.execute_query(
        "MATCH (l:KenningGdsLease {_memory: $memory}) "
        "RETURN l.owner AS owner, l.expires > timestamp() AS live",
        {"memory": memory},
    )
    return {r["owner"]: r["live"] for r in records}


def _expires(driver: Driver, memory: str, owner: str) -> int:
    records, _, _ = driver.execute_query(
        "MATCH (l:KenningGdsLease {_memory: $memory, owner: $owner}) RETURN l.expires AS at",
        {"memory": memory, "owner": owner},
    )
    return int(records[0]["at"])


def _wait_lapsed(driver: Driver, memory: str, owner: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while _leases(driver, memory).get(owner, False):
        assert time.monotonic() < deadline, f"the lease of {owner} never lapsed"
        time.sleep(0.2)


def _killed(child: Child) -> Child:
    child.process.send_signal(signal.SIGKILL)
    child.process.wait()
    return child


def _at_once(count: int, work: Callable[[int], list[str]]) -> list[list[str]]:
    """``work`` on ``count`` threads released together; every result, or the first error."""
    barrier = threading.Barrier(count)
    results: list[list[str] | BaseException] = [[] for _ in range(count)]

    def run(i: int) -> None:
        try:
            barrier.wait()
            results[i] = work(i)
        except BaseException as exc:
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [r for r in results if not isinstance(r, BaseException)]


def _memory() -> str:
    return f"race_{uuid.uuid4().hex[:8]}"


def test_replicas_sweeping_at_once_drop_each_dead_graph_once_and_keep_the_living(
    spawn: Callable[..., Child], drivers: list[Driver]
) -> None:
    memory, other = _memory(), _memory()
    dead = _killed(spawn(memory, lease_s=1.0, renew_s=0.25, graphs=3))
    living = spawn(memory, lease_s=600.0, renew_s=60.0)
    elsewhere = _killed(spawn(other, lease_s=1.0, renew_s=0.25))
    foreign = ["someone-elses-graph", f"kenning:{memory}:no-graph-part"]
    for name in foreign:
        drivers[0].execute_query(
            q.PROJECT, {"graph": name, "isolated": [], "sources": [0], "targets": [1]}
        )
    try:
        _wait_lapsed(drivers[0], memory, dead.owner)
        _wait_lapsed(drivers[0], other, elsewhere.owner)
        assert set(dead.graphs + living.graphs + elsewhere.graphs) <= _graphs(drivers[0])

        executors = [_executor(d, memory) for d in drivers]
        rounds = [_at_once(REPLICAS, lambda i: sweep(executors[i])) for _ in range(3)]

        dropped = [name for swept in rounds for names in swept for name in names]
        assert sorted(dropped) == sorted(dead.graphs), "each dead graph dropped exactly once"
        left = _graphs(drivers[0])
        assert not set(dead.graphs) & left
        assert set(living.graphs + elsewhere.graphs + foreign) <= left
        assert living.ask() == [2, 2]  # its graphs still answer: nothing of them was dropped
        assert _leases(drivers[0], memory) == {living.owner: True}  # the dead lease forgotten

        # The other memory's graphs were kept by scope alone: its own sweep drops them.
        assert sorted(sweep(_executor(drivers[1], other))) == sorted(elsewhere.graphs)
        assert _leases(drivers[0], other) == {}
    finally:
        for name in foreign + dead.graphs + living.graphs + elsewhere.graphs:
            drivers[0].execute_query(q.DROP, {"graph": name})


def test_engines_started_at_once_keep_sweeping_after_a_replica_dies(
    spawn: Callable[..., Child], drivers: list[Driver]
) -> None:
    """A replica that dies and is replaced at once has a lease still running when the
    new engines start; their periodic sweep drops its graphs once it lapses."""
    memory = _memory()
    living = spawn(memory, lease_s=600.0, renew_s=60.0)
    dead = _killed(spawn(memory, lease_s=600.0, renew_s=60.0))
    times = LeaseTimes(lease_s=30.0, renew_s=0.2, sweep_s=0.2)
    executors = [_executor(d, memory) for d in drivers]
    engines: list[GdsEngine] = []
    lock = threading.Lock()

    def start(i: int) -> list[str]:
        engine = GdsEngine.start(executors[i], lease=times)
        with lock:
            engines.append(engine)
        return []

    try:
        _at_once(REPLICAS, start)
        assert set(dead.graphs) <= _graphs(drivers[0])  # its lease runs: kept at start
        # Its lease runs out (on the database's clock, as ten minutes would make it).
        drivers[0].execute_query(
            "MATCH (l:KenningGdsLease {_memory: $memory, owner: $owner}) "
            "SET l.expires = timestamp()",
            {"memory": memory, "owner": dead.owner},
        )
        deadline = time.monotonic() + DEADLINE_S
        while set(dead.graphs) & _graphs(drivers[0]):
            assert time.monotonic() < deadline, "no running engine ever swept the dead graphs"
            time.sleep(0.2)
        assert set(living.graphs) <= _graphs(drivers[0])
        assert living.ask() == [2, 2]
    finally:
        for engine in engines:
            engine.close()
        for name in dead.graphs + living.graphs:
            drivers[0].execute_query(q.DROP, {"graph": name})
    # A closed engine gives its lease up, and sweeps no more.
    assert set(_leases(drivers[0], memory)) == {living.owner}


def test_a_graph_is_leased_before_it_exists_and_the_lease_goes_with_the_engine(
    drivers: list[Driver],
) -> None:
    from kenning_encounter.analytics.projection import build_projection
    from kenning_encounter.store.records import EdgeRecord, NodeRecord

    memory = _memory()
    engine = GdsEngine(_executor(drivers[0], memory), lease=LeaseTimes(600.0, 0.2))
    assert _leases(drivers[0], memory) == {}  # no graph, no lease
    nodes = [
        NodeRecord(
            id=f"n{i}",
            type="Concept",
            name=f"c{i}",
            description="",
            tick=i + 1,
            created_at="2025-01-01T00:00:00+00:00",
        )
        for i in range(3)
    ]
    with engine.load(build_projection(nodes, [EdgeRecord("n0", "n1", "ABOUT", 4)])) as graph:
        assert _leases(drivers[0], memory) == {engine.owner: True}
        # Another replica's sweep right now keeps the graph.
        assert sweep(_executor(drivers[1], memory)) == []
        assert graph.wcc().sizes.tolist() == [2, 1]
        # While the graph is held, the keeper renews the lease by itself.
        first = _expires(drivers[0], memory, engine.owner)
        deadline = time.monotonic() + DEADLINE_S
        while _expires(drivers[0], memory, engine.owner) == first:
            assert time.monotonic() < deadline, "the lease was never renewed"
            time.sleep(0.1)
    engine.close()
    assert _leases(drivers[0], memory) == {}


def test_a_named_memorys_store_hands_its_name_to_gds(target: ScratchNeo4j) -> None:
    from kenning_encounter.analytics.gds_owners import graph_prefix
    from kenning_encounter.analytics.projection import build_projection
    from kenning_encounter.store.neo4j.backend import Neo4jStore
    from kenning_encounter.store.records import EdgeRecord, NodeRecord

    memory = _memory()
    store = Neo4jStore.open(
        target.uri, target.username, target.password, target.database, memory=memory
    )
    try:
        executor = store.analytics_executor()
        assert executor is not None and executor.memory == memory
        engine = GdsEngine.start(executor)
        try:
            nodes = [
                NodeRecord(
                    id=f"n{i}",
                    type="Concept",
                    name=f"c{i}",
                    description="",
                    tick=i + 1,
                    created_at="2025-01-01T00:00:00+00:00",
                )
                for i in range(2)
            ]
            projection = build_projection(nodes, [EdgeRecord("n0", "n1", "ABOUT", 3)])
            with engine.load(projection) as graph:
                assert isinstance(graph, GdsGraph)
                assert graph.graph_name.startswith(graph_prefix(memory, engine.owner))
        finally:
            engine.close()
    finally:
        store.close()
