"""What an import is pointed at, when it is no dump: refused by what is wrong with it."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import run_cli


def test_an_import_of_an_endless_line_is_refused_not_read_whole(tmp_path: Path) -> None:
    """/dev/zero (or any file without line breaks) was read as one line until memory ran
    out; a line past the longest record a memory holds is refused."""
    data_dir = tmp_path / "memory"
    done = run_cli("import", "/dev/zero", "--data-dir", str(data_dir), timeout=60)
    assert done.returncode == 1, done.stderr
    assert "line 1: is longer than any record (64 MiB) without a line end" in done.stderr
    assert not data_dir.exists()
