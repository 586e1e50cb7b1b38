"""Two servers on one Neo4j share each session's infusion ledger (issue #15 item 2): a body
one replica showed is a standing handle on the other, a fresh context on either brings it
back, and a reader face on the same database writes none of it.
"""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from kenning_encounter.memory.service import Memory
from tests.e2e.conftest import run_server
from tests.integration.conftest import credentials
from tests.support.backends import neo4j_uri
from tests.support.handles import handle
from tests.support.snapshot import snapshot

pytestmark = pytest.mark.neo4j

SESSION = "9a41-ledger-replicas"
PROMPT = "the retry storm is back"


def _post(base: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = httpx.post(f"{base}{path}", json={"session_id": handle(SESSION), **body}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _infuse(base: str) -> dict[str, Any]:
    return _post(base, "/infuse", {"prompt": PROMPT, "trajectory": []})


def _args(*more: str) -> tuple[list[str], dict[str, str]]:
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), "--http-sessions", "stateless"]
    return [*args, *more], {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}


def test_two_replicas_share_a_sessions_ledger(neo4j_store: Any, tmp_path: Path) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter("writer", "deploys")
    memory.create_entities(
        "writer",
        [{"type": "Observation", "name": "retry storm", "description": "Deploys retry."}],
    )
    retry = memory.find_by_name("retry storm").node.id
    args, env = _args()
    with contextlib.ExitStack() as stack:
        a, b = (stack.enter_context(run_server(tmp_path / n, *args, env=env)) for n in "ab")
        assert retry in _infuse(a.base)["meta"]["delivered"]
        on_b = _infuse(b.base)
        assert retry in on_b["meta"]["standing"], "the other replica showed the body again"
        assert on_b["meta"]["turn"] == 2
        _post(a.base, "/session-start", {"source": "compact"})
        assert _infuse(b.base)["meta"]["renewal"][retry] == "first sight"
        stored = neo4j_store.ledgers.load(SESSION)
        assert stored is not None and stored.turn == 3

        before = (snapshot(neo4j_store), neo4j_store.ledgers.load(SESSION))
        args_r, env_r = _args("--face", "reader")
        reader = stack.enter_context(run_server(tmp_path / "r", *args_r, env=env_r))
        assert retry in _infuse(reader.base)["meta"]["delivered"]
        _post(reader.base, "/session-start", {"source": "clear"})
        assert (snapshot(neo4j_store), neo4j_store.ledgers.load(SESSION)) == before


def test_three_replicas_prune_at_once_without_a_failure(neo4j_store: Any) -> None:
    from kenning_encounter.store.ledger import Stamp
    from kenning_encounter.store.neo4j import Neo4jStore
    from tests.support.backends import neo4j_target

    t = neo4j_target()
    for i in range(200):
        neo4j_store.ledgers.save(f"quiet-{i}", 1, [Stamp("n", 1, 1.0, "s")], at=1.0, keep=5)
    neo4j_store.ledgers.save("recent", 1, [Stamp("n", 1, 9.0, "s")], at=9.0, keep=5)
    replicas = [Neo4jStore.open(t.uri, t.username, t.password, t.database) for _ in range(3)]
    failures: list[BaseException] = []
    start = threading.Barrier(len(replicas))

    def prune(store: Any) -> None:
        start.wait()
        try:
            store.ledgers.prune(5.0, limit=1_000)
        except BaseException as exc:
            failures.append(exc)

    try:
        threads = [threading.Thread(target=prune, args=(r,)) for r in replicas]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    finally:
        for r in replicas:
            r.close()
    assert failures == []
    assert all(neo4j_store.ledgers.load(f"quiet-{i}") is None for i in range(200))
    assert neo4j_store.ledgers.load("recent") is not None
    neo4j_store.ledgers.save("quiet-7", 1, [], at=10.0, keep=5)
    assert neo4j_store.ledgers.load("quiet-7").stamps == {}, "deliveries outlived their session"
    assert neo4j_store.ledgers.prune(5.0, limit=1_000) == 0


def test_a_neo4j_database_without_the_ledger_constraints_gets_them(neo4j_store: Any) -> None:
    from kenning_encounter.store.ledger import Stamp
    from kenning_encounter.store.neo4j import Neo4jStore
    from kenning_encounter.store.neo4j.ledger import SCHEMA
    from tests.support.backends import neo4j_target

    t = neo4j_target()
    names = [name for name, _ in SCHEMA]
    kinds = {n: "CONSTRAINT" if " CONSTRAINT " in f" {st} " else "INDEX" for n, st in SCHEMA}
    with neo4j_store._session(write=True) as s:  # pyright: ignore[reportPrivateUsage]
        for name in names:
            s.run(f"DROP {kinds[name]} {name} IF EXISTS").consume()
    reopened = Neo4jStore.open(t.uri, t.username, t.password, t.database)
    try:
        with reopened._session(write=False) as s:  # pyright: ignore[reportPrivateUsage]
            found = {r[0] for r in s.run("SHOW CONSTRAINTS YIELD name")}
            found |= {r[0] for r in s.run("SHOW INDEXES YIELD name")}
        assert set(names) <= found
        reopened.ledgers.save("s", 1, [Stamp("n", 1, 1.0, "open")], at=1.0, keep=5)
        assert reopened.ledgers.load("s") is not None
    finally:
        reopened.close()
