"""Checkpoints taken when writes go quiet, so a long-serving store's memory tracks the
memory it holds, not the hours it has served.

The engine keeps what each committed transaction changed in memory until a checkpoint
folds the write-ahead log into the main file, and checkpoints on its own only when the
log passes a size. An update leaves little in the log and much in memory: a server
that opened, touched and sealed encounters for a few thousand sessions held about
1 GiB (the whole buffer pool) for a 16 MiB store. A checkpoint costs a fixed 0.2 s or
so here, and more as the store grows (about 1.5 s at 100k nodes), so it is not taken
after every write: once writes have been quiet for ``quiet_s`` and at least
``after_writes`` transactions are waiting, or once they have been quiet for
``idle_s`` with any waiting. A burst is held up by one only when it runs on past
``force_after`` transactions with no pause (between two of its writes), which bounds
what a server writing without rest holds (the engine's own checkpoint, by log size,
comes far later for small updates).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

log = logging.getLogger(__name__)

QUIET_S: Final = 2.0
AFTER_WRITES: Final = 100
IDLE_S: Final = 60.0
FORCE_AFTER: Final = 2_000


class QuietCheckpoints:
    """Calls ``checkpoint`` from a thread of its own when the writes it was told of
    (``wrote``) are due one. ``checkpoint`` takes the store's write lock itself and
    says whether it ran; a failure is logged and tried again ``idle_s`` later. The
    thresholds are read at each wake, so a test may set them on a running store."""

    def __init__(
        self,
        checkpoint: Callable[[], bool],
        *,
        quiet_s: float = QUIET_S,
        after_writes: int = AFTER_WRITES,
        idle_s: float = IDLE_S,
        force_after: int = FORCE_AFTER,
    ) -> None:
        self._checkpoint = checkpoint
        self.quiet_s = quiet_s
        self.after_writes = after_writes
        self.idle_s = idle_s
        self.force_after = force_after
        self._lock = threading.Lock()
        self._waiting = 0  # transactions committed since the last checkpoint
        self._last = 0.0  # when the last of them committed (monotonic)
        self._retry_at = 0.0  # after a checkpoint that failed or could not run
        self._wake = threading.Event()
        self._stopping = False
        self.taken = 0  # checkpoints run, for tests and the log
        self._thread = threading.Thread(target=self._loop, name="checkpoints", daemon=True)
        self._thread.start()

    def wrote(self) -> None:
        """One more transaction committed; cheap, called under the write lock."""
        with self._lock:
            self._waiting += 1
            self._last = time.monotonic()
        self._wake.set()

    def _wait_s(self) -> float | None:
        """Seconds until a checkpoint is due (0: now), or None when none is waiting."""
        with self._lock:
            waiting, last = self._waiting, self._last
        if not waiting:
            return None
        now = time.monotonic()
        if waiting >= self.force_after:  # writes that never pause: between two of them
            return max(0.0, self._retry_at - now)
        due_after = self.quiet_s if waiting >= self.after_writes else self.idle_s
        return max(0.0, due_after - (now - last), self._retry_at - now)

    def _loop(self) -> None:
        while True:
            wait = self._wait_s()
            if self._stopping:
                return
            if wait is None or wait > 0:
                self._wake.wait(wait)
                self._wake.clear()
                continue
            with self._lock:
                taking = self._waiting
            try:
                ran = self._checkpoint()
            except Exception as exc:  # a full disk, say: tried again after a while
                log.warning("a quiet checkpoint failed (%s); it is tried again later", exc)
                ran = False
            if ran:
                self.taken += 1
                with self._lock:
                    self._waiting = max(0, self._waiting - taking)
            else:
                self._retry_at = time.monotonic() + self.idle_s

    def close(self) -> None:
        self._stopping = True
        self._wake.set()
        self._thread.join(timeout=5.0)
