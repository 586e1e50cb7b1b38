"""Test-only access to the embedded store, kept out of the production class."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import ReadTx

T = TypeVar("T")


def read_uncached(store: EmbeddedStore, work: Callable[[ReadTx], T]) -> T:
    """A read that bypasses the node cache, so a test can check the cache against the engine."""
    with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
        return store._read_on(conn, work, None)  # pyright: ignore[reportPrivateUsage]
