"""The candidate window: which meanings go in the prompt when all of them would not fit.

Under the budget the prompt lists every meaning. Over it, candidates come from
the caller's ``CandidateSource`` in three streams, each with a quota of the
window (lexical hits on the prompt and trajectory, the neighbourhood of the
current and recent encounters, recency); a stream that runs short leaves its
share to the others, and whatever room is left is filled with the newest
meanings. The chosen entries are listed in creation order like the full list.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from kenning_encounter.meaning.selection import LINE_OVERHEAD
from kenning_encounter.meaning.sidecar import MeaningEntry

logger = logging.getLogger(__name__)


class CandidateSource(Protocol):
    """Implemented by the caller; each method returns node ids, best first."""

    def lexical_hits(self, text: str, limit: int) -> list[str]: ...

    def recent(self, limit: int) -> list[str]: ...

    def neighbourhood(self, limit: int) -> list[str]:
        """Nodes near the current and recent encounters."""
        ...


@dataclass(frozen=True, slots=True)
class WindowQuotas:
    """Shares of the window each stream may claim before the others fill in."""

    lexical: float = 0.5
    neighbourhood: float = 0.3
    recent: float = 0.2


@dataclass(frozen=True, slots=True)
class Window:
    entries: tuple[MeaningEntry, ...]  # in creation order
    used: bool  # False: every meaning in the pool is listed
    pool_size: int
    chars: int  # length of the rendered listing
    by_source: dict[str, int] = field(default_factory=dict[str, int])


def line_chars(entry: MeaningEntry, extra: int = 0) -> int:
    """Length of the entry's rendered line, ``"<seq>: <meaning>\\n"`` and ``extra`` (its
    date, when lines carry one)."""
    return len(str(entry.seq)) + LINE_OVERHEAD + len(entry.meaning) + extra


def _ask(name: str, call: Callable[[], list[str]]) -> list[str]:
    # A broken candidate stream narrows the window; it must not fail the match.
    try:
        return list(call())
    except Exception:
        logger.warning(
            "candidate source %s failed; the window goes without it", name, exc_info=True
        )
        return []


def fit_window(
    entries: Sequence[MeaningEntry],
    budget_chars: int,
    *,
    total_chars: int,
    excluded: Collection[str],
    lookup: Callable[[str], MeaningEntry | None],
    text: str,
    source: CandidateSource | None,
    quotas: WindowQuotas | None = None,
    extra_per_line: int = 0,
) -> Window:
    """The entries to list within ``budget_chars``, in creation order.

    ``entries`` is every held entry in creation order; the pool is those not in
    ``excluded``, and ``total_chars`` is the size of the pool's full listing
    (known without a scan, so a windowed prompt costs O(window), not O(pool)).
    ``lookup`` resolves a candidate id to its entry (None when it has none).
    ``extra_per_line`` is what each line carries beyond its handle and meaning.
    """
    pool_size = len(entries) - sum(1 for x in excluded if lookup(x) is not None)
    if total_chars <= budget_chars:
        pool = tuple(e for e in entries if e.id not in excluded) if excluded else tuple(entries)
        return Window(pool, used=False, pool_size=pool_size, chars=total_chars)

    q = quotas or WindowQuotas()
    capacity = max(1, int(budget_chars / (total_chars / max(pool_size, 1))))
    streams: list[tuple[str, list[str], float]] = []
    if source is not None:
        streams = [
            ("lexical", _ask("lexical", lambda: source.lexical_hits(text, capacity)), q.lexical),
            (
                "neighbourhood",
                _ask("neighbourhood", lambda: source.neighbourhood(capacity)),
                q.neighbourhood,
            ),
            ("recent", _ask("recent", lambda: source.recent(capacity)), q.recent),
        ]

    chosen: dict[str, MeaningEntry] = {}
    by_source = {"lexical": 0, "neighbourhood": 0, "recent": 0, "fill": 0}
    used = 0

    def take(name: str, ids: Sequence[str], limit: int) -> None:
        nonlocal used
        taken = 0
        for node_id in ids:
            if taken >= limit:
                return
            if node_id in chosen:
                continue
            entry = lookup(node_id)
            if entry is None or node_id in excluded:
                continue
            size = line_chars(entry, extra_per_line)
            if used + size > budget_chars:
                continue
            chosen[node_id] = entry
            used += size
            taken += 1
            by_source[name] += 1

    for name, ids, share in streams:
        take(name, ids, math.ceil(capacity * share))
    for name, ids, _share in streams:
        take(name, ids, len(ids))
    for entry in reversed(entries):
        if entry.id in chosen or entry.id in excluded:
            continue
        size = line_chars(entry, extra_per_line)
        if used + size > budget_chars:
            break
        chosen[entry.id] = entry
        used += size
        by_source["fill"] += 1

    ordered = tuple(sorted(chosen.values(), key=lambda e: (e.order, e.seq)))
    return Window(ordered, used=True, pool_size=pool_size, chars=used, by_source=by_source)
