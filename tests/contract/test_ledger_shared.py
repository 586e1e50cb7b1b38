"""The infusion ledger kept in the store: shared by every server on it, kept across a
restart, bounded, invisible to read_cypher, and never the reason an infusion fails.

Two ``Infuser`` objects on one memory stand for two replicas; on Neo4j the second
one opens a store (a driver, a pool) of its own, as another process would.
"""

from __future__ import annotations

import logging
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import pytest

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.ledger import Verdict
from kenning_encounter.infusion.ledger_store import StoreLedger
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.ledger import Stamp
from kenning_encounter.store.port import GraphStore
from tests.support.backends import neo4j_target

S = "ledger-session"
PROMPT = "the deploy retry storm hit the auth service again"
SECRET = "retry storm"


def _seed(memory: Memory) -> str:
    memory.advance_encounter("writer", "deploys")
    memory.create_entities(
        "writer",
        [
            {
                "type": "Observation",
                "name": SECRET,
                "description": "Deploys set off a retry storm against the auth service.",
            },
            {
                "type": "Concept",
                "name": "synchronised retries",
                "description": "Clients without jittered backoff retry in lockstep.",
            },
        ],
    )
    return memory.find_by_name(SECRET).node.id


@contextmanager
def _raw_neo4j() -> Generator[Any]:
    """The official driver's own session on the test database, for what no store offers."""
    import neo4j

    t = neo4j_target()
    with (
        neo4j.GraphDatabase.driver(t.uri, auth=t.auth) as driver,
        driver.session(database=t.database) as session,
    ):
        yield session


@contextmanager
def _replica(store: GraphStore) -> Generator[GraphStore]:
    """Another server's view of the same memory: its own connection on Neo4j; on the
    embedded store one process owns the file, so the replica is that same store."""
    if store.backend == "embedded":
        yield store
        return
    from kenning_encounter.store.neo4j import Neo4jStore

    t = neo4j_target()
    other = Neo4jStore.open(t.uri, t.username, t.password, t.database)
    try:
        yield other
    finally:
        other.close()


def _infuser(store: GraphStore, config: InfusionConfig | None = None, **kw: Any) -> Infuser:
    return Infuser(store, config or InfusionConfig(), ledger=StoreLedger(store.ledgers), **kw)


def test_a_body_shown_by_one_replica_is_a_handle_on_another(
    memory: Memory, store: GraphStore
) -> None:
    retry = _seed(memory)
    first = _infuser(store).infuse(S, PROMPT)
    assert retry in first["meta"]["delivered"]
    with _replica(store) as other:
        second = _infuser(other).infuse(S, PROMPT)
    assert retry in second["meta"]["standing"] and retry not in second["meta"]["delivered"]
    assert second["meta"]["turn"] == 2, "the second replica continues the session's turns"
    # A process-only ledger (the reader face's) knows nothing of what the store holds.
    alone = Infuser(store, InfusionConfig()).infuse(S, PROMPT)
    assert retry in alone["meta"]["delivered"]


def test_the_horizon_renews_across_replicas_by_turns_and_by_wall_clock(
    memory: Memory, store: GraphStore
) -> None:
    retry = _seed(memory)
    config = InfusionConfig(horizon_turns=2)
    here = _infuser(store, config)
    with _replica(store) as other:
        there = _infuser(other, config)
        assert retry in here.infuse(S, PROMPT)["meta"]["delivered"]
        assert retry in there.infuse(S, PROMPT)["meta"]["standing"]
        third = here.infuse(S, PROMPT)
        assert third["meta"]["renewal"][retry] == Verdict.BODY_STALE

        clock = [1_000_000.0]
        timed = InfusionConfig(horizon_seconds=600)
        a = _infuser(store, timed, wall_clock=lambda: clock[0])
        b = _infuser(other, timed, wall_clock=lambda: clock[0])
        assert retry in a.infuse("timed", PROMPT)["meta"]["delivered"]
        clock[0] += 599
        assert retry in b.infuse("timed", PROMPT)["meta"]["standing"]
        clock[0] += 2  # 601 s after the delivery, on the other replica's clock
        assert b.infuse("timed", PROMPT)["meta"]["renewal"][retry] == Verdict.BODY_STALE


def test_a_fresh_context_on_one_replica_brings_bodies_back_on_another(
    memory: Memory, store: GraphStore
) -> None:
    retry = _seed(memory)
    here = _infuser(store)
    here.infuse(S, PROMPT)
    with _replica(store) as other:
        _infuser(other).session_started(S, "resume")  # the context still holds it
        assert retry in here.infuse(S, PROMPT)["meta"]["standing"]
        _infuser(other).session_started(S, "compact")
    after = here.infuse(S, PROMPT)
    assert after["meta"]["renewal"][retry] == Verdict.BODY_FIRST
    assert after["meta"]["turn"] == 3, "a reset forgets deliveries, not the session's turns"


def test_the_ledger_survives_reopening_the_store(memory: Memory, store: GraphStore) -> None:
    retry = _seed(memory)
    _infuser(store).infuse(S, PROMPT)
    store.close()  # a restart: the fixture's close is then a no-op
    if isinstance(store, EmbeddedStore):
        reopened = EmbeddedStore.open(store.data_dir)
        try:
            again = _infuser(reopened).infuse(S, PROMPT)
        finally:
            reopened.close()
    else:
        with _replica(store) as reopened:
            again = _infuser(reopened).infuse(S, PROMPT)
    assert retry in again["meta"]["standing"] and again["meta"]["turn"] == 2


def test_ledger_writes_take_no_tick(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    before = store.read(lambda tx: tx.clock())
    infuser = _infuser(store)
    infuser.infuse(S, PROMPT)
    infuser.infuse(S, "the lunch menu")  # silent, and still a turn written
    infuser.session_started(S, "clear")
    StoreLedger(store.ledgers).prune(0.0)
    assert store.read(lambda tx: tx.clock()) == before
    stored = store.ledgers.load(S)
    assert stored is not None and stored.turn == 2 and stored.stamps == {}


def test_concurrent_saves_keep_each_nodes_last_write_and_the_highest_turn(
    store: GraphStore,
) -> None:
    with _replica(store) as other:
        store.ledgers.save(S, 3, [Stamp("a", 3, 10.0, "open")], at=10.0, keep=10)
        # The other replica loaded before that save and writes turn 3 too, for node b.
        other.ledgers.save(S, 3, [Stamp("b", 3, 11.0, "open")], at=11.0, keep=10)
        store.ledgers.save(S, 2, [Stamp("a", 2, 12.0, "challenged")], at=12.0, keep=10)
    stored = store.ledgers.load(S)
    assert stored is not None
    assert set(stored.stamps) == {"a", "b"}, "one replica's save dropped the other's delivery"
    assert stored.stamps["a"].state == "challenged", "the last write wins per node"
    assert stored.turn == 3, "a late save never lowers the turn"
    assert stored.at == 12.0


def test_a_session_keeps_only_its_newest_deliveries(store: GraphStore) -> None:
    store.ledgers.save(S, 1, [Stamp(f"n{i}", 1, float(i), "s") for i in range(4)], at=1, keep=6)
    store.ledgers.save(S, 2, [Stamp(f"m{i}", 2, 9.0, "s") for i in range(3)], at=2, keep=6)
    stored = store.ledgers.load(S)
    assert stored is not None
    # The oldest delivery (turn 1, earliest) goes first.
    assert set(stored.stamps) == {"n1", "n2", "n3", "m0", "m1", "m2"}


def test_prune_drops_only_sessions_quiet_since_the_cutoff(store: GraphStore) -> None:
    for i, at in enumerate((100.0, 200.0, 300.0)):
        store.ledgers.save(f"s{i}", 1, [Stamp("x", 1, at, "s")], at=at, keep=5)
    assert store.ledgers.prune(250.0, limit=1) == 1
    assert store.ledgers.prune(250.0, limit=10) == 1
    assert [store.ledgers.load(f"s{i}") is None for i in range(3)] == [True, True, False]
    store.ledgers.save("s0", 1, [], at=400.0, keep=5)  # the same session id, come back
    again = store.ledgers.load("s0")
    assert again is not None and again.stamps == {}, "a pruned session's deliveries stayed"
    ledger = StoreLedger(store.ledgers, retention_s=50.0)
    assert ledger.prune(now=351.0) == 1
    assert store.ledgers.load("s2") is None


def _breaking_the_ledger(store: GraphStore, node_id: str) -> None:
    """Make every save of a delivery of ``node_id`` fail in the engine itself, while
    loads still work: the embedded table retyped, a Neo4j constraint the save breaks."""
    if isinstance(store, EmbeddedStore):
        store.ledger_write(lambda rows: rows("DROP TABLE LedgerSession", {}))
        store.ledger_write(
            lambda rows: rows(
                "CREATE NODE TABLE LedgerSession(session STRING, turn INT64, at DOUBLE, "
                "nodes STRING[], turns INT64[], ats DOUBLE[], states INT64[], "
                "PRIMARY KEY(session))",
                {},
            )
        )
        return
    with _raw_neo4j() as s:
        s.run(
            "CREATE CONSTRAINT kenning_test_breaks_the_ledger IF NOT EXISTS "
            "FOR (d:KenningDelivery) REQUIRE d.node IS UNIQUE"
        ).consume()
        s.run("CREATE (:KenningDelivery {key: 'elsewhere', node: $n})", n=node_id).consume()


def _mending_the_ledger(store: GraphStore) -> None:
    if store.backend == "neo4j":
        with _raw_neo4j() as s:
            s.run("DROP CONSTRAINT kenning_test_breaks_the_ledger IF EXISTS").consume()


def test_a_ledger_that_cannot_be_written_still_answers_the_prompt(
    memory: Memory, store: GraphStore, caplog: pytest.LogCaptureFixture
) -> None:
    retry = _seed(memory)
    _breaking_the_ledger(store, retry)
    try:
        infuser = _infuser(store)
        with caplog.at_level(logging.WARNING, logger="kenning_encounter"):
            first = infuser.infuse(S, PROMPT)
            if isinstance(store, EmbeddedStore):
                store.ledgers.flush()  # its saves are written behind the answer
        assert first["status"] == "infused" and retry in first["meta"]["delivered"]
        warned = [r for r in caplog.records if "infusion ledger" in r.getMessage()]
        assert warned and all(r.levelno == logging.WARNING for r in warned)
        assert not any(SECRET in r.getMessage() or S in r.getMessage() for r in warned)
        # Nothing was stamped, so the body is still due: the failure cost a renewal only.
        assert retry in infuser.infuse(S, PROMPT)["meta"]["delivered"]
    finally:
        _mending_the_ledger(store)


_LABELS = {
    "embedded": "MATCH (n) RETURN DISTINCT label(n) AS l",
    "neo4j": "MATCH (n) UNWIND labels(n) AS l RETURN DISTINCT l",
}
_NAMED = {
    "embedded": "MATCH (s:LedgerSession) RETURN s",
    "neo4j": "MATCH (s:KenningLedger) RETURN s",
}


def test_read_cypher_sees_nothing_of_the_ledger(memory: Memory, store: GraphStore) -> None:
    _seed(memory)
    _infuser(store).infuse(S, PROMPT)
    assert store.ledgers.load(S) is not None, "the ledger should hold the session by now"
    labels = {row[0] for row in memory.read_cypher(_LABELS[store.backend]).rows}
    assert labels and not {lab for lab in labels if "Ledger" in lab or "Delivery" in lab}
    with pytest.raises(Exception) as refused:
        memory.read_cypher(_NAMED[store.backend])
    assert "Ledger" in str(refused.value)
    if store.backend == "embedded":
        tables = {row[0] for row in memory.read_cypher("CALL show_tables() RETURN name").rows}
        assert "Observation" in tables and "LedgerSession" not in tables


def test_a_ledger_that_cannot_be_read_still_answers_and_writes_nothing_over_it(
    embedded: EmbeddedStore, caplog: pytest.LogCaptureFixture
) -> None:
    retry = _seed(Memory(embedded))
    embedded.ledger_write(lambda rows: rows("DROP TABLE LedgerSession", {}))
    with caplog.at_level(logging.WARNING, logger="kenning_encounter.infusion.pipeline"):
        answer = _infuser(embedded).infuse(S, PROMPT)
    assert answer["status"] == "infused" and retry in answer["meta"]["delivered"]
    messages = [r.getMessage() for r in caplog.records]
    assert any("could not read the infusion ledger" in m for m in messages)
    assert not any("could not write" in m for m in messages), "saved over an unread ledger"
