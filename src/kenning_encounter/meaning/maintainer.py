"""Keeping the sidecar in step with the graph, off the write path and with no operator.

A write hands the maintainer its new node (``enqueue``) or a deleted id
(``drop``) and returns at once: the bounded queue takes it or, when full, the
item is dropped and counted, and the next ``reconcile`` catches up. One
background thread makes the meanings. A failed model call pauses the worker
(exponential backoff, since failures are nearly always the provider's, not
the node's) and the node is retried later; after ``max_attempts`` it waits for
the next reconcile. ``reconcile`` (run at startup, first boot included) drops
entries whose node is gone and schedules every node that has no meaning or one
made from text it no longer carries.

Where several server processes share the meanings (``meaning/stored.py``), each
node is claimed before its model call: a node another process is making waits
(rechecked every ``recheck_s``, at most until that claim expires) and is then
found made, so a meaning is paid for once however many replicas wanted it.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from kenning_encounter.errors import MatcherError, StoreError
from kenning_encounter.meaning.compress import compress
from kenning_encounter.meaning.providers.base import Provider
from kenning_encounter.meaning.rebuild import RebuildReport, rebuild_meanings
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.meaning.stored import MeaningStore
from kenning_encounter.store.records import NodeRecord

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ReconcileReport:
    nodes: int
    missing: int
    stale: int
    dropped: int  # entries whose node no longer exists


@dataclass(frozen=True, slots=True)
class _Make:
    node: NodeRecord
    attempts: int = 0


@dataclass(frozen=True, slots=True)
class _Drop:
    node_id: str


class MeaningMaintainer:
    """Background meaning-maker for one meaning store. Call ``start`` once, ``close`` at shutdown."""

    def __init__(
        self,
        sidecar: MeaningStore,
        provider: Provider,
        *,
        queue_size: int = 1024,
        max_attempts: int = 5,
        backoff_s: float = 2.0,
        max_backoff_s: float = 300.0,
        timeout_s: float | None = None,
        recheck_s: float = 5.0,
    ) -> None:
        self._sidecar = sidecar
        self._recheck_s = recheck_s
        self._provider = provider
        self._queue_size = queue_size
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s
        self._max_backoff_s = max_backoff_s
        self._timeout_s = timeout_s
        self._cv = threading.Condition()
        self._queue: deque[_Make | _Drop] = deque()
        self._backlog: OrderedDict[str, _Make] = OrderedDict()
        self._retry: list[tuple[float, int, _Make]] = []
        self._tie = itertools.count()
        self._pause_until = 0.0
        self._failures_in_row = 0
        self._busy = False
        self._stopping = False
        self._thread: threading.Thread | None = None
        self._counts = dict.fromkeys(
            (
                "made",
                "failed",
                "unchanged",
                "queue_full_drops",
                "abandoned",
                "dropped",
                "deferred",  # another process held the node's claim
                "made_elsewhere",  # found made by another process once claimed
            ),
            0,
        )

    # -- the write path's side: never blocks on a model -------------------------

    def enqueue(self, node: NodeRecord) -> bool:
        """Schedule a meaning for a created node; False (counted) when the queue is full."""
        return self._offer(_Make(node))

    def drop(self, node_id: str) -> bool:
        """Schedule removal of a deleted node's meaning; False (counted) when the queue is full."""
        return self._offer(_Drop(node_id))

    def _offer(self, job: _Make | _Drop) -> bool:
        with self._cv:
            if self._stopping:
                return False
            if len(self._queue) >= self._queue_size:
                self._counts["queue_full_drops"] += 1
                logger.info("meaning queue full (%d); reconcile will catch up", self._queue_size)
                return False
            self._queue.append(job)
            self._cv.notify_all()
            return True

    # -- sweeps ----------------------------------------------------------------

    def reconcile(self, nodes: Iterable[NodeRecord]) -> ReconcileReport:
        """Drop entries of vanished nodes now; schedule every missing or stale meaning."""
        listed = list(nodes)
        orphans = self._sidecar.orphans(n.id for n in listed)
        for node_id in orphans:
            self._sidecar.drop(node_id)
        missing = self._sidecar.missing(listed)
        stale = self._sidecar.stale(listed)
        with self._cv:
            for node in (*missing, *stale):
                self._backlog[node.id] = _Make(node)
            self._counts["dropped"] += len(orphans)
            self._cv.notify_all()
        logger.info(
            "meaning reconcile: %d node(s), %d missing, %d stale, %d orphan(s) dropped",
            len(listed),
            len(missing),
            len(stale),
            len(orphans),
        )
        return ReconcileReport(len(listed), len(missing), len(stale), len(orphans))

    def rebuild(
        self,
        nodes: Iterable[NodeRecord],
        progress: Callable[[int, int], None] | None = None,
        *,
        only_gaps: bool = False,
        workers: int = 4,
    ) -> RebuildReport:
        """Re-make meanings in the caller's thread (the CLI's ``sidecar rebuild``)."""
        return rebuild_meanings(
            self._sidecar,
            self._provider,
            nodes,
            only_gaps=only_gaps,
            workers=workers,
            progress=progress,
            timeout_s=self._timeout_s,
        )

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> None:
        with self._cv:
            if self._thread is not None:
                return
            self._thread = threading.Thread(
                target=self._run, name="kenning-meaning-maintainer", daemon=True
            )
            self._thread.start()

    def close(self, timeout_s: float = 10.0) -> None:
        """Stop the worker; unfinished work is left for the next reconcile."""
        with self._cv:
            self._stopping = True
            self._cv.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
            if thread.is_alive():
                logger.warning("meaning maintainer still busy after %.1fs; leaving it", timeout_s)

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until nothing is queued, pending or in flight; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._cv:
            while self._queue or self._backlog or self._retry or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cv.wait(left)
            return True

    def stats(self) -> dict[str, int]:
        with self._cv:
            return {
                **self._counts,
                "queued": len(self._queue),
                "backlog": len(self._backlog),
                "retry_pending": len(self._retry),
            }

    # -- the worker -------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._provider.warm_up()
        except Exception as exc:
            logger.info("meaning provider not ready (%s); work waits for it", exc)
        while True:
            job = self._next_job()
            if job is None:
                return
            try:
                if isinstance(job, _Drop):
                    self._do_drop(job.node_id)
                else:
                    self._do_make(job)
            finally:
                with self._cv:
                    self._busy = False
                    self._cv.notify_all()

    def _next_job(self) -> _Make | _Drop | None:
        with self._cv:
            while not self._stopping:
                now = time.monotonic()
                paused = now < self._pause_until
                while self._queue:
                    job = self._queue.popleft()
                    if isinstance(job, _Drop) or not paused:
                        self._busy = True
                        return job
                    # The provider is failing: park the node instead of
                    # letting new writes pile up behind the pause.
                    self._backlog[job.node.id] = job
                if not paused:
                    if self._retry and self._retry[0][0] <= now:
                        self._busy = True
                        return heapq.heappop(self._retry)[2]
                    if self._backlog:
                        self._busy = True
                        return self._backlog.popitem(last=False)[1]
                wake = [self._pause_until - now] if paused else []
                if self._retry:
                    wake.append(self._retry[0][0] - now)
                self._cv.wait(max(min(wake), 0.001) if wake else None)
            return None

    def _do_drop(self, node_id: str) -> None:
        with self._cv:
            self._backlog.pop(node_id, None)
            kept = [item for item in self._retry if item[2].node.id != node_id]
            if len(kept) != len(self._retry):
                heapq.heapify(kept)
                self._retry = kept
        try:
            if self._sidecar.drop(node_id):
                with self._cv:
                    self._counts["dropped"] += 1
        except (OSError, StoreError):
            logger.exception("could not drop a meaning; reconcile will retry")

    def _do_make(self, job: _Make) -> None:
        node = job.node
        digest = source_hash(node)
        held = self._sidecar.get(node.id)
        if held is not None and held.source_hash == digest:
            with self._cv:
                self._counts["unchanged"] += 1
            return
        try:
            claim = self._sidecar.claim(node.id, digest)
        except Exception as exc:
            self._failed(job, exc)
            return
        if claim.verdict == "done":
            with self._cv:
                self._counts["made_elsewhere"] += 1
            return
        if claim.verdict == "held":
            self._defer(job, claim.until_s)
            return
        try:
            meaning = compress(self._provider, node, timeout_s=self._timeout_s)
            self._sidecar.put(node.id, meaning, digest, order=node.tick)
        except Exception as exc:
            self._release(node.id)
            self._failed(job, exc)
            return
        self._release(node.id)
        with self._cv:
            self._counts["made"] += 1
            self._failures_in_row = 0
            self._pause_until = 0.0

    def _release(self, node_id: str) -> None:
        try:
            self._sidecar.release(node_id)
        except Exception as exc:
            # The claim expires on its own; until then the others wait for it.
            logger.info("could not release the claim on %s (%s)", node_id, exc)

    def _defer(self, job: _Make, until_s: float) -> None:
        """Look again when the holder has likely finished, or its claim has run out."""
        wait = max(min(until_s, self._recheck_s), 0.0)
        with self._cv:
            self._counts["deferred"] += 1
            heapq.heappush(self._retry, (time.monotonic() + wait, next(self._tie), job))
            self._cv.notify_all()

    def _failed(self, job: _Make, exc: Exception) -> None:
        with self._cv:
            self._counts["failed"] += 1
            self._failures_in_row += 1
            pause = min(self._backoff_s * 2 ** (self._failures_in_row - 1), self._max_backoff_s)
            now = time.monotonic()
            self._pause_until = now + pause
            attempts = job.attempts + 1
            if attempts >= self._max_attempts:
                self._counts["abandoned"] += 1
                logger.warning(
                    "no meaning for %s after %d attempts (%s); the next reconcile retries it",
                    job.node.id,
                    attempts,
                    exc,
                )
                return
            heapq.heappush(self._retry, (now + pause, next(self._tie), _Make(job.node, attempts)))
        logger.info(
            "meaning for %s failed (%s); retrying in %.1fs",
            job.node.id,
            exc,
            pause,
            exc_info=not isinstance(exc, MatcherError),
        )
