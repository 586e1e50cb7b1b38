"""What ``search`` scores a hit by is a function of what its caller may see, on every
backend: BM25 over the caller's statistics (its own memory, less what its gate
withholds), never the text index's own scores, which count every document the index
holds. Otherwise a caller could compare the scores of its own notes with what the words
it sees would give, and learn whether a node it may not see holds a word it guessed.

The notes are written so that the index's own ranking would flip: the withheld nodes
hold one query word many times over, which makes it common (and weak) in the index, so
the note holding only that word would fall below the note holding the other."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kenning_encounter.infusion.lexical import CorpusStats, bm25_weight, idf
from kenning_encounter.memory.activation import Activation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from kenning_encounter.textproc import tokenize
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.counted import Counter

ALL = tuple(CLASSIFICATIONS)
WRITER = "scores-writer"
QUERY = "heron marsh"
VISIBLE = [
    ("heron sighting", "a heron at dawn"),
    ("marsh walk", "the marsh path was flooded after rain"),
    ("quiet pond", "nothing moved on the pond all day"),
]
# Alike in length and shape; only the second set holds a query word.
WITHOUT_WORD = [(f"sealed file {i}", f"ward record {i} of the lantern ledger") for i in range(6)]
WITH_WORD = [(f"sealed file {i}", f"heron heron record {i} of the heron") for i in range(6)]
# No standing in the score: a note's activation moves with the clock, which each write
# moves; here only the words may move a score.
STILL = Activation(weight=0.0)


def _write(store: GraphStore, withheld: list[tuple[str, str]]) -> None:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(WRITER, "words")
    writer.create_entities(
        WRITER, [{"type": "Note", "name": n, "description": d} for n, d in VISIBLE]
    )
    writer.create_entities(
        WRITER,
        [
            {"type": "Note", "name": n, "description": d, "classification": ["phi"]}
            for n, d in withheld
        ],
    )


def _page(
    store: GraphStore, granted: tuple[str, ...] = (), as_of: int | None = None
) -> list[tuple[str, float]]:
    memory = Memory(store, granted=granted, activation=STILL)
    found = memory.search(QUERY, limit=10, as_of=as_of)
    return [(h.name, h.score) for h in found.hits]


def _expected(texts: list[tuple[str, str]]) -> list[tuple[str, float]]:
    """BM25 over ``texts`` alone, as a caller seeing just them weighs the query: each
    query word once, k1 1.2 and b 0.75, rounded as a hit shows its score."""
    docs = [tokenize(f"{n}\n{d}") for n, d in texts]
    stats = CorpusStats.from_token_lists(docs)
    terms = dict.fromkeys(tokenize(QUERY))
    scored = [
        (n, round(sum(idf(stats, t) * bm25_weight(doc.count(t), len(doc), stats.avg_len, 1.2, 0.75)
                      for t in terms), 4))
        for (n, _), doc in zip(texts, docs, strict=True)
    ]  # fmt: skip
    return sorted([s for s in scored if s[1] > 0], key=lambda s: -s[1])


def test_a_gated_caller_s_scores_do_not_tell_whether_a_withheld_node_holds_the_word(
    store: GraphStore,
) -> None:
    _write(store, WITH_WORD)
    gated = _page(store)
    assert gated == _expected(VISIBLE)  # its own notes, weighed by its own words alone
    # The index alone, counting the withheld nodes, would put the marsh walk first.
    assert [name for name, _ in gated] == ["heron sighting", "marsh walk"]
    # A read of the past scores by the same statistics.
    assert _page(store, as_of=store.read(lambda tx: tx.clock())) == gated


def test_a_gated_caller_s_page_is_the_same_with_or_without_the_word_withheld(
    store: GraphStore, tmp_path: Path
) -> None:
    """The same memory but for the withheld nodes' words (the twin on the embedded store,
    whatever the backend under test): the same page, score for score."""
    _write(store, WITH_WORD)
    twin = EmbeddedStore.open(tmp_path / "twin")
    try:
        _write(twin, WITHOUT_WORD)
        assert _page(store) == _page(twin)
        # A caller granted the class sees the withheld nodes, and its scores count them.
        assert _page(store, ALL) != _page(twin, ALL)
    finally:
        twin.close()


def test_an_ungated_caller_is_scored_by_its_whole_memory(store: GraphStore) -> None:
    """A caller granted every class weighs the words by every node of its memory, the
    classified ones shown among the hits; equal scores newest first."""
    _write(store, WITH_WORD)
    page = _page(store, ALL)
    assert sorted(page) == sorted(_expected([*VISIBLE, *WITH_WORD]))
    assert [s for _, s in page] == sorted((s for _, s in page), reverse=True)
    assert {n for n, _ in page} >= {n for n, _ in WITH_WORD}


def test_a_search_counts_its_words_statistics_in_the_statement_it_sends_anyway(
    counted: tuple[GraphStore, Counter],
) -> None:
    """On Neo4j a search is one statement, gated or not, for words never counted before
    and just after a write (which moves the count of withheld documents): the statistics
    are counted by the search's own statement. The embedded store's text index is in the
    process: its statistics cost the engine no statement."""
    store, counter = counted
    _write(store, WITH_WORD)
    sent: dict[tuple[str, ...], list[str]] = {}
    for granted in ((), ALL):
        memory = Memory(store, granted=granted, activation=STILL)
        Memory(store, granted=ALL).create_entities(
            WRITER, [{"type": "Note", "name": f"pond {len(sent)}", "description": "reeds"}]
        )
        # The memory's work spans, which the write moved, read apart from the search.
        now = datetime.now(UTC)
        store.read(lambda tx, m=memory, t=now: m.work_time.present(tx, m.activation, t))
        before = len(counter.texts)
        found = memory.search(QUERY, limit=10)
        sent[granted] = counter.texts[before:]
        assert [h.name for h in found.hits][:2] == ["heron sighting", "marsh walk"] or granted
    if store.backend == "neo4j":
        assert [len(s) for s in sent.values()] == [1, 1], sent
    else:
        assert sent[()] == sent[ALL]
