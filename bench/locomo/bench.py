"""LoCoMo for ``python -m bench``: the real pipeline, our lexical ranking alone, BM25, recency."""

from __future__ import annotations

from typing import Any

from bench.locomo import DEFAULT_DATA, DEV_CONVERSATIONS
from bench.locomo.data import load
from bench.locomo.pipeline import PipelineRetriever
from bench.locomo.retrievers import Bm25Retriever, LexicalRetriever, RecencyRetriever, Retriever
from bench.locomo.runner import evaluate


def run(quick: bool = False) -> dict[str, Any]:
    if not DEFAULT_DATA.is_file():
        return {"skipped": f"LoCoMo data not found at {DEFAULT_DATA}"}
    conversations = load(DEFAULT_DATA, limit=1 if quick else None)
    ids = {c.sample_id for c in conversations}
    groups = {"dev": ids & DEV_CONVERSATIONS, "holdout": ids - DEV_CONVERSATIONS}
    retrievers: list[Retriever] = [
        PipelineRetriever(),
        LexicalRetriever(),
        Bm25Retriever(),
        RecencyRetriever(),
    ]
    report = evaluate(retrievers, conversations, {k: v for k, v in groups.items() if v})
    rows: list[dict[str, Any]] = []
    for name, entry in report["retrievers"].items():
        for slice_name in ("headline", "adversarial"):
            scores: dict[str, float] = entry[slice_name]
            rows.append(
                {
                    "retriever": name,
                    "slice": "categories 1-4" if slice_name == "headline" else "adversarial (5)",
                    **{
                        k: round(v, 3)
                        for k, v in scores.items()
                        if k.startswith(("recall_any", "recall@", "payload_chars_mean"))
                    },
                    "select_p95_ms": round(entry["select_ms_p95"], 1),
                }
            )
    return {
        "goals": "pipeline, categories 1-4: recall_any@5 >= 0.65, @10 >= 0.72",
        "rows": rows,
        "report": report,
    }
