"""Test-only access to the embedded store, kept out of the production class."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import ReadTx

T = TypeVar("T")


def read_uncached(store: EmbeddedStore, work: Callable[[ReadTx], T]) -> T:
    """A read that bypasses the node cache, so a test can check the cache against the engine."""
    with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
        return store._read_on(conn, work, None)  # pyright: ignore[reportPrivateUsage]


def open_fresh_embedded(pristine: Path, data_dir: Path, **options: Any) -> EmbeddedStore:
    """A new, empty embedded store in ``data_dir``: a copy of ``pristine`` (a store just
    created and closed: tests/conftest.py's ``pristine_embedded``), opened with ``options``.
    Creating a store runs every schema migration (about 0.1 s of CPU and 0.4 s in all on a
    loaded machine); the copy is the store that creation would have made."""
    shutil.copytree(pristine, data_dir)
    return EmbeddedStore.open(data_dir, **options)


def made_at_schema(path: Path, version: int) -> None:
    """An embedded store at ``path`` as schema ``version`` left it: its migrations up to
    there, run on the engine directly, so opening it runs the ones after."""
    import ladybug

    from kenning_encounter.store.embedded.schema import MIGRATIONS

    path.mkdir()
    db = ladybug.Database(str(path / "graph.lbdb"))
    conn = ladybug.Connection(db)
    for step in range(1, version + 1):
        for statement in MIGRATIONS[step]():
            conn.execute(statement)
    conn.execute(f"MATCH (m:Meta {{key: 'schema_version'}}) SET m.ival = {int(version)}")
    conn.close()
    db.close()
