"""Selection: the meaning matcher when it answers, the lexical path otherwise.

The lexical path extracts weighted terms from the prompt and the trajectory,
asks the store's fulltext index for candidates (heads of chains only), adds the
records written next to the strongest hits in their encounter (strongest by the
ranking's own reading of their words; the neighbours have no retrieval score of
their own, so only propagation can lift them), and lets ``rank_candidates``
order them with what the graph knows: encounter, neighbours, time.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TypeVar

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.lexical import (
    Candidate,
    Evidence,
    GraphContext,
    LexicalConfig,
    Query,
    Scored,
    extract_terms,
    idf,
    lexical_evidence,
    node_tokens,
    rank_candidates,
    stated_times,
)
from kenning_encounter.store.port import GraphStore, ReadTx, SearchHit, TermStatsSnapshot
from kenning_encounter.store.records import EncounterRecord, NodeRecord
from kenning_encounter.textproc_time import TimeWindow

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


class _FollowsErasures:
    """A cache of what nodes say, emptied when the store's erasure count moves: an
    operator's erasure (memory/erasure.py), run while this process serves the memory (a
    Neo4j memory has many servers), leaves nothing of the erased text held here."""

    _lock: threading.Lock
    _erasures: int | None = None

    def follow(self, erasures: int) -> None:
        with self._lock:
            if self._erasures is not None and erasures != self._erasures:
                self._clear()
            self._erasures = erasures

    def _clear(self) -> None:
        raise NotImplementedError


class TokenCache(_FollowsErasures):
    """Tokens of node text, and the times it states, by node id. A node's text and
    time never change (a revision is a new node), so an entry goes stale only by an
    erasure (``follow``); the oldest are dropped past ``size``."""

    def __init__(self, size: int = 200_000) -> None:
        self._size = size
        self._tokens: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._stated: OrderedDict[str, tuple[TimeWindow, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._tokens) + len(self._stated)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self._tokens or node_id in self._stated

    def _clear(self) -> None:
        self._tokens.clear()
        self._stated.clear()

    def stated(self, node: NodeRecord) -> tuple[TimeWindow, ...]:
        with self._lock:
            found = self._stated.get(node.id)
            if found is not None:
                return found
        times = stated_times(node)
        with self._lock:
            self._stated[node.id] = times
            while len(self._stated) > self._size:
                self._stated.popitem(last=False)
        return times

    def get(self, node: NodeRecord) -> tuple[str, ...]:
        with self._lock:
            found = self._tokens.get(node.id)
            if found is not None:
                return found
        tokens = node_tokens(node)
        with self._lock:
            self._tokens[node.id] = tokens
            while len(self._tokens) > self._size:
                self._tokens.popitem(last=False)
        return tokens


class MemberCache(_FollowsErasures):
    """What each closed encounter recorded, in order, and its record. An encounter that
    is no longer open takes no writes, so its list and record change only by an
    operator's erasure (``follow``: the record's tombstone count); open encounters are
    always read."""

    def __init__(self, max_ids: int = 500_000, max_records: int = 100_000) -> None:
        self._lists: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._records: OrderedDict[str, EncounterRecord] = OrderedDict()
        self._held = 0
        self._max = max_ids
        self._max_records = max_records
        self._lock = threading.Lock()

    def records(self, names: Iterable[str]) -> dict[str, EncounterRecord]:
        """The closed encounters' records held, of those ``names``."""
        with self._lock:
            return {n: r for n in names if (r := self._records.get(n)) is not None}

    def keep(self, records: Iterable[EncounterRecord]) -> None:
        """Hold the records of those encounters that are closed; the oldest go past the
        bound."""
        with self._lock:
            for record in records:
                if not record.is_open:
                    self._records[record.name] = record
            while len(self._records) > self._max_records:
                self._records.popitem(last=False)

    def __len__(self) -> int:
        return len(self._lists)

    def holds(self, node_id: str) -> bool:
        """Whether any list held names ``node_id``."""
        with self._lock:
            return any(node_id in ids for ids in self._lists.values())

    def _clear(self) -> None:
        self._lists.clear()
        self._records.clear()
        self._held = 0

    def get(self, name: str) -> tuple[str, ...] | None:
        with self._lock:
            found = self._lists.get(name)
            if found is not None:
                self._lists.move_to_end(name)
            return found

    def put(self, name: str, ids: Sequence[str]) -> None:
        with self._lock:
            if name in self._lists:
                return
            self._lists[name] = tuple(ids)
            self._held += len(ids)
            while self._held > self._max and self._lists:
                _, dropped = self._lists.popitem(last=False)
                self._held -= len(dropped)


# Encounters looked at, newest first, for what was recorded in the time a prompt names:
# enough for weeks of work; an older time still reaches what its words match.
WINDOW_ENCOUNTERS = 400
# The newest records of that time taken as candidates; their words still decide among
# them, so a few dozen carry the signal (as many as 120 changed nothing on the LoCoMo
# dev conversations and doubled the ranking's work).
WINDOW_CANDIDATES = 40


def _encounters_in(tx: ReadTx, window: TimeWindow) -> list[str]:
    names: list[str] = []
    for enc in tx.encounters(limit=WINDOW_ENCOUNTERS):
        ends = [_parse_time(enc.opened_at), _parse_time(enc.sealed_at or enc.last_activity_at)]
        if any(when is not None and window.match(when) > 0 for when in ends):
            names.append(enc.name)
    return names


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
    evidence: dict[str, Evidence]  # the hits' evidence as ``_strongest`` read it


def _gather(
    tx: ReadTx,
    hits: dict[str, float],
    radius: int,
    around: int,
    tokens: TokenCache,
    cache: MemberCache,
    query: Query,
    stats: TermStatsSnapshot,
    lcfg: LexicalConfig,
) -> _Gathered:
    window = query.window
    times = window is not None or query.asks_when or query.asks_span  # read when time counts
    found = tx.get_nodes(list(hits))
    strongest, evidence = _strongest(query, hits, found, around, tokens, stats, lcfg)
    if window is not None and (timed := _encounters_in(tx, window)):
        # What was recorded then is a candidate by that alone, scored by its time.
        ids = [i for i in tx.encounter_nodes(timed, WINDOW_CANDIDATES) if i not in found]
        found.update(tx.get_nodes(ids))
    encounters = sorted({n.encounter for n in found.values() if n.encounter})
    near = sorted({n.encounter for i in strongest if (n := found.get(i)) and n.encounter})
    records = cache.records(encounters)
    if unknown := [name for name in encounters if name not in records]:
        fetched = tx.get_encounters(unknown)
        cache.keep(fetched.values())
        records.update(fetched)
    members: dict[str, Sequence[str]] = {}
    if radius and near:
        missing = []
        for name in near:
            cached = cache.get(name)
            if cached is None:
                missing.append(name)
            else:
                members[name] = cached
        for name, ids in (tx.encounter_members(missing) if missing else {}).items():
            members[name] = ids
            enc = records.get(name)
            if enc is not None and not enc.is_open:
                cache.put(name, ids)
    position: dict[str, int] = {}
    extra: list[str] = []
    for ids in members.values():
        position.update(zip(ids, range(len(ids)), strict=True))
        for node_id in strongest.intersection(ids):
            i = position[node_id]
            extra.extend(j for j in ids[max(0, i - radius) : i + radius + 1] if j not in hits)
    found.update(tx.get_nodes(sorted(set(extra))))
    opened = {
        name: when
        for name, enc in records.items()
        if (when := _parse_time(enc.opened_at)) is not None
    }
    candidates = [
        # Within an encounter, a record's place stands in for its tick, so
        # neighbours are neighbours even inside one batched write.
        Candidate(
            node,
            hits.get(node.id, 0.0),
            tokens.get(node),
            tokens.stated(node) if times else None,
            position.get(node.id),
        )
        for node in found.values()
    ]
    return _Gathered(candidates, opened, evidence)


def _strongest(
    query: Query,
    hits: dict[str, float],
    found: dict[str, NodeRecord],
    around: int,
    tokens: TokenCache,
    stats: TermStatsSnapshot,
    lcfg: LexicalConfig,
) -> tuple[set[str], dict[str, Evidence]]:
    """The hits whose encounter neighbours join: the strongest by the ranking's own
    reading of their words, not by the index's score. The index weighs every word of its
    query alike (the previous turns' as the prompt's own) and counts the name heading a
    record, so its top can hold nothing of what the prompt asks. With them, the evidence
    read to choose them, which the ranking then takes as it is."""
    if len(hits) <= around:
        return set(hits), {}
    ids = [i for i in hits if i in found]
    evidence = lexical_evidence(
        query, [Candidate(found[i], hits[i], tokens.get(found[i])) for i in ids], stats, lcfg
    )
    ranked = sorted(ids, key=lambda i: (-evidence[i].lexical, -hits[i]))
    return set(ranked[:around]), evidence


def _query_text(query: Query) -> str:
    # A related key is searched as itself: the index tokenizes the text again, and a
    # stemmed key is its own stem.
    return " ".join(t.key if t.of else t.surface for t in query.terms)


T = TypeVar("T")


def lexical(
    store: GraphStore,
    prompt: str,
    trajectory: Sequence[str],
    cfg: InfusionConfig,
    *,
    lexical_config: LexicalConfig | None = None,
    now: datetime | None = None,
    tokens: TokenCache | None = None,
    members: MemberCache | None = None,
) -> tuple[Selection, Query]:
    selection, query, _ = lexical_then(
        store,
        prompt,
        trajectory,
        cfg,
        None,
        lexical_config=lexical_config,
        now=now,
        tokens=tokens,
        members=members,
    )
    return selection, query


def lexical_then(
    store: GraphStore,
    prompt: str,
    trajectory: Sequence[str],
    cfg: InfusionConfig,
    then: Callable[[ReadTx, Selection], T] | None,
    *,
    lexical_config: LexicalConfig | None = None,
    now: datetime | None = None,
    tokens: TokenCache | None = None,
    members: MemberCache | None = None,
) -> tuple[Selection, Query, T | None]:
    """The lexical selection, and ``then`` of it in the same read (None when the prompt
    found nothing to search or no hit: ``then`` is not called)."""
    lcfg = lexical_config or LexicalConfig(trajectory_turns=cfg.trajectory_turns)
    # The prompt's moment is now unless the caller says otherwise: "last week" is read
    # against it.
    moment = now if now is not None else datetime.now(UTC)
    query = extract_terms(prompt, trajectory, now=moment, config=lcfg)
    if query.empty:
        return Selection("lexical", ()), query, None
    token_cache = tokens if tokens is not None else TokenCache()
    member_cache = members if members is not None else MemberCache()

    def work(
        tx: ReadTx, found: list[SearchHit], stats_of: Callable[[], TermStatsSnapshot]
    ) -> tuple[Selection, Query, T | None] | None:
        hits = {h.id: h.score for h in found}
        if not hits:
            return None
        erasures = tx.erasures()  # one small read: an erasure elsewhere empties the caches
        token_cache.follow(erasures)
        member_cache.follow(erasures)
        around = (cfg.neighbours, cfg.neighbour_hits)
        stats = stats_of()
        timed = query
        if query.event is not None and query.window is None:
            # The event the prompt places its time by, by the hits that record it.
            records = tx.get_nodes(list(hits)).values()
            timed = query.anchored(records, token_cache.get, lambda key: idf(stats, key))
        gathered = _gather(tx, hits, *around, token_cache, member_cache, timed, stats, lcfg)
        selection = _selected(timed, gathered, stats, cfg, lcfg)
        return selection, timed, (then(tx, selection) if then is not None else None)

    # One read for the search, what it found, the corpus statistics and ``then``.
    keys = [t.key for t in query.terms]
    read = store.read_text(_query_text(query), keys, work, limit=cfg.candidates)
    if read is None:
        return Selection("lexical", ()), query, None
    return read


def _selected(
    query: Query,
    gathered: _Gathered,
    stats: TermStatsSnapshot,
    cfg: InfusionConfig,
    lcfg: LexicalConfig,
) -> Selection:
    ranked = rank_candidates(
        query,
        gathered.candidates,
        GraphContext(stats, gathered.opened),
        cfg.seeds * 3,
        config=lcfg,
        known=gathered.evidence,
    )
    strength = {t.surface: t.weight * idf(stats, t.key) for t in query.own}

    # Silence is decided for the prompt, not per node: something held bears on it when
    # one candidate shares a word rare in this memory, or two of the prompt's words
    # together (rarely an accident), or is about the subject the prompt names at the
    # time it names. Then the ranking stands as it is, down to a floor that keeps stray
    # single-word echoes of the top out.
    def distinctive(scored: Scored) -> bool:
        matched = sum(strength.get(s, 0.0) for s in scored.matched)
        named_then = scored.attributed and scored.time_fit > 0
        return matched >= cfg.min_match or len(scored.matched) >= 2 or named_then

    seeds: list[Seed] = []
    top = ranked[0].score if ranked else 0.0
    if top > 0 and any(distinctive(sc) for sc in ranked[: cfg.seeds]):
        for scored in ranked:
            if scored.score < cfg.seed_floor * top:
                break
            why = ", ".join(f"“{s}”" for s in scored.matched[:4])
            # Time is one declared signal among the others: the reason says when it counted.
            told = [w for w in scored.why if not w.startswith("matched ")]
            reason = "; ".join([f"matched {why}"] * bool(why) + told) or "recorded beside a match"
            seeds.append(Seed(scored.node, scored.score / top, reason))
            if len(seeds) == cfg.seeds:
                break
    matched_terms = tuple(dict.fromkeys(s for sc in ranked[: len(seeds)] for s in sc.matched))
    return Selection(
        "lexical",
        tuple(seeds),
        matched_terms=matched_terms,
        candidates=len(gathered.candidates),
    )
