"""Opening the memory early (Runtime.begin_open): the store opened on a thread while the
command line imports the SDK is the one the first session serves, a failure to open
surfaces at that session, and a start that fails first leaves no store open."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest

from kenning_encounter.config import Settings, load_settings
from kenning_encounter.errors import KenningError, StoreLocked
from kenning_encounter.server.context import Runtime
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

SRC = Path(__file__).resolve().parents[2] / "src"
# Another process, opening the store and holding it until its stdin closes.
HOLD = """
import sys
from pathlib import Path
from kenning_encounter.errors import StoreLocked
from kenning_encounter.store.embedded.backend import EmbeddedStore
try:
    store = EmbeddedStore.open(Path(sys.argv[1]))
except StoreLocked:
    print("locked", flush=True)
    raise SystemExit(0)
print("holding", flush=True)
sys.stdin.read()
store.close()
"""


def _settings(data_dir: Path) -> Settings:
    return load_settings(data_dir=data_dir, matcher="off")


@contextmanager
def _other_process(data_dir: Path) -> Generator[str]:
    """What another process finds: "holding" (it opened the store) or "locked"."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip()
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        proc.stdout.close()


def test_the_first_session_serves_the_store_begin_open_opened(tmp_path: Path) -> None:
    opened: list[tuple[str, GraphStore]] = []

    def factory(settings: Settings) -> GraphStore:
        store = EmbeddedStore.open(settings.resolved_data_dir)
        opened.append((threading.current_thread().name, store))
        return store

    runtime = Runtime(_settings(tmp_path / "memory"), store_factory=factory)
    runtime.begin_open()
    runtime.begin_open()  # a second call opens nothing more

    async def serve() -> None:
        async with runtime.session() as context:
            # opened early, on its thread; the session serves it behind the read gate
            assert opened == [("open-memory", getattr(context.store, "inner", context.store))]
            with _other_process(tmp_path / "memory") as found:
                assert found == "locked"  # open, and ours

    anyio.run(serve)
    runtime.close_unclaimed()  # the session took it: nothing left to close
    EmbeddedStore.open(tmp_path / "memory").close()  # the session closed it


def test_a_store_that_cannot_open_fails_the_first_session(tmp_path: Path) -> None:
    with _other_process(tmp_path / "memory") as found:
        assert found == "holding"
        runtime = Runtime(_settings(tmp_path / "memory"))
        runtime.begin_open()

        async def serve() -> None:
            async with runtime.session():
                pytest.fail("a session over a store another owner holds")

        with pytest.raises(KenningError) as caught:
            anyio.run(serve)
        assert isinstance(caught.value, StoreLocked)
        runtime.close_unclaimed()  # the failure was handed over; nothing to close


def test_a_start_that_fails_before_its_session_closes_what_was_opened(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path / "memory"))
    runtime.begin_open()
    runtime.close_unclaimed()
    # Closed: this process may open the store again.
    EmbeddedStore.open(tmp_path / "memory").close()


def test_a_listening_server_readies_infusion_off_the_request_path(tmp_path: Path) -> None:
    runtime = Runtime(_settings(tmp_path / "memory"))

    async def serve() -> None:
        async with runtime.session() as context:
            services = context.require_services()
            assert services._infuser is None  # pyright: ignore[reportPrivateUsage]
            runtime.listening("http://127.0.0.1:1/mcp/")
            runtime.ready_infusion()
            assert await anyio.to_thread.run_sync(runtime.infusion_ready.wait, 60.0)
            assert services._infuser is not None  # pyright: ignore[reportPrivateUsage]

    anyio.run(serve)
