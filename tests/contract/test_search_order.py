"""Hits of equal score come in an order of the memory's own, on every backend.

Notes with the same words score the same. Their order must not be the text index's
physical order, which a rebuild changes (after an import, or a crash that lost the
index): a dump round trip once gave the same memory back with its hits reordered.
Equal scores go newest first: by tick, then by place within the write.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

S = "order-session"
SAME = "the retry queue drains slowly"


def _write_twins(memory: Memory) -> list[str]:
    """Six notes with one text: two writes of three. Their ids, newest first."""
    memory.advance_encounter(S, "twins")
    ids: list[str] = []
    for batch in range(2):
        made = memory.create_entities(
            S,
            [{"type": "Note", "name": f"n{batch}-{k}", "description": SAME} for k in range(3)],
        )
        ids.extend(e.id for e in made.created)
    return ids[::-1]


def _order(store: GraphStore) -> list[str]:
    return [h.id for h in Memory(store).search("retry queue", limit=10).hits]


def test_equal_scores_are_newest_first(store: GraphStore) -> None:
    newest_first = _write_twins(Memory(store))
    assert _order(store) == newest_first


def test_a_rebuilt_index_keeps_the_order(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "m")
    try:
        newest_first = _write_twins(Memory(store))
        assert _order(store) == newest_first
    finally:
        store.close()
    shutil.rmtree(tmp_path / "m" / "textindex")  # lost: the next open reads it again
    reopened = EmbeddedStore.open(tmp_path / "m")
    try:
        assert _order(reopened) == newest_first
    finally:
        reopened.close()
