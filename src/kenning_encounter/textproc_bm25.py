"""BM25, the one weighing of words the lexical ranking and the search tool share.

The statistics it reads (``TermStats``) are the caller's: the store counts them over
what the caller may see (store/port.py ``fulltext_stats``), so a score computed here
says nothing of a document the caller may not see. A text index's own scores count
every document the index holds, withheld ones and, on a shared Neo4j, other
memories' too; they only propose candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final, Protocol

from kenning_encounter.textproc import tokenize

K1: Final = 1.2  # term-frequency saturation
B: Final = 0.75  # length normalisation


def finite_or_zero(value: float) -> float:
    """``value`` when it is a finite non-negative number, else 0."""
    return value if math.isfinite(value) and value > 0 else 0.0


def bm25_weight(tf: int, length: int, avg_len: float, k1: float, b: float) -> float:
    """BM25's saturated term-frequency factor; finite and non-negative for any input.

    A mean length that is not a positive finite number (an empty or damaged
    index) reads every document as of average length; one below a token (which
    would turn every length into an overflowing ratio) reads as one token."""
    if tf <= 0:
        return 0.0
    return saturated(tf, length_norm(length, avg_len, b), k1)


def length_norm(length: int, avg_len: float, b: float) -> float:
    """BM25's length normalisation of a document (``bm25_weight``'s reading of a broken
    mean length included): one per document, shared by all its terms."""
    ratio = max(0, length) / max(avg_len, 1.0) if math.isfinite(avg_len) and avg_len > 0 else 1.0
    return max(0.0, 1.0 - b + b * ratio)


def saturated(tf: int, norm: float, k1: float) -> float:
    denominator = tf + k1 * norm
    return finite_or_zero(tf * (k1 + 1.0) / denominator) if denominator > 0 else 0.0


class TermStats(Protocol):
    """Document statistics of the indexed corpus, in the tokenizer's terms."""

    @property
    def n_docs(self) -> int: ...

    @property
    def avg_len(self) -> float: ...

    def doc_freq(self, term: str) -> int: ...


def idf(stats: TermStats, term: str) -> float:
    """BM25's IDF, kept positive by the +1 inside the logarithm.

    The statistics come from an index that may disagree with itself (a frequency
    counting deleted documents, a count read a moment apart), so the frequency is
    held within [0, documents] first: the logarithm's argument then stays above 1
    and the weight finite and positive, whatever the index said."""
    n = max(0, stats.n_docs)
    df = min(max(0, stats.doc_freq(term)), n)
    return finite_or_zero(math.log(1.0 + (n - df + 0.5) / (df + 0.5)))


class Bm25:
    """BM25 of documents for one query's ``terms`` (each counted once) over ``stats``:
    the weights read once, then any number of documents scored by their tokens."""

    __slots__ = ("_avg_len", "_b", "_k1", "_weights")

    def __init__(self, terms: Iterable[str], stats: TermStats, *, k1: float = K1, b: float = B):
        self._weights = {t: idf(stats, t) for t in dict.fromkeys(terms)}
        self._avg_len = stats.avg_len
        self._k1, self._b = k1, b

    def __call__(self, tokens: Sequence[str]) -> float:
        if not tokens:
            return 0.0
        norm = length_norm(len(tokens), self._avg_len, self._b)
        score = 0.0
        for term, weight in self._weights.items():
            tf = tokens.count(term)
            if tf > 0:
                score += weight * saturated(tf, norm, self._k1)
        return finite_or_zero(score)


MAX_TERMS: Final = 64  # a query's terms the text indexes look for, the first this many


def query_terms(text: str) -> list[str]:
    """The terms a text index looks for when asked ``text``: each token once, in order."""
    return list(dict.fromkeys(tokenize(text)))[:MAX_TERMS]
