"""``clock_and_erasures`` is ``clock()`` and ``erasures()`` read at once, on both
backends: before any write, after writes, after an erasure, and inside a write before and
after it takes its tick."""

from __future__ import annotations

from kenning_encounter.memory import erasure
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, WriteTx

SESSION = "clock-reader"


def _both(store: GraphStore) -> tuple[tuple[int, int], tuple[int, int]]:
    return store.read(lambda tx: (tx.clock_and_erasures(), (tx.clock(), tx.erasures())))


def test_it_is_the_clock_and_the_erasure_count_at_every_step(store: GraphStore) -> None:
    together, apart = _both(store)
    assert together == apart == (0, 0)
    memory = Memory(store)
    memory.advance_encounter(SESSION, "counting")
    notes = [{"type": "Note", "name": f"note {i}", "description": "a counted note"} for i in (1, 2)]
    memory.create_entities(SESSION, notes)
    together, apart = _both(store)
    assert together == apart and together[0] >= 2 and together[1] == 0
    erasure.erase(store, erasure.plan(store, ["note 1"]))
    together, apart = _both(store)
    assert together == apart and together[1] == 1


def test_inside_a_write_it_moves_only_once_the_tick_is_taken(store: GraphStore) -> None:
    before = store.read(lambda tx: tx.clock())

    def work(tx: WriteTx) -> tuple[tuple[int, int], int, tuple[int, int], int]:
        unused = tx.clock_and_erasures(), tx.clock()
        assert tx.tick > 0
        return (*unused, tx.clock_and_erasures(), tx.clock())

    unused, clock_unused, used, clock_used = store.write(work)
    assert unused == (clock_unused, 0) and clock_unused == before
    assert used == (clock_used, 0) and clock_used == before + 1
