"""Fixtures the contract tests share."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from tests.support.backends import BACKENDS, neo4j_target, neo4j_unavailable
from tests.support.counted import Counter


@pytest.fixture(params=BACKENDS)
def counted(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, Counter]]:
    """A fresh store on each backend whose statements are counted (the store's one
    execute path)."""
    counter = Counter()
    if request.param == "embedded":
        # Not read whole into the cache (nodecache.py WARM_LIMIT): that one read, landing
        # on whichever read first misses, would hide what a counted read sends.
        store: GraphStore = EmbeddedStore.open(tmp_path / "memory", tracer=counter, warm_limit=0)
    else:
        from tests.support.neo4j_store import open_emptied

        try:
            store = open_emptied(neo4j_target().uri, tracer=counter)
        except Exception as exc:  # nothing answers: skip, or fail when Neo4j is required
            from tests.support.backends import nothing_answers

            if not nothing_answers(exc):
                raise
            neo4j_unavailable(f"no Neo4j answered: {exc}")
    try:
        yield store, counter
    finally:
        store.close()
