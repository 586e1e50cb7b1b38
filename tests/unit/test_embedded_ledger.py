"""The embedded store's infusion ledger: held in the owning process, written behind.

A prompt's infusion must not wait for the ledger's commit, yet the next prompt sees
what it stamped, and nothing due is lost at a clean close. Real embedded stores.
"""

from __future__ import annotations

import threading
from pathlib import Path

from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.ledger import LEDGER_GET
from kenning_encounter.store.ledger import Stamp

SESSION = "ledger-session"


def _stamp(node: str, turn: int = 1) -> Stamp:
    return Stamp(node, turn, 1_000.0 + turn, "open")


def _in_the_store(store: EmbeddedStore) -> list[list[object]]:
    return store.ledger_read(lambda rows: rows(LEDGER_GET, {"session": SESSION}))


def test_a_save_is_seen_at_once_and_written_by_flush(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        store.ledgers.save(SESSION, 1, [_stamp("n1")], at=1_001.0, keep=10)
        held = store.ledgers.load(SESSION)
        assert held is not None and set(held.stamps) == {"n1"} and held.turn == 1
        store.ledgers.save(SESSION, 2, [_stamp("n2", 2)], at=1_002.0, keep=10)
        store.ledgers.flush()
        [row] = _in_the_store(store)
        assert row[0] == 2 and sorted(row[2]) == ["n1", "n2"]  # type: ignore[arg-type]
    finally:
        store.close()


def test_a_save_does_not_wait_for_the_writer(tmp_path: Path) -> None:
    """With the store's writer busy (its lock held), a save still returns at once."""
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        store.ledgers.load(SESSION)  # read before the writer is taken
        returned = threading.Event()
        with store._write_lock:  # pyright: ignore[reportPrivateUsage]
            saving = threading.Thread(
                target=lambda: (
                    store.ledgers.save(SESSION, 1, [_stamp("n1")], at=1_001.0, keep=10),
                    returned.set(),
                )
            )
            saving.start()
            assert returned.wait(10), "the save waited for the writer"
            assert _in_the_store(store) == [], "not written while the writer is busy"
        saving.join()
        store.ledgers.flush()
        assert len(_in_the_store(store)) == 1
    finally:
        store.close()


def test_what_is_due_is_written_at_close(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    store.ledgers.save(SESSION, 3, [_stamp("n1", 3)], at=1_003.0, keep=10)
    store.close()
    again = EmbeddedStore.open(tmp_path / "m")
    try:
        found = again.ledgers.load(SESSION)
        assert found is not None and found.turn == 3 and set(found.stamps) == {"n1"}
    finally:
        again.close()


def test_prune_writes_what_is_due_then_drops_old_sessions_here_and_in_the_store(
    tmp_path: Path,
) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        store.ledgers.save(SESSION, 1, [_stamp("n1")], at=1_001.0, keep=10)
        assert store.ledgers.prune(1_000.0, limit=100) == 0  # saved after the cutoff
        assert len(_in_the_store(store)) == 1
        assert store.ledgers.prune(2_000.0, limit=100) == 1
        assert store.ledgers.load(SESSION) is None and _in_the_store(store) == []
    finally:
        store.close()
