"""JSON true or false where a schema takes a number, found at any depth (server/refusals.py
``boolean_refusal``). Today's tools take numbers at the top level only (the e2e cases in
tests/e2e/test_tool_arguments.py); a number inside a list of objects must be held the same."""

from __future__ import annotations

from typing import Any

from kenning_encounter.server.refusals import boolean_refusal

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"rows": {"type": "array", "items": {"$ref": "#/$defs/Row"}}},
    "$defs": {
        "Row": {
            "type": "object",
            "properties": {
                "n": {"type": "integer"},
                "on": {"type": "boolean"},
                "w": {"anyOf": [{"type": "number"}, {"type": "null"}]},
            },
        }
    },
}


def test_a_boolean_deep_in_a_list_of_objects_is_named_by_its_path() -> None:
    rows = [{"n": 1, "on": True}, {"n": 2}, {"n": True}]
    assert boolean_refusal({"rows": rows}, SCHEMA) == (
        "rows[2].n: expected an integer, got true or false"
    )
    said = boolean_refusal({"rows": [{"w": False}]}, SCHEMA)
    assert said is not None and said.startswith("rows[0].w: expected a number or null")


def test_booleans_where_the_schema_takes_them_and_what_it_does_not_reach_pass() -> None:
    assert boolean_refusal({"rows": [{"n": 1, "on": False, "w": None}]}, SCHEMA) is None
    assert boolean_refusal({"rows": [{"other": True}], "more": True}, SCHEMA) is None
