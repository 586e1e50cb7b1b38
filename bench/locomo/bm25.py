"""Plain Okapi BM25 over a small in-memory corpus, with the lexical path's tokenizer.

It serves twice: as the evaluation's BM25 baseline, and as the candidate
generator in front of ``rank_candidates`` (the part a tantivy index plays in the
product). Both use the same tokenizer as the lexical path, so the baseline
differs from ours only in what happens after candidate generation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from kenning_encounter.infusion.lexical import CorpusStats, bm25_weight, idf


class Bm25Index:
    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75) -> None:
        """Index documents given as token lists (``text.tokenize`` output)."""
        self.k1 = k1
        self.b = b
        self.stats = CorpusStats.from_token_lists(docs)
        self._lengths = [len(d) for d in docs]
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for position, doc in enumerate(docs):
            for term, tf in Counter(doc).items():
                self._postings.setdefault(term, []).append((position, tf))

    def search(self, terms: Mapping[str, float], limit: int) -> list[tuple[int, float]]:
        """Best documents for weighted terms, as (position, score), best first.

        Ties are broken by position so that runs are deterministic.
        """
        scores: dict[int, float] = {}
        avg_len = self.stats.avg_len
        for term, weight in terms.items():
            postings = self._postings.get(term)
            if not postings:
                continue
            weight_idf = weight * idf(self.stats, term)
            for position, tf in postings:
                saturated = bm25_weight(tf, self._lengths[position], avg_len, self.k1, self.b)
                scores[position] = scores.get(position, 0.0) + weight_idf * saturated
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return ranked[:limit]
