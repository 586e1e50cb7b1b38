"""The corpus statistics a gated caller's lexical ranking weighs words by count no
withheld document: otherwise a caller able to write two notes could tell, from which of
them ranks first, whether a word it may not see is in the memory."""

from __future__ import annotations

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx, SearchHit, TermStatsSnapshot
from kenning_encounter.textproc import tokenize
from kenning_encounter.vocabulary import CLASSIFICATIONS

ALL = tuple(CLASSIFICATIONS)
WRITER = "statistics-writer"
PROBE = "zqxprobe"  # a word only withheld nodes hold
TERMS = tokenize(f"{PROBE} lantern")  # the tokenizer's terms, as the statistics count them


VISIBLE = ("lantern one\na lantern at dusk", "lantern two\nthe lantern stays lit")


def _plant(store: GraphStore) -> None:
    writer = Memory(store, granted=ALL)
    writer.advance_encounter(WRITER, "words")
    writer.create_entities(
        WRITER,
        [
            {"type": "Note", "name": f"{PROBE} one", "description": f"{PROBE} ward words written long ago in the ward book",
             "classification": ["phi"]},
            {"type": "Note", "name": f"{PROBE} two", "description": f"{PROBE} and a lantern",
             "classification": ["secret", "pii"]},
            {"type": "Note", "name": "lantern one", "description": "a lantern at dusk"},
            {"type": "Note", "name": "lantern two", "description": "the lantern stays lit"},
        ],
    )  # fmt: skip


def _through_read_text(store: GraphStore) -> TermStatsSnapshot:
    def work(tx: ReadTx, hits: list[SearchHit], stats_of: object) -> TermStatsSnapshot:
        assert callable(stats_of)
        got = stats_of()
        assert isinstance(got, TermStatsSnapshot)
        return got

    return store.read_text("lantern", TERMS, work, limit=10)


def test_a_gated_caller_s_statistics_count_no_withheld_document(store: GraphStore) -> None:
    _plant(store)
    granted = Memory(store, granted=ALL).store.fulltext_stats(TERMS)
    assert (granted.n_docs, granted.doc_freq(TERMS[0]), granted.doc_freq("lantern")) == (4, 2, 3)
    for gated in (
        Memory(store).store.fulltext_stats(TERMS),
        _through_read_text(Memory(store).store),  # the infusion's path
    ):
        assert (gated.n_docs, gated.doc_freq(TERMS[0]), gated.doc_freq("lantern")) == (2, 0, 2)
        assert gated.avg_len == sum(len(tokenize(t)) for t in VISIBLE) / len(VISIBLE)
    partial = Memory(store, granted=("phi",)).store.fulltext_stats(TERMS)
    assert (partial.n_docs, partial.doc_freq(TERMS[0])) == (3, 1)  # the secret,pii one is not
