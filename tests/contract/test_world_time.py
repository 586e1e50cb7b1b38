"""World time (issue #16 item 1): a node may state the span it held in the world
(valid_from / valid_until), apart from its record time (tick and created_at). Both are
kept, read back and carried by a dump; a span that ends before it starts, or a time
that is not ISO-8601, is refused by field and nothing is written (both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES
from tests.support.embedded_store import made_at_schema
from tests.support.store_reads import refused

S = "world-time"


@pytest.fixture
def held(memory: Memory) -> Memory:
    memory.advance_encounter(S, "when things held")
    return memory


@pytest.mark.parametrize("type_", sorted(AUTHORED_NODE_TYPES))
def test_every_authored_type_keeps_the_span_it_states(held: Memory, type_: str) -> None:
    extra = {
        "Component": {"source_kind": "file", "source_label": "repo", "source_key": "a.py"},
        "Citation": {"kind": "web", "uri": "https://example.org/a"},
    }.get(type_, {})
    [made] = held.create_entities(
        S,
        [
            {
                "type": type_,
                "name": f"{type_} with a span",
                "description": "held for a while",
                "valid_from": "2026-05-01",
                "valid_until": "2026-06-15T12:00:00+02:00",
                **extra,
            }
        ],
    ).created
    node = held.find_by_name(f"{type_} with a span").node
    assert node.properties["valid_from"] == "2026-05-01"
    assert node.properties["valid_until"] == "2026-06-15T12:00:00+02:00"
    assert node.created_at and node.id == made.id  # record time beside world time


def test_an_open_span_and_no_span_at_all_are_both_fine(held: Memory) -> None:
    held.create_entities(
        S,
        [
            {"type": "Note", "name": "still holds", "valid_from": "2026-05-01T09:00:00Z"},
            {"type": "Observation", "name": "seen once", "t_observed": "2026-05-02T10:00:00Z"},
            {"type": "Concept", "name": "timeless"},
        ],
    )
    assert "valid_until" not in held.find_by_name("still holds").node.properties
    assert "valid_from" not in held.find_by_name("timeless").node.properties


@pytest.mark.parametrize(
    ("span", "field", "says"),
    [
        ({"valid_from": "2026-06-02", "valid_until": "2026-06-01"}, "valid_until", "before"),
        # The same instant told in two offsets is no contradiction; an hour apart is.
        (
            {"valid_from": "2026-06-01T10:00:00+02:00", "valid_until": "2026-06-01T07:59:59Z"},
            "valid_until",
            "before",
        ),
        ({"valid_from": "last May"}, "valid_from", "ISO-8601"),
        ({"valid_until": "2026-13-01"}, "valid_until", "ISO-8601"),
        # Year 0 and year 10000 once read in UTC: no instant holds them.
        ({"valid_from": "0001-01-01T00:00:00+14:00"}, "valid_from", "years 1 to 9999"),
        (
            {"valid_from": "2026-06-01", "valid_until": "9999-12-31T23:00:00-12:00"},
            "valid_until",
            "years 1 to 9999",
        ),
    ],
)
def test_a_span_that_cannot_be_is_refused_by_field_and_nothing_is_written(
    held: Memory, store: GraphStore, span: dict[str, str], field: str, says: str
) -> None:
    batch = [{"type": "Note", "name": "fine"}, {"type": "Note", "name": "bad", **span}]
    error = refused(store, lambda: held.create_entities(S, batch), InvalidInput)
    assert error.field == f"entities[1].{field}" and says in str(error)


def test_an_instant_in_two_offsets_is_one_span(held: Memory) -> None:
    held.create_entities(
        S,
        [
            {
                "type": "Note",
                "name": "a moment",
                "valid_from": "2026-06-01T10:00:00+02:00",
                "valid_until": "2026-06-01T08:00:00Z",
            }
        ],
    )


def test_an_embedded_store_of_schema_5_gains_the_span_columns(tmp_path: Path) -> None:
    path = tmp_path / "old"
    made_at_schema(path, 5)
    store = EmbeddedStore.open(path)
    try:
        memory = Memory(store)
        memory.advance_encounter(S, "after the upgrade")
        memory.create_entities(S, [{"type": "Note", "name": "n", "valid_from": "2026-01-01"}])
        assert memory.find_by_name("n").node.properties["valid_from"] == "2026-01-01"
    finally:
        store.close()
