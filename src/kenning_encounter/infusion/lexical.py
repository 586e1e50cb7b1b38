"""Lexical selection: the path taken when no matcher model answers.

Two pure steps, no store access:

``extract_terms(prompt, trajectory)`` turns the prompt and the previous user
turns into a weighted ``Query``: content terms (the prompt above older turns),
and the time the prompt points at, if it names one.

``rank_candidates(query, candidates, context, limit)`` re-ranks the nodes a
fulltext index proposed, using what the graph says about them cheaply:
- lexical evidence, scored BM25-style with the query's term weights;
- the encounter: knowledge about one matter is recorded together, so the
  evidence of all candidates of an encounter is pooled and members of strongly
  matching encounters rise;
- co-occurrence: a node recorded next to a strong match (adjacent ticks in the
  same encounter) inherits part of its score — the answer often sits beside
  the words that name the matter;
- time: when the prompt names a time, encounters opened in that window rise.

The pipeline supplies candidates (fulltext hits, plus their encounter
neighbours with a zero retrieval score so propagation can reach them), the
corpus statistics the index was built from, and each encounter's opening time.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from kenning_encounter.infusion.text import (
    STOPWORDS,
    TimeWindow,
    split_label,
    stem,
    surface_words,
    time_window,
    tokenize,
    words,
)
from kenning_encounter.store.records import NodeRecord


def bm25_weight(tf: int, length: int, avg_len: float, k1: float, b: float) -> float:
    """BM25's saturated term-frequency factor."""
    norm = 1.0 - b + b * (length / avg_len if avg_len > 0 else 1.0)
    return tf * (k1 + 1.0) / (tf + k1 * norm)


class TermStats(Protocol):
    """Document statistics of the indexed corpus, for IDF and length norms."""

    @property
    def n_docs(self) -> int: ...

    @property
    def avg_len(self) -> float: ...

    def doc_freq(self, term: str) -> int: ...


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Term statistics over node texts, tokenized by ``text.tokenize``."""

    n_docs: int
    avg_len: float
    frequencies: Mapping[str, int]

    @classmethod
    def from_token_lists(cls, docs: Iterable[Sequence[str]]) -> CorpusStats:
        df: Counter[str] = Counter()
        n = 0
        total = 0
        for doc in docs:
            n += 1
            total += len(doc)
            df.update(set(doc))
        return cls(n, total / n if n else 0.0, dict(df))

    @classmethod
    def from_texts(cls, texts: Iterable[str]) -> CorpusStats:
        return cls.from_token_lists(tokenize(t) for t in texts)

    def doc_freq(self, term: str) -> int:
        return self.frequencies.get(term, 0)

    def idf(self, term: str) -> float:
        return idf(self, term)


def idf(stats: TermStats, term: str) -> float:
    """BM25's IDF, floored at zero by the +1 inside the logarithm."""
    df = stats.doc_freq(term)
    return math.log(1.0 + (stats.n_docs - df + 0.5) / (df + 0.5))


@dataclass(frozen=True, slots=True)
class Term:
    key: str  # stemmed token, as ``text.tokenize`` makes it
    weight: float
    surface: str  # a form the user wrote, for the payload's "why"
    proper: bool = False  # written capitalized mid-sentence: probably a name


@dataclass(frozen=True, slots=True)
class Query:
    terms: tuple[Term, ...]
    window: TimeWindow | None = None  # the time the prompt points at, if any
    asks_when: bool = False  # the prompt asks for a time

    def weights(self) -> dict[str, float]:
        return {t.key: t.weight for t in self.terms}

    @property
    def empty(self) -> bool:
        return not self.terms


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """Knobs of the lexical path; the defaults are the evaluated preset."""

    trajectory_decay: float = 0.5  # weight of the previous turn; older turns decay geometrically
    trajectory_turns: int = 6
    proper_boost: float = 1.0  # extra weight for names the user capitalized
    k1: float = 1.2
    b: float = 0.75
    neighbour_weight: float = 0.3
    neighbour_decay: float = 0.5
    neighbour_radius: int = 2
    encounter_weight: float = 0.3
    encounter_top: int = 3
    time_weight: float = 0.5
    label_boost: float = 0.0
    label_in_text: bool = True
    neighbour_forward: float = 1.0
    neighbour_backward: float = 1.0
    question_boost: float = 0.0


@dataclass(frozen=True, slots=True)
class Candidate:
    node: NodeRecord
    retrieval_score: float = 0.0  # the generator's score; 0 for a context-only neighbour


@dataclass(frozen=True, slots=True)
class GraphContext:
    stats: TermStats
    encounter_opened: Mapping[str, datetime] = field(default_factory=dict[str, datetime])


@dataclass(frozen=True, slots=True)
class Scored:
    node: NodeRecord
    score: float
    matched: tuple[str, ...]  # surfaces of the query terms found in the node
    why: tuple[str, ...]  # short reasons, for the signed payload


def _is_proper(prompt: str, surface: str) -> bool:
    # Capitalized somewhere other than right after a sentence break.
    start = 0
    while (pos := prompt.find(surface, start)) >= 0:
        start = pos + 1
        if not surface[:1].isupper():
            return False
        before = prompt[:pos].rstrip()
        if before and before[-1] not in ".!?:\n\"'(":
            return True
    return False


def extract_terms(
    prompt: str,
    trajectory: Sequence[str] = (),
    *,
    now: datetime | None = None,
    config: LexicalConfig | None = None,
) -> Query:
    """Weighted terms of a prompt and its trajectory (previous user turns, oldest first)."""
    cfg = config or LexicalConfig()
    weights: dict[str, float] = {}
    surfaces: dict[str, str] = {}
    proper: set[str] = set()
    turns = [prompt, *reversed(trajectory[-cfg.trajectory_turns :])] if cfg.trajectory_turns else [prompt]
    for age, turn in enumerate(turns):
        turn_weight = cfg.trajectory_decay**age
        raw_words = list(_surface_words(turn))
        for surface, key in raw_words:
            if key not in weights or weights[key] < turn_weight:
                weights[key] = turn_weight
            surfaces.setdefault(key, surface)
            if age == 0 and _is_proper(turn, surface):
                proper.add(key)
    terms = tuple(
        Term(key, w * (1.0 + cfg.proper_boost if key in proper else 1.0), surfaces[key], key in proper)
        for key, w in weights.items()
    )
    lowered = prompt.lower()
    asks_when = lowered.lstrip().startswith("when") or any(
        cue in lowered for cue in ("what date", "what time", "what year", "what month", "how long ago")
    )
    return Query(terms, time_window(prompt, now=now), asks_when)


def _surface_words(text: str) -> Iterable[tuple[str, str]]:
    for surface, word in surface_words(text):
        if word not in STOPWORDS:
            yield surface, stem(word)


def _label_matches(label: str | None, keys: Iterable[str]) -> bool:
    if not label:
        return False
    parts = [stem(w) for w in words(label)]
    for key in keys:
        for part in parts:
            if key == part or (len(key) >= 3 and part.startswith(key)):
                return True
    return False


def rank_candidates(
    query: Query,
    candidates: Sequence[Candidate],
    context: GraphContext,
    limit: int,
    *,
    config: LexicalConfig | None = None,
) -> list[Scored]:
    """Order candidates by lexical evidence reinforced by encounter, neighbours and time."""
    cfg = config or LexicalConfig()
    if not candidates or limit <= 0:
        return []
    weights = query.weights()
    surfaces = {t.key: t.surface for t in query.terms}
    stats = context.stats
    idfs = {key: idf(stats, key) for key in weights}
    lexical: list[float] = []
    matched: list[tuple[str, ...]] = []
    attributed: list[bool] = []
    for cand in candidates:
        label, body = split_label(cand.node.description)
        is_attr = _label_matches(label, weights)
        attributed.append(is_attr)
        text = f"{cand.node.name} {cand.node.description if cfg.label_in_text else body}"
        tokens = tokenize(text)
        counts = Counter(tokens)
        score = 0.0
        hits: list[str] = []
        for key, weight in weights.items():
            tf = counts.get(key, 0)
            if tf:
                score += weight * idfs[key] * bm25_weight(tf, len(tokens), stats.avg_len, cfg.k1, cfg.b)
                hits.append(surfaces[key])
        if is_attr:
            score *= 1.0 + cfg.label_boost
        lexical.append(score)
        matched.append(tuple(hits))

    # Pool evidence per encounter: the mean of its best few candidate scores.
    by_encounter: dict[str, list[int]] = {}
    for i, cand in enumerate(candidates):
        if cand.node.encounter is not None:
            by_encounter.setdefault(cand.node.encounter, []).append(i)
    pooled: dict[str, float] = {}
    for name, members in by_encounter.items():
        best = sorted((lexical[i] for i in members), reverse=True)[: cfg.encounter_top]
        pooled[name] = sum(best) / cfg.encounter_top
    top_pool = max(pooled.values(), default=0.0)
    top_lexical = max(lexical)

    # Neighbours: candidates of the same encounter within a few ticks. What
    # follows a match inherits more than what precedes it: a reply follows
    # the turn that names the matter.
    spill = [0.0] * len(candidates)
    for members in by_encounter.values():
        ordered = sorted(members, key=lambda i: candidates[i].node.tick)
        for a_pos, a in enumerate(ordered):
            asks = candidates[a].node.description.rstrip().endswith("?")
            for b in ordered[a_pos + 1 : a_pos + 1 + cfg.neighbour_radius * 4]:
                gap = max(1, candidates[b].node.tick - candidates[a].node.tick)
                if gap > cfg.neighbour_radius:
                    break
                share = cfg.neighbour_decay ** (gap - 1)
                fwd = cfg.neighbour_forward * (1.0 + cfg.question_boost if asks else 1.0)
                spill[b] = max(spill[b], fwd * share * lexical[a] * (1.0 + cfg.label_boost if attributed[b] and not attributed[a] else 1.0))
                spill[a] = max(spill[a], cfg.neighbour_backward * share * lexical[b])

    scored: list[Scored] = []
    for i, cand in enumerate(candidates):
        enc = cand.node.encounter
        enc_share = pooled.get(enc, 0.0) / top_pool if enc is not None and top_pool > 0 else 0.0
        score = lexical[i] + cfg.neighbour_weight * spill[i] + cfg.encounter_weight * enc_share * top_lexical
        why: list[str] = []
        if matched[i]:
            why.append("matched " + ", ".join(matched[i]))
        if enc is not None and query.window is not None:
            opened = context.encounter_opened.get(enc)
            fit = query.window.match(opened) if opened is not None else 0.0
            if fit > 0:
                score *= 1.0 + cfg.time_weight * fit
                why.append(f"recorded in the time asked about ({query.window.label})")
        if score > 0:
            scored.append(Scored(cand.node, score, matched[i], tuple(why)))
    scored.sort(key=lambda s: (-s.score, s.node.tick))
    return scored[:limit]
