"""Closing the embedded store while a read runs (a server stopping mid-call).

Before, the close returned at once and left the read running on a closed database, which
ended in the engine's own "Database is closed" much later, or in a crash of the process
when the database went before the statement did. Now the close interrupts each read still
running, waits for its reader, and only then closes the database: the read ends at once
with our refusal, and the files are free for the next open."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import StoreError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import ReadTx

# Four Notes tables' worth of pairs: far longer than any test runs unless interrupted.
ENDLESS = (
    "MATCH (a:Note), (b:Note), (c:Note), (d:Note) "
    "WHERE a.tick + b.tick + c.tick + d.tick > $n RETURN count(*)"
)


def test_a_read_running_when_the_store_closes_is_stopped_and_the_files_freed(
    tmp_path: Path,
) -> None:
    store = EmbeddedStore.open(tmp_path / "memory")
    memory = Memory(store)
    memory.advance_encounter("s", "something to read")
    memory.create_entities(
        "s", [{"type": "Note", "name": f"note {i}", "description": "x"} for i in range(400)]
    )
    started = threading.Event()
    ended: list[Any] = []

    def endless(tx: ReadTx) -> Any:
        started.set()
        return tx.rows(ENDLESS, {"n": 10**12})  # pyright: ignore[reportAttributeAccessIssue]

    def read() -> None:
        try:
            ended.append(store.read(endless))
        except BaseException as exc:  # the refusal is the outcome looked for
            ended.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(30)
    store.close()
    reader.join(timeout=60)
    assert not reader.is_alive(), "the read ran on after the close"
    assert len(ended) == 1 and isinstance(ended[0], StoreError), ended
    assert "closed while this read ran" in str(ended[0])
    with pytest.raises(StoreError, match="closed"):
        store.read(lambda tx: tx.clock())
    EmbeddedStore.open(tmp_path / "memory").close()  # the database let go of its files
