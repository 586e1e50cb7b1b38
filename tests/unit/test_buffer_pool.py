"""A memory too large for the engine's page memory (its buffer pool) is told so, by the
setting that raises it, at the open and at a read; never "damaged", never "report it",
and a log left by a crash is not set aside as damaged for it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kenning_encounter.config import Settings, load_settings
from kenning_encounter.errors import ConfigError, EngineError, StoreError
from kenning_encounter.memory.service import Memory
from kenning_encounter.server.context import open_store
from kenning_encounter.store.embedded import engine
from kenning_encounter.store.embedded.backend import BUFFER_POOL_MIB, EmbeddedStore
from kenning_encounter.store.embedded.tx import POOL_FULL, POOL_SETTING

ROOT = Path(__file__).resolve().parents[2]
S = "5d1e7c0a-pool-one"
# Sizes, in MiB, from one the engine cannot open any store in to one a small store's
# reads fit in: what fails between them must fail in our words.
SIZES = range(8, 34, 2)


def _filled(data_dir: Path) -> None:
    store = EmbeddedStore.open(data_dir)
    memory = Memory(store)
    memory.advance_encounter(S, "fill")
    for batch in range(20):
        notes = [
            {"type": "Note", "name": f"n{batch}-{i}", "description": f"word{i} " * 100}
            for i in range(50)
        ]
        memory.create_entities(S, notes)
    store.close()


def _told(text: str) -> None:
    assert POOL_SETTING in text and "nothing is damaged" in text, text
    assert "damaged or not a store" not in text and "report it" not in text, text


def test_a_pool_too_small_is_named_at_the_open_and_at_a_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    _filled(data_dir)
    opened, read_failed, read_fine = [], [], []
    for mib in SIZES:
        try:
            store = EmbeddedStore.open(data_dir, buffer_pool_mib=mib)
        except StoreError as exc:
            _told(str(exc))
            assert f"({mib} MiB)" in str(exc)
            opened.append(mib)
            continue
        try:
            rows = store.read(lambda tx: tx.rows("MATCH (n:Note) RETURN n.description"))
            outline = store.read(lambda tx: tx.authored_outline())
            assert len(rows) == 1000 and len(outline.nodes) == 1000
            read_fine.append(mib)
        except EngineError as exc:
            assert exc.code == POOL_FULL
            _told(str(exc))
            assert f"({mib} MiB)" in str(exc)  # the size this store was given
            read_failed.append(mib)
        finally:
            store.close()
    # Each path was met: refused at the open, refused at a read, and served.
    assert opened and read_failed and read_fine, (opened, read_failed, read_fine)
    store = EmbeddedStore.open(data_dir)  # the default serves it whole: nothing was lost
    try:
        assert len(store.read(lambda tx: tx.authored_outline()).nodes) == 1000
    finally:
        store.close()


_CRASH = """
import os, sys
from pathlib import Path
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
store = EmbeddedStore.open(Path(sys.argv[1]))
memory = Memory(store)
memory.advance_encounter("5d1e7c0a-pool-one", "crash")
memory.create_entities("5d1e7c0a-pool-one", [{"type": "Note", "name": "kept", "description": "x"}])
os._exit(0)  # no close: the write lives in the log only
"""


def test_a_log_left_by_a_crash_is_not_set_aside_for_a_full_pool(tmp_path: Path) -> None:
    data_dir = tmp_path / "memory"
    env = dict(os.environ, PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    subprocess.run([sys.executable, "-c", _CRASH, str(data_dir)], check=True, env=env, timeout=120)
    wal = data_dir / "graph.lbdb.wal"
    if not wal.exists() or wal.stat().st_size == 0:
        pytest.skip("the engine left no log to replay")
    with pytest.raises(StoreError) as refused:
        EmbeddedStore.open(data_dir, buffer_pool_mib=8)
    _told(str(refused.value))
    assert not list(data_dir.glob("graph.lbdb.wal.damaged-*"))
    store = EmbeddedStore.open(data_dir)  # the log replays in full with room to
    try:
        assert store.read(lambda tx: tx.head_id_by_name("kept")) is not None
    finally:
        store.close()


def test_the_setting_reaches_the_engine_and_is_bounded(tmp_path: Path) -> None:
    # The settings' default is the store's own (the settings never import the store).
    assert Settings.model_fields["buffer_pool_mib"].default == BUFFER_POOL_MIB
    store = open_store(Settings(data_dir=tmp_path / "memory", buffer_pool_mib=96))
    try:
        assert isinstance(store, EmbeddedStore) and store.buffer_pool_mib == 96
    finally:
        store.close()
    with pytest.raises(ConfigError, match=POOL_SETTING):
        load_settings(data_dir=tmp_path / "memory", buffer_pool_mib=8)


_HEAVY = "UNWIND range(1, $n) AS i RETURN i, $s + string(i)"


def test_a_heavy_read_leaves_no_pages_behind_in_its_connection(tmp_path: Path) -> None:
    """A prepared statement held what its last run took from the pool until it ran
    again: with four reader connections each holding a whole-graph read, the third
    orient of a million-node memory found the 1 GiB pool full. A read the pool holds
    once is now answered any number of times, on every connection in turn."""
    data_dir = tmp_path / "memory"
    EmbeddedStore.open(data_dir).close()
    store = EmbeddedStore.open(data_dir, buffer_pool_mib=32)
    try:
        for _ in range(6):
            found = store.read(lambda tx: tx.rows(_HEAVY, {"n": 200_000, "s": "x" * 40}))
            assert len(found) == 200_000
        # The many small statements of a write or a prompt keep their plans.
        conn = store._readers.get()  # pyright: ignore[reportPrivateUsage]
        try:
            engine.rows(conn, _HEAVY, {"n": 3, "s": "x"})
            kept = conn._pybind_implicit_prepared_cache  # pyright: ignore[reportPrivateUsage]
            assert any(key[0] == _HEAVY for key in kept)
        finally:
            store._readers.put(conn)  # pyright: ignore[reportPrivateUsage]
    finally:
        store.close()
