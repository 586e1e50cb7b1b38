"""A write's open-encounter check on the embedded store, remembered by name.

Every write asks for its session's open encounter. The engine answered by scanning
every encounter the locus ever opened: 0.7 ms with one, 7 ms with a thousand, on every
write. Writes now remember each locus's open encounter by name, read it again by its
key each time, and take it only while it is open and the locus's; a new OPENED edge
forgets every name. These tests hold the answer to the scan's through each way an
encounter's standing moves: sealed, dissolved, superseded by a newer one, a write that
rolled back, another locus.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import EncounterSealed, NoOpenEncounter
from kenning_encounter.memory import spine
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import WriteTx
from kenning_encounter.store.records import EncounterRecord

L1, L2 = "memo-one", "memo-two"


class Sent:
    def __init__(self) -> None:
        self.statements: list[str] = []

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        self.statements.append(statement)

    def scans(self) -> int:
        return self.statements.count(q.ENC_OPEN_OF)


@pytest.fixture
def sent() -> Sent:
    return Sent()


@pytest.fixture
def store(tmp_path: Path, sent: Sent) -> Iterator[EmbeddedStore]:
    opened = EmbeddedStore.open(tmp_path / "memory", tracer=sent)
    try:
        yield opened
    finally:
        opened.close()


def _note(memory: Memory, locus: str, name: str) -> str:
    return memory.create_entities(locus, [{"type": "Note", "name": name}]).encounter


def _opened(tx: WriteTx, purpose: str, previous: str) -> EncounterRecord:
    """An encounter of L1 made by hand in ``tx``, the one before it left as it is."""
    record = EncounterRecord(
        name=f"E{tx.tick}", locus=L1, purpose=purpose, opened_tick=tx.tick, opened_at=tx.now
    )
    tx.create_encounter(record, previous=previous, anchor=None)
    return record


def _scanned(store: EmbeddedStore, locus: str) -> EncounterRecord | None:
    """The plain answer: the scan itself, outside any write."""
    return store.read(lambda tx: tx.open_encounter_of(locus))


def test_a_later_write_does_not_scan_the_locus_again(store: EmbeddedStore, sent: Sent) -> None:
    memory = Memory(store)
    for i in range(5):
        memory.advance_encounter(L1, f"task {i}", close_summary=None if i == 0 else "done")
    first = _note(memory, L1, "one")
    sent.statements.clear()
    assert _note(memory, L1, "two") == first
    assert _note(memory, L1, "three") == first
    assert sent.scans() == 0
    assert first == getattr(_scanned(store, L1), "name", None)


def test_a_sealed_encounter_is_not_taken(store: EmbeddedStore) -> None:
    memory = Memory(store)
    memory.advance_encounter(L1, "work")
    _note(memory, L1, "before")
    memory.close_encounter(L1, "done")
    with pytest.raises(EncounterSealed):
        _note(memory, L1, "after")


def test_a_dissolved_encounter_is_not_taken(store: EmbeddedStore) -> None:
    memory = Memory(store)
    memory.advance_encounter(L1, "work")
    _note(memory, L1, "before")
    later = datetime.now(UTC) + timedelta(days=2)
    assert spine.dissolve_idle(store, 60, now=later)
    with pytest.raises(NoOpenEncounter):
        _note(memory, L1, "after")


def test_a_newer_encounter_is_taken_at_once(store: EmbeddedStore) -> None:
    memory = Memory(store)
    memory.advance_encounter(L1, "first")
    first = _note(memory, L1, "a")
    memory.advance_encounter(L1, "second", close_summary="done")
    second = _note(memory, L1, "b")
    assert second != first
    assert second == getattr(_scanned(store, L1), "name", None)


def test_an_encounter_made_by_a_write_that_rolled_back_is_not_taken(
    store: EmbeddedStore,
) -> None:
    memory = Memory(store)
    memory.advance_encounter(L1, "kept")
    kept = _note(memory, L1, "a")

    def opens_then_fails(tx: WriteTx) -> None:
        record = _opened(tx, "lost", kept)
        found = tx.open_encounter_of(L1)  # remembered inside the write
        assert found is not None and found.name == record.name
        raise RuntimeError("the write fails after its encounter was remembered")

    with pytest.raises(RuntimeError):
        store.write(opens_then_fails)
    assert _note(memory, L1, "b") == kept


def test_each_locus_keeps_its_own(store: EmbeddedStore) -> None:
    memory = Memory(store)
    memory.advance_encounter(L1, "one")
    memory.advance_encounter(L2, "two")
    one, two = _note(memory, L1, "a"), _note(memory, L2, "b")
    assert one != two
    assert _note(memory, L1, "c") == one
    assert _note(memory, L2, "d") == two
    memory.close_encounter(L2, "done")
    assert _note(memory, L1, "e") == one
    with pytest.raises(EncounterSealed):
        _note(memory, L2, "f")


def test_a_second_open_encounter_is_taken_as_the_scan_takes_it(store: EmbeddedStore) -> None:
    """A locus with two open encounters (an import of such a memory; the API seals the
    first) answers with the newest: a new OPENED edge forgets what was remembered."""
    memory = Memory(store)
    memory.advance_encounter(L1, "first")
    first = _note(memory, L1, "a")

    def opens_another(tx: WriteTx) -> str:
        return _opened(tx, "beside", first).name

    second = store.write(opens_another)
    assert getattr(_scanned(store, L1), "name", None) == second
    assert _note(memory, L1, "b") == second
