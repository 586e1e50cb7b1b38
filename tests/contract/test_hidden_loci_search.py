"""A reader hiding loci searches as if their nodes were not there, on every backend: they
take no candidate's place (a page of N holds N visible hits while as many match), and they
count in none of the statistics a score is weighed by (a score cannot tell whether a hidden
session wrote a word). As the classification gate does for classes (test_search_scores.py).

The hidden nodes hold the query word many times over, so the index's own ranking would put
them first and, counted, would make the word common and weak."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.lexical import CorpusStats, bm25_weight, idf
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.activation import Activation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, ReadTx, SearchHit, TermStatsSnapshot
from kenning_encounter.textproc import tokenize
from tests.support.counted import Counter

OPEN = "open-session"
SECRET = "secret-session"
HIDDEN = frozenset({SECRET})
QUERY = "heron marsh"
VISIBLE = [
    ("heron sighting", "a heron at dawn"),
    ("marsh walk", "the marsh path was flooded after rain"),
    ("quiet pond", "nothing moved on the pond all day"),
]
WITHOUT_WORD = [(f"sealed file {i}", f"ward record {i} of the lantern ledger") for i in range(6)]
WITH_WORD = [(f"sealed file {i}", f"heron heron record {i} of the heron") for i in range(6)]
# No standing in the score: only the words may move it.
STILL = Activation(weight=0.0)


def _notes(texts: list[tuple[str, str]]) -> list[dict[str, str]]:
    return [{"type": "Note", "name": n, "description": d} for n, d in texts]


def _write(store: GraphStore, secret: list[tuple[str, str]]) -> None:
    writer = Memory(store)
    writer.advance_encounter(OPEN, "words")
    writer.create_entities(OPEN, _notes(VISIBLE))
    writer.advance_encounter(SECRET, "private words")
    writer.create_entities(SECRET, _notes(secret))


def _page(
    store: GraphStore, hidden: frozenset[str] = HIDDEN, as_of: int | None = None, limit: int = 10
) -> list[tuple[str, float]]:
    reader = Memory(store, hidden_loci=hidden, activation=STILL)
    found = reader.search(QUERY, limit=limit, as_of=as_of)
    return [(h.name, h.score) for h in found.hits]


def _expected(texts: list[tuple[str, str]]) -> list[tuple[str, float]]:
    """BM25 over ``texts`` alone (k1 1.2, b 0.75, each query word once), rounded as a hit
    shows its score."""
    docs = [tokenize(f"{n}\n{d}") for n, d in texts]
    stats = CorpusStats.from_token_lists(docs)
    terms = dict.fromkeys(tokenize(QUERY))
    scored = [
        (n, round(sum(idf(stats, t) * bm25_weight(doc.count(t), len(doc), stats.avg_len, 1.2, 0.75)
                      for t in terms), 4))
        for (n, _), doc in zip(texts, docs, strict=True)
    ]  # fmt: skip
    return sorted([s for s in scored if s[1] > 0], key=lambda s: -s[1])


def test_a_hidden_locus_s_words_move_no_visible_score(store: GraphStore) -> None:
    _write(store, WITH_WORD)
    page = _page(store)
    assert page == _expected(VISIBLE)
    # Counted, the hidden notes would make "heron" common and put the marsh walk first.
    assert [name for name, _ in page] == ["heron sighting", "marsh walk"]
    assert _page(store, as_of=store.read(lambda tx: tx.clock())) == page


def test_a_page_is_the_same_with_or_without_the_word_in_a_hidden_locus(
    store: GraphStore, tmp_path: Path
) -> None:
    """The same memory but for the hidden notes' words (the twin on the embedded store):
    the same page, score for score; read without hiding, the two differ."""
    _write(store, WITH_WORD)
    twin = EmbeddedStore.open(tmp_path / "twin")
    try:
        _write(twin, WITHOUT_WORD)
        assert _page(store) == _page(twin)
        assert _page(store, frozenset()) != _page(twin, frozenset())
    finally:
        twin.close()


def test_a_page_of_n_holds_n_visible_hits_past_the_hidden_ones(store: GraphStore) -> None:
    """The hidden notes outrank every visible one, and are more than a page's worth."""
    writer = Memory(store)
    writer.advance_encounter(SECRET, "lamps")
    writer.create_entities(
        SECRET,
        [{"type": "Note", "name": f"zqxlamp {i}", "description": "zqxlamp zqxlamp zqxlamp lit"}
         for i in range(40)],
    )  # fmt: skip
    writer.advance_encounter(OPEN, "lamps")
    shown = [f"plain lamp {i}" for i in range(12)]
    writer.create_entities(
        OPEN, [{"type": "Note", "name": n, "description": "one zqxlamp among words"} for n in shown]
    )
    everything = Memory(store).search("zqxlamp", limit=10)
    assert all(h.name.startswith("zqxlamp") for h in everything.hits)  # they rank first
    reader = Memory(store, hidden_loci=HIDDEN)
    for limit in (1, 3, 10):
        hits = reader.search("zqxlamp", limit=limit).hits
        assert len(hits) == limit and all(h.name in shown for h in hits), hits
    assert sorted(h.name for h in reader.search("zqxlamp", limit=50).hits) == sorted(shown)
    past = reader.search("zqxlamp", limit=10, as_of=store.read(lambda tx: tx.clock())).hits
    assert len(past) == 10 and all(h.name in shown for h in past), past
    # Asked for by time too ("when" reads past what the words rank first).
    dated = reader.search("zqxlamp", limit=10, when="2000-01-01..").hits
    assert len(dated) == 10 and all(h.name in shown for h in dated), dated


def test_the_statistics_a_hiding_reader_is_handed_count_no_hidden_document(
    store: GraphStore,
) -> None:
    """Through the memory's store, as search and the infusion's lexical path read them."""
    _write(store, WITH_WORD)
    terms = tokenize(QUERY)

    def work(tx: ReadTx, hits: list[SearchHit], stats_of: object) -> TermStatsSnapshot:
        assert callable(stats_of)
        got = stats_of()
        assert isinstance(got, TermStatsSnapshot)
        assert not {h.id for h in hits} & secret_ids
        return got

    secret_ids = {
        h.id for h in Memory(store).search("sealed file", limit=20).hits if h.name.startswith("s")
    }
    assert len(secret_ids) == len(WITH_WORD)
    whole = Memory(store).store.fulltext_stats(terms)
    assert (whole.n_docs, whole.doc_freq("heron")) == (9, 7)
    reader = Memory(store, hidden_loci=HIDDEN).store
    for stats in (
        reader.fulltext_stats(terms),
        reader.read_text("heron sealed", terms, work, limit=20),  # the infusion's path
    ):
        assert (stats.n_docs, stats.doc_freq("heron"), stats.doc_freq("marsh")) == (3, 1, 1)
        visible = [len(tokenize(f"{n}\n{d}")) for n, d in VISIBLE]
        assert stats.avg_len == sum(visible) / len(visible)


def test_a_hiding_search_is_one_statement_and_a_plain_one_pays_nothing_new(
    counted: tuple[GraphStore, Counter],
) -> None:
    """On Neo4j a search stays one statement with loci hidden, for words never counted
    before and just after a write; a reader hiding nothing sends the text it always sent."""
    store, counter = counted
    _write(store, WITH_WORD)
    sent: dict[frozenset[str], list[str]] = {}
    for hidden in (frozenset[str](), HIDDEN):
        reader = Memory(store, hidden_loci=hidden, activation=STILL)
        Memory(store).create_entities(
            OPEN, [{"type": "Note", "name": f"pond {len(sent)}", "description": "reeds"}]
        )
        now = datetime.now(UTC)
        store.read(lambda tx, m=reader, t=now: m.work_time.present(tx, m.activation, t))
        before = len(counter.texts)
        found = reader.search(QUERY, limit=10)
        sent[hidden] = counter.texts[before:]
        assert [h.name for h in found.hits][:2] == ["heron sighting", "marsh walk"] or not hidden
    if store.backend == "neo4j":
        assert [len(s) for s in sent.values()] == [1, 1], sent
        assert sent[frozenset()] != sent[HIDDEN]  # the hiding one is a statement of its own
    else:
        assert sent[frozenset()] == sent[HIDDEN]


def test_the_infusion_s_lexical_candidates_are_not_spent_on_a_hidden_locus(
    store: GraphStore,
) -> None:
    """The lexical path asks the index for a fixed number of candidates: hidden notes
    matching better than every visible one would take them all, and the prompt would
    meet silence though visible notes bear on it."""
    writer = Memory(store)
    writer.advance_encounter(SECRET, "kilns")
    writer.create_entities(
        SECRET,
        [{"type": "Note", "name": f"zqxkiln {i}", "description": "zqxkiln zqxglaze zqxkiln zqxglaze"}
         for i in range(30)],
    )  # fmt: skip
    writer.advance_encounter(OPEN, "kilns")
    shown = writer.create_entities(
        OPEN,
        [{"type": "Note", "name": "kiln log", "description": "the zqxkiln cracked a zqxglaze "
          "during the long firing of the winter batch"}],
    ).created  # fmt: skip
    config = InfusionConfig(candidates=10)
    result = Infuser(store, config, hidden_loci=HIDDEN).infuse("reader", "zqxkiln zqxglaze again?")
    assert set(result["meta"]["delivered"]) == {shown[0].id}, result["payload"]
    reader = Memory(store, hidden_loci=HIDDEN)
    served = Infuser(reader.store, config, hidden_loci=HIDDEN).infuse(
        "reader", "zqxkiln zqxglaze again?"
    )
    assert set(served["meta"]["delivered"]) == {shown[0].id}, served["payload"]


def test_a_reader_hiding_much_of_the_memory_still_searches_in_one_statement(
    counted: tuple[GraphStore, Counter],
) -> None:
    """On Neo4j the index is asked for as many more hits as the hidden share of the
    memory takes from its answer, so a search whose best matches are mostly hidden is not
    asked again, deeper, in a second statement."""
    store, counter = counted
    writer = Memory(store)
    writer.advance_encounter(SECRET, "lamps")
    writer.create_entities(
        SECRET,
        [{"type": "Note", "name": f"zqxlamp {i}", "description": "zqxlamp zqxlamp zqxlamp lit"}
         for i in range(80)],
    )  # fmt: skip
    writer.advance_encounter(OPEN, "lamps")
    writer.create_entities(
        OPEN,
        [{"type": "Note", "name": f"plain lamp {i}", "description": "one zqxlamp among words"}
         for i in range(60)],
    )  # fmt: skip
    reader = Memory(store, hidden_loci=HIDDEN)
    reader.search("zqxlamp", limit=10)  # the hidden share is counted once
    found, sent = counter.sent_by(lambda: reader.search("zqxlamp", limit=10))
    assert len(found.hits) == 10 and all(h.name.startswith("plain") for h in found.hits)
    if store.backend == "neo4j":
        assert sent == 1


def test_the_infusion_s_search_scans_nothing_it_holds_back(
    counted: tuple[GraphStore, Counter],
) -> None:
    """The lexical infusion keeps no statistics from its search's statement, so on Neo4j
    that statement leaves the hidden loci's totals uncounted (a scan of every hidden node,
    each prompt); its hits still leave them out."""
    store, counter = counted
    _write(store, WITH_WORD)
    reader = Memory(store, hidden_loci=HIDDEN).store
    before = len(counter.texts)
    hits = reader.read_text("heron", ["heron"], lambda _tx, hits, _stats: hits, limit=10)
    sent = counter.texts[before:]
    assert len(hits) == 1  # the heron sighting alone
    if store.backend == "neo4j":
        assert len(sent) == 1 and "collect(totals)" not in sent[0], sent
