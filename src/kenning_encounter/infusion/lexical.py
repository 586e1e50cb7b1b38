"""Lexical selection: the path taken when no matcher model answers.

Two pure steps, no store access:

``extract_terms(prompt, trajectory)`` turns the prompt and the previous user
turns into a weighted ``Query``: content terms (the prompt's above older
turns'), and the time the prompt names, if it names one.

``rank_candidates(query, candidates, context, limit)`` re-ranks the nodes a
fulltext index proposed, with what the graph tells cheaply about each:
- lexical evidence: BM25 with the query's term weights, scaled by how much of
  the query's weight a node covers (two rare words together beat one);
- related keys: a derived word of the prompt reaches the word it comes from
  ("mentorship": "mentor") and two adjacent words the word they make together
  ("work out": "workout"), as weaker evidence of that one word;
- attribution: a description headed by a label ("Caroline: ...") that the
  prompt names is about that subject, so it rises (a name the prompt only
  mentions after the one it asks about, "... to Melanie", less); the name
  itself is not counted as a word, since it heads every record of that subject;
- co-occurrence: a node recorded next to a match in the same encounter
  inherits part of its score — the answer often sits beside the words that
  name the matter (a reply after the question that named it, which inherits
  the most), and a record that ends by asking is itself held a little lower:
  it puts the question, the records after it answer; another speaker's reply to
  a statement inherits less of it than the same speaker's next record;
- the encounter: knowledge about one matter is recorded together, so the best
  evidence of each encounter is pooled and members of strong encounters rise;
- time: when the prompt names a time ("in May", "last week", "on 2023-05-07",
  read against the prompt's moment by ``textproc_time``), nodes whose time falls
  in it rise — a node's world time where it states one, else its record time,
  or a time its own text states ("yesterday", read against when it was
  recorded). Nodes recorded then are candidates by that alone (the caller adds
  them), and their time is evidence of its own, beside their words. The time's
  own words stay in the query, weaker: a record may name the time as the prompt
  does ("last weekend", counted from another moment). A prompt asking when
  ("When did ...") lifts the nodes whose text says when, and one asking how
  long ("How long has ...") those that say for how long or since when. A time
  named by an event and no date ("after the migration") is placed by the
  memory's own records of the event (``Query.anchored``), then counts as above.

The caller supplies the candidates (fulltext hits, plus the records next to
them in their encounter with a zero retrieval score, so that propagation can
reach them), the corpus statistics of the index, and each encounter's opening
time. A candidate's ``tick`` orders it within its encounter; callers whose
ticks are shared by a batch pass the node's place in its encounter instead.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Final

from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc import (
    STOPWORDS,
    normalized,
    related_keys,
    split_label,
    stem,
    surface_words,
    tokenize,
    words,
)
from kenning_encounter.textproc_bm25 import K1, B, TermStats, idf
from kenning_encounter.textproc_bm25 import bm25_weight as bm25_weight
from kenning_encounter.textproc_bm25 import finite_or_zero as _finite_or_zero
from kenning_encounter.textproc_bm25 import length_norm as _length_norm
from kenning_encounter.textproc_bm25 import saturated as _saturated
from kenning_encounter.textproc_time import (
    EventRef,
    NodeTime,
    TimeWindow,
    asks_span,
    asks_time,
    event_window,
    find_event,
    find_times,
    node_time,
    read_time,
    record_keys,
    states_span,
    states_time,
    tells_since_last_talk,
    utc,
)


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """Term statistics computed from token lists (for callers without an index)."""

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


@dataclass(frozen=True, slots=True)
class Term:
    key: str  # stemmed token, as ``text.tokenize`` makes it
    weight: float
    surface: str  # the form the user wrote, for the payload's "why"
    proper: bool = False  # capitalized mid-sentence: probably a name
    subject: bool = False  # the name the prompt asks about, not one it mentions in passing
    of: str = ""  # for a related key ("mentor" for "mentorship"): the key it stands in for

    @property
    def group(self) -> str:
        """The prompt's word this term is evidence of."""
        return self.of or self.key


@dataclass(frozen=True, slots=True)
class Query:
    terms: tuple[Term, ...]
    window: TimeWindow | None = None  # the time the prompt names, if any
    asks_when: bool = False  # the prompt asks for a time ("When did ...", "What year ...")
    asks_span: bool = False  # the prompt asks how long ("How long has ...")
    # A time named by an event and no date ("before the migration"): the records of the
    # event place it (``anchored``), and it then stands as the window.
    event: EventRef | None = None

    def anchored(
        self,
        records: Iterable[NodeRecord],
        tokens: Callable[[NodeRecord], Iterable[str]],
        weight: Callable[[str], float],
    ) -> Query:
        """This query with the time its event names read from ``records``, when they
        hold the event; else as it is."""
        if self.event is None or self.window is not None:
            return self
        window = event_window(self.event, records, tokens, weight)
        return self if window is None else replace(self, window=window)

    def weights(self) -> dict[str, float]:
        return {t.key: t.weight for t in self.terms}

    @property
    def own(self) -> tuple[Term, ...]:
        """The prompt's own terms, without the related keys standing in for them."""
        return tuple(t for t in self.terms if not t.of)

    @property
    def empty(self) -> bool:
        return not self.terms


@dataclass(frozen=True, slots=True)
class LexicalConfig:
    """Knobs of the lexical path. The defaults are the preset evaluated on LoCoMo
    (bench/locomo); each one sits on a plateau, not on a peak."""

    trajectory_turns: int = 6  # previous user turns read
    trajectory_decay: float = 0.5  # weight of the previous turn; older turns decay geometrically
    proper_boost: float = 1.0  # extra weight of a capitalized name
    k1: float = K1
    b: float = B
    coverage_power: float = 0.5  # lexical score x (share of query weight matched) ** this
    label_boost: float = 1.0  # a node attributed to a subject the prompt names
    neighbour_weight: float = 0.5  # share of a neighbour's score a node inherits
    neighbour_radius: int = 2  # how many places away a neighbour may be
    neighbour_decay: float = 0.5  # per place beyond the first
    reply_boost: float = 0.75  # extra share the record right after a question inherits of it
    # Share of its neighbour's score a record inherits when another speaker's statement
    # came before it: a reply to a statement need not be about its words.
    other_share: float = 0.5
    encounter_weight: float = 0.3  # pull of the best-matching encounter
    encounter_top: int = 3  # an encounter's evidence: the mean of its best this-many
    time_weight: float = 1.0  # a node whose time falls in the time the prompt names
    object_share: float = 0.5  # label boost of a subject only mentioned ("... to Melanie")
    time_base: float = 0.25  # ... and its pull on its own, in shares of the best lexical score
    related_weight: float = 0.5  # a related key ("mentor" for "mentorship") against its word
    when_weight: float = 0.5  # a node whose text says when, for a prompt that asks when
    asking_share: float = 0.8  # a record that ends by asking: a question put, not an answer
    time_words_weight: float = 0.5  # the words of a time the prompt names ("last weekend")


@dataclass(frozen=True, slots=True)
class Candidate:
    node: NodeRecord
    retrieval_score: float = 0.0  # the generator's score; 0 for a context-only neighbour
    tokens: tuple[str, ...] | None = None  # ``tokenize(name + description)``, when known
    stated: tuple[TimeWindow, ...] | None = None  # ``stated_times(node)``, when known
    # Its place in its encounter, where known: records written in one batch share a tick,
    # and neighbours are neighbours by place. None: the node's tick stands in.
    place: int | None = None

    @property
    def at(self) -> int:
        """Where it stands among its neighbours: its place, else its tick."""
        return self.node.tick if self.place is None else self.place


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
    time_fit: float = 0.0  # how well its time fits the time the prompt names
    attributed: bool = False  # about a subject the prompt names


# The tokens the lexical path matches a node by: its name and description as the store
# keeps them (textproc_time.record_keys, which an event's placing reads too).
node_tokens = record_keys


def stated_times(node: NodeRecord, fallback: datetime | None = None) -> tuple[TimeWindow, ...]:
    """The times a node's description states, relative ones read against the node's own
    time ("yesterday" in a record of 16 June is 15 June). Read when ranking, never
    stored: the text is the source, and a better reader re-reads it."""
    anchor = node_time(node, fallback)
    return tuple(states_time(node.description, anchor.start)) if anchor is not None else ()


def _is_proper(text: str, surface: str) -> bool:
    # Capitalized somewhere other than at the start of a sentence.
    if not surface[:1].isupper():
        return False
    start = 0
    while (pos := text.find(surface, start)) >= 0:
        start = pos + 1
        before = text[:pos].rstrip()
        if before and before[-1] not in ".!?:;\n\"'(":
            return True
    return False


_JOINS: Final = frozenset({"and", "or"})
# Words that close a phrasal verb written as one word too ("workout", "setup", "backup").
_PARTICLES: Final = frozenset({"up", "out", "off", "down", "over", "back", "in", "on", "away"})


def _subject_keys(prompt: str) -> set[str]:
    """Keys of the names a prompt asks about: its first name, with the names joined to it
    ("Jon and Gina", "Amy Ellis Nutt"). A name further on ("... recommend to Melanie",
    "... about Gina's store") is one the question mentions, not the one it is about."""
    subjects: set[str] = set()
    seen = chain = False
    for surface, word in surface_words(prompt):
        if word not in STOPWORDS and _is_proper(prompt, surface):
            if not seen or chain:
                subjects.add(stem(word))
                chain = True
            seen = True
        elif not (chain and word in _JOINS):
            chain = False
    return subjects


def extract_terms(
    prompt: str,
    trajectory: Sequence[str] = (),
    *,
    now: datetime | None = None,
    config: LexicalConfig | None = None,
) -> Query:
    """Weighted terms of a prompt and its trajectory (previous user turns, oldest first).

    ``now`` lets relative times ("last week") be read; without it only
    absolute ones are.
    """
    cfg = config or LexicalConfig()
    # One form for the prompt's words and the spans found in it (surface_words reads NFKC).
    prompt, trajectory = normalized(prompt), [normalized(t) for t in trajectory]
    window = read_time(prompt, now=now)
    event = find_event(prompt, now=now) if window is None else None
    asks_when = asks_time(prompt)
    asks_long = asks_span(prompt)
    # A time is matched against when nodes hold; its words are kept aside, weaker.
    named_times: list[str] = []
    for found in reversed(find_times(prompt, now=now)):
        start, end = found.span
        named_times.append(prompt[start:end])
        prompt = f"{prompt[:start]} {prompt[end:]}"
    recent = list(trajectory[-cfg.trajectory_turns :]) if cfg.trajectory_turns > 0 else []
    subjects = _subject_keys(prompt)
    weights: dict[str, float] = {}
    surfaces: dict[str, str] = {}
    proper: set[str] = set()
    for age, turn in enumerate([prompt, *reversed(recent)]):
        turn_weight = cfg.trajectory_decay**age
        for surface, word in surface_words(turn):
            if word in STOPWORDS:
                continue
            key = stem(word)
            weights[key] = max(weights.get(key, 0.0), turn_weight)
            surfaces.setdefault(key, surface)
            if age == 0 and _is_proper(turn, surface):
                proper.add(key)
    terms = tuple(
        Term(
            key,
            w * (1.0 + cfg.proper_boost) if key in proper else w,
            surfaces[key],
            key in proper,
            key in proper and key in subjects,
        )
        for key, w in weights.items()
    )
    return Query(
        terms + _related_terms(terms, prompt, cfg) + _time_words(named_times, weights, cfg),
        window,
        asks_when,
        asks_long,
        event,
    )


def _time_words(
    phrases: Sequence[str], taken: Mapping[str, float], cfg: LexicalConfig
) -> tuple[Term, ...]:
    """The words of the times a prompt names, as weaker terms of their own. The reading
    of a time is one reading: the prompt may count from another moment than its own
    ("last weekend" as the record said it), and a record may name the time as the prompt
    does ("in June")."""
    if cfg.time_words_weight <= 0:
        return ()
    found: dict[str, Term] = {}
    for phrase in phrases:
        for surface, word in surface_words(phrase):
            key = stem(word)
            if word not in STOPWORDS and key not in taken:
                found.setdefault(key, Term(key, cfg.time_words_weight, surface))
    return tuple(found.values())


def _related_terms(terms: tuple[Term, ...], prompt: str, cfg: LexicalConfig) -> tuple[Term, ...]:
    """Weaker stand-ins for the prompt's words: their derivational kin ("mentor" for
    "mentorship") and two adjacent words written as one ("work out": "workout")."""
    if cfg.related_weight <= 0:
        return ()
    own = {t.key: t for t in terms}
    related: dict[str, Term] = {}

    def add(key: str, term: Term) -> None:
        weight = term.weight * cfg.related_weight
        if key not in own and (key not in related or related[key].weight < weight):
            related[key] = Term(key, weight, term.surface, of=term.key)

    for term in terms:
        if not term.proper:
            for key in related_keys(term.key):
                add(key, term)
    for (_, a), (written, b) in itertools.pairwise(surface_words(prompt)):
        # A word and the word or particle after it: "road trip", "work out", "set up".
        head = own.get(stem(a))
        if head is None or head.proper or not (a.isalpha() and b.isalpha()):
            continue
        if b in _PARTICLES or (b not in STOPWORDS and not written[:1].isupper()):
            add(stem(a + b), head)
    return tuple(related.values())


def _label_keys(label: str | None, query: Query) -> set[str]:
    """Query keys naming a label; a capitalized short form ("Mel") names "Melanie"."""
    if not label:
        return set()
    parts = [stem(w) for w in words(label)]
    return {
        t.key
        for t in query.own
        for part in parts
        if t.key == part or (t.proper and len(t.key) >= 3 and part.startswith(t.key))
    }


@dataclass(slots=True)
class Evidence:
    lexical: float
    matched: tuple[str, ...]
    attributed: bool
    subject: bool  # attributed to a name the prompt asks about (or names no one in passing)
    label: str | None = None  # who or what the record is attributed to ("Caroline: ...")


def _lexical_evidence(
    query: Query,
    candidates: Sequence[Candidate],
    stats: TermStats,
    cfg: LexicalConfig,
    known: Mapping[str, Evidence] | None = None,
) -> list[Evidence]:
    """Each candidate's evidence; what ``known`` holds (read for this query, these term
    statistics and this config: ``lexical_evidence``) is taken as it is."""
    if not known:
        return _read_evidence(query, candidates, stats, cfg)
    fresh = iter(
        _read_evidence(query, [c for c in candidates if c.node.id not in known], stats, cfg)
    )
    return [known[c.node.id] if c.node.id in known else next(fresh) for c in candidates]


def _read_evidence(
    query: Query, candidates: Sequence[Candidate], stats: TermStats, cfg: LexicalConfig
) -> list[Evidence]:
    by_label: dict[str | None, tuple[set[str], tuple[str, ...]]] = {}
    named: list[tuple[str | None, set[str], tuple[str, ...]]] = []
    for cand in candidates:
        label = split_label(cand.node.description)[0]
        if label not in by_label:
            by_label[label] = (_label_keys(label, query), tuple(tokenize(label)) if label else ())
        named.append((label, *by_label[label]))
    weights = query.weights()
    surfaces = {t.key: t.surface for t in query.terms}
    subjects = {t.key for t in query.terms if t.subject}
    mass = {k: w * idf(stats, k) for k, w in weights.items()}
    # Coverage counts each of the prompt's words once, at its own weight.
    own_mass = {t.key: mass[t.key] for t in query.own}
    total = sum(own_mass.values())
    groups = {t.key: t.group for t in query.terms}
    # Per key, in the prompt's order: its word (group), its mass, and what it covers.
    plan = [
        (key, groups[key], mass[key], min(mass[key], own_mass.get(groups[key], mass[key])))
        for key in weights
    ]
    keys = frozenset(weights)
    k1, b, avg_len = cfg.k1, cfg.b, stats.avg_len
    found: list[Evidence] = []
    for cand, (label, naming, label_tokens) in zip(candidates, named, strict=True):
        tokens = cand.tokens if cand.tokens is not None else node_tokens(cand.node)
        best: dict[str, float] = {}  # per word of the prompt: its best-matching key's share
        cover: dict[str, float] = {}
        present = keys.intersection(tokens)
        if present:
            norm = _length_norm(len(tokens) - len(label_tokens), avg_len, b)
            for key, group, key_mass, covers in plan:
                if key not in present:
                    continue
                # The label heading a record attributes it; it is not part of what it says.
                tf = tokens.count(key) - label_tokens.count(key)
                if tf <= 0:
                    continue
                share = key_mass * _saturated(tf, norm, k1)
                if group not in best or share > best[group]:
                    best[group] = share
                if group not in cover or covers > cover[group]:
                    cover[group] = covers
        score = sum(best.values())
        covered = sum(cover.values())
        hits = [surfaces[g] for g in best]
        if total > 0:
            # Held to [0, 1]: a fractional power of a negative share is a complex number.
            score *= min(1.0, max(0.0, covered / total)) ** cfg.coverage_power
        subject = bool(naming) and (not subjects or not naming.isdisjoint(subjects))
        found.append(Evidence(_finite_or_zero(score), tuple(hits), bool(naming), subject, label))
    return found


def lexical_evidence(
    query: Query,
    candidates: Sequence[Candidate],
    stats: TermStats,
    config: LexicalConfig | None = None,
) -> dict[str, Evidence]:
    """Each candidate's own lexical evidence by node id, as ``rank_candidates`` reads it
    before neighbours, encounter and time (``Evidence.lexical``: the query's weights, the
    share of the prompt it covers, the label heading a record not counted). Handed to
    ``rank_candidates`` as ``known``, it is not read again."""
    cfg = config or LexicalConfig()
    found = _read_evidence(query, candidates, stats, cfg)
    return {c.node.id: ev for c, ev in zip(candidates, found, strict=True)}


def _inherited(
    candidates: Sequence[Candidate], evidence: Sequence[Evidence], cfg: LexicalConfig
) -> list[float]:
    """What each candidate inherits from its best-matching encounter neighbour."""
    inherited = [0.0] * len(candidates)
    by_encounter: dict[str, list[int]] = {}
    for i, cand in enumerate(candidates):
        if cand.node.encounter is not None:
            by_encounter.setdefault(cand.node.encounter, []).append(i)
    for members in by_encounter.values():
        ordered = sorted(members, key=lambda i: candidates[i].at)
        for at, a in enumerate(ordered):
            for b in ordered[at + 1 :]:
                gap = max(1, candidates[b].at - candidates[a].at)
                if gap > cfg.neighbour_radius:
                    break
                share = cfg.neighbour_decay ** (gap - 1)
                # The record after a question is its answer: it inherits more of it. After
                # another speaker's statement, a record is a reply that need not be about
                # what was said; the same speaker's next record carries on with it.
                if gap == 1 and "?" in candidates[a].node.description:
                    reply = share * (1.0 + cfg.reply_boost)
                elif _others(evidence[a].label, evidence[b].label):
                    reply = share * cfg.other_share
                else:
                    reply = share
                inherited[b] = max(inherited[b], reply * evidence[a].lexical)
                inherited[a] = max(inherited[a], share * evidence[b].lexical)
    return inherited


def _others(a: str | None, b: str | None) -> bool:
    """Two records attributed to different speakers (or subjects)."""
    return a is not None and b is not None and a != b


def _encounter_pull(
    candidates: Sequence[Candidate], evidence: Sequence[Evidence], top: int
) -> dict[str, float]:
    """Each encounter's pooled evidence, relative to the strongest encounter's."""
    scores: dict[str, list[float]] = {}
    for cand, ev in zip(candidates, evidence, strict=True):
        if cand.node.encounter is not None:
            scores.setdefault(cand.node.encounter, []).append(ev.lexical)
    pooled = {name: sum(sorted(s, reverse=True)[:top]) / top for name, s in scores.items()}
    best = max(pooled.values(), default=0.0)
    return {name: p / best for name, p in pooled.items()} if best > 0 else {}


def _asks(node: NodeRecord) -> bool:
    """A record whose text ends with a question: one put in passing, not the memory's
    own open Question (that is work to surface, and the rank gives it its own voice)."""
    return node.type != "Question" and node.description.rstrip().endswith("?")


def _node_time(node: NodeRecord, context: GraphContext) -> NodeTime | None:
    opened = context.encounter_opened.get(node.encounter) if node.encounter else None
    return node_time(node, utc(opened) if opened is not None else None)


def _stated(cand: Candidate, held: NodeTime | None) -> tuple[TimeWindow, ...]:
    if cand.stated is not None:
        return cand.stated
    return stated_times(cand.node, held.start if held is not None else None)


def _says_when(query: Query, cand: Candidate, context: GraphContext) -> bool:
    """Whether a candidate states the kind of time the prompt asks for."""
    if not (query.asks_when or query.asks_span):
        return False
    if query.asks_span and states_span(cand.node.description):
        return True
    if query.asks_when and tells_since_last_talk(cand.node.description):
        return True
    return bool(_stated(cand, _node_time(cand.node, context)))


def _time_fit(window: TimeWindow, cand: Candidate, context: GraphContext) -> float:
    """How well a candidate's time falls in the window, by its own time or a time its
    text states, scaled by how sure the prompt's reading was."""
    held = _node_time(cand.node, context)
    fit = window.fit(held) if held is not None else 0.0
    for told in _stated(cand, held):
        if told.start is not None:
            fit = max(fit, window.fit(NodeTime(told.start, told.end, "stated")))
    return fit * window.certainty


def rank_candidates(
    query: Query,
    candidates: Sequence[Candidate],
    context: GraphContext,
    limit: int,
    *,
    config: LexicalConfig | None = None,
    known: Mapping[str, Evidence] | None = None,
) -> list[Scored]:
    """The best ``limit`` candidates, best first; heads of chains only.

    Superseded nodes may be passed: they still lend evidence to their
    neighbours and encounter, but are never returned. An empty list means
    nothing matched: silence. ``known``: evidence ``lexical_evidence`` read already for
    some of the candidates, with this query, these statistics and this config.
    """
    cfg = config or LexicalConfig()
    if not candidates or limit <= 0 or query.empty:
        return []
    evidence = _lexical_evidence(query, candidates, context.stats, cfg, known)
    top_lexical = max(ev.lexical for ev in evidence)
    if top_lexical <= 0:
        return []
    inherited = _inherited(candidates, evidence, cfg)
    pull = _encounter_pull(candidates, evidence, cfg.encounter_top)

    def judged(i: int, why: list[str] | None) -> float:
        """Candidate ``i``'s score; its reasons go to ``why`` when one is given (only
        the few returned are explained)."""
        cand, ev, inherit = candidates[i], evidence[i], inherited[i]
        enc = cand.node.encounter
        enc_pull = pull.get(enc, 0.0) if enc is not None else 0.0
        fit = fits[i]
        # A time the prompt names is evidence of its own: what was held then may share
        # no word with the question ("What did Jo do in July 2022?").
        score = (
            ev.lexical
            + cfg.neighbour_weight * inherit
            + cfg.encounter_weight * enc_pull * top_lexical
            + cfg.time_base * fit * top_lexical
        )
        if why is not None:
            if ev.matched:
                why.append("matched " + ", ".join(ev.matched))
            elif inherit > 0:
                why.append("recorded beside a match")
        if ev.attributed:
            score *= 1.0 + cfg.label_boost * (1.0 if ev.subject else cfg.object_share)
            if why is not None:
                why.append("about the subject named")
        if window is not None and fit > 0:
            score *= 1.0 + cfg.time_weight * fit
            if why is not None:
                why.append(f"in the time asked about ({window.label})")
        if _says_when(query, cand, context):
            # A prompt asking when is answered by a record that says when; one asking
            # how long, by a record that says for how long or since when.
            score *= 1.0 + cfg.when_weight
            if why is not None:
                why.append("says when")
        if _asks(cand.node):
            # A record that ends by asking is a question put, not its answer; the reply
            # after it still inherits its words in full.
            score *= cfg.asking_share
        return _finite_or_zero(score)

    window = query.window
    fits = [
        _time_fit(window, cand, context) if window is not None and cand.node.is_head else 0.0
        for cand in candidates
    ]
    # Heads only, best first; ties by place (creation), then id.
    order = [
        (-score, cand.at, cand.node.id, i)
        for i, cand in enumerate(candidates)
        if cand.node.is_head and (score := judged(i, None)) > 0
    ]
    order.sort()
    scored: list[Scored] = []
    for negative, _, _, i in order[:limit]:
        why: list[str] = []
        judged(i, why)
        ev = evidence[i]
        node = candidates[i].node
        scored.append(Scored(node, -negative, ev.matched, tuple(why), fits[i], ev.attributed))
    return scored
