"""Where an export writes and what an import reads, when either cannot be: refused by
what is wrong with it, with nothing written."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.cli import held_memory, run_cli


@pytest.fixture
def held(tmp_path: Path) -> Path:
    return held_memory(tmp_path / "held")


def _folder(t: Path) -> tuple[Path, str]:
    (t / "out").mkdir()
    return t / "out", "is a folder; name a file to write"


def _in_a_missing_folder(t: Path) -> tuple[Path, str]:
    return t / "missing" / "dump.jsonl", "No such file or directory"


def _below_a_file(t: Path) -> tuple[Path, str]:
    (t / "f").write_text("x")
    return t / "f" / "dump.jsonl", "Not a directory"


def _name_too_long(t: Path) -> tuple[Path, str]:
    return t / ("n" * 300), "File name too long"


TARGETS: dict[str, Callable[[Path], tuple[Path, str]]] = {
    "a folder": _folder,
    "in a missing folder": _in_a_missing_folder,
    "below a file": _below_a_file,
    "a name too long": _name_too_long,
}


@pytest.mark.parametrize("case", sorted(TARGETS))
def test_an_export_refuses_a_file_it_cannot_write(held: Path, tmp_path: Path, case: str) -> None:
    """Before: a folder was found only at the rename, after the whole memory was read;
    a name too long or a file on the way raised a traceback out of the clean-up."""
    out = tmp_path / "out_root"
    out.mkdir()
    target, said = TARGETS[case](out)
    before = sorted(p.name for p in out.rglob("*"))
    done = run_cli("export", str(target), "--data-dir", str(held))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert f"error: FILE {target}: {said}; nothing was written" in done.stderr
    assert sorted(p.name for p in out.rglob("*")) == before  # no half file left


def test_an_import_of_an_endless_line_is_refused_not_read_whole(tmp_path: Path) -> None:
    """/dev/zero (or any file without line breaks) was read as one line until memory ran
    out; a line past the longest record a memory holds is refused."""
    data_dir = tmp_path / "memory"
    done = run_cli("import", "/dev/zero", "--data-dir", str(data_dir), timeout=60)
    assert done.returncode == 1, done.stderr
    assert "line 1: is longer than any record (64 MiB) without a line end" in done.stderr
    assert not data_dir.exists()


def test_an_import_of_a_line_nested_past_any_record_is_refused(tmp_path: Path) -> None:
    """100,000 nested arrays raised a RecursionError traceback out of the line's reader."""
    dump = tmp_path / "nested.jsonl"
    dump.write_text("[" * 100_000 + "]" * 100_000 + "\n")
    data_dir = tmp_path / "memory"
    done = run_cli("import", str(dump), "--data-dir", str(data_dir))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert "line 1: nests its values deeper than any record does" in done.stderr
    assert not data_dir.exists()
