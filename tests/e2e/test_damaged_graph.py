"""Damage to the graph engine's own files, met through the real command line: a clear
refusal naming the file and what to do, nothing changed, never a traceback and never a
new empty memory served in the lost one's place.

Before: a graph file deleted or emptied (the text index beside it still holding the
memory) was taken for no memory at all: serve made a new empty one there, the text index
followed it, and every search found nothing; doctor called the place fine. A write-ahead
log lost after a crash (the last writes only there) silently dropped those writes, the
index again following. A log that was a folder raised IsADirectoryError tracebacks out of
doctor and export. A damaged graph file was refused in the engine's words alone ("The
database may be checkpointing; please retry later") with no way forward.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.e2e.conftest import ROOT, clean_environ, server_command
from tests.e2e.test_damaged_text_index import INIT, unprivileged
from tests.support.cli import run_cli

SEARCH = [
    *INIT,
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": {"query": "zebra3"}},
    },
]


def _memory(data_dir: Path) -> Path:
    store = EmbeddedStore.open(data_dir)
    try:
        memory = Memory(store)
        memory.advance_encounter("s", "seed")
        memory.create_entities(
            "s",
            [
                {"type": "Observation", "name": f"item {i}", "description": f"zebra{i}"}
                for i in range(20)
            ],
        )
    finally:
        store.close()
    return data_dir


def _write_only_to_the_log(data_dir: Path) -> None:
    """One more write, left only in the write-ahead log by an unclean exit (the index
    saved it)."""
    script = (
        "import os, sys\n"
        "from pathlib import Path\n"
        "from kenning_encounter.memory.service import Memory\n"
        "from kenning_encounter.store.embedded.backend import EmbeddedStore\n"
        "store = EmbeddedStore.open(Path(sys.argv[1]))\n"
        "m = Memory(store); m.advance_encounter('t', 'p')\n"
        "m.create_entities('t', [{'type': 'Note', 'name': 'only in the log'}])\n"
        "store.flush_index()\n"
        "os._exit(0)\n"  # no close: the log is not checkpointed
    )
    env = dict(clean_environ(), PYTHONPATH=f"{ROOT / 'src'}{os.pathsep}{ROOT}")
    subprocess.run([sys.executable, "-c", script, str(data_dir)], env=env, check=True, timeout=120)


def _serve(data_dir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        server_command(
            "serve", "--transport", "stdio", "--data-dir", str(data_dir), "--matcher", "off"
        ),
        input="".join(json.dumps(m) + "\n" for m in SEARCH),
        capture_output=True,
        text=True,
        env=clean_environ(),
        timeout=120,
        check=False,
    )


def _hits(done: subprocess.CompletedProcess[str]) -> list[str]:
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("id") == 1:
            return [h["name"] for h in message["result"]["structuredContent"]["hits"]]
    raise AssertionError(f"no answer to the search: {done.stderr[-2000:]}")


def _refused_everywhere(data_dir: Path, tmp_path: Path, *said: str) -> None:
    """serve, doctor and export each refuse, saying ``said``, with no traceback."""
    served = _serve(data_dir)
    doctor = run_cli("doctor", "--data-dir", str(data_dir))
    exported = run_cli("export", str(tmp_path / "dump.jsonl"), "--data-dir", str(data_dir))
    for name, done, told in (
        ("serve", served, served.stderr),
        ("doctor", doctor, doctor.stdout),
        ("export", exported, exported.stderr),
    ):
        assert done.returncode != 0, f"{name} did not refuse:\n{told}"
        assert "Traceback" not in done.stderr, f"{name}:\n{done.stderr[-3000:]}"
        for words in said:
            assert words in told, f"{name} did not say {words!r}:\n{told[-3000:]}"
    assert not (tmp_path / "dump.jsonl").exists()


@pytest.mark.parametrize("loss", ["deleted", "emptied"])
def test_a_lost_graph_file_is_refused_not_replaced_by_an_empty_memory(
    tmp_path: Path, loss: str
) -> None:
    data_dir = _memory(tmp_path / "m")
    graph = data_dir / "graph.lbdb"
    if loss == "deleted":
        graph.unlink()
    else:
        os.truncate(graph, 0)
    state = "is missing" if loss == "deleted" else "is empty"
    _refused_everywhere(data_dir, tmp_path, f"{graph} {state}", "Restore the folder", "import FILE")
    # Nothing was made in the lost memory's place.
    assert graph.exists() == (loss == "emptied") and not (graph.exists() and graph.stat().st_size)
    # The way forward it names: starting afresh is a choice the operator makes.
    shutil.rmtree(data_dir / "textindex")
    assert _hits(_serve(data_dir)) == []


def test_writes_lost_with_the_write_ahead_log_are_refused_then_served_as_told(
    tmp_path: Path,
) -> None:
    """The last writes live only in the log after an unclean exit; the log goes."""
    data_dir = _memory(tmp_path / "m")
    _write_only_to_the_log(data_dir)
    wal = data_dir / "graph.lbdb.wal"
    assert wal.stat().st_size > 0
    wal.unlink()
    _refused_everywhere(
        data_dir, tmp_path, "graph.lbdb.wal lost", "Put the missing file back", "textindex"
    )
    shutil.rmtree(data_dir / "textindex")  # "to serve the graph as it is"
    assert _hits(_serve(data_dir)) == ["item 3"]


def test_a_damaged_graph_file_is_refused_with_the_way_to_restore(tmp_path: Path) -> None:
    data_dir = _memory(tmp_path / "m")
    graph = data_dir / "graph.lbdb"
    graph.write_bytes(b"\x00" * 4096 + graph.read_bytes()[4096:])
    _refused_everywhere(data_dir, tmp_path, str(graph), "damaged", "Restore the folder")


def test_a_folder_where_the_log_belongs_is_refused_by_name(tmp_path: Path) -> None:
    data_dir = _memory(tmp_path / "m")
    (data_dir / "graph.lbdb.wal").mkdir()
    _refused_everywhere(data_dir, tmp_path, "graph.lbdb.wal is not the write-ahead log")


def test_a_damaged_log_still_opens_up_to_the_damage_and_says_what_was_lost(
    tmp_path: Path,
) -> None:
    """The log replayed up to damage in it is the store's own recovery (a torn tail after
    a kill): the index being ahead is said, not refused."""
    data_dir = _memory(tmp_path / "m")
    _write_only_to_the_log(data_dir)
    wal = data_dir / "graph.lbdb.wal"
    wal.write_bytes(b"\xa5" * wal.stat().st_size)
    served = _serve(data_dir)
    assert served.returncode == 0, served.stderr[-3000:]
    assert _hits(served) == ["item 3"]
    assert "replaying up to the damage" in served.stderr
    assert "were in the damaged part of its write-ahead log" in served.stderr


def test_a_graph_file_this_user_may_not_open_is_refused_with_the_fix(tmp_path: Path) -> None:
    """Before: 'the file is damaged' in the engine's words, for a file only unreadable."""
    data_dir = _memory(tmp_path / "m")
    graph = data_dir / "graph.lbdb"
    graph.chmod(0)
    try:
        done = subprocess.run(
            unprivileged(server_command("export", "-", "--data-dir", str(data_dir))),
            capture_output=True,
            text=True,
            env=clean_environ(),
            timeout=120,
            check=False,
        )
    finally:
        graph.chmod(0o644)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert f"{graph} may not be read and written by this user" in done.stderr
    assert f"chmod u+rw {graph}" in done.stderr
