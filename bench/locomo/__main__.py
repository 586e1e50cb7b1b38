"""python -m bench.locomo [--data PATH] [--json OUT] [--quick]"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path

from bench.locomo import DEFAULT_DATA, DEV_CONVERSATIONS
from bench.locomo.data import load
from bench.locomo.pipeline import PipelineRetriever
from bench.locomo.retrievers import Bm25Retriever, LexicalRetriever, RecencyRetriever, Retriever
from bench.locomo.runner import evaluate, format_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.locomo",
        description="LoCoMo retrieval evaluation: the lexical path against BM25 and recency.",
    )
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help="path to the LoCoMo JSON file"
    )
    parser.add_argument("--json", type=Path, default=None, help="write the full report here")
    parser.add_argument("--quick", action="store_true", help="first conversation only (CI smoke)")
    parser.add_argument(
        "--outcomes", action="store_true", help="keep per-question outcomes in the JSON"
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    conversations = load(args.data, limit=1 if args.quick else None)
    ids = {c.sample_id for c in conversations}
    groups = {"dev": ids & DEV_CONVERSATIONS, "holdout": ids - DEV_CONVERSATIONS}
    groups = {k: v for k, v in groups.items() if v}
    retrievers: list[Retriever] = [
        PipelineRetriever(),
        LexicalRetriever(),
        Bm25Retriever(),
        RecencyRetriever(),
    ]
    report = evaluate(retrievers, conversations, groups, keep_outcomes=args.outcomes)
    report["data"] = str(args.data)
    print(format_table(report))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
