"""Run retrievers over LoCoMo conversations and score them side by side."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from bench.locomo.data import Conversation
from bench.locomo.retrievers import Retriever, Selection
from bench.locomo.scoring import (
    ADVERSARIAL_CATEGORY,
    CATEGORY_NAMES,
    HEADLINE_CATEGORIES,
    Outcome,
    percentile,
    summarize,
)

log = logging.getLogger(__name__)

KS = (5, 10)


def payload_chars(selection: Selection, k: int) -> int:
    """Characters delivered for the first k: the formatted payload when there is one,
    else the selected observations' text, one per line."""
    if selection.payload is not None:
        return len(selection.payload)
    top = selection.ranked[:k]
    return sum(len(n.description) for n in top) + max(0, len(top) - 1)


@dataclass(frozen=True, slots=True)
class RetrieverRun:
    name: str
    outcomes: tuple[Outcome, ...]
    select_ms: tuple[float, ...]  # wall time of each select call


def run_retriever(retriever: Retriever, conversations: Sequence[Conversation]) -> RetrieverRun:
    outcomes: list[Outcome] = []
    timings: list[float] = []
    limit = max(KS)
    for conv in conversations:
        searcher = retriever.open(conv)
        for q in conv.questions:
            started = time.perf_counter()
            selection = searcher.select(q.text, limit)
            timings.append((time.perf_counter() - started) * 1000.0)
            outcomes.append(
                Outcome(
                    conversation=conv.sample_id,
                    index=q.index,
                    category=q.category,
                    selected=tuple(n.name for n in selection.ranked),
                    evidence=q.evidence,
                    payload_chars={k: payload_chars(selection, k) for k in KS},
                )
            )
        log.info("%s: %s done (%d questions)", retriever.name, conv.sample_id, len(conv.questions))
    return RetrieverRun(retriever.name, tuple(outcomes), tuple(timings))


def breakdown(run: RetrieverRun, groups: dict[str, set[str]] | None = None) -> dict[str, Any]:
    """Headline (categories 1-4), each category, adversarial, and per conversation group."""
    outs = run.outcomes
    headline = [o for o in outs if o.category in HEADLINE_CATEGORIES]
    result: dict[str, Any] = {
        "headline": summarize(headline, KS),
        "adversarial": summarize([o for o in outs if o.category == ADVERSARIAL_CATEGORY], KS),
        "categories": {
            f"{c} {CATEGORY_NAMES[c]}": summarize([o for o in outs if o.category == c], KS)
            for c in sorted(CATEGORY_NAMES)
        },
        "select_ms_p50": percentile(run.select_ms, 50),
        "select_ms_p95": percentile(run.select_ms, 95),
    }
    if groups:
        result["groups"] = {
            name: summarize([o for o in headline if o.conversation in members], KS)
            for name, members in groups.items()
        }
    return result


def evaluate(
    retrievers: Sequence[Retriever],
    conversations: Sequence[Conversation],
    groups: dict[str, set[str]] | None = None,
    *,
    keep_outcomes: bool = False,
) -> dict[str, Any]:
    """Every retriever over the same conversations, in one run: a JSON-ready report."""
    report: dict[str, Any] = {
        "conversations": [c.sample_id for c in conversations],
        "questions": sum(len(c.questions) for c in conversations),
        "dropped": [asdict(d) for c in conversations for d in c.dropped],
        "unresolved_evidence": [
            {"conversation": c.sample_id, "index": q.index, "ids": list(q.unresolved)}
            for c in conversations
            for q in c.questions
            if q.unresolved
        ],
        "ks": list(KS),
        "retrievers": {},
    }
    for retriever in retrievers:
        run = run_retriever(retriever, conversations)
        entry = breakdown(run, groups)
        if keep_outcomes:
            entry["outcomes"] = [asdict(o) for o in run.outcomes]
        report["retrievers"][run.name] = entry
    return report


def _row(label: str, name: str, s: dict[str, float]) -> str:
    cells = [f"{s[f'{m}@{k}']:.3f}" for k in KS for m in ("recall_any", "recall", "recall_all")]
    chars = [f"{s[f'payload_chars_mean@{k}']:.0f}/{s[f'payload_chars_p95@{k}']:.0f}" for k in KS]
    return (
        f"{label:<22} {name:<9} {int(s['questions']):>5}  "
        + "  ".join(f"{c:>6}" for c in cells)
        + "".join(f"  {c:>10}" for c in chars)
    )


def format_table(report: dict[str, Any]) -> str:
    header = (
        f"{'slice':<22} {'retriever':<9} {'n':>5}  "
        + "  ".join(f"{m + '@' + str(k):>6}" for k in KS for m in ("any", "frac", "all"))
        + "".join(f"  {'chars@' + str(k):>10}" for k in KS)
    )
    lines = [header, "-" * len(header)]
    retrievers: dict[str, Any] = report["retrievers"]
    slices: list[tuple[str, list[str]]] = [("categories 1-4", ["headline"])]
    first = next(iter(retrievers.values()), {})
    for group in first.get("groups", {}):
        slices.append((f"  {group} (1-4)", ["groups", group]))
    for cat in first.get("categories", {}):
        if int(cat.split()[0]) in HEADLINE_CATEGORIES:
            slices.append((f"  cat {cat}", ["categories", cat]))
    slices.append(("adversarial (5)", ["adversarial"]))
    for label, path in slices:
        for name, entry in retrievers.items():
            node: Any = entry
            for key in path:
                node = node[key]
            lines.append(_row(label, name, node))
    lines.append("(recall: any / LoCoMo fractional / all; chars: payload mean/p95)")
    lines.append("")
    for name, entry in retrievers.items():
        lines.append(
            f"{name}: select p50 {entry['select_ms_p50']:.2f} ms, p95 {entry['select_ms_p95']:.2f} ms"
        )
    dropped = report["dropped"]
    lines.append(f"questions scored: {report['questions']}; dropped: {len(dropped)}")
    for d in dropped:
        lines.append(
            f"  dropped {d['conversation']}#{d['index']} (cat {d['category']}): {d['reason']} {list(d['evidence'])}"
        )
    for u in report["unresolved_evidence"]:
        lines.append(f"  partly unresolved {u['conversation']}#{u['index']}: {u['ids']}")
    return "\n".join(lines)
