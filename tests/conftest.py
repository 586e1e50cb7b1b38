"""Shared fixtures: one store per test, parametrized over every backend.

The embedded backend always runs. The Neo4j backend runs against the server
named by KENNING_ENCOUNTER_TEST_NEO4J_URI (never NEO4J_URI: that names a user's
memory, and these tests empty the database they use, only ever a marked one);
when none is named or nothing answers there its tests skip with a reason naming
the URI, unless KENNING_ENCOUNTER_REQUIRE_NEO4J=1 (set by CI), which turns that
skip into a failure so CI can never pass with the Neo4j suite skipped. Any other
failure to open it fails the test.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from tests.support.backends import BACKENDS, neo4j_unavailable, open_neo4j_store
from tests.support.embedded_store import open_fresh_embedded
from tests.support.neo4j_target import (
    ELSEWHERE_VAR,
    NEO4J_GROUP,
    URI_VAR,
    URIS_VAR,
    group_of,
    in_neo4j_group,
    worker_uri,
)

# A user's production settings: nothing in the suite, a child process included, may
# read them (a server a test starts on Neo4j is handed the test settings explicitly).
PRODUCTION_NEO4J = ("NEO4J_URI", "NEO4J_URL", "NEO4J_USERNAME", "NEO4J_PASSWORD", "NEO4J_DATABASE")
# What /dev/shm must have free to take a run's temporary folders; a run holds far less at
# once, as a passing test's folders are removed when it ends (pyproject.toml).
TEMP_ROOM = 4 << 30


# Under ``--dist loadgroup`` (make test), the one test Neo4j of the run: handed to the
# Neo4j group's tests alone (``pytest_runtest_setup``). None: not such a run.
_GROUP_URI: str | None = None


def _grouped(config: pytest.Config) -> bool:
    # A worker's own options say "no" distribution; xdist keeps loadgroup for it.
    return os.environ.get("PYTEST_XDIST_WORKER") is not None and bool(
        getattr(config.option, "loadgroup", False)
    )


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist, either the Neo4j tests share one worker and one server
    (``--dist loadgroup``: tests/support/neo4j_target.py ``NEO4J_GROUP``), or each
    worker takes its own server from URIS_VAR; the run's temporary folders are in
    memory where they can be (``_temp_in_memory``)."""
    global _GROUP_URI
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker is None:
        _temp_in_memory(config)
        return
    if _grouped(config):
        listed = [u.strip() for u in os.environ.get(URIS_VAR, "").split(",") if u.strip()]
        _GROUP_URI = (listed[0] if listed else os.environ.get(URI_VAR, "").strip()) or None
        os.environ.pop(URI_VAR, None)
        return
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    try:
        uri = worker_uri(worker, count, os.environ.get(URIS_VAR, ""), os.environ.get(URI_VAR, ""))
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from exc
    if uri is not None:
        os.environ[URI_VAR] = uri


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup``: each file is a work unit, as with loadfile, but every test of
    the Neo4j group is one unit, so one worker runs them all (``in_neo4j_group``)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Neo4jTogether(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return Neo4jTogether(config, log)


@pytest.hookimpl(tryfirst=True)  # before the test's fixtures, module-scoped ones included
def pytest_runtest_setup(item: pytest.Item) -> None:
    if not _grouped(item.config):
        return
    grouped = in_neo4j_group(item.nodeid)
    callspec = getattr(item, "callspec", None)
    if not grouped and (
        item.get_closest_marker(NEO4J_GROUP) is not None
        or (callspec is not None and NEO4J_GROUP in callspec.params.values())
    ):
        pytest.fail(
            "this test needs Neo4j but runs outside the Neo4j group: name Neo4j in its id "
            "or add its file to NEO4J_FILES (tests/support/neo4j_target.py)"
        )
    if _GROUP_URI is None:
        return  # no Neo4j in this run: its tests skip, or fail under REQUIRE_VAR
    if grouped:
        os.environ[URI_VAR] = _GROUP_URI
        os.environ.pop(ELSEWHERE_VAR, None)
    else:
        os.environ.pop(URI_VAR, None)
        os.environ[ELSEWHERE_VAR] = "1"


def _temp_in_memory(config: pytest.Config) -> None:
    """Every test's folders (its stores, the servers' and commands' data directories) on
    the tmpfs at /dev/shm, unless the run names a place of its own (--basetemp, or
    PYTEST_DEBUG_TEMPROOT) or there is no such tmpfs with room to spare.

    The embedded store and its text index sync each commit to disk. Where other work
    shares the disk, the syncs, not the work, were most of an embedded test's time (four
    contract files' embedded halves, back to back: 49-104 s on the disk, 35-55 s here,
    the same CPU); on an idle disk it matters little. No test can tell a sync from none:
    what one proves of a crash is a killed process, whose writes the kernel keeps either
    way. The xdist workers' folders are made under the controller's."""
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT"):
        return
    shm = Path("/dev/shm")
    try:
        with open("/proc/self/mounts", encoding="utf-8") as mounts:
            tmpfs = any(line.split()[1:3] == [str(shm), "tmpfs"] for line in mounts)
        room = os.statvfs(shm)
    except OSError:
        return
    if tmpfs and os.access(shm, os.W_OK) and room.f_bavail * room.f_frsize >= TEMP_ROOM:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(shm)


@pytest.fixture(autouse=True, scope="session")
def _no_production_neo4j() -> Iterator[None]:
    saved = {k: os.environ.pop(k) for k in PRODUCTION_NEO4J if k in os.environ}
    yield
    os.environ.update(saved)


@pytest.fixture(autouse=True, scope="session")
def _homes_of_our_own(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Every hook a test runs keeps its session handles, and every server its quick-start
    answers (server/front.py), in a test folder, never the user's."""
    names = ("XDG_STATE_HOME", "XDG_CACHE_HOME")
    before = {name: os.environ.get(name) for name in names}
    for name in names:
        os.environ[name] = str(tmp_path_factory.mktemp(name.lower()))
    yield
    for name, value in before.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@pytest.fixture(scope="session")
def pristine_embedded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A new embedded store, created once per worker and closed: each test's own starts
    as a copy of it. Creating one runs every schema migration (about 0.3 s, 0.8 s on a
    loaded machine); a new store holds only its schema, its clock at 0 and its schema
    version, so every copy is the store a fresh open would have made."""
    folder = tmp_path_factory.mktemp("pristine-embedded") / "memory"
    EmbeddedStore.open(folder).close()
    return folder


@pytest.fixture(params=BACKENDS)
def store(
    request: pytest.FixtureRequest, tmp_path: Path, pristine_embedded: Path
) -> Iterator[GraphStore]:
    if request.param == "embedded":
        s: GraphStore = open_fresh_embedded(pristine_embedded, tmp_path / "memory")
    else:
        opened = open_neo4j_store()
        if isinstance(opened, str):
            neo4j_unavailable(opened)
        s = opened
    try:
        yield s
    finally:
        s.close()


@pytest.fixture
def memory(store: GraphStore) -> Memory:
    m = Memory(store)
    return m


@pytest.fixture
def embedded(tmp_path: Path, pristine_embedded: Path) -> Iterator[EmbeddedStore]:
    s = open_fresh_embedded(pristine_embedded, tmp_path / "memory")
    try:
        yield s
    finally:
        s.close()
