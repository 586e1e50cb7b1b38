"""``NodeRecord.at_tick`` builds the record field by field, in order: a field added to the
record and missed there would be dropped or shifted. This holds it to ``replace``."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

from kenning_encounter.store.records import NodeRecord


def test_at_tick_is_replace_of_the_tick_for_every_field() -> None:
    values: dict[str, Any] = {}
    for i, f in enumerate(fields(NodeRecord)):
        if f.name in ("tick", "ord"):
            values[f.name] = 100 + i
        elif f.name == "props":
            values[f.name] = {"field": i}
        else:
            values[f.name] = f"value-{i}"
    record = NodeRecord(**values)
    moved = record.at_tick(7)
    assert moved == replace(record, tick=7)
    assert record.tick != 7 and moved.tick == 7
