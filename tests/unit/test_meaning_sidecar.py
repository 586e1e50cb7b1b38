"""The meaning sidecar on a real directory: order, durability, torn writes, kill -9."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path
from typing import IO

import pytest

from kenning_encounter.meaning.sidecar import LOG_NAME, SidecarCorrupt, SidecarStore
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.store.records import NodeRecord

SRC = Path(__file__).resolve().parents[2] / "src"


def node(n: int, description: str = "", *, tick: int | None = None) -> NodeRecord:
    return NodeRecord(
        id=f"obs_{n:012x}",
        type="Observation",
        name=f"note {n}",
        description=description or f"what note {n} says",
        tick=n if tick is None else tick,
        created_at="2025-01-01T00:00:00Z",
    )


def log_lines(store: SidecarStore) -> list[bytes]:
    return store.path.read_bytes().splitlines()


def test_put_get_and_creation_order(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        store.put("obs_b", "second made, first created", "h1", order=5)
        store.put("obs_a", "first made, later created", "h2", order=9)
        store.put("obs_c", "same tick as obs_b", "h3", order=5)
        assert [e.id for e in store.entries()] == ["obs_b", "obs_c", "obs_a"]
        entry = store.get("obs_a")
        assert entry is not None and entry.meaning == "first made, later created"
        assert entry.source_hash == "h2"
        assert len(store) == 3 and "obs_c" in store and store.get("nope") is None


def test_remade_meaning_keeps_its_place_and_handle(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        first = store.put("obs_a", "old meaning", "h1", order=1)
        store.put("obs_b", "other", "h2", order=2)
        again = store.put("obs_a", "new meaning", "h9")
        assert again.seq == first.seq and again.order == 1
        assert [e.meaning for e in store.entries()] == ["new meaning", "other"]


def test_state_survives_reopen_including_drops(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        for n in range(20):
            store.put(f"id{n}", f"meaning {n}", f"h{n}", order=n)
        store.drop("id3")
        store.put("id4", "meaning four, remade", "h4b")
        before = store.entries()
    with SidecarStore(tmp_path) as reopened:
        assert reopened.entries() == before
        assert "id3" not in reopened
        assert reopened.put("id99", "new", "h").seq == max(e.seq for e in before) + 1


def test_identical_put_writes_nothing(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        store.put("id1", "m", "h", order=1)
        size = store.path.stat().st_size
        version = store.version
        store.put("id1", "m", "h", order=1)
        assert store.path.stat().st_size == size and store.version == version
        assert store.drop("absent") is False
        assert store.path.stat().st_size == size


def test_rejects_empty_meaning(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store, pytest.raises(ValueError, match="non-empty meaning"):
        store.put("id1", "   ", "h")


def test_torn_last_line_is_discarded_and_log_rewritten(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        store.put("id1", "kept", "h1", order=1)
        store.put("id2", "also kept", "h2", order=2)
        path = store.path
    with path.open("ab") as fh:  # what a kill in the middle of a write leaves
        fh.write(b'1234abcd {"op":"put","id":"id3","seq":3,"ord')
    with SidecarStore(tmp_path) as store:
        assert [e.id for e in store.entries()] == ["id1", "id2"]
        store.put("id4", "after the repair", "h4", order=4)
    with SidecarStore(tmp_path) as store:
        assert [e.id for e in store.entries()] == ["id1", "id2", "id4"]
        assert all(line[8:9] == b" " for line in log_lines(store))


def test_damaged_checksum_line_is_skipped(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        store.put("id1", "kept", "h1", order=1)
        store.put("id2", "flipped", "h2", order=2)
        path = store.path
    data = path.read_bytes().replace(b"flipped", b"flopped")
    path.write_bytes(data)
    with SidecarStore(tmp_path) as store:
        assert [e.id for e in store.entries()] == ["id1"]


def test_foreign_format_is_refused(tmp_path: Path) -> None:
    body = json.dumps({"op": "header", "format": "kenning-encounter-meanings", "version": 99})
    raw = body.encode()
    (tmp_path / LOG_NAME).write_bytes(b"%08x %s\n" % (zlib.crc32(raw), raw))
    with pytest.raises(SidecarCorrupt, match="delete it"):
        SidecarStore(tmp_path)


def test_compaction_bounds_the_log_and_keeps_state(tmp_path: Path) -> None:
    with SidecarStore(tmp_path, fsync=False, compact_min_dead=50) as store:
        for round_ in range(30):
            for n in range(10):
                store.put(f"id{n}", f"meaning {n} v{round_}", f"h{round_}", order=n)
        store.drop("id0")
        assert len(log_lines(store)) <= 1 + 10 + 50 + 1
        before = store.entries()
    assert not (tmp_path / (LOG_NAME + ".tmp")).exists()
    with SidecarStore(tmp_path) as store:
        assert store.entries() == before
        assert store.entries()[0].meaning == "meaning 1 v29"


def test_leftover_compaction_temp_is_removed(tmp_path: Path) -> None:
    with SidecarStore(tmp_path) as store:
        store.put("id1", "m", "h", order=1)
    (tmp_path / (LOG_NAME + ".tmp")).write_bytes(b"half a snapshot")
    with SidecarStore(tmp_path) as store:
        assert [e.id for e in store.entries()] == ["id1"]
    assert not (tmp_path / (LOG_NAME + ".tmp")).exists()


def test_missing_stale_orphans(tmp_path: Path) -> None:
    a, b, c = node(1), node(2), node(3)
    with SidecarStore(tmp_path) as store:
        store.put(a.id, "a", source_hash(a), order=a.tick)
        store.put(b.id, "b", "hash of older text", order=b.tick)
        store.put("obs_gone", "deleted node", "h", order=0)
        assert store.missing([a, b, c]) == [c]
        assert store.stale([a, b, c]) == [b]
        assert store.orphans([a.id, b.id, c.id]) == ["obs_gone"]


def test_source_hash_tracks_the_text() -> None:
    a = node(1, "the tide turns at noon")
    assert source_hash(a) == source_hash(node(1, "the tide turns at noon"))
    assert source_hash(a) != source_hash(node(1, "the tide turns at dusk"))
    renamed = dataclasses.replace(a, name="note 1 renamed")
    retyped = dataclasses.replace(a, type="Concept")
    later = dataclasses.replace(a, tick=99, status="retired")
    assert source_hash(renamed) != source_hash(a) != source_hash(retyped)
    assert source_hash(later) == source_hash(a)  # ticks and statuses are not meaning


def test_concurrent_puts_from_threads_all_land(tmp_path: Path) -> None:
    with SidecarStore(tmp_path, fsync=False, compact_min_dead=20) as store:

        def writer(w: int) -> None:
            for n in range(200):
                store.put(f"w{w}-{n % 50}", f"writer {w} item {n}", "h", order=n % 50)

        threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(store) == 200
        held = {e.id: e.meaning for e in store.entries()}
    with SidecarStore(tmp_path) as store:
        assert {e.id: e.meaning for e in store.entries()} == held
        assert held["w2-49"] == "writer 2 item 199"
        assert len({e.seq for e in store.entries()}) == 200


# -- kill -9 in the middle of writing -------------------------------------------

# Shared by the child (which applies the ops) and the test (which replays the
# acknowledged ones): puts and drops over 97 ids, so most records soon die and
# compactions run every hundred or so ops.
OPS = """
def op(k):
    if k % 5 == 4:
        return ("drop", "obs_%012x" % ((k * 7919) % 97), "")
    if k % 5 in (2, 3):
        return ("put", "obs_%012x" % ((k * 31) % 97), "meaning %d" % k)
    return ("put", "obs_%012x" % (k % 97), "meaning %d" % k)
"""

CHILD = (
    OPS
    + """
import sys
from kenning_encounter.meaning.sidecar import SidecarStore

store = SidecarStore(sys.argv[1], compact_min_dead=64)
k = int(sys.argv[2])
print("ready", flush=True)
while True:
    kind, node_id, meaning = op(k)
    if kind == "put":
        store.put(node_id, meaning, "h%d" % k, order=int(node_id[4:], 16))
    else:
        store.drop(node_id)
    print(k, flush=True)
    k += 1
"""
)


def _replay(upto: int) -> dict[str, str]:
    scope: dict[str, object] = {}
    exec(OPS, scope)
    op = scope["op"]
    state: dict[str, str] = {}
    for k in range(upto + 1):
        kind, node_id, meaning = op(k)  # type: ignore[operator]
        if kind == "put":
            state[node_id] = meaning
        else:
            state.pop(node_id, None)
    return state


def _collect(stream: IO[bytes], into: list[str]) -> None:
    into.extend(line.decode().strip() for line in stream)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_survives_kill_9_during_writes(tmp_path: Path) -> None:
    rng = random.Random(20250611)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    start = 0
    acked = -1
    log_records = 0
    for _round in range(6):
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(tmp_path), str(start)],
            stdout=subprocess.PIPE,
            env=env,
        )
        assert child.stdout is not None
        lines: list[str] = []
        reader = threading.Thread(target=_collect, args=(child.stdout, lines))
        reader.start()
        # Let it get well into its work (however busy the machine is), then
        # kill it at a random moment.
        deadline = time.monotonic() + 30
        while len(lines) < 1 + 150 and time.monotonic() < deadline:
            time.sleep(0.002)
        assert lines and lines[0] == "ready", "the writer did not start"
        time.sleep(rng.uniform(0.0, 0.03))
        child.send_signal(signal.SIGKILL)
        child.wait()
        reader.join()
        child.stdout.close()
        done = [int(x) for x in lines[1:] if x.isdigit()]
        if done:
            acked = done[-1]
        with SidecarStore(tmp_path) as store:
            held = {e.id: e.meaning for e in store.entries()}
            log_records = len(log_lines(store)) - 1
        # every acknowledged op is there; the one in flight may or may not be
        assert held in (_replay(acked), _replay(acked + 1)), f"round {_round}, acked {acked}"
        start = acked + 1
    # Far more records were appended than the log holds: compactions ran
    # while the writer was being killed.
    assert log_records <= 2 * 97 + 1
    assert acked > 3 * log_records, f"only {acked} ops acknowledged"
