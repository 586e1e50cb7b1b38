"""``owner.json`` beside the embedded graph names the process that holds the store, so a
second one can say whom to ask. It is only a courtesy: something else where it belongs
must not stop the memory.

Before: a folder named ``owner.json`` (or ``owner.json.tmp``) raised IsADirectoryError
tracebacks out of export and erase, and serve refused to start with the bare errno, after
the graph had been opened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import held_memory, run_cli


@pytest.mark.parametrize("name", ["owner.json", "owner.json.tmp"])
def test_a_folder_where_the_owner_file_belongs_is_said_and_the_memory_serves_on(
    tmp_path: Path, name: str
) -> None:
    data_dir = held_memory(tmp_path / "m")
    (data_dir / name).mkdir()
    dump = tmp_path / "dump.jsonl"
    exported = run_cli("export", str(dump), "--data-dir", str(data_dir))
    assert exported.returncode == 0, exported.stderr[-3000:]
    assert "Traceback" not in exported.stderr
    assert "cannot name this process as the store's owner" in exported.stderr
    assert str(data_dir / name) in exported.stderr
    assert '"name":"kept"' in dump.read_text()
    forgot = run_cli("forget", "kept", "--yes", "--data-dir", str(data_dir))
    assert forgot.returncode == 0, forgot.stderr[-3000:]
    assert "deleted 1 node(s)" in forgot.stderr
