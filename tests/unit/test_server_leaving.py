"""The serve command ends once its memory is closed, whatever reads it gave up on.

Each case is a fresh interpreter that abandons a read as calls.py does (a worker thread
cancelled with ``abandon_on_cancel``), then ends as the serve command ends.
"""

from __future__ import annotations

import subprocess
import sys
import time

from tests.e2e.conftest import clean_environ

ABANDON = """
import sys, time, anyio
from kenning_encounter.server.leaving import leave

async def serve():
    with anyio.move_on_after(0.1):  # the client cancelled: nothing awaits the read any more
        await anyio.to_thread.run_sync(time.sleep, 60, abandon_on_cancel=True)

anyio.run(serve)
print("served", flush=True)
sys.exit({end})
"""


def _run(end: str) -> tuple[int | None, float | None]:
    """The exit code and how long the process took to end after serving, or Nones when it
    still ran after 4 s (it is killed then)."""
    with subprocess.Popen(
        [sys.executable, "-c", ABANDON.format(end=end)],
        stdout=subprocess.PIPE,
        text=True,
        env=clean_environ(),
    ) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "served\n"
        started = time.monotonic()
        try:
            code = proc.wait(timeout=4)
        except subprocess.TimeoutExpired:
            proc.kill()
            return None, None
        return code, time.monotonic() - started


def test_an_abandoned_read_holds_an_interpreter_that_just_exits() -> None:
    # The premise: Python waits for anyio's worker threads (not daemons) at exit.
    assert _run("3") == (None, None)


def test_leave_ends_the_process_without_waiting_for_it() -> None:
    code, took = _run("leave(3)")
    assert code == 3 and took is not None and took < 2, (code, took)
