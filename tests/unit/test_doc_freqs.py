"""Document frequencies on Neo4j are counted again once the corpus has moved more
than 1% from when they were counted, and never kept past their bound."""

from __future__ import annotations

from kenning_encounter.store.neo4j.text import DocFreqs


def test_a_count_is_kept_while_the_corpus_moves_less_than_one_percent() -> None:
    held = DocFreqs()
    held.keep({"retry": 40, "storm": 3}, docs=10_000)
    assert held.known(["retry", "storm", "other"], docs=10_100) == {"retry": 40, "storm": 3}
    assert held.known(["retry"], docs=9_901) == {"retry": 40}
    assert held.known(["retry"], docs=10_102) == {}  # moved past 1%: count it again
    assert held.known(["retry"], docs=9_880) == {}


def test_a_small_memory_is_always_counted_exactly() -> None:
    held = DocFreqs()
    held.keep({"retry": 4}, docs=999)
    assert held.known(["retry"], docs=999) == {"retry": 4}
    assert held.known(["retry"], docs=998) == {}
    held.keep({"retry": 4}, docs=1_000)
    assert held.known(["retry"], docs=1_001) == {"retry": 4}


def test_the_least_recently_used_terms_go_first() -> None:
    held = DocFreqs(size=2)
    held.keep({"a": 1, "b": 2}, docs=10)
    assert held.known(["a"], docs=10) == {"a": 1}  # a used: b is the older now
    held.keep({"c": 3}, docs=10)
    assert held.known(["a", "b", "c"], docs=10) == {"a": 1, "c": 3}


def test_the_held_back_documents_are_kept_with_the_moment_they_were_counted_at() -> None:
    """A search's statement skips counting them again at that moment (hidden_moment), and
    asks the index for more hits by the share of the memory they leave (shown_share)."""
    held = DocFreqs()
    assert (held.hidden_moment(), held.shown_share()) == (None, 1.0)
    held.keep_hidden((7, 0, 1), (300, 4_000))
    held.known([], docs=100)  # what the caller sees
    assert held.hidden_moment() == (7, 0, 1) and held.hidden((7, 0, 1)) == (300, 4_000)
    assert held.shown_share() == 0.25
    assert held.hidden((8, 0, 1)) is None  # any write moves the clock
