"""The strict reading of a selection answer and of a compress answer."""

from __future__ import annotations

import pytest

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.compress import MAX_MEANING_CHARS, parse_meaning
from kenning_encounter.meaning.selection import ParsedSelection, parse_selection

HANDLES = {3: "obs_aaaaaaaaaaaa", 7: "con_bbbbbbbbbbbb", 12: "que_cccccccccccc"}


def read(text: str, *, reasons: bool = False, max_picks: int = 8) -> ParsedSelection:
    return parse_selection(text, HANDLES, reasons=reasons, max_picks=max_picks)


def test_ids_map_back_in_the_models_order() -> None:
    parsed = read('{"ids": [7, 3]}')
    assert parsed.ids == ("con_bbbbbbbbbbbb", "obs_aaaaaaaaaaaa")
    assert (parsed.unknown_dropped, parsed.over_limit_dropped, parsed.reasons) == (0, 0, None)


def test_empty_selection_is_a_valid_answer() -> None:
    assert read('{"ids": []}').ids == ()


def test_digit_strings_are_handles_too() -> None:
    assert read('{"ids": ["12", 3]}').ids == ("que_cccccccccccc", "obs_aaaaaaaaaaaa")


@pytest.mark.parametrize(
    "fenced",
    ['```json\n{"ids": [3]}\n```', '```\n{"ids": [3]}\n```', '  ```json\n{"ids": [3]}```  '],
)
def test_a_json_fence_is_tolerated(fenced: str) -> None:
    assert read(fenced).ids == ("obs_aaaaaaaaaaaa",)


def test_digits_int_cannot_read_are_no_handles() -> None:
    # A superscript is a digit to str.isdigit, and int() refuses 4,300 digits and more:
    # both are unknown picks, never an error out of the reader.
    parsed = read('{"ids": ["\u00b2", "' + "9" * 5_000 + '", "\uff13", 3]}')
    assert parsed.ids == ("obs_aaaaaaaaaaaa",)
    assert parsed.unknown_dropped == 3


def test_unknown_handles_are_dropped_and_counted() -> None:
    parsed = read('{"ids": [3, 99, "obs_aaaaaaaaaaaa", 3, -1]}')
    assert parsed.ids == ("obs_aaaaaaaaaaaa",)
    assert parsed.unknown_dropped == 3  # 99, a raw node id, -1; the repeated 3 just collapses


def test_picks_beyond_the_limit_are_cut_and_counted() -> None:
    parsed = read('{"ids": [12, 7, 3]}', max_picks=2)
    assert parsed.ids == ("que_cccccccccccc", "con_bbbbbbbbbbbb")
    assert parsed.over_limit_dropped == 1


def test_reasons_shape() -> None:
    parsed = read(
        '{"picks": [{"id": 7, "why": " same harbour "}, {"id": 50, "why": "x"}]}', reasons=True
    )
    assert parsed.ids == ("con_bbbbbbbbbbbb",)
    assert parsed.reasons == {"con_bbbbbbbbbbbb": "same harbour"}
    assert parsed.unknown_dropped == 1


@pytest.mark.parametrize(
    ("text", "reasons"),
    [
        ("Sure! I pick 3 and 7.", False),
        ('{"ids": [3]} and also 7', False),
        ('Here you go: {"ids": [3]}', False),
        ('["3"]', False),
        ('{"ids": "3, 7"}', False),
        ('{"selected": [3]}', False),
        ('{"ids": [3.5]}', False),
        ('{"ids": [true]}', False),
        ('{"ids": [null]}', False),
        ('{"ids": [3]}', True),
        ('{"picks": [3]}', True),
        ('{"picks": [{"id": 3, "why": 5}]}', True),
        ("", False),
        ('```python\n{"ids": [3]}\n```', False),
        # Nested past the parser's recursion: a RecursionError, once an internal error.
        ('{"ids": ' + "[" * 100_000 + "]" * 100_000 + "}", False),
        ('{"ids": [' + "9" * 5_000 + "]}", False),
    ],
)
def test_anything_else_is_malformed(text: str, reasons: bool) -> None:
    with pytest.raises(MatcherError) as caught:
        read(text, reasons=reasons)
    assert caught.value.reason == "malformed_output"


def test_compress_reply_is_tidied_to_one_sentence() -> None:
    assert parse_meaning('  "Tide tables   lag a week in winter."\n') == (
        "Tide tables lag a week in winter."
    )
    assert parse_meaning("```\nA fenced sentence.\n```") == "A fenced sentence."
    assert parse_meaning("\n\nFirst line wins.\nSecond line is dropped.") == "First line wins."
    long = parse_meaning("word " * 200)
    assert len(long) <= MAX_MEANING_CHARS + 1 and long.endswith("…")


@pytest.mark.parametrize("empty", ["", "   \n ", '""', "```\n```"])
def test_empty_compress_reply_is_malformed(empty: str) -> None:
    with pytest.raises(MatcherError) as caught:
        parse_meaning(empty)
    assert caught.value.reason == "malformed_output"
