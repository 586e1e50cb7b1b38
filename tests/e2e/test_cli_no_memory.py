"""A command that reads or erases a memory, pointed where none is (a mistyped --data-dir),
says so and makes nothing there; only serve and an import make a memory. Before, each
made an empty memory and reported on it: an export of nothing, "no node named ..."."""

from __future__ import annotations

from pathlib import Path

import pytest

from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.cli import held_memory, run_cli

COMMANDS = {
    "export": ["export", "-"],
    "kndl export": ["kndl", "export", "--out", "{tmp}/facts"],
    "forget": ["forget", "anything"],
    "erase": ["erase", "anything"],
    "purge": ["purge", "--due"],
    "review": ["review"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_command_on_no_memory_makes_none(tmp_path: Path, command: str) -> None:
    missing = tmp_path / "mistyped"
    args = [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[command]]
    done = run_cli(*args, "--data-dir", str(missing))
    assert done.returncode == 2, done.stderr
    assert f"no memory at {missing} (nothing was created there)" in done.stderr
    assert not missing.exists()


def test_an_existing_memory_is_still_read_and_an_import_still_makes_one(tmp_path: Path) -> None:
    held = held_memory(tmp_path / "held")
    dump = tmp_path / "held.jsonl"
    assert run_cli("export", str(dump), "--data-dir", str(held)).returncode == 0
    fresh = tmp_path / "fresh"
    done = run_cli("import", str(dump), "--data-dir", str(fresh))
    assert done.returncode == 0, done.stderr
    assert EmbeddedStore.holds_memory(fresh)
