"""``NodeRecord.outline`` builds the record field by field, in order: a field added to the
record and missed there would be dropped or shifted. This holds it to ``replace``."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from kenning_encounter.store.records import NodeRecord


def _every_field_its_own() -> NodeRecord:
    values: dict[str, Any] = {}
    for i, f in enumerate(fields(NodeRecord)):
        if f.name in ("tick", "ord"):
            values[f.name] = 100 + i
        elif f.name == "props":
            values[f.name] = {"field": i, "classification": "pii"}
        else:
            values[f.name] = f"value-{i}"
    return NodeRecord(**values)


def test_an_outline_is_replace_of_the_words_for_every_field() -> None:
    record = _every_field_its_own()
    outline = record.outline()
    assert outline == replace(record, description="", props={"classification": "pii"})
    unmarked = replace(record, props={"field": 1})
    assert unmarked.outline() == replace(unmarked, description="", props={})
