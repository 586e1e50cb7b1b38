"""The retrievers the evaluation compares, behind one small interface.

A ``Retriever`` is opened on one conversation (one memory) and then answers
prompts with a ``Selection``: the observations it picked, best first, and the
payload it would deliver when it formats one. The runner only sees this
interface, so the real infusion pipeline over a real store can be swapped in
later by writing one more ``Retriever``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from bench.locomo.bm25 import Bm25Index
from bench.locomo.data import Conversation
from kenning_encounter.infusion.lexical import (
    Candidate,
    GraphContext,
    LexicalConfig,
    extract_terms,
    node_tokens,
    rank_candidates,
)
from kenning_encounter.infusion.select import WINDOW_CANDIDATES
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc import tokenize
from kenning_encounter.textproc_time import TimeWindow


@dataclass(frozen=True, slots=True)
class Selection:
    ranked: Sequence[NodeRecord]  # best first
    payload: str | None = None  # the formatted payload, when the retriever builds one


class Searcher(Protocol):
    def select(self, prompt: str, limit: int) -> Selection: ...


class Retriever(Protocol):
    @property
    def name(self) -> str: ...

    def open(self, conversation: Conversation) -> Searcher: ...


def asked_at(conversation: Conversation) -> datetime | None:
    """When the questions are put: a day after the last session opened."""
    if not conversation.encounters:
        return None
    return datetime.fromisoformat(conversation.encounters[-1].opened_at) + timedelta(days=1)


@dataclass(frozen=True, slots=True)
class _Bm25Searcher:
    nodes: Sequence[NodeRecord]
    index: Bm25Index

    def select(self, prompt: str, limit: int) -> Selection:
        terms = {t: float(n) for t, n in Counter(tokenize(prompt)).items()}
        return Selection([self.nodes[i] for i, _ in self.index.search(terms, limit)])


@dataclass(frozen=True, slots=True)
class Bm25Retriever:
    """Plain Okapi BM25 over the turns, the same tokenizer as ours."""

    k1: float = 1.2
    b: float = 0.75
    name: str = "bm25"

    def open(self, conversation: Conversation) -> Searcher:
        nodes = conversation.observations
        index = Bm25Index([node_tokens(n) for n in nodes], k1=self.k1, b=self.b)
        return _Bm25Searcher(nodes, index)


@dataclass(frozen=True, slots=True)
class _RecencySearcher:
    nodes: Sequence[NodeRecord]

    def select(self, prompt: str, limit: int) -> Selection:
        return Selection(list(reversed(self.nodes[-limit:])) if limit > 0 else [])


@dataclass(frozen=True, slots=True)
class RecencyRetriever:
    """The last k turns, whatever the prompt."""

    name: str = "recency"

    def open(self, conversation: Conversation) -> Searcher:
        return _RecencySearcher(sorted(conversation.observations, key=lambda n: n.tick))


def _opened_in(window: TimeWindow, node: NodeRecord, context: GraphContext) -> bool:
    opened = context.encounter_opened.get(node.encounter) if node.encounter else None
    return opened is not None and window.match(opened) > 0


@dataclass(frozen=True, slots=True)
class _LexicalSearcher:
    nodes: Sequence[NodeRecord]
    tokens: Sequence[tuple[str, ...]]
    index: Bm25Index
    context: GraphContext
    neighbours: Sequence[Sequence[int]]  # per position: its encounter neighbours' positions
    now: datetime | None
    pool: int
    config: LexicalConfig

    def select(self, prompt: str, limit: int) -> Selection:
        query = extract_terms(prompt, now=self.now, config=self.config)
        hits = self.index.search(query.weights(), self.pool)
        scores = dict(hits)
        positions = list(scores)
        seen = set(positions)
        for i, _ in hits:
            for j in self.neighbours[i]:
                if j not in seen:
                    seen.add(j)
                    positions.append(j)
        if query.window is not None:
            # What was recorded in the time the prompt names is a candidate by that alone,
            # as the product's lexical path takes it from the encounters of that time.
            timed = [
                i
                for i, node in enumerate(self.nodes)
                if i not in seen and _opened_in(query.window, node, self.context)
            ]
            positions.extend(timed[-WINDOW_CANDIDATES:])
        candidates = [
            Candidate(self.nodes[i], scores.get(i, 0.0), self.tokens[i]) for i in positions
        ]
        ranked = rank_candidates(query, candidates, self.context, limit, config=self.config)
        return Selection([s.node for s in ranked])


@dataclass(frozen=True, slots=True)
class LexicalRetriever:
    """Ours: BM25 candidates plus their encounter neighbours, re-ranked by ``rank_candidates``.

    This is the shape the infusion's lexical path runs in production, with a
    pure-Python index standing in for the store's fulltext index.
    """

    pool: int = 120  # fulltext candidates taken before re-ranking
    config: LexicalConfig = field(default_factory=LexicalConfig)
    name: str = "lexical"

    def open(self, conversation: Conversation) -> Searcher:
        nodes = sorted(conversation.observations, key=lambda n: n.tick)
        tokens = [node_tokens(n) for n in nodes]
        index = Bm25Index(tokens, k1=self.config.k1, b=self.config.b)
        context = GraphContext(
            stats=index.stats,
            encounter_opened={
                e.name: datetime.fromisoformat(e.opened_at) for e in conversation.encounters
            },
        )
        radius = self.config.neighbour_radius
        neighbours = [
            [
                j
                for j in range(max(0, i - radius), min(len(nodes), i + radius + 1))
                if j != i and nodes[j].encounter == node.encounter
            ]
            for i, node in enumerate(nodes)
        ]
        return _LexicalSearcher(
            nodes,
            tokens,
            index,
            context,
            neighbours,
            asked_at(conversation),
            self.pool,
            self.config,
        )
