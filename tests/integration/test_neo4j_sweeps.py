"""The idle sweep run by several replicas at once (issue #15 item 3): every idle
encounter is dissolved exactly once, by one of them, and a sweep takes a tick only
when it dissolved something."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kenning_encounter.memory import spine
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from tests.integration.conftest import credentials

pytestmark = pytest.mark.neo4j

SESSIONS = [f"idle-session-{i}" for i in range(12)]


def test_replicas_sweeping_at_once_dissolve_each_idle_encounter_once(
    neo4j_store: Neo4jStore,
) -> None:
    memory = Memory(neo4j_store)
    for session in SESSIONS:
        memory.advance_encounter(session, "left idle")
    before = neo4j_store.read(lambda tx: tx.clock())
    later = datetime.now(UTC) + timedelta(days=2)
    replicas = [
        Neo4jStore.open(neo4j_store.uri, *credentials(), neo4j_store.database) for _ in range(3)
    ]
    swept: list[list[str]] = []
    failures: list[BaseException] = []
    start = threading.Barrier(len(replicas))

    def sweep(store: Neo4jStore) -> None:
        try:
            start.wait()
            for _ in range(3):
                swept.append(spine.dissolve_idle(store, 86_400, now=later))
        except BaseException as exc:  # reported below, in the test's thread
            failures.append(exc)

    threads = [threading.Thread(target=sweep, args=(s,)) for s in replicas]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=60)
    finally:
        for store in replicas:
            store.close()
    assert not failures, failures
    dissolved = [name for names in swept for name in names]
    assert sorted(dissolved) == sorted(set(dissolved))  # none twice
    encounters: list[Any] = neo4j_store.read(
        lambda tx: tx.encounters(unsealed_only=True, limit=100)
    )
    assert {e.name for e in encounters} == set(dissolved)
    assert all(e.dissolved_at is not None for e in encounters)
    # One tick per sweep that dissolved anything; none for a sweep that found nothing.
    assert neo4j_store.read(lambda tx: tx.clock()) == before + sum(1 for n in swept if n)
