"""Each store's conversion of a read_cypher row refuses a value nested past the cap
itself, whatever the engine let through (on Neo4j, how deep a value the server sends
depends on how its JVM compiled its code): a clear refusal, never a RecursionError."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.cypher_guard import MAX_VALUE_DEPTH
from kenning_encounter.store.embedded.cypher import _jsonable  # pyright: ignore[reportPrivateUsage]
from kenning_encounter.store.neo4j.cypher import to_json


def _lists(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _maps(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = {"a": value}
    return value


@pytest.mark.parametrize("convert", [to_json, _jsonable], ids=["neo4j", "embedded"])
@pytest.mark.parametrize("nest", [_lists, _maps], ids=["lists", "maps"])
def test_a_value_past_the_cap_is_refused_and_one_at_it_is_kept(convert: Any, nest: Any) -> None:
    assert convert(nest(MAX_VALUE_DEPTH)) == nest(MAX_VALUE_DEPTH)
    for levels in (MAX_VALUE_DEPTH + 1, 5_000):  # 5,000: past Python's recursion limit
        with pytest.raises(ReadOnlyViolation) as info:
            convert(nest(levels))
        assert info.value.layer == "size" and info.value.field == "query"
        assert f"deeper than {MAX_VALUE_DEPTH} levels" in str(info.value)


def test_a_temporal_value_at_the_cap_is_kept_as_a_number_would_be() -> None:
    from neo4j.time import Date

    value: Any = Date(2026, 5, 1)
    for _ in range(MAX_VALUE_DEPTH):
        value = [value]
    expected: Any = "2026-05-01"
    for _ in range(MAX_VALUE_DEPTH):
        expected = [expected]
    assert to_json(value) == expected
