"""Neo4j's disk fills under a running store (a server of this test's own, its data on a
small tmpfs): the write that met it is told the truth, which is that it may or may not
have been applied (Neo4j logs a transaction before applying it, and applies what it
logged when it recovers), and whichever it was, it is there whole or not at all.

Needs root (to mount the tmpfs) and the project's Neo4j launcher (scripts/neo4j-test-server).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Generator
from pathlib import Path

import pytest

from kenning_encounter.errors import EngineError, NotFound, StoreError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore

pytestmark = pytest.mark.neo4j

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "neo4j-test-server"
PASSWORD = "kenning-test-pw"
# Neo4j preallocates a 256 MB transaction log: room for it, the store, and little more.
TMPFS = "700m"


def _server(run_dir: Path, command: str, port: int = 0) -> str:
    env = {**os.environ, "NEO4J_TEST_DIR": str(run_dir), "NEO4J_TEST_PORT": str(port)}
    env["NEO4J_TEST_PASSWORD"] = PASSWORD
    done = subprocess.run(
        ["bash", str(SCRIPT), command], env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.fixture
def own_server(tmp_path: Path) -> Generator[tuple[Path, str]]:
    """A Neo4j of this test's own, its whole run directory on a tmpfs; (dir, URI)."""
    if os.geteuid() != 0 or shutil.which("mount") is None or shutil.which("java") is None:
        pytest.skip("a full disk needs root (to mount a tmpfs) and java for the launcher")
    run_dir = tmp_path / "neo4j"
    run_dir.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS}", "tmpfs", str(run_dir)], check=True
    )
    try:
        try:
            uri = _server(run_dir, "start")
            yield run_dir, uri
        finally:
            # Also when the start failed: the launcher may have brought Neo4j up first.
            _stop(run_dir)
    finally:
        subprocess.run(["umount", "-l", str(run_dir)], check=False)


def _stop(run_dir: Path) -> None:
    """Stop the test's Neo4j if one runs there, saying nothing when none does."""
    env = {**os.environ, "NEO4J_TEST_DIR": str(run_dir)}
    subprocess.run(["bash", str(SCRIPT), "stop"], env=env, capture_output=True, timeout=180)


def _notes(prefix: str, n: int) -> list[dict[str, str]]:
    # ~20 kB each (the description limit): a write of n notes needs n x 20 kB of disk.
    return [
        {"type": "Note", "name": f"{prefix}-{i}", "description": "word " * 3900} for i in range(n)
    ]


def _found(memory: Memory, prefix: str, n: int) -> int:
    count = 0
    for i in range(n):
        with contextlib.suppress(NotFound):
            memory.find_by_name(f"{prefix}-{i}")
            count += 1
    return count


def test_a_write_that_fills_the_disk_is_told_it_may_or_may_not_be_applied(
    own_server: tuple[Path, str],
) -> None:
    run_dir, uri = own_server
    store = Neo4jStore.open(uri, "neo4j", PASSWORD)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "disk")
        memory.create_entities("s", _notes("before", 1))
        filler = run_dir / "filler"
        subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=1M", "status=none"], check=False)
        started = time.monotonic()
        with pytest.raises(EngineError) as info:
            memory.create_entities("s", _notes("full", 50))
        assert time.monotonic() - started < 10
        assert "may or may not have been applied" in str(info.value), info.value
        assert f"Neo4j at {uri}" in str(info.value)
        assert "Transaction #" not in str(info.value)  # the server's internals stay in detail
        # Neo4j now refuses every transaction until it restarts; it is said so, at once.
        started = time.monotonic()
        with pytest.raises(StoreError, match="see its logs"):
            memory.find_by_name("before-0")
        assert time.monotonic() - started < 5
        filler.unlink()
        port = int(uri.rsplit(":", 1)[1])
        _server(run_dir, "stop")
        _server(run_dir, "start", port)
        # The same store, unrestarted, once Neo4j is back: the write whole or not at all.
        deadline = time.monotonic() + 30
        while True:
            try:
                found = _found(memory, "full", 50)
                break
            except StoreError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        assert found in (0, 50), f"{found} of the write's 50 nodes are stored"
        assert _found(memory, "before", 1) == 1
        memory.create_entities("s", _notes("after", 1))
        assert _found(memory, "after", 1) == 1
    finally:
        store.close()
