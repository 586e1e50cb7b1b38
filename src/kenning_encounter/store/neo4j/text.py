"""The lexical index on Neo4j, in the shared tokenizer's terms.

Every authored node carries its tokens (``_terms``: the tokenizer's output for
name and description, space-joined) and their count (``_len``); a Neo4j
fulltext index with the whitespace analyzer indexes ``_terms``. Query terms
come from the same tokenizer, so they meet the indexed terms exactly as they do
in the embedded store's index, and the corpus statistics (documents, mean
length, document frequencies) count the same things. Two Meta counters keep the
document count and the token total current inside every write transaction.
"""

from __future__ import annotations

import logging
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypeGuard

from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.classified import class_labels
from kenning_encounter.store.ops.base import encounter_from, node_record
from kenning_encounter.store.port import SearchHit, TermStatsSnapshot
from kenning_encounter.store.records import EncounterRecord, NodeRecord
from kenning_encounter.textproc import tokenize
from kenning_encounter.textproc_bm25 import query_terms
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

if TYPE_CHECKING:
    from neo4j import Session

    from kenning_encounter.store.neo4j.tx import Neo4jTx
    from kenning_encounter.store.tracing import Tracer

log = logging.getLogger(__name__)

# Below this many documents, frequencies are counted again on any change (DocFreqs).
EXACT_BELOW = 1_000
_REINDEX_CHUNK = 2_000
_LUCENE_SPECIAL = re.compile(r'([+\-!(){}\[\]^"~*?:\\/&|])')


def text_props(name: str, description: str) -> dict[str, Any]:
    tokens = tokenize(f"{name}\n{description}")
    return {q.TEXT_PROPERTY: " ".join(tokens), q.TEXT_LENGTH: len(tokens)}


def lucene_term(term: str) -> str:
    """One term as a Lucene query that can only mean that term."""
    return _LUCENE_SPECIAL.sub(r"\\\1", term)


def _hidden(withheld: frozenset[str]) -> list[str]:
    """The labels of the ``withheld`` classes, which a search's hits may not carry."""
    return class_labels(",".join(sorted(withheld))) if withheld else []


def search(
    tx: Neo4jTx,
    text: str,
    *,
    types: Iterable[str] | None,
    heads_only: bool,
    limit: int,
    withheld: frozenset[str] = frozenset(),
    hidden_loci: frozenset[str] = frozenset(),
) -> list[SearchHit]:
    terms = query_terms(text)
    if not terms or limit <= 0:
        return []
    params: dict[str, Any] = {
        "index": q.FULLTEXT_INDEX,
        "query": " ".join(lucene_term(t) for t in terms),  # terms OR-ed, as in the embedded index
        "types": list(types or []) or None,
        "hidden": _hidden(withheld),
        "heads_only": heads_only,
        "limit": limit,
    }
    statement = q.FULLTEXT_QUERY
    if hidden_loci:
        statement = q.FULLTEXT_QUERY_HIDING
        params["loci"] = sorted(hidden_loci)
    rows = tx.rows(statement, params)
    if not rows:
        return []
    (clock, classes), hits = rows[0]
    tx.saw_classes(int(clock), classes)
    return [SearchHit(id=str(i), score=float(score)) for i, score in hits]


# Hits asked of the index beyond a search's limit, for those its filter drops (another
# memory's, superseded ones) before it asks again for more.
FETCH_SLACK: Final = 20


def search_remembered(
    tx: Neo4jTx,
    text: str,
    *,
    limit: int,
    types: Iterable[str] | None = None,
    withheld: frozenset[str] = frozenset(),
    freqs: DocFreqs | None = None,
    hidden_loci: frozenset[str] = frozenset(),
) -> list[SearchHit]:
    """``search`` for heads (of ``types``, or every type), leaving each hit's node and
    encounter with the transaction (Neo4jTx.remember) for the reads that follow in it.
    With ``freqs``, the same statement counts what ``stats`` of the query's terms for
    this gate (``withheld``, ``hidden_loci``) would otherwise count in statements of its
    own, and leaves it there."""
    terms = query_terms(text)
    if not terms or limit <= 0:
        return []
    count = freqs.unknown(terms) if freqs is not None else []
    params: dict[str, Any] = {
        "index": q.FULLTEXT_INDEX,
        "query": " ".join(lucene_term(t) for t in terms),
        "limit": limit,
        "kinds": list(AUTHORED_NODE_TYPES),
        "hidden": _hidden(withheld),
        "count": [{"term": t, "query": lucene_term(t)} for t in count],
    }
    kinds = list(types or [])  # none named: every type, as ``search`` takes it
    statement = q.fulltext_query_nodes(
        bool(kinds), withheld, bool(hidden_loci), counts=freqs is not None
    )
    if kinds:
        params["types"] = kinds
    if hidden_loci:
        params["loci"] = sorted(hidden_loci)
    if freqs is not None and (withheld or hidden_loci):
        counted_at = freqs.hidden_moment()
        params["counted_at"] = list(counted_at) if counted_at is not None else None
    generation = tx.cache_generation()  # noted before the read (nodecache.py)
    fetch = max(2 * limit, limit + FETCH_SLACK)
    if freqs is not None and (withheld or hidden_loci):
        # What is held back fills the index's answer in proportion (hidden loci can be
        # half the memory): asked for as much more at once, not again.
        fetch = math.ceil(fetch / max(freqs.shown_share(), 1 / 16))
    first = True
    while True:
        asked = params | tx.synchronisation_params() | {"fetch": fetch}
        row = tx.synchronising_row(statement, asked)  # the node cache's, asked first
        clock, erasures, seen, rows = row[0], row[1], row[6], row[7]
        if first and freqs is not None:
            counted = {str(t): int(df) for t, df in row[8]}
            _keep_counts(tx, freqs, counted, row, bool(withheld or hidden_loci))
        first = False
        if len(rows) >= limit or int(seen) < fetch:
            break
        fetch *= 4  # the index gave all that was asked and too few were kept: ask for more
        params["count"] = []  # counted once
    hits: list[SearchHit] = []
    nodes: list[NodeRecord] = []
    encounters: dict[str, EncounterRecord] = {}
    # What the node cache holds (true as of the synchronisation just taken) is not made
    # again from its row: a warm server holds most hits.
    held = tx.cached([str(r[0]) for r in rows])
    for node_id, score, label, props, enc, locus, encounter in rows:
        hits.append(SearchHit(id=str(node_id), score=float(score)))
        if node_id not in held:  # a head: no successor
            tx.saw_touched(props)
            record = node_record(
                props, label=str(label), encounter=enc, locus=locus, superseded_by=None
            )
            nodes.append(record)
        if encounter is not None and enc not in encounters:
            encounters[str(enc)] = encounter_from(encounter)
    moment = (int(clock), int(erasures))
    tx.remember(nodes, list(encounters.values()), generation, moment=moment)
    return hits


def _keep_counts(
    tx: Neo4jTx, held: DocFreqs, counted: dict[str, int], row: Sequence[Any], gated: bool
) -> None:
    """What the search's statement counted, kept as ``stats`` would keep it had it
    counted them itself: the withheld and hidden documents for this moment, the
    frequencies against the documents the caller may see."""
    docs, erasures = int(row[3]), int(row[1])
    if gated:
        moment = tx.moment()
        if row[9]:
            hidden = (int(row[9][0][0] or 0), int(row[9][0][1] or 0))
            if moment is not None:
                held.keep_hidden(moment, hidden)
        else:  # counted before, at the moment the statement read
            kept = held.hidden(moment) if moment is not None else None
            if kept is None:
                return  # kept for another moment meanwhile: ``stats`` counts them
            hidden = kept
        docs -= hidden[0]
    docs = max(0, docs)
    held.known([], docs, erasures)  # an erasure since empties what was held first
    if counted:
        held.keep(counted, docs)


def _stands(held: tuple[int, int] | None, docs: int) -> TypeGuard[tuple[int, int]]:
    """Whether a frequency counted when the memory held ``held[1]`` documents still
    stands at ``docs``: exactly below ``EXACT_BELOW``, else within one in a hundred."""
    slack = docs // 100 if docs >= EXACT_BELOW else 0
    return held is not None and abs(held[1] - docs) <= slack


class DocFreqs:
    """Document frequencies counted before, kept while the corpus has barely changed.

    Counting a term's documents reads every index hit of it, which grows with the
    memory (six common terms: 245 ms at 100k nodes). A frequency counted when the
    corpus held D documents is used again while the count is within 1% of D, from
    EXACT_BELOW documents on; a smaller memory is counted on every change, so its
    statistics are exact. Derived data, per process: a replica counts for itself."""

    def __init__(self, size: int = 50_000) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._held: OrderedDict[str, tuple[int, int]] = OrderedDict()  # term -> (df, docs)
        self._erasures = 0
        self._hidden: tuple[tuple[int, int, int], tuple[int, int]] | None = None
        self._last: int | None = None  # the documents ``known`` was last asked with

    def known(self, terms: Sequence[str], docs: int, erasures: int = 0) -> dict[str, int]:
        """What is held of ``terms``; all of it is dropped first when the memory's
        erasure count has moved since (an erased node's words go with it)."""
        found: dict[str, int] = {}
        with self._lock:
            self._last = docs
            if erasures != self._erasures:
                self._held.clear()
                self._erasures = erasures
            for term in terms:
                held = self._held.get(term)
                if _stands(held, docs):
                    self._held.move_to_end(term)
                    found[term] = held[0]
        return found

    def unknown(self, terms: Sequence[str]) -> list[str]:
        """The terms ``known`` would not answer were the memory as it was last asked
        about (every term, before the first): a search counts them as it goes."""
        with self._lock:
            docs = self._last
            if docs is None:
                return list(terms)
            return [t for t in terms if not _stands(self._held.get(t), docs)]

    def hidden(self, moment: tuple[int, int, int]) -> tuple[int, int] | None:
        """The held-back documents and tokens (a withheld class's, a hidden locus's), when
        counted at this moment (clock, erasures, deletions): any write moves the clock, so
        they hold while it stands."""
        with self._lock:
            return (
                self._hidden[1] if self._hidden is not None and self._hidden[0] == moment else None
            )

    def shown_share(self) -> float:
        """The share of the memory's documents the caller sees, as last counted (1.0
        before anything was)."""
        with self._lock:
            if self._hidden is None or not self._last:
                return 1.0
            return self._last / (self._last + self._hidden[1][0])

    def hidden_moment(self) -> tuple[int, int, int] | None:
        """The moment the held-back documents (withheld, hidden) were last counted at."""
        with self._lock:
            return self._hidden[0] if self._hidden is not None else None

    def keep_hidden(self, moment: tuple[int, int, int], totals: tuple[int, int]) -> None:
        """The held-back documents and tokens counted at ``moment``."""
        with self._lock:
            self._hidden = (moment, totals)

    def keep(self, counted: dict[str, int], docs: int) -> None:
        with self._lock:
            for term, df in counted.items():
                self._held[term] = (df, docs)
                self._held.move_to_end(term)
            while len(self._held) > self._size:
                self._held.popitem(last=False)


def stats(
    tx: Neo4jTx,
    terms: Iterable[str],
    held: DocFreqs | None = None,
    withheld: frozenset[str] = frozenset(),
    hidden_loci: frozenset[str] = frozenset(),
) -> TermStatsSnapshot:
    """Documents, mean length and document frequencies; superseded nodes count too, the
    nodes of a ``withheld`` class or recorded in a ``hidden_loci`` session do not
    (``held`` must then be kept for those sets alone).

    The count (a counter) and the frequencies (the fulltext index) are two sources,
    and a read-committed read sees them a commit apart while writes land, in either
    order, even inside one statement. A frequency is therefore held to the count:
    above it, the snapshot would claim a word in more documents than exist."""
    docs, tokens, erasures = tx.text_counters()
    loci = {"loci": sorted(hidden_loci)} if hidden_loci else {}
    if withheld or hidden_loci:
        moment = tx.moment()
        hidden = held.hidden(moment) if held is not None and moment is not None else None
        if hidden is None:
            rows = tx.rows(q.withheld_text_totals(withheld, bool(hidden_loci)), loci)
            hidden = (int(rows[0][0] or 0), int(rows[0][1] or 0)) if rows else (0, 0)
            if held is not None and moment is not None:
                held.keep_hidden(moment, hidden)
        docs -= hidden[0]
        tokens -= hidden[1]
    docs = max(0, docs)
    tokens = max(0, tokens)
    wanted = [t for t in dict.fromkeys(terms) if t]
    freqs = {t: 0 for t in wanted}
    known = held.known(wanted, docs, erasures) if held is not None else {}
    missing = [t for t in wanted if t not in known]
    if missing:
        rows = [{"term": t, "query": lucene_term(t)} for t in missing]
        counted = {t: 0 for t in missing}
        asked: dict[str, object] = {"index": q.FULLTEXT_INDEX, "terms": rows}
        statement = q.TEXT_DOC_FREQS
        if withheld:
            asked["hidden"] = class_labels(",".join(sorted(withheld)))
            statement = q.TEXT_DOC_FREQS_SHOWN
        if hidden_loci:
            asked |= {"hidden": _hidden(withheld), **loci}
            statement = q.TEXT_DOC_FREQS_UNHIDDEN
        for r in tx.rows(statement, asked):
            counted[str(r[0])] = int(r[1])
        if held is not None:
            held.keep(counted, docs)
        known = {**known, **counted}
    for term, df in known.items():
        freqs[term] = min(df, docs)
    return TermStatsSnapshot(docs, tokens / docs if docs else 0.0, freqs)


def index_matches(session: Session, tracer: Tracer) -> bool:
    """True when the fulltext index exists with the labels, property and analyzer we use."""
    params = {"name": q.FULLTEXT_INDEX}
    row = engine.execute(session, q.FULLTEXT_SHOW, params, read=lambda r: r.single(), tracer=tracer)
    if row is None:
        return False
    config: dict[str, Any] = (row["options"] or {}).get("indexConfig") or {}
    return (
        set(row["labelsOrTypes"] or []) == set(AUTHORED_NODE_TYPES)
        and list(row["properties"] or []) == [q.TEXT_PROPERTY]
        and config.get("fulltext.analyzer") == q.FULLTEXT_ANALYZER
    )


def rederive(tx: Neo4jTx) -> tuple[int, int]:
    """Derive every node's tokens again and reset the counters; (documents, tokens)."""
    tx.rows(q.CLOCK_LOCK)  # no writer may slip in between the reads and the sets
    docs = tokens = 0
    for label in AUTHORED_NODE_TYPES:
        rows: list[dict[str, Any]] = []
        for node_id, name, description in tx.rows(q.render(q.TEXT_SOURCES, label=label)):
            rows.append({"id": node_id, **text_props(str(name or ""), str(description or ""))})
        for start in range(0, len(rows), _REINDEX_CHUNK):
            chunk: Sequence[dict[str, Any]] = rows[start : start + _REINDEX_CHUNK]
            tx.rows(q.render(q.TEXT_SET, label=label), {"rows": list(chunk)})
        docs += len(rows)
        tokens += sum(int(r[q.TEXT_LENGTH]) for r in rows)
    params = {"docs": docs, "tokens": tokens, "format": q.TEXT_FORMAT}
    tx.rows(q.TEXT_RESET, params)
    return docs, tokens
