"""Which backends the contract suite runs on, and how to reach the test Neo4j.

Only KENNING_ENCOUNTER_TEST_NEO4J_URI names it (tests/support/neo4j_target.py).
Neo4j tests skip, naming the URI, only when nothing answers there, or when none is
named; with KENNING_ENCOUNTER_REQUIRE_NEO4J=1 (CI) those skips fail. Any other
failure (a refused login, a broken schema statement, an unmarked database) is a
failure, never a skip.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import pytest

from tests.support.neo4j_target import REQUIRE_VAR, ScratchNeo4j, configured, unset_reason

HAVE_NEO4J_BACKEND = importlib.util.find_spec("kenning_encounter.store.neo4j") is not None
BACKENDS = ["embedded", "neo4j"] if HAVE_NEO4J_BACKEND else ["embedded"]


def neo4j_unavailable(reason: str) -> NoReturn:
    """Skip for want of a Neo4j, or fail when the run requires one."""
    if os.environ.get(REQUIRE_VAR) == "1":
        pytest.fail(f"Neo4j is required here ({REQUIRE_VAR}=1): {reason}")
    pytest.skip(reason)


def neo4j_target() -> ScratchNeo4j:
    """The test Neo4j's settings; skips (or fails under REQUIRE) when none is named."""
    target = configured()
    if target is None:
        neo4j_unavailable(unset_reason())
    return target


def neo4j_uri() -> str:
    return neo4j_target().uri


def nothing_answers(exc: BaseException) -> bool:
    """True only for the driver's "no server there" (refused, unresolvable, timed out)."""
    from neo4j.exceptions import ServiceUnavailable

    return isinstance(exc, ServiceUnavailable)


def require_answering() -> ScratchNeo4j:
    """The test Neo4j, once it has answered a login; skips only when nothing answers."""
    import neo4j

    target = neo4j_target()
    with neo4j.GraphDatabase.driver(target.uri, auth=target.auth, connection_timeout=5.0) as d:
        try:
            d.verify_connectivity()
        except Exception as exc:
            if not nothing_answers(exc):
                raise
            neo4j_unavailable(f"no Neo4j answered at {target.uri}: {exc}")
    return target


def open_neo4j_store(clock: Callable[[], str] | None = None) -> Any:
    """A fresh, emptied Neo4j store (writing the time ``clock`` tells, when given), or a
    string saying why there is no Neo4j to use.

    Only "none named" and "nothing answers" come back as a reason; anything else raises."""
    target = configured()
    if target is None:
        return unset_reason()
    try:
        from tests.support.neo4j_store import open_emptied
    except ImportError as exc:
        return f"the neo4j extra is not installed ({exc}); tried {target.uri}"
    try:
        return open_emptied(target.uri, clock)
    except Exception as exc:
        if not nothing_answers(exc):
            raise
        return f"no Neo4j answered at {target.uri}: {exc}"


@contextmanager
def opened_store(backend: str, path: Path, clock: Callable[[], str] | None = None) -> Iterator[Any]:
    """A store of ``backend`` writing the time ``clock`` tells, closed after: embedded, the
    memory at ``path`` (made, or opened again); Neo4j, the test database emptied (or the
    test skipped, as ``neo4j_unavailable`` says)."""
    if backend == "embedded":
        from kenning_encounter.store.embedded.backend import EmbeddedStore

        store: Any = EmbeddedStore.open(path, clock=clock)
    else:
        opened = open_neo4j_store(clock)
        if isinstance(opened, str):
            neo4j_unavailable(opened)
        store = opened
    try:
        yield store
    finally:
        store.close()
