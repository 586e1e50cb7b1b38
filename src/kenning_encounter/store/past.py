"""Records of the past beside the memory (store/ops/past.py writes and reads them)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class StatusMove:
    """A node's status moved from ``before`` to ``after`` at ``tick``, ``seq``-th in its write."""

    node: str
    tick: int
    seq: int
    before: str | None
    after: str | None
