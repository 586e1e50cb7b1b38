"""The server stops taking the store's login mid-session (its password changed, its user
dropped): the store hears it within its connection lifetime, not an hour later, says so
in seconds without repeating a secret, writes nothing meanwhile, and is itself again,
unrestarted, once the login is good.

A throwaway user of this test's own on the test server, dropped at the end.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Generator
from typing import Any

import pytest

from kenning_encounter.errors import NotFound, StoreUnavailable
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from tests.support.backends import neo4j_target

pytestmark = pytest.mark.neo4j

LIFETIME_S = 1.0


@pytest.fixture
def throwaway_user(raw_driver: Any) -> Generator[tuple[str, str]]:
    name = f"kenning-outage-{secrets.token_hex(4)}"
    password = f"first-{secrets.token_hex(8)}"
    raw_driver.execute_query(
        f"CREATE USER `{name}` SET PASSWORD $pw CHANGE NOT REQUIRED",
        pw=password,
        database_="system",
    )
    try:
        yield name, password
    finally:
        raw_driver.execute_query(f"DROP USER `{name}` IF EXISTS", database_="system")


def _refused(call: Any, secrets_: tuple[str, ...]) -> None:
    started = time.monotonic()
    with pytest.raises(StoreUnavailable, match="refused the credentials") as info:
        call()
    assert time.monotonic() - started < 5
    assert "NEO4J_USERNAME and NEO4J_PASSWORD" in str(info.value)
    assert not any(s in str(info.value) for s in secrets_)


def test_a_changed_password_and_a_dropped_user_are_heard_and_recovered_from(
    neo4j_store: Neo4jStore, raw_driver: Any, throwaway_user: tuple[str, str]
) -> None:
    name, first = throwaway_user
    second = f"second-{secrets.token_hex(8)}"
    store = Neo4jStore.open(
        neo4j_target().uri, name, first, neo4j_target().database, connection_lifetime_s=LIFETIME_S
    )
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "login")
        memory.create_entities("s", [{"type": "Note", "name": "before", "description": "x"}])

        def alter(password: str) -> None:
            raw_driver.execute_query(
                f"ALTER USER `{name}` SET PASSWORD $pw CHANGE NOT REQUIRED",
                pw=password,
                database_="system",
            )

        alter(second)
        time.sleep(LIFETIME_S + 0.5)  # the connection that logged in is past its lifetime
        during = [{"type": "Note", "name": "during", "description": "x"}]
        _refused(lambda: memory.find_by_name("before"), (first, second))
        _refused(lambda: memory.create_entities("s", during), (first, second))
        alter(first)  # (two refusals: under the server's lock-out of three)
        assert memory.find_by_name("before").node.name == "before"
        with pytest.raises(NotFound):
            memory.find_by_name("during")

        raw_driver.execute_query(f"DROP USER `{name}`", database_="system")
        time.sleep(LIFETIME_S + 0.5)
        _refused(lambda: memory.create_entities("s", during), (first,))
        raw_driver.execute_query(
            f"CREATE USER `{name}` SET PASSWORD $pw CHANGE NOT REQUIRED",
            pw=first,
            database_="system",
        )
        memory.create_entities("s", [{"type": "Note", "name": "after", "description": "x"}])
        assert memory.find_by_name("after").node.name == "after"
        with pytest.raises(NotFound):
            memory.find_by_name("during")
    finally:
        store.close()
