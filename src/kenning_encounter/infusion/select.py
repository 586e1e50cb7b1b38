"""Selection: the meaning matcher when it answers, the lexical path otherwise.

The lexical path extracts weighted terms from the prompt and the trajectory,
asks the store's fulltext index for candidates (heads of chains only), adds the
records written next to each hit in its encounter (with no retrieval score of
their own, so only propagation can lift them), and lets ``rank_candidates``
order them with what the graph knows: encounter, neighbours, time.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.lexical import (
    Candidate,
    GraphContext,
    LexicalConfig,
    Query,
    extract_terms,
    idf,
    rank_candidates,
)
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.store.records import NodeRecord

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Seed:
    node: NodeRecord
    weight: float
    why: str


@dataclass(frozen=True, slots=True)
class Selection:
    channel: str  # "meaning" or "lexical"
    seeds: tuple[Seed, ...]
    fallback_reason: str | None = None
    fallback_detail: str = ""
    match_id: str | None = None
    provider: str | None = None
    model: str | None = None
    matched_terms: tuple[str, ...] = ()
    window: dict[str, object] = field(default_factory=dict[str, object])
    candidates: int = 0


def _parse_time(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class _Gathered:
    candidates: list[Candidate]
    opened: dict[str, datetime]
    originals: dict[str, NodeRecord]


def _gather(store: GraphStore, hits: dict[str, float], radius: int) -> _Gathered:
    def work(tx: ReadTx) -> _Gathered:
        found = tx.get_nodes(list(hits))
        encounters = sorted({n.encounter for n in found.values() if n.encounter})
        members = tx.encounter_members(encounters) if radius else {}
        position: dict[str, int] = {}
        extra: list[str] = []
        for ids in members.values():
            for i, node_id in enumerate(ids):
                position[node_id] = i
            for i, node_id in enumerate(ids):
                if node_id in hits:
                    for j in range(max(0, i - radius), min(len(ids), i + radius + 1)):
                        if ids[j] not in hits:
                            extra.append(ids[j])
        found.update(tx.get_nodes(sorted(set(extra))))
        opened: dict[str, datetime] = {}
        for name in encounters:
            enc = tx.get_encounter(name)
            when = _parse_time(enc.opened_at) if enc else None
            if when is not None:
                opened[name] = when
        candidates = [
            # Within an encounter, a record's place stands in for its tick, so
            # neighbours are neighbours even inside one batched write.
            Candidate(replace(node, tick=position.get(node.id, node.tick)), hits.get(node.id, 0.0))
            for node in found.values()
            if node.is_head
        ]
        return _Gathered(candidates, opened, found)

    return store.read(work)


def _query_text(query: Query) -> str:
    return " ".join(t.surface for t in query.terms)


def lexical(
    store: GraphStore,
    prompt: str,
    trajectory: Sequence[str],
    cfg: InfusionConfig,
    *,
    lexical_config: LexicalConfig | None = None,
    now: datetime | None = None,
) -> tuple[Selection, Query]:
    lcfg = lexical_config or LexicalConfig(trajectory_turns=cfg.trajectory_turns)
    query = extract_terms(prompt, trajectory, now=now, config=lcfg)
    if query.empty:
        return Selection("lexical", ()), query
    hits = {h.id: h.score for h in store.fulltext(_query_text(query), limit=cfg.candidates)}
    if not hits:
        return Selection("lexical", ()), query
    gathered = _gather(store, hits, cfg.neighbours)
    stats = store.fulltext_stats(t.key for t in query.terms)
    ranked = rank_candidates(
        query, gathered.candidates, GraphContext(stats, gathered.opened), cfg.seeds * 3, config=lcfg
    )
    strength = {t.surface: t.weight * idf(stats, t.key) for t in query.terms}
    seeds: list[Seed] = []
    top = ranked[0].score if ranked else 0.0
    for scored in ranked:
        matched = sum(strength.get(s, 0.0) for s in scored.matched)
        # What makes a seed: a word rare in this memory, or two of the prompt's words
        # together (rarely an accident), or, once a seed exists, a score close to it
        # (lifted by what it was recorded beside).
        distinctive = matched >= cfg.min_match or len(scored.matched) >= 2
        if not distinctive and not (seeds and top and scored.score >= 0.5 * top):
            continue
        why = ", ".join(f"“{s}”" for s in scored.matched[:4])
        reason = f"matched {why}" if why else "recorded beside a match"
        node = gathered.originals.get(scored.node.id, scored.node)
        seeds.append(Seed(node, scored.score / top if top else 0.0, reason))
        if len(seeds) == cfg.seeds:
            break
    matched_terms = tuple(dict.fromkeys(s for sc in ranked[: len(seeds)] for s in sc.matched))
    return (
        Selection(
            "lexical",
            tuple(seeds),
            matched_terms=matched_terms,
            candidates=len(gathered.candidates),
        ),
        query,
    )
