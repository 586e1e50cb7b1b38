"""Invariant 7, the operator's side: hard deletion is a confirmed CLI action that leaves a tombstone."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from kenning_encounter.memory import erasure
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.cli import run_cli
from tests.support.snapshot import snapshot


def _seed(data_dir: Path) -> str:
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "private work")
        memory.create_entities(
            "s",
            [
                {
                    "type": "Observation",
                    "name": "home address",
                    "description": "Lives at 1 Example Road.",
                },
                {"type": "Concept", "name": "commute", "description": "Long commute."},
            ],
        )
        memory.create_relations(
            "s", [{"source": "home address", "type": "GROUNDS", "target": "commute"}]
        )
        memory.close_encounter("s", "done")
        return memory.find_by_name("home address").node.encounter or ""
    finally:
        store.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=120)


def test_forget_needs_confirmation(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    _seed(data_dir)
    store = EmbeddedStore.open(data_dir)
    before = snapshot(store)
    store.close()
    result = _cli("forget", "home address", "--data-dir", str(data_dir))
    assert result.returncode != 0 and "--yes" in result.stderr
    store = EmbeddedStore.open(data_dir)
    try:
        assert snapshot(store) == before
    finally:
        store.close()


def test_forget_deletes_and_leaves_a_tombstone(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    encounter = _seed(data_dir)
    result = _cli("forget", "home address", "--yes", "--data-dir", str(data_dir))
    assert result.returncode == 0, result.stderr
    assert "tombstones: " + encounter + " +1" in result.stderr
    assert (
        f"purpose and summary withdrawn (the encounter drew on what was deleted): {encounter}\n"
        in (result.stderr)
    )
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        assert memory.search("address").hits == []
        graph = store.read(lambda tx: tx.authored_graph())
        assert [n.name for n in graph.nodes] == ["commute"] and graph.edges == []
        sealed = store.read(lambda tx: tx.get_encounter(encounter))
        # It recorded what was deleted: its words may speak of it (memory/erasure.py).
        assert sealed is not None and sealed.tombstones == 1
        assert sealed.summary == sealed.purpose == erasure.WITHDRAWN
    finally:
        store.close()


def test_sidecar_rebuild_from_the_cli(tmp_path: Path) -> None:
    from tests.support.fake_llm import FakeGemini

    data_dir = tmp_path / "m"
    _seed(data_dir)
    with FakeGemini() as fake:
        env_key = {"GEMINI_API_KEY": "test-key"}
        os.environ.update(env_key)
        try:
            result = _cli(
                "sidecar",
                "rebuild",
                "--data-dir",
                str(data_dir),
                "--matcher",
                "gemini",
                "--matcher-base-url",
                fake.url,
            )
        finally:
            del os.environ["GEMINI_API_KEY"]
        assert result.returncode == 0, result.stderr
        assert "2" in result.stderr  # the estimate of model calls names the node count
        assert fake.hits == 2
    from kenning_encounter.meaning import SidecarStore

    sidecar = SidecarStore(data_dir / "sidecar")
    try:
        assert len(sidecar) == 2
    finally:
        sidecar.close()
