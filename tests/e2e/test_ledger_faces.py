"""The served ledger on the embedded store: a full-face server keeps it in the store, so a
restarted server goes on where the last one stopped; a reader face never writes it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.e2e.conftest import run_server
from tests.support.handles import handle

SESSION = "5b2e-ledger-session"
PROMPT = "the retry storm is back"


def _seed(data_dir: Path) -> str:
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("writer", "deploys")
        memory.create_entities(
            "writer",
            [{"type": "Observation", "name": "retry storm", "description": "Deploys retry."}],
        )
        memory.close_encounter("writer", "seeded")
        return memory.find_by_name("retry storm").node.id
    finally:
        store.close()


def _infuse(base: str) -> dict[str, Any]:
    body = {"session_id": handle(SESSION), "prompt": PROMPT, "trajectory": []}
    answer = httpx.post(f"{base}/infuse", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()


def _ledger(data_dir: Path) -> Any:
    store = EmbeddedStore.open(data_dir)
    try:
        return store.ledgers.load(SESSION)
    finally:
        store.close()


def test_a_restarted_server_goes_on_with_the_stored_ledger(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    retry = _seed(data_dir)
    with run_server(data_dir) as first:
        assert retry in _infuse(first.base)["meta"]["delivered"]
    with run_server(data_dir) as second:
        again = _infuse(second.base)
    assert retry in again["meta"]["standing"] and again["meta"]["turn"] == 2
    stored = _ledger(data_dir)
    assert stored is not None and stored.turn == 2 and retry in stored.stamps


def test_the_reader_face_never_writes_the_ledger(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    retry = _seed(data_dir)
    with run_server(data_dir) as full:
        _infuse(full.base)
    before = _ledger(data_dir)
    assert before is not None
    with run_server(data_dir, "--face", "reader") as reader:
        # The reader's own ledger starts empty: it reads nothing of the store's either.
        first = _infuse(reader.base)
        assert retry in first["meta"]["delivered"] and first["meta"]["turn"] == 1
        assert retry in _infuse(reader.base)["meta"]["standing"]
        reset = httpx.post(
            f"{reader.base}/session-start",
            json={"session_id": handle(SESSION), "source": "clear"},
            timeout=30,
        )
        assert reset.status_code == 200, reset.text
    assert _ledger(data_dir) == before
