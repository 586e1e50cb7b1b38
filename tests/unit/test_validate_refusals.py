"""Every refusal of the request shape checks names its field and says what to send instead.

A mutation run of memory/validate.py left these paths alive: the batch rules, a relation's
empty or over-long ends, a revision_why on a relation other than SUPERSEDES, and the field
named in each message. Each case pins the error class, the field and the message.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput, ProcessTypeForbidden, UnknownType
from kenning_encounter.memory import validate

LONG_NAME = "n" * (validate.MAX_NAME + 1)
GOOD = {"source": "a", "type": "GROUNDS", "target": "b"}


@pytest.mark.parametrize(
    ("items", "message"),
    [
        ([], "must be a non-empty list"),
        ("not a list", "must be a non-empty list"),
        ({"a": 1}, "must be a non-empty list"),
        (
            [{}] * (validate.MAX_BATCH + 1),
            f"has {validate.MAX_BATCH + 1} items; send at most {validate.MAX_BATCH} per call",
        ),
    ],
)
def test_a_batch_is_a_non_empty_list_of_bounded_size(items: object, message: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate.batch(items, "entities")
    assert (refused.value.field, str(refused.value)) == ("entities", f"entities: {message}")


def test_a_batch_at_the_limit_is_taken() -> None:
    items = [{}] * validate.MAX_BATCH
    assert validate.batch(items, "entities") is items


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        ({"source": ""}, "relations[3].source", "must not be empty"),
        ({"target": "   "}, "relations[3].target", "must not be empty"),
        (
            {"source": LONG_NAME},
            "relations[3].source",
            f"is {validate.MAX_NAME + 1} characters; the limit is {validate.MAX_NAME}",
        ),
        (
            {"target": LONG_NAME},
            "relations[3].target",
            f"is {validate.MAX_NAME + 1} characters; the limit is {validate.MAX_NAME}",
        ),
        (
            {"revision_why": "because"},
            "relations[3].revision_why",
            "only SUPERSEDES carries a revision_why",
        ),
        ({"type": "SUPERSEDES"}, "relations[3].revision_why", "is required"),
    ],
)
def test_a_relation_refusal_names_its_field(
    change: dict[str, Any], field: str, message: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate.relation({**GOOD, **change}, "relations[3]")
    assert type(refused.value) is InvalidInput
    assert (refused.value.field, str(refused.value)) == (field, f"{field}: {message}")


def test_a_good_relation_comes_back_as_sent() -> None:
    rel = validate.relation(GOOD, "relations[0]")
    assert (rel.source, rel.type, rel.target, rel.revision_why) == ("a", "GROUNDS", "b", None)
    again = validate.relation(rel, "relations[0]")
    assert again is rel


@pytest.mark.parametrize(
    ("check", "value", "error"),
    [
        (validate.node_type, "Encounter", ProcessTypeForbidden),
        (validate.node_type, "Idea", UnknownType),
        (validate.relation_type, "RECORDED", ProcessTypeForbidden),
        (validate.relation_type, "LIKES", UnknownType),
    ],
)
def test_a_type_refusal_names_its_field_and_value(check: Any, value: str, error: type) -> None:
    with pytest.raises(error) as refused:
        check(value, "entities[1].type")
    assert type(refused.value) is error
    assert refused.value.field == "entities[1].type"
    assert value in str(refused.value)


@pytest.mark.parametrize(
    "value", ["2026-03-01T14:30:00Z", "2026-03-01T14:30:00+02:00", "2026-03-01"]
)
def test_an_iso_time_is_taken_as_written(value: str) -> None:
    assert validate.iso_time(f"  {value} ", "entities[0].t_observed") == value


@pytest.mark.parametrize("value", ["last tuesday", "2026-13-01", "x" * 65, ""])
def test_a_bad_time_is_refused_naming_the_field(value: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate.iso_time(value, "entities[0].t_observed")
    assert refused.value.field == "entities[0].t_observed"


# --- session ids, free text and times: the limits at their edges, and every message whole


@pytest.mark.parametrize("value", [None, "", "   ", 42, ["s"]])
def test_a_missing_session_id_says_what_to_pass(value: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate.session_id(value, field="args.session_id")
    assert refused.value.field == "args.session_id"
    assert str(refused.value) == (
        "args.session_id: is required: pass your harness session id (Claude Code's "
        "session_id) so your encounters chain together"
    )


def test_a_session_id_at_its_limit_is_taken_and_one_past_it_is_refused() -> None:
    at_limit = "s" * validate.MAX_SESSION_ID
    assert validate.session_id(at_limit) == at_limit
    assert validate.session_id("  padded  ") == "padded"
    with pytest.raises(InvalidInput) as refused:
        validate.session_id(at_limit + "s")
    assert refused.value.field == "session_id"
    assert str(refused.value) == (
        f"session_id: is longer than {validate.MAX_SESSION_ID} characters"
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("a\nb", "U+000A"),
        ("a\tb", "U+0009"),
        ("a\x1b[2Jb", "U+001B"),
        ("a\u202eb", "U+202E"),
        ("a\u200bb", "U+200B"),
        ("a\ud800b", "U+D800"),
    ],
)
def test_a_session_id_is_one_line_of_visible_text(value: str, says: str) -> None:
    # Shown back in the session-start note, loci, the inspector and operator plans.
    with pytest.raises(InvalidInput) as refused:
        validate.session_id(value, field="args.session_id")
    assert refused.value.field == "args.session_id"
    assert says in str(refused.value) and "one line of visible text" in str(refused.value)
    assert validate.session_id("3f9c2b7e-51aa café 会话") == "3f9c2b7e-51aa café 会话"


def test_text_refusals_name_the_field_and_the_limit() -> None:
    assert validate.text(None, "note", required=False) == ""
    assert validate.text("  kept  ", "note", required=False) == "kept"
    assert validate.text("", "note", required=False) == ""
    assert validate.text("x" * 10, "note", required=True, limit=10) == "x" * 10
    cases: list[tuple[object, bool, int, str]] = [
        (None, True, 10, "note: is required"),
        (7, False, 10, "note: must be a string, got int"),
        ("   ", True, 10, "note: must not be empty"),
        ("x" * 11, True, 10, "note: is 11 characters; the limit is 10"),
    ]
    for value, required, limit, message in cases:
        with pytest.raises(InvalidInput) as refused:
            validate.text(value, "note", required=required, limit=limit)
        assert (refused.value.field, str(refused.value)) == ("note", message)
    with pytest.raises(InvalidInput) as refused:
        validate.text(7, "note", required=False)
    assert refused.value.value == 7
    # The default limit is the module's.
    assert validate.text("x" * validate.MAX_TEXT, "note", required=True)
    with pytest.raises(InvalidInput, match="the limit is"):
        validate.text("x" * (validate.MAX_TEXT + 1), "note", required=True)


@pytest.mark.parametrize(
    "value", ["2026-03-01", "2026-03-01T14:30:00", "2026-03-01T14:30:00Z", "2026-03-01T14:30+02:00"]
)
def test_iso_times_are_kept_as_written(value: str) -> None:
    assert validate.iso_time(f" {value} ", "t_observed") == value


@pytest.mark.parametrize("value", ["yesterday", "2026-13-01", "01/03/2026", "2026-03-01T25:00"])
def test_a_time_that_is_not_iso_is_refused_with_an_example(value: str) -> None:
    with pytest.raises(InvalidInput) as refused:
        validate.iso_time(value, "t_observed")
    assert refused.value.field == "t_observed"
    assert refused.value.value == value
    assert str(refused.value) == (
        f"t_observed: {value!r} is not an ISO-8601 time; example: 2026-03-01T14:30:00Z"
    )


@pytest.mark.parametrize("value", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:00:00-12:00"])
def test_a_time_its_offset_takes_off_the_calendar_is_refused(value: str) -> None:
    # Read in UTC (as every time is compared) it would be year 0 or year 10000.
    with pytest.raises(InvalidInput) as refused:
        validate.iso_time(value, "valid_from")
    assert refused.value.field == "valid_from"
    assert "outside the years 1 to 9999 once read in UTC" in str(refused.value)
    assert validate.iso_time(value.replace("+14:00", "Z").replace("-12:00", "Z"), "f")


def test_a_time_longer_than_any_iso_time_is_refused_by_length() -> None:
    with pytest.raises(InvalidInput, match=r"t_observed: is 65 characters; the limit is 64"):
        validate.iso_time("2" * 65, "t_observed")
    with pytest.raises(InvalidInput, match=r"t_observed: is required"):
        validate.iso_time(None, "t_observed")
