"""The infusion log's writer: one entry per prompt, from what the infusion delivered.

The pipeline hands it the same facts it stamps the ledger with (the ids rendered
as bodies and as STANDING handles, and what the budget cut), never what was merely
selected. The prompt is kept as its SHA-256 and length unless ``keep_prompts`` is
on. Writing can never cost the answer: a failure is logged (without content) and
the turn goes on. Retention is enforced here, every ``PRUNE_EVERY`` entries, so the
log stays bounded without a sweeper of its own.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Final

from kenning_encounter.store.infusion_log import InfusionLogs, LogEntry

log = logging.getLogger(__name__)

PRUNE_EVERY: Final = 100
PRUNE_BATCH: Final = 1_000


class InfusionRecorder:
    def __init__(
        self,
        logs: InfusionLogs,
        *,
        keep_per_session: int,
        retention_s: float,
        keep_prompts: bool = False,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._logs = logs
        self._keep = keep_per_session
        self._retention_s = retention_s
        self._keep_prompts = keep_prompts
        self._clock = wall_clock
        self._lock = threading.Lock()
        self._since_prune = PRUNE_EVERY  # the first entry prunes what a past run left

    def record(
        self,
        session: str,
        *,
        turn: int,
        at: float,
        prompt: str,
        channel: str,
        degraded: bool,
        reason: str | None,
        bodies: Sequence[str],
        standing: Sequence[str],
        cut: Sequence[str],
        silent: bool,
    ) -> None:
        entry = LogEntry(
            key=uuid.uuid4().hex,
            session=session,
            at=at,
            turn=turn,
            channel=channel,
            degraded=degraded,
            reason=reason,
            bodies=tuple(bodies),
            standing=tuple(standing),
            cut=tuple(cut),
            silent=silent,
            prompt_sha256=hashlib.sha256(prompt.encode("utf-8")).hexdigest(),
            prompt_chars=len(prompt),
            prompt=prompt if self._keep_prompts else None,
        )
        try:
            self._logs.append(entry, keep=self._keep)
            self._maybe_prune()
        except Exception as exc:
            log.warning("could not write the infusion log (%s)", type(exc).__name__)

    def _maybe_prune(self) -> None:
        with self._lock:
            self._since_prune += 1
            if self._since_prune < PRUNE_EVERY:
                return
            self._since_prune = 0
        before = self._clock() - self._retention_s
        while self._logs.prune(before, limit=PRUNE_BATCH) >= PRUNE_BATCH:
            pass
