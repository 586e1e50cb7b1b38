"""Retrieval metrics for one question, and their aggregation per category.

For a question with evidence set E and the first k selected turns S_k:
- recall_any@k: 1 if any of E is in S_k, else 0;
- recall@k (LoCoMo's fractional recall): |E ∩ S_k| / |E|;
- recall_all@k: 1 if all of E is in S_k, else 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

HEADLINE_CATEGORIES = (1, 2, 3, 4)
ADVERSARIAL_CATEGORY = 5
CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}


def recall_any(selected: Sequence[str], evidence: Iterable[str], k: int) -> float:
    top = set(selected[:k])
    return 1.0 if any(e in top for e in evidence) else 0.0


def recall_fraction(selected: Sequence[str], evidence: Iterable[str], k: int) -> float:
    wanted = set(evidence)
    if not wanted:
        raise ValueError("a question without evidence cannot be scored; drop it first")
    return len(wanted & set(selected[:k])) / len(wanted)


def recall_all(selected: Sequence[str], evidence: Iterable[str], k: int) -> float:
    return 1.0 if set(evidence) <= set(selected[:k]) else 0.0


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one retriever did on one question."""

    conversation: str
    index: int
    category: int
    selected: tuple[str, ...]  # dia_ids, best first
    evidence: tuple[str, ...]
    payload_chars: dict[int, int]  # k -> characters delivered for the first k


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100); 0.0 for an empty sequence."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[rank - 1])


def summarize(outcomes: Sequence[Outcome], ks: Sequence[int]) -> dict[str, float]:
    """Mean metrics over outcomes: recall_any@k, recall@k, recall_all@k, payload chars."""
    summary: dict[str, float] = {"questions": float(len(outcomes))}
    for k in ks:
        if outcomes:
            n = len(outcomes)
            summary[f"recall_any@{k}"] = (
                sum(recall_any(o.selected, o.evidence, k) for o in outcomes) / n
            )
            summary[f"recall@{k}"] = (
                sum(recall_fraction(o.selected, o.evidence, k) for o in outcomes) / n
            )
            summary[f"recall_all@{k}"] = (
                sum(recall_all(o.selected, o.evidence, k) for o in outcomes) / n
            )
            chars = [float(o.payload_chars[k]) for o in outcomes]
            summary[f"payload_chars_mean@{k}"] = sum(chars) / n
            summary[f"payload_chars_p95@{k}"] = percentile(chars, 95)
        else:
            for name in (
                "recall_any",
                "recall",
                "recall_all",
                "payload_chars_mean",
                "payload_chars_p95",
            ):
                summary[f"{name}@{k}"] = 0.0
    return summary
