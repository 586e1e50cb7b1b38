"""The development split's misses, to read before tuning (``python -m bench.locomo.misses``).

For each question of the development conversations whose evidence is not in the
first k selected, it prints the question, each evidence turn (its session's date and
where it ranked, "-" when not at all) and what was selected instead. Only the
development split is ever printed: the holdout is a check a change must pass, never
a source of ideas, so its misses are not listed whatever is asked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.locomo import DEFAULT_DATA, DEV_CONVERSATIONS
from bench.locomo.data import Conversation, load
from bench.locomo.pipeline import PipelineRetriever
from bench.locomo.retrievers import LexicalRetriever, Retriever
from bench.locomo.scoring import HEADLINE_CATEGORIES

DEPTH = 10  # how far the ranking is read to say where the evidence stood


@dataclass(frozen=True, slots=True)
class Miss:
    conversation: str
    index: int
    category: int
    question: str
    evidence: tuple[tuple[str, str, int | None, str], ...]  # (id, date, rank, text)
    selected: tuple[tuple[str, str, str], ...]  # (id, date, text), best first


def find_misses(
    retriever: Retriever,
    conversations: Sequence[Conversation],
    *,
    k: int = 5,
    categories: Sequence[int] = HEADLINE_CATEGORIES,
) -> list[Miss]:
    """The questions of the development conversations whose evidence is not in the first
    ``k``; the other conversations are skipped."""
    found: list[Miss] = []
    for conv in conversations:
        if conv.sample_id not in DEV_CONVERSATIONS:
            continue
        searcher = retriever.open(conv)
        turns = conv.by_dia_id()
        opened = {e.name: e.opened_at[:10] for e in conv.encounters}
        date = {name: opened.get(node.encounter or "", "?") for name, node in turns.items()}
        for q in conv.questions:
            if q.category not in categories:
                continue
            names = [n.name for n in searcher.select(q.text, max(k, DEPTH)).ranked]
            if any(e in names[:k] for e in q.evidence):
                continue
            found.append(
                Miss(
                    conv.sample_id,
                    q.index,
                    q.category,
                    q.text,
                    tuple(
                        (
                            e,
                            date[e],
                            names.index(e) + 1 if e in names else None,
                            turns[e].description,
                        )
                        for e in q.evidence
                    ),
                    tuple((n, date[n], turns[n].description) for n in names[:k]),
                )
            )
    return found


def render(misses: Sequence[Miss], width: int = 220) -> str:
    lines: list[str] = []
    for m in misses:
        lines.append(f"=== {m.conversation}#{m.index} cat {m.category}: {m.question}")
        for dia_id, when, rank, text in m.evidence:
            lines.append(f"   evidence {dia_id} [{when}] rank {rank or '-'}: {text[:width]}")
        for dia_id, when, text in m.selected:
            lines.append(f"   selected {dia_id} [{when}]: {text[:width]}")
    lines.append(f"misses: {len(misses)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.locomo.misses",
        description="The development split's misses (the holdout's are never listed).",
    )
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--retriever", choices=("pipeline", "lexical"), default="pipeline", help="whose misses"
    )
    parser.add_argument("--k", type=int, default=5, help="a miss: no evidence in the first k")
    parser.add_argument(
        "--category", type=int, action="append", choices=HEADLINE_CATEGORIES, help="repeatable"
    )
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"LoCoMo data not found at {args.data}; pass --data PATH", file=sys.stderr)
        return 2
    retriever: Retriever = (
        PipelineRetriever() if args.retriever == "pipeline" else LexicalRetriever()
    )
    found = find_misses(
        retriever, load(args.data), k=args.k, categories=args.category or HEADLINE_CATEGORIES
    )
    print(render(found))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
