"""Full rebuild of the sidecar: the work behind ``kenning-encounter sidecar rebuild``."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TextIO

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.compress import compress
from kenning_encounter.meaning.providers.base import Provider
from kenning_encounter.meaning.source import source_hash
from kenning_encounter.meaning.stored import MeaningStore
from kenning_encounter.store.records import NodeRecord

Progress = Callable[[int, int], None]  # (done, total)


@dataclass(frozen=True, slots=True)
class RebuildReport:
    nodes: int
    calls: int  # model calls made (one per target node)
    made: int
    failed: int
    dropped: int  # entries whose node no longer exists
    elapsed_s: float
    failure_reasons: dict[str, int]


def rebuild_targets(
    sidecar: MeaningStore, nodes: list[NodeRecord], *, only_gaps: bool
) -> list[NodeRecord]:
    """The nodes a rebuild calls the model for: all of them, or only missing and stale."""
    if not only_gaps:
        return list(nodes)
    return [*sidecar.missing(nodes), *sidecar.stale(nodes)]


def rebuild_meanings(
    sidecar: MeaningStore,
    provider: Provider,
    nodes: Iterable[NodeRecord],
    *,
    only_gaps: bool = False,
    workers: int = 4,
    progress: Progress | None = None,
    timeout_s: float | None = None,
) -> RebuildReport:
    """Re-make meanings, ``workers`` model calls at a time, then drop orphaned entries.

    A node whose call fails keeps the meaning it had (if any); the report counts it.
    """
    started = time.monotonic()
    listed = list(nodes)
    targets = rebuild_targets(sidecar, listed, only_gaps=only_gaps)
    total = len(targets)
    lock = threading.Lock()
    done = 0
    made = 0
    reasons: dict[str, int] = {}

    def one(node: NodeRecord) -> None:
        nonlocal done, made
        try:
            meaning = compress(provider, node, timeout_s=timeout_s)
            sidecar.put(node.id, meaning, source_hash(node), order=node.tick)
            ok, reason = True, ""
        except MatcherError as exc:
            ok, reason = False, exc.reason
        with lock:
            done += 1
            if ok:
                made += 1
            else:
                reasons[reason] = reasons.get(reason, 0) + 1
            count = done
        if progress is not None:
            progress(count, total)

    if progress is not None:
        progress(0, total)
    with ThreadPoolExecutor(
        max_workers=max(1, workers), thread_name_prefix="kenning-rebuild"
    ) as pool:
        for future in [pool.submit(one, node) for node in targets]:
            future.result()
    orphans = sidecar.orphans(n.id for n in listed)
    for node_id in orphans:
        sidecar.drop(node_id)
    return RebuildReport(
        nodes=len(listed),
        calls=total,
        made=made,
        failed=total - made,
        dropped=len(orphans),
        elapsed_s=round(time.monotonic() - started, 3),
        failure_reasons=reasons,
    )


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s"


class _Bar:
    """A progress line on stderr: redrawn in place on a terminal, every 10% otherwise."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self._stream = stream
        self._width = width
        self._tty = stream.isatty()
        self._started = time.monotonic()
        self._last_decile = -1

    def __call__(self, done: int, total: int) -> None:
        fraction = done / total if total else 1.0
        decile = int(fraction * 10)
        if not self._tty and decile == self._last_decile and done != total:
            return
        self._last_decile = decile
        elapsed = time.monotonic() - self._started
        rate = done / elapsed if elapsed > 0 else 0.0
        eta = _clock((total - done) / rate) if rate > 0 else "?"
        filled = int(fraction * self._width)
        line = (
            f"[{'#' * filled}{'.' * (self._width - filled)}] {done}/{total} "
            f"{fraction:4.0%}  {rate:.1f} calls/s  eta {eta}"
        )
        self._stream.write(("\r" + line) if self._tty else line + "\n")
        if self._tty and done == total:
            self._stream.write("\n")
        self._stream.flush()


def run_sidecar_rebuild(
    nodes: Iterable[NodeRecord],
    provider: Provider,
    sidecar: MeaningStore,
    *,
    only_gaps: bool = False,
    workers: int = 4,
    stream: TextIO | None = None,
) -> int:
    """The CLI command: estimate, rebuild with a progress bar on stderr, summarise.

    Returns the exit status: 0 when every call succeeded, 1 otherwise, 2 when
    the provider cannot be used at all (no key, package missing).
    """
    out = stream if stream is not None else sys.stderr
    listed = list(nodes)
    try:
        provider.check()
    except MatcherError as exc:
        out.write(f"sidecar rebuild: cannot reach the model: {exc}\n")
        return 2
    calls = len(rebuild_targets(sidecar, listed, only_gaps=only_gaps))
    what = "missing or stale meanings" if only_gaps else "a full rebuild"
    out.write(
        f"sidecar rebuild: {len(listed)} node(s), {what}: about {calls} model call(s) "
        f"to {provider.name}/{provider.model}, {workers} at a time\n"
    )
    out.flush()
    report = rebuild_meanings(
        sidecar, provider, listed, only_gaps=only_gaps, workers=workers, progress=_Bar(out)
    )
    summary = (
        f"sidecar rebuild: made {report.made}, failed {report.failed}, "
        f"dropped {report.dropped} orphan(s) in {report.elapsed_s:.1f}s; "
        f"{len(sidecar)} meaning(s) held\n"
    )
    out.write(summary)
    if report.failure_reasons:
        causes = ", ".join(f"{k}: {v}" for k, v in sorted(report.failure_reasons.items()))
        out.write(f"sidecar rebuild: failures by cause: {causes}; run again to retry them\n")
    out.flush()
    return 0 if report.failed == 0 else 1
