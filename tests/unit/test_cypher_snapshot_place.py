"""read_cypher's snapshot folder (store/embedded/sandbox.py) is the server's own: a file
or a link left where it belongs is cleared, never followed, and read_cypher answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import sandbox
from kenning_encounter.store.embedded.backend import EmbeddedStore

CAPS = {"row_cap": 10, "char_cap": 10_000, "timeout_s": 10.0}

pytestmark = pytest.mark.skipif(not sandbox.supported(), reason="no sandbox on this platform")


@pytest.mark.parametrize("kind", ["file", "link"])
def test_what_took_the_snapshot_folders_name_is_cleared(tmp_path: Path, kind: str) -> None:
    data = tmp_path / "m"
    store = EmbeddedStore.open(data)
    Memory(store).advance_encounter("s", "p")
    store.close()
    spot = data / sandbox.SNAPSHOT_DIR
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not the server's")
    if kind == "file":
        spot.write_text("a file where a folder belongs")
    else:
        spot.symlink_to(elsewhere, target_is_directory=True)
    store = EmbeddedStore.open(data)
    try:
        rows = store.read_cypher("MATCH (e:Encounter) RETURN e.purpose", **CAPS).rows
        assert rows == [["p"]]
    finally:
        store.close()
    # Never followed: nothing written into, or taken from, where a link pointed.
    assert [p.name for p in elsewhere.iterdir()] == ["keep.txt"]
    assert (elsewhere / "keep.txt").read_text() == "not the server's"
