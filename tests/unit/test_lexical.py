"""The lexical path: tokenizer, time cues, term extraction and graph-aware ranking.

The ranking tests use small hand-built memories in which one feature alone
decides the order, and each checks that switching that feature off changes
the order, so the test fails if the feature is removed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kenning_encounter.infusion.lexical import (
    Candidate,
    CorpusStats,
    GraphContext,
    LexicalConfig,
    Query,
    Term,
    TermStats,
    bm25_weight,
    extract_terms,
    idf,
    node_tokens,
    rank_candidates,
)
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.textproc import (
    related_keys,
    split_label,
    stem,
    tokenize,
)

# --- tokenizer -------------------------------------------------------------


def test_tokenize_drops_function_words_and_folds_inflections() -> None:
    assert tokenize("She researched the agencies") == ["research", "agenci"]
    assert tokenize("researching research researches") == ["research"] * 3


@pytest.mark.parametrize(
    ("forms", "note"),
    [
        (("paint", "paints", "painted", "painting"), "regular verb"),
        (("run", "running", "runs"), "doubled consonant"),
        (("hike", "hiking", "hiked", "hikes"), "silent e"),
        (("party", "parties"), "y / ies"),
        (("study", "studied", "studies", "studying"), "ied / ies"),
    ],
)
def test_stem_meets_inflected_forms(forms: tuple[str, ...], note: str) -> None:
    assert len({stem(f) for f in forms}) == 1, note


def test_stem_leaves_short_and_non_alphabetic_words() -> None:
    assert stem("bus") == "bus"
    assert stem("2023") == "2023"
    assert stem("glass") == "glass"
    assert stem("need") == "need"


@pytest.mark.parametrize(
    ("word", "kin"),
    [
        ("mentorship", "mentor"),
        ("collaboration", "collaborat"),  # "collaborate", stemmed
        ("teacher", "teach"),
        ("runner", "run"),  # the doubled consonant undone
        ("recently", "recent"),
        ("creative", "creat"),
        ("artist", "art"),
    ],
)
def test_a_derived_word_is_related_to_the_word_it_comes_from(word: str, kin: str) -> None:
    assert kin in related_keys(stem(word))
    assert kin != stem(word)  # related, never folded: the tokenizer keeps them apart


def test_short_words_and_bare_two_letter_endings_have_no_kin() -> None:
    assert related_keys(stem("water")) == ()  # not "wat" + "-er"
    assert related_keys(stem("color")) == ()
    assert related_keys("art") == ()
    assert related_keys("2023") == ()


def test_contractions_and_possessives_reduce_to_their_head() -> None:
    assert tokenize("Caroline's didn't I'm we'll you've") == ["carolin"]
    assert tokenize("Caroline’s mural") == ["carolin", "mural"]


def test_tokenize_keeps_letters_of_any_script() -> None:
    assert tokenize("José visited Zürich") == ["josé", "visit", "zürich"]


def test_a_word_is_one_word_however_unicode_spells_it() -> None:
    # Composed or decomposed (a macOS file name), a ligature, full-width letters: one key.
    composed, decomposed = "café menu", "cafe\u0301 menu"
    assert tokenize(decomposed) == tokenize(composed) == ["café", "menu"]
    assert tokenize("the \ufb01le cache") == tokenize("the file cache")
    assert tokenize("\uff43\uff41\uff43\uff48\uff45") == tokenize("cache")
    query = extract_terms(f"What is on the {decomposed}?")
    assert {t.key for t in query.terms} >= {"café", "menu"}
    # A name is found where the prompt writes it, in the form its words are read in.
    named = extract_terms("notes from the meeting with Jose\u0301 Ruiz")
    assert {t.key for t in named.terms if t.proper} == {"josé", "ruiz"}


def test_split_label_takes_a_short_capitalized_head() -> None:
    assert split_label("Caroline: I went to a support group.") == (
        "Caroline",
        "I went to a support group.",
    )
    assert split_label("Mary Ann Lee: hello")[0] == "Mary Ann Lee"
    assert split_label("see: the index lags") == (None, "see: the index lags")
    assert split_label("A very long sentence that has: a colon")[0] is None
    assert split_label("Time 10:30 is late")[0] is None


# --- time cues: tests/unit/test_textproc_time.py -------------------------


# --- term extraction -------------------------------------------------------


def test_extract_terms_weights_the_prompt_above_older_turns() -> None:
    query = extract_terms(
        "how is the parser doing",
        ["we looked at the lexer", "then the cache misbehaved"],
        config=LexicalConfig(trajectory_decay=0.5, proper_boost=0.0),
    )
    w = query.weights()
    assert w["parser"] == 1.0
    assert w["cach"] == 0.5  # the previous turn
    assert w["lexer"] == 0.25  # the one before
    assert "the" not in w and "how" not in w


def test_extract_terms_keeps_the_strongest_weight_of_a_repeated_term() -> None:
    query = extract_terms("the parser again", ["parser broke"])
    assert query.weights()["parser"] == 1.0


def test_extract_terms_reads_only_the_last_trajectory_turns() -> None:
    query = extract_terms("now", ["ancient", "recent"], config=LexicalConfig(trajectory_turns=1))
    assert "recent" in query.weights()
    assert "ancient" not in query.weights()


def test_extract_terms_boosts_names_and_moves_dates_into_the_window() -> None:
    query = extract_terms("What did Caroline paint on 13 October, 2023?")
    by_key = {t.key: t for t in query.terms}
    assert by_key["carolin"].proper
    assert by_key["carolin"].weight > by_key["paint"].weight
    assert by_key["carolin"].surface == "Caroline"
    assert query.window is not None and query.window.label == "2023-10-13"
    # The date's words stay, weaker than the prompt's own, and reach no related word.
    assert all(by_key[k].weight < by_key["paint"].weight for k in ("october", "13", "2023"))
    assert "octob" not in by_key


def test_a_sentence_initial_capital_is_not_a_name() -> None:
    query = extract_terms("Parsers fail. Caching helps")
    assert not any(t.proper for t in query.terms)


def test_a_prompt_of_function_words_is_empty() -> None:
    assert extract_terms("what is it that you did?").empty


# --- ranking ---------------------------------------------------------------

_START = datetime(2024, 1, 1, tzinfo=UTC)


def _memory(sessions: list[tuple[int, list[str]]]) -> tuple[list[NodeRecord], dict[str, datetime]]:
    """Encounters (day offset, descriptions) → nodes in tick order and opening times."""
    nodes: list[NodeRecord] = []
    opened: dict[str, datetime] = {}
    tick = 0
    for number, (day, texts) in enumerate(sessions):
        name = f"enc-{number}"
        when = _START + timedelta(days=day)
        opened[name] = when
        for k, text in enumerate(texts):
            tick += 1
            nodes.append(
                NodeRecord(
                    id=f"n{number}-{k}",
                    type="Observation",
                    name=f"n{number}-{k}",
                    description=text,
                    tick=tick,
                    created_at=when.isoformat(),
                    encounter=name,
                )
            )
    return nodes, opened


def _rank(
    prompt: str,
    nodes: list[NodeRecord],
    opened: dict[str, datetime],
    config: LexicalConfig | None = None,
    limit: int = 10,
) -> list[str]:
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    query = extract_terms(prompt, config=config)
    ranked = rank_candidates(
        query, [Candidate(n) for n in nodes], GraphContext(stats, opened), limit, config=config
    )
    return [s.node.id for s in ranked]


_FILLER = [
    "the weather was mild",
    "lunch was pasta",
    "traffic was slow",
    "the printer jammed",
    "coffee ran out",
    "a meeting moved",
]


def test_session_aggregation_lifts_a_member_of_the_encounter_that_matches_best() -> None:
    # Two identical notes about the parser; one sits in an encounter that was
    # about parsing throughout, the other among unrelated notes.
    nodes, opened = _memory(
        [
            (0, ["parser crash on empty input", *_FILLER[:3]]),
            (1, ["parser crash on empty input", "parser grammar", "parser tests", "parser docs"]),
        ]
    )
    # No neighbour propagation, so only the encounter pool can separate them.
    base = LexicalConfig(neighbour_weight=0.0)
    order = _rank("parser crash", nodes, opened, base)
    assert order[0] == "n1-0"
    without = _rank("parser crash", nodes, opened, replace(base, encounter_weight=0.0))
    assert without[0] == "n0-0"  # equal scores, earlier tick first


def test_neighbour_propagation_surfaces_the_reply_next_to_a_match() -> None:
    # The answer shares no word with the prompt; the question before it does.
    nodes, opened = _memory(
        [
            (
                0,
                [
                    *_FILLER[:2],
                    "which database did we pick for the ledger?",
                    "postgres, for its locks",
                ],
            ),
            (1, ["ledger notes", *_FILLER[2:5]]),
        ]
    )
    # Propagation alone: the question is not held lower for asking.
    config = LexicalConfig(encounter_weight=0.0, asking_share=1.0)
    order = _rank("ledger database", nodes, opened, config)
    assert order[0] == "n0-2"
    # Beside a full match beats a partial match of its own.
    assert order.index("n0-3") < order.index("n1-0")
    without = _rank("ledger database", nodes, opened, replace(config, neighbour_weight=0.0))
    assert "n0-3" not in without


def test_attribution_lifts_the_subject_named_over_the_other_speaker() -> None:
    nodes, opened = _memory(
        [
            (0, ["Melanie: we went camping by the lake", "Caroline: we went camping in the hills"]),
            (1, ["Caroline: Melanie loves camping", *_FILLER[:2]]),
        ]
    )
    order = _rank("Where did Caroline go camping?", nodes, opened)
    assert order[0] == "n0-1"
    # The name is not counted as a word: the label heads half the memory.
    assert order.index("n0-1") < order.index("n1-0")
    without = _rank("Where did Caroline go camping?", nodes, opened, LexicalConfig(label_boost=0.0))
    assert without[0] == "n0-0"


def test_a_capitalized_short_form_names_the_label() -> None:
    nodes, opened = _memory([(0, ["Melanie: pottery class", "Caroline: pottery class"])])
    assert _rank("What did Mel make in pottery class?", nodes, opened)[0] == "n0-0"
    # Lowercase words never reach a label by prefix ("car" is not "Caroline").
    assert _rank("car pottery class", nodes, opened)[0] == "n0-0"


def test_the_time_named_lifts_what_was_recorded_then() -> None:
    nodes, opened = _memory(
        [
            (0, ["bought a new bike", *_FILLER[:2]]),
            (40, ["bought a new bike", *_FILLER[2:4]]),
        ]
    )
    prompt = "which bike did I buy on 10 February, 2024?"  # day 40 is 10 February
    assert _rank(prompt, nodes, opened)[0] == "n1-0"
    assert _rank(prompt, nodes, opened, LexicalConfig(time_weight=0.0, time_base=0.0))[0] == "n0-0"
    # Each half of the signal lifts on its own: the boost of a match, the pull of the time.
    assert _rank(prompt, nodes, opened, LexicalConfig(time_base=0.0))[0] == "n1-0"
    assert _rank(prompt, nodes, opened, LexicalConfig(time_weight=0.0))[0] == "n1-0"


def test_time_prefers_when_it_held_and_reads_offsetless_times_as_utc() -> None:
    nodes, opened = _memory([(0, ["bought a new bike", "bought a new bike"])])
    # Recorded on day 0, but it held on 10 February (observed time, no offset).
    nodes[1] = replace(nodes[1], props={"t_observed": "2024-02-10T09:00:00"})
    nodes[0] = replace(nodes[0], created_at="2024-01-01T00:00:00")
    prompt = "which bike did I buy on 10 February, 2024?"
    assert _rank(prompt, nodes, opened)[0] == "n0-1"
    query = extract_terms("which bike was that, last week?", now=datetime(2024, 1, 5))
    assert query.window is not None and query.window.label == "last week"
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    ranked = rank_candidates(query, [Candidate(nodes[0])], GraphContext(stats, opened), 5)
    assert "in the time asked about (last week)" in ranked[0].why


def test_coverage_prefers_both_words_over_the_rarer_word_repeated() -> None:
    # "lag" is common here, so plain BM25 would favour "index" said twice.
    nodes, opened = _memory(
        [
            (0, ["index index rebuilt"]),
            (1, ["index lag restart"]),
            (2, ["lag noted"] * 8),
            (3, _FILLER),
        ]
    )
    config = LexicalConfig(neighbour_weight=0.0, encounter_weight=0.0)
    assert _rank("index lag", nodes, opened, config)[0] == "n1-0"
    assert _rank("index lag", nodes, opened, replace(config, coverage_power=0.0))[0] == "n0-0"


def test_superseded_nodes_lend_evidence_but_are_never_returned() -> None:
    nodes, opened = _memory([(0, ["cache eviction policy", "lru with a ttl"])])
    old = replace(nodes[0], superseded_by="n9")
    order = _rank("cache eviction policy", [old, nodes[1]], opened)
    assert order == ["n0-1"]


def test_nothing_matched_is_silence() -> None:
    nodes, opened = _memory([(0, _FILLER)])
    assert _rank("kubernetes operator", nodes, opened) == []
    stats = CorpusStats.from_texts(n.description for n in nodes)
    context = GraphContext(stats, opened)
    assert rank_candidates(Query(()), [Candidate(nodes[0])], context, 5) == []
    assert rank_candidates(extract_terms("weather"), [], context, 5) == []


def test_ranked_items_say_why_they_surfaced() -> None:
    nodes, opened = _memory(
        [(0, ["Caroline: adoption agencies researched", "Melanie: sounds good"])]
    )
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    query = extract_terms("What did Caroline research in January 2024?")
    ranked = rank_candidates(query, [Candidate(n) for n in nodes], GraphContext(stats, opened), 5)
    top = ranked[0]
    assert top.node.id == "n0-0"
    assert top.matched == ("research",)
    assert "matched research" in top.why
    assert "about the subject named" in top.why
    assert "in the time asked about (2024-01)" in top.why
    assert "recorded beside a match" in ranked[1].why


def test_precomputed_tokens_give_the_same_ranking() -> None:
    nodes, opened = _memory([(0, ["alpha beta", "beta gamma", "gamma delta"])])
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    context = GraphContext(stats, opened)
    query = Query((Term("beta", 1.0, "beta"), Term("gamma", 1.0, "gamma")))
    plain = rank_candidates(query, [Candidate(n) for n in nodes], context, 5)
    given = rank_candidates(query, [Candidate(n, 0.0, node_tokens(n)) for n in nodes], context, 5)
    assert [(s.node.id, s.score) for s in plain] == [(s.node.id, s.score) for s in given]


def test_idf_is_higher_for_rarer_terms_and_never_negative() -> None:
    stats = CorpusStats.from_texts(["apple pie", "apple tart", "apple cake", "plum cake"])
    assert idf(stats, "plum") > idf(stats, "cak") > idf(stats, "appl") > 0.0
    assert idf(stats, "unseen") > idf(stats, "plum")
    assert stats.n_docs == 4 and stats.avg_len == 2.0


# --- statistics an index got wrong -------------------------------------------
# The index's figures are input to this layer: whatever they say, every weight and
# score stays a finite number >= 0, so a damaged index can cost quality, never a crash.


@dataclass(frozen=True)
class _Stated:
    """Statistics as an index reported them, consistent or not."""

    n_docs: int
    avg_len: float
    frequencies: dict[str, int] = field(default_factory=dict[str, int])

    def doc_freq(self, term: str) -> int:
        return self.frequencies.get(term, 0)


def _mixed_memory() -> list[NodeRecord]:
    nodes, _ = _memory(
        [(0, ["the deploy failed at noon", "a deploy retried twice", "deploy caches went cold"])]
    )
    return nodes


def test_a_frequency_above_the_document_count_keeps_idf_positive() -> None:
    # The reported store: 6 live documents, a common term counted in 9 (deleted ones too).
    stats = _Stated(6, 5.0, {"deploy": 9, "noon": 1})
    weight = idf(stats, "deploy")
    assert math.isfinite(weight) and weight > 0.0
    assert weight == idf(_Stated(6, 5.0, {"deploy": 6}), "deploy")
    assert idf(stats, "noon") > weight


def test_a_mixed_prompt_ranks_when_a_frequency_exceeds_the_count() -> None:
    nodes = _mixed_memory()
    stats = _Stated(6, 5.0, {"deploy": 9, "noon": 1, "fail": 1})
    query = extract_terms("why did the deploy fail at noon")
    ranked = rank_candidates(query, [Candidate(n) for n in nodes], GraphContext(stats), 5)
    assert ranked[0].node.id == "n0-0"
    assert all(isinstance(s.score, float) and math.isfinite(s.score) for s in ranked)


def test_bm25_weight_reads_a_broken_mean_length_as_average() -> None:
    average = bm25_weight(2, 7, 7.0, 1.2, 0.75)
    for broken in (0.0, -3.0, math.nan, math.inf):
        assert bm25_weight(2, 7, broken, 1.2, 0.75) == average
    assert bm25_weight(0, 7, 7.0, 1.2, 0.75) == 0.0
    assert bm25_weight(1, -4, 7.0, 1.2, 1.0) > 0.0
    # A subnormal mean (found by hypothesis) overflowed the ratio and zeroed every weight.
    assert bm25_weight(2, 7, 5e-324, 1.2, 0.75) > 0.0


_ANY_COUNT = st.integers(min_value=-10, max_value=40)
_ANY_LENGTH = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.0, -1.0, math.nan, math.inf, -math.inf]),
)


@settings(max_examples=150, deadline=None)
@given(
    n_docs=_ANY_COUNT,
    avg_len=_ANY_LENGTH,
    frequencies=st.dictionaries(
        st.sampled_from(["deploy", "fail", "noon", "cach", "retri", "cold"]), _ANY_COUNT
    ),
)
def test_any_statistics_give_finite_non_negative_scores(
    n_docs: int, avg_len: float, frequencies: dict[str, int]
) -> None:
    stats: TermStats = _Stated(n_docs, avg_len, frequencies)
    for term in ("deploy", "fail", "noon", "unseen"):
        weight = idf(stats, term)
        assert math.isfinite(weight) and weight >= 0.0
    nodes = _mixed_memory()
    query = extract_terms("why did the deploy fail at noon, with caches cold")
    ranked = rank_candidates(query, [Candidate(n) for n in nodes], GraphContext(stats), 5)
    for scored in ranked:
        assert isinstance(scored.score, float)
        assert math.isfinite(scored.score) and scored.score > 0.0
    # The words still decide: the node sharing the most of them comes first.
    assert ranked and ranked[0].node.id in {"n0-0", "n0-2"}


# --- what the question asks of the answer ------------------------------------------


def test_a_question_asking_when_prefers_the_record_that_says_when() -> None:
    nodes, opened = _memory([(0, ["sold the old bike", "sold the old bike yesterday"])])
    assert extract_terms("When did I sell the bike?").asks_when
    assert not extract_terms("Why did I sell the bike?").asks_when
    order = _rank("When did I sell the bike?", nodes, opened)
    assert order[0] == "n0-1"
    # Nothing else tells them apart: without the signal the earlier record leads.
    assert _rank("When did I sell the bike?", nodes, opened, LexicalConfig(when_weight=0.0))[0] == (
        "n0-0"
    )
    # A question that does not ask when is not moved by it.
    assert _rank("Why did I sell the bike?", nodes, opened)[0] == "n0-0"
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    query = extract_terms("When did I sell the bike?")
    ranked = rank_candidates(query, [Candidate(n) for n in nodes], GraphContext(stats, opened), 2)
    assert "says when" in ranked[0].why


def test_news_told_since_the_last_talk_says_when() -> None:
    nodes, opened = _memory(
        [(0, ["I sold the old bike", "Since we last spoke, I sold the old bike"])]
    )
    prompt = "When did I sell the bike?"
    # The shorter record leads on its words alone; the other says when it happened.
    assert _rank(prompt, nodes, opened, LexicalConfig(when_weight=0.0))[0] == "n0-0"
    assert _rank(prompt, nodes, opened)[0] == "n0-1"
    assert _rank("Why did I sell the bike?", nodes, opened)[0] == "n0-0"


def test_the_words_of_a_time_the_prompt_names_stay_as_weaker_words() -> None:
    # Both records were made long before the prompt's "last weekend", so the time read
    # against the prompt's moment fits neither; the one that names the time as the
    # prompt does is still the likelier answer.
    nodes, opened = _memory(
        [(0, ["the trip to the lake was long", "our trip last weekend was fun"])]
    )
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    now = _START + timedelta(days=200)
    prompt = "Where did we go on the trip last weekend?"

    def first(config: LexicalConfig) -> str:
        query = extract_terms(prompt, now=now, config=config)
        assert query.window is not None  # the time is still read as a time
        candidates = [Candidate(n) for n in nodes]
        ranked = rank_candidates(query, candidates, GraphContext(stats, opened), 2, config=config)
        return ranked[0].node.id

    weights = extract_terms(prompt, now=now).weights()
    assert weights["weekend"] == LexicalConfig().time_words_weight < weights["trip"]
    assert first(LexicalConfig()) == "n0-1"
    # Taken out of the words altogether, the shorter record leads.
    assert first(LexicalConfig(time_words_weight=0.0)) == "n0-0"


def test_a_question_asking_how_long_prefers_the_record_that_says_for_how_long() -> None:
    nodes, opened = _memory(
        [(0, ["my friends are great", "my friends have helped me for four years"])]
    )
    prompt = "How long has she had her friends?"
    query = extract_terms(prompt)
    assert query.asks_span and not query.asks_when
    # The shorter record matches as well and would lead on its words alone.
    assert _rank(prompt, nodes, opened, LexicalConfig(when_weight=0.0))[0] == "n0-0"
    assert _rank(prompt, nodes, opened)[0] == "n0-1"
    # A question that does not ask how long is not moved by it.
    assert _rank("Who are her friends?", nodes, opened)[0] == "n0-0"


def test_the_record_after_a_question_inherits_more_of_it_than_the_one_before() -> None:
    # The answer shares no word with the prompt; the question before it does. The
    # record before the question is as near, but it answers nothing.
    nodes, opened = _memory(
        [(0, ["lunch was pasta", "how often do you swim laps?", "three times a week", "ok"])]
    )
    config = LexicalConfig(encounter_weight=0.0, asking_share=1.0)
    order = _rank("How often does she swim laps?", nodes, opened, config)
    assert order[0] == "n0-1"
    assert order.index("n0-2") < order.index("n0-0")
    flat = _rank("How often does she swim laps?", nodes, opened, replace(config, reply_boost=0.0))
    assert flat.index("n0-0") < flat.index("n0-2")  # equal shares: the earlier record first


def test_a_reply_to_another_speakers_statement_inherits_less_than_a_continuation() -> None:
    # Both records after the match share no word with the prompt. The one in the second
    # encounter carries on the same speaker's account; the one in the first is another
    # speaker's reply, which need not be about what was said.
    nodes, opened = _memory(
        [
            (0, ["Ann: the puppy arrived today", "Bob: lunch was pasta"]),
            (0, ["Cy: the puppy arrived today", "Cy: lunch was pasta"]),
        ]
    )
    order = _rank("Where did the puppy come from?", nodes, opened)
    assert order.index("n1-1") < order.index("n0-1")
    # Inheriting alike, the earlier record leads.
    flat = _rank("Where did the puppy come from?", nodes, opened, LexicalConfig(other_share=1.0))
    assert flat.index("n0-1") < flat.index("n1-1")
    # A reply to a question still inherits it in full, whoever asks.
    asked, opened = _memory([(0, ["Ann: where is the puppy from?", "Bob: a shelter"])])
    assert _rank("Where did the puppy come from?", asked, opened, LexicalConfig(other_share=0.0))[
        :2
    ] == ["n0-1", "n0-0"]


def test_a_record_that_asks_ranks_below_the_reply_that_answers_it() -> None:
    # The question shares the prompt's words; the answer after it shares none.
    nodes, opened = _memory(
        [(0, ["lunch was pasta", "how often do you swim laps?", "three times a week"])]
    )
    config = LexicalConfig(encounter_weight=0.0)
    prompt = "How often does she swim laps?"
    assert _rank(prompt, nodes, opened, config)[:2] == ["n0-2", "n0-1"]
    # Not held lower, the question leads its answer.
    assert _rank(prompt, nodes, opened, replace(config, asking_share=1.0))[:2] == [
        "n0-1",
        "n0-2",
    ]
    # The memory's own open Question is work to surface: it is not held lower.
    asked = [replace(n, type="Question") if n.id == "n0-1" else n for n in nodes]
    assert _rank(prompt, asked, opened, config)[0] == "n0-1"


def test_the_name_asked_about_leads_the_name_mentioned_after_it() -> None:
    nodes, opened = _memory(
        [(0, ["Melanie: the book recommended to me", "Caroline: the book recommended to me"])]
    )
    prompt = "What book did Caroline recommend to Melanie?"
    assert _rank(prompt, nodes, opened)[0] == "n0-1"
    assert _rank(prompt, nodes, opened, LexicalConfig(object_share=1.0))[0] == "n0-0"
    # Names joined to the first are asked about too.
    query = extract_terms("How do Jon and Gina like to relax with Maria?")
    subjects = {t.surface for t in query.terms if t.subject}
    assert subjects == {"Jon", "Gina"}


def test_a_derived_word_reaches_the_word_it_comes_from_as_weaker_evidence() -> None:
    nodes, opened = _memory(
        [(0, ["got mentored by a founder", "the mentorship program opened", *_FILLER[:2]])]
    )
    alone = LexicalConfig(neighbour_weight=0.0, encounter_weight=0.0)
    order = _rank("who gave the mentorship", nodes, opened, alone)
    assert order == ["n0-1", "n0-0"]  # its own word first, its kin after
    without = replace(alone, related_weight=0.0)
    assert _rank("who gave the mentorship", nodes, opened, without) == ["n0-1"]
    query = extract_terms("who gave the mentorship")
    assert [(t.key, t.of) for t in query.terms if t.of] == [("mentor", "mentorship")]


def test_two_words_of_the_prompt_reach_the_word_they_make_together() -> None:
    nodes, opened = _memory([(0, ["a short workout before work", *_FILLER[:3]])])
    query = extract_terms("did she work out?")
    assert ("workout", "work") in {(t.key, t.of) for t in query.terms}
    stats = CorpusStats.from_token_lists(node_tokens(n) for n in nodes)
    ranked = rank_candidates(query, [Candidate(n) for n in nodes], GraphContext(stats, opened), 3)
    # "work" and "workout" are evidence of one word: matched once, named once.
    assert ranked[0].matched == ("work",)
