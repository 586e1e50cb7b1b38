"""Two versions of the server on one Neo4j memory: once a newer server has opened it (and
may have migrated its schema or derived its words anew), an older one still running
writes nothing more to it, and an older one starting refuses to open it; each says to
upgrade. The newer shape is written on the memory's clock by the opening server itself
(queries.META_INIT); these tests write it there as a newer server would."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kenning_encounter.errors import NotFound, StoreError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j import queries as q
from tests.integration.conftest import credentials

pytestmark = pytest.mark.neo4j

S = "s-versions"


def _shape(driver: Any, memory: str) -> list[int] | None:
    with driver.session() as s:
        row = s.run(
            "MATCH (c:Meta {_memory: $m, key: 'clock'}) RETURN c.shape AS shape, c.ival AS tick",
            m=memory,
        ).single()
    return None if row is None else row["shape"]


def _opened_by(driver: Any, memory: str, shape: list[int]) -> None:
    """What a server of ``shape`` does to the clock as it opens the memory."""
    with driver.session() as s:
        s.run("MATCH (c:Meta {_memory: $m, key: 'clock'}) SET c.shape = $s", m=memory, s=shape)


def _tick(store: Neo4jStore) -> int:
    return store.read(lambda tx: tx.clock())


def _held(memory: Memory, name: str) -> bool:
    try:
        return memory.find_by_name(name).node.name == name
    except NotFound:
        return False


def _open(store: Neo4jStore) -> Neo4jStore:
    user, password = credentials()
    return Neo4jStore.open(store.uri, user, password, store.database, memory=store.memory)


NOTE = {"type": "Note", "name": "kiln log", "description": "cone 6 firing"}
WRITES: dict[str, Callable[[Memory], object]] = {
    # the three statements a write's tick is reserved by (Neo4jTx._reserve)
    "batch": lambda m: m.create_entities(S, [NOTE]),
    "encounter": lambda m: m.advance_encounter(S, "a second look"),
    "pin": lambda m: m.pin_entities(S, ["glaze"], why="keep it near"),
}


def test_opening_leaves_this_servers_shape_on_the_clock(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    assert _shape(raw_driver, neo4j_store.memory) == list(q.SHAPE)
    older = [q.SCHEMA_VERSION - 1, q.TEXT_FORMAT]
    _opened_by(raw_driver, neo4j_store.memory, older)
    again = _open(neo4j_store)  # a newer server than the last: the shape moves up
    again.close()
    assert _shape(raw_driver, neo4j_store.memory) == list(q.SHAPE)


@pytest.mark.parametrize("write", sorted(WRITES))
@pytest.mark.parametrize("newer", ["schema", "text format"])
def test_a_running_server_writes_nothing_once_a_newer_one_opened_the_memory(
    neo4j_store: Neo4jStore, raw_driver: Any, write: str, newer: str
) -> None:
    memory = Memory(neo4j_store)
    memory.advance_encounter(S, "firing notes")
    memory.create_entities(S, [{"type": "Note", "name": "glaze", "description": "celadon"}])
    shape = [q.SCHEMA_VERSION + 1, q.TEXT_FORMAT]
    if newer == "text format":
        shape = [q.SCHEMA_VERSION, q.TEXT_FORMAT + 1]
    _opened_by(raw_driver, neo4j_store.memory, shape)
    before = _tick(neo4j_store)
    with pytest.raises(StoreError) as refused:
        WRITES[write](memory)
    said = str(refused.value)
    assert "newer kenning-encounter" in said and "pip install -U kenning-encounter" in said
    assert "nothing of this call was written" in said
    assert _tick(neo4j_store) == before
    assert not _held(memory, "kiln log")
    # Reads go on: the memory is whole, and the running server can still be asked.
    assert _held(memory, "glaze")


def test_an_older_shape_on_the_clock_is_no_bar(neo4j_store: Neo4jStore, raw_driver: Any) -> None:
    """A server older than this one opened the memory since (it refused, or ran before
    this version noted shapes): this server's writes go on."""
    memory = Memory(neo4j_store)
    memory.advance_encounter(S, "firing notes")
    _opened_by(raw_driver, neo4j_store.memory, [q.SCHEMA_VERSION - 1, q.TEXT_FORMAT - 1])
    memory.create_entities(S, [NOTE])
    assert _held(memory, "kiln log")


def test_an_older_server_refuses_to_open_a_memory_a_newer_one_opened(
    neo4j_store: Neo4jStore, raw_driver: Any
) -> None:
    newer = [q.SCHEMA_VERSION, q.TEXT_FORMAT + 1]
    _opened_by(raw_driver, neo4j_store.memory, newer)
    with pytest.raises(StoreError, match=r"cannot serve it\. Upgrade kenning-encounter"):
        _open(neo4j_store)
    assert _shape(raw_driver, neo4j_store.memory) == newer  # never lowered
