"""The end of the serve command: once the memory is closed, the process ends.

A read the client cancelled, or one past its deadline, is abandoned on a worker
thread (calls.py): nothing waits for its answer, and the thread runs on until the
work ends. anyio's worker threads are not daemons, so the interpreter's exit waits
for each of them, for as long as the read takes, with the memory already closed. A
stdio client closes the pipe and gives the server a moment to exit before it kills
it (the TypeScript SDK: 2 s, then SIGTERM, 2 s more, then SIGKILL); a server
stopped with SIGTERM over HTTP lingered the same way. So the serve command, once
serving is over, waits a moment for its threads and then ends the process itself.

Standard library only: the serve command may end before anything else was imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from typing import Final

log = logging.getLogger(__name__)

# What idle worker threads take to see that the event loop ended and stop.
GRACE_S: Final = 0.5


def leave(code: int, *, grace_s: float = GRACE_S) -> int:
    """``code``, when every other thread has ended within ``grace_s``; otherwise the
    process ends here with ``code``, without waiting for threads whose work no one
    awaits any more (they only read: every write is awaited, calls.py).

    Only for the process's own serve command, after the memory is closed: never in a
    process that goes on (a test calling ``main`` with arguments)."""
    deadline = time.monotonic() + grace_s
    others = [
        t for t in threading.enumerate() if t is not threading.current_thread() and not t.daemon
    ]
    for thread in others:
        thread.join(max(0.0, deadline - time.monotonic()))
    running = [t.name for t in others if t.is_alive()]
    if not running:
        return code
    log.info("leaving %d thread(s) the server gave up on: %s", len(running), ", ".join(running))
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
