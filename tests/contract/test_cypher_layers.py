"""Each read_cypher layer on the embedded store, proved alone with the others switched off.

``run_read_cypher`` takes the layers as arguments, so a test can send an attack
straight to the engine with the token gate off (or outside the read-only
transaction with the gate on) and see the remaining layer refuse or contain it.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.cypher_guard import LADYBUG_RULES, check_read_only
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.cypher import CYPHER_CONCURRENCY, run_read_cypher
from kenning_encounter.store.neo4j.cypher import NEO4J_RULES
from tests.contract.test_read_cypher_attacks import ALL_REFUSALS, SMUGGLED, _seed

CAPS: dict[str, Any] = {"row_cap": 50, "char_cap": 5_000, "timeout_s": 1.0}
PAYLOAD = "MATCH (n:Concept) SET n.name = 'pwned'"


@pytest.fixture
def embedded(tmp_path: Path) -> Any:
    store = EmbeddedStore.open(tmp_path / "data")
    _seed(Memory(store))
    yield store
    store.close()


def _names(store: EmbeddedStore) -> list[str]:
    return sorted(str(r[0]) for r in store.read_cypher("MATCH (n) RETURN n.name", **CAPS).rows)


def _raw(store: EmbeddedStore, query: str, **layers: Any) -> Any:
    with store._reader() as conn:  # the engine path itself, without the store's method
        return run_read_cypher(conn, query, None, **CAPS, **layers)


@pytest.mark.parametrize("rules", [LADYBUG_RULES, NEO4J_RULES], ids=["ladybug", "neo4j"])
def test_the_gate_alone_refuses_the_whole_corpus_in_either_dialect(rules: Any) -> None:
    through = []
    for attempt in ALL_REFUSALS:
        if "engine" in attempt.layers:
            continue  # not Cypher at all: the engine's parser refuses it
        try:
            check_read_only(attempt.query, rules, attempt.params)
        except ReadOnlyViolation as exc:
            assert exc.layer in ("gate", "size"), (attempt.name, exc.layer)
            continue
        through.append(attempt.name)
    assert through == []


@pytest.mark.parametrize(
    "query",
    [
        f"COMMIT; {PAYLOAD}",
        f"COMMIT; /* **/ '*/ {PAYLOAD} //'\nRETURN 1",
        PAYLOAD,
        "MATCH (n) DETACH DELETE n",
        "CREATE NODE TABLE Evil(id STRING, PRIMARY KEY(id))",
        "ALTER TABLE Note ADD evil STRING",
        "CREATE MACRO evil(x) AS x + 1",
        "COMMIT",
        "BEGIN TRANSACTION",
    ],
)
def test_the_read_only_transaction_alone_contains_writes(embedded: Any, query: str) -> None:
    before = _names(embedded)
    with pytest.raises(ReadOnlyViolation) as info:
        _raw(embedded, query, gate=False)
    assert info.value.layer == "engine-readonly", info.value
    assert _names(embedded) == before
    # The connection is usable and back in its own read-only transaction next time.
    assert _raw(embedded, "MATCH (n:Concept) RETURN n.name", gate=False).rows == [["backoff"]]


def test_without_the_read_only_transaction_the_gate_still_refuses(embedded: Any) -> None:
    before = _names(embedded)
    for attempt in SMUGGLED:
        with pytest.raises(ReadOnlyViolation) as info, embedded._reader() as conn:
            run_read_cypher(conn, attempt.query, attempt.params, **CAPS, read_only=False)
        assert info.value.layer in ("gate", "size"), attempt.name
    assert _names(embedded) == before


RUNAWAY = (
    "UNWIND range(1, 2000) AS a UNWIND range(1, 2000) AS b UNWIND range(1, 2000) AS c "
    "RETURN sum(a * b + c)"
)


@pytest.mark.parametrize(
    "switches",
    [{}, {"engine_timeout": False}, {"interrupter": False}],
    ids=["both", "the interrupt timer alone", "the engine's timeout alone"],
)
def test_the_timeout_alone_stops_a_runaway_query(embedded: Any, switches: dict[str, bool]) -> None:
    with pytest.raises(ReadOnlyViolation) as info, embedded._reader() as conn:
        run_read_cypher(
            conn, RUNAWAY, None, row_cap=5, char_cap=5_000, timeout_s=0.5, gate=False, **switches
        )
    assert info.value.layer == "timeout"


def test_size_refuses_deep_nesting_before_the_engine_parses_it(embedded: Any) -> None:
    deep = "RETURN " + "[" * 1_000 + "1" + "]" * 1_000  # segfaulted the engine
    with pytest.raises(ReadOnlyViolation) as info:
        embedded.read_cypher(deep, **CAPS)
    assert info.value.layer == "size"
    shallow = "RETURN " + "[" * 20 + "1" + "]" * 20
    assert embedded.read_cypher(shallow, **CAPS).rows


def test_slow_queries_leave_the_rest_of_the_surface_answering(embedded: Any) -> None:
    """42 slow read_cypher calls at once: the other reads still answer while they run."""
    memory = Memory(embedded)
    slow = (  # rows the engine must really visit: ~10 nodes to the 8th power
        "MATCH (a), (b), (c), (d), (e), (f), (g), (h) "
        "RETURN sum(a.tick + b.tick + c.tick + d.tick + e.tick + f.tick + g.tick + h.tick)"
    )
    finished: list[str] = []
    lock = threading.Lock()

    def run() -> None:
        try:
            embedded.read_cypher(slow, row_cap=5, char_cap=5_000, timeout_s=3.0)
            outcome = "ran"
        except ReadOnlyViolation as exc:
            outcome = exc.layer
        with lock:
            finished.append(outcome)

    threads = [threading.Thread(target=run) for _ in range(42)]
    for t in threads:
        t.start()
    hits = memory.search("storm")
    kinds = memory.list_node_types()
    with lock:
        done_when_answered = len(finished)
    for t in threads:
        t.join()
    assert hits and kinds
    assert done_when_answered < 42  # the answers came while slow queries still ran
    assert set(finished) <= {"timeout", "busy"}
    assert finished.count("timeout") >= CYPHER_CONCURRENCY


def test_only_a_refused_write_is_told_read_cypher_reads_only(embedded: Any) -> None:
    hint = "It runs read-only queries only"
    with pytest.raises(ReadOnlyViolation) as written:
        embedded.read_cypher(PAYLOAD, **CAPS)
    assert hint in str(written.value)
    # A query the engine cannot parse is told what is wrong with it, not that it wrote.
    with pytest.raises(ReadOnlyViolation) as garbled:
        embedded.read_cypher("MATCH (n:Concept RETURN n", **CAPS)
    assert hint not in str(garbled.value)
    with pytest.raises(ReadOnlyViolation) as unknown:
        embedded.read_cypher("MATCH (n:NoSuchType) RETURN n", **CAPS)
    assert unknown.value.layer == "engine" and hint not in str(unknown.value)
