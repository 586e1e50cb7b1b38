"""validate.entity and validate.relation called directly, as the service calls them.

The MCP models refuse much of this first, so without these tests the service's
own checks (the only ones a library caller meets) went untested: each test
pins a refusal's field, its wording and what the draft keeps.
"""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput, UnknownField, UnknownType
from kenning_encounter.memory import validate
from kenning_encounter.memory.models import EntityIn

AT = "entities[0]"


def refused(raw: dict[str, Any]) -> InvalidInput:
    with pytest.raises(InvalidInput) as info:
        validate.entity(raw, AT)
    return info.value


def test_a_model_and_a_mapping_give_the_same_draft() -> None:
    raw = {
        "type": "Observation",
        "name": "n",
        "description": "d",
        "t_observed": "2026-03-01T09:00:00Z",
    }
    from_model = validate.entity(EntityIn.model_validate(raw), AT)
    from_mapping = validate.entity(raw, AT)
    for slot in validate.EntityDraft.__slots__:
        assert getattr(from_model, slot) == getattr(from_mapping, slot), slot
    assert from_mapping.props == {"t_observed": "2026-03-01T09:00:00Z"}


def test_the_type_is_required_and_named() -> None:
    assert str(refused({"name": "n"})) == f"{AT}.type: is required"
    assert str(refused({"type": "  ", "name": "n"})) == f"{AT}.type: must not be empty"
    with pytest.raises(UnknownType) as unknown:
        validate.entity({"type": "Fact", "name": "n"}, AT)
    assert unknown.value.field == f"{AT}.type"


def test_an_unknown_field_names_the_type_and_what_it_takes() -> None:
    with pytest.raises(UnknownField) as info:
        validate.entity({"type": "Note", "name": "n", "priority": "high"}, AT)
    problem = info.value
    assert problem.field == f"{AT}.priority"
    assert "Note" in str(problem)
    assert "type" not in problem.allowed and {"name", "description", "supersedes"} <= set(
        problem.allowed
    )
    # A status is a field only of the types that have one.
    with pytest.raises(UnknownField) as status:
        validate.entity({"type": "Note", "name": "n", "status": "open"}, AT)
    assert status.value.field == f"{AT}.status" and "status" not in status.value.allowed


def test_the_name_is_required_and_bounded() -> None:
    assert str(refused({"type": "Note"})) == f"{AT}.name: is required"
    assert str(refused({"type": "Note", "name": " "})) == f"{AT}.name: must not be empty"
    long = "n" * (validate.MAX_NAME + 1)
    problem = refused({"type": "Note", "name": long})
    assert problem.field == f"{AT}.name" and f"the limit is {validate.MAX_NAME}" in str(problem)
    assert validate.entity({"type": "Note", "name": "n" * validate.MAX_NAME}, AT).name


def test_the_description_is_optional_and_typed() -> None:
    assert validate.entity({"type": "Note", "name": "n"}, AT).description == ""
    assert (
        validate.entity({"type": "Note", "name": "n", "description": "  d  "}, AT).description
        == "d"
    )
    problem = refused({"type": "Note", "name": "n", "description": 7})
    assert problem.field == f"{AT}.description" and "must be a string" in str(problem)


def test_a_status_defaults_and_is_checked() -> None:
    assert validate.entity({"type": "Note", "name": "n"}, AT).status is None
    assert validate.entity({"type": "Question", "name": "q"}, AT).status == "open"
    assert validate.entity(
        {"type": "Hypothesis", "name": "h", "status": "supported"}, AT
    ).status == ("supported")
    problem = refused({"type": "Question", "name": "q", "status": "maybe"})
    assert problem.field == f"{AT}.status" and problem.value == "maybe"
    assert str(problem) == (
        f"{AT}.status: 'maybe' is not a Question status; use one of: open, resolved, retired"
    )


def test_type_properties_are_kept_apart_from_name_description_and_status() -> None:
    draft = validate.entity(
        {
            "type": "Component",
            "name": "client.py",
            "description": "the retry client",
            "source_kind": "file",
            "source_label": "repo",
            "source_key": "src/client.py",
        },
        AT,
    )
    assert draft.props == {
        "source_kind": "file",
        "source_label": "repo",
        "source_key": "src/client.py",
    }
    question = validate.entity({"type": "Question", "name": "q", "status": "open"}, AT)
    assert question.props == {}


def test_a_required_property_is_named_with_its_meaning() -> None:
    problem = refused({"type": "Component", "name": "c", "source_label": "l", "source_key": "k"})
    assert problem.field == f"{AT}.source_kind"
    assert str(problem).startswith(f"{AT}.source_kind: is required for a Component (")


def test_an_absent_optional_property_does_not_hide_the_next() -> None:
    draft = validate.entity({"type": "Citation", "name": "c", "kind": "web", "query": "q"}, AT)
    assert draft.props == {"kind": "web", "query": "q"}
    late = validate.entity(
        {"type": "Citation", "name": "c", "kind": "web", "snapshot": "2026-03-01T09:00:00Z"}, AT
    )
    assert late.props == {"kind": "web", "snapshot": "2026-03-01T09:00:00Z"}


def test_a_property_value_is_a_non_empty_string_named_by_its_path() -> None:
    problem = refused({"type": "Citation", "name": "c", "kind": 3})
    assert problem.field == f"{AT}.kind" and "must be a string" in str(problem)
    problem = refused({"type": "Citation", "name": "c", "kind": "  "})
    assert str(problem) == f"{AT}.kind: must not be empty"
    problem = refused({"type": "Citation", "name": "c", "kind": "web", "snapshot": "noon"})
    assert problem.field == f"{AT}.snapshot" and "not an ISO-8601 time" in str(problem)


def test_supersedes_is_a_bounded_name_and_needs_its_reason() -> None:
    base = {"type": "Note", "name": "n2"}
    draft = validate.entity({**base, "supersedes": " n1 ", "revision_why": "sharper"}, AT)
    assert (draft.supersedes, draft.revision_why) == ("n1", "sharper")
    assert str(refused({**base, "supersedes": " ", "revision_why": "r"})) == (
        f"{AT}.supersedes: must not be empty"
    )
    long = refused({**base, "supersedes": "s" * (validate.MAX_NAME + 1), "revision_why": "r"})
    assert long.field == f"{AT}.supersedes" and f"the limit is {validate.MAX_NAME}" in str(long)
    assert str(refused({**base, "supersedes": "n1"})) == f"{AT}.revision_why: is required"
    alone = refused({**base, "revision_why": "why"})
    assert str(alone) == (
        f"{AT}.revision_why: only goes with supersedes (name the node this one revises)"
    )


def test_a_relation_type_is_named_by_its_path() -> None:
    with pytest.raises(UnknownType) as info:
        validate.relation({"source": "a", "type": "LIKES", "target": "b"}, "relations[2]")
    assert info.value.field == "relations[2].type"
