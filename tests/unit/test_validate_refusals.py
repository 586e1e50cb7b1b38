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
