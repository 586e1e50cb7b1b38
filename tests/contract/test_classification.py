"""Classification and retention (#17 item 4) as validated properties, on both backends.

A node may carry several classes from a closed vocabulary and a retention (an ISO-8601
duration or a date); the instant it runs out is stored at write time. Anything else is
refused by field, naming the fix, and nothing is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput, UnknownField
from kenning_encounter.memory.classification import retain_until
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, CLASSIFICATIONS
from tests.support.embedded_store import made_at_schema
from tests.support.store_reads import node_by_id, refused

S = "classifying"
EXTRA: dict[str, dict[str, str]] = {
    "Component": {"source_kind": "file", "source_label": "repo", "source_key": "a.py"},
    "Citation": {"kind": "web", "uri": "https://example.org/a"},
}


@pytest.fixture
def held(store: GraphStore) -> Memory:
    memory = Memory(store, granted=CLASSIFICATIONS)
    memory.advance_encounter(S, "marking what is sensitive")
    return memory


@pytest.mark.parametrize("type_", sorted(AUTHORED_NODE_TYPES))
def test_every_authored_type_keeps_its_classes_and_retention(
    held: Memory, store: GraphStore, type_: str
) -> None:
    [made] = held.create_entities(
        S,
        [
            {
                "type": type_,
                "name": f"{type_} sensitive",
                "classification": ["PII", "phi", "pii"],
                "retention": "p30d",
                **EXTRA.get(type_, {}),
            }
        ],
    ).created
    node = node_by_id(store, made.id)
    assert node.props["classification"] == "phi,pii"  # sorted, once each, lower case
    assert node.props["retention"] == "P30D"
    assert node.props["retain_until"] == retain_until("P30D", node.created_at)
    shown = held.find_by_name(f"{type_} sensitive").node.properties
    assert shown["classification"] == "phi,pii"


@pytest.mark.parametrize(
    ("retention", "until"),
    [
        ("2027-01-31", "2027-01-31T00:00:00.000Z"),
        ("2027-01-31T12:00:00+02:00", "2027-01-31T10:00:00.000Z"),
        ("2027-01-31T12:00:00", "2027-01-31T12:00:00.000Z"),
    ],
)
def test_a_retention_date_is_the_instant_it_runs_out(
    held: Memory, store: GraphStore, retention: str, until: str
) -> None:
    [made] = held.create_entities(
        S, [{"type": "Note", "name": "n", "retention": retention}]
    ).created
    node = node_by_id(store, made.id)
    assert (node.props["retention"], node.props["retain_until"]) == (retention, until)
    assert "classification" not in node.props  # retention needs no classification


def test_durations_count_from_record_time_in_calendar_months() -> None:
    at = "2026-01-31T10:00:00.000Z"
    assert retain_until("P1M", at) == "2026-02-28T10:00:00.000Z"  # clamped to the month
    assert retain_until("P1Y1M", at) == "2027-02-28T10:00:00.000Z"
    assert retain_until("P2W", at) == "2026-02-14T10:00:00.000Z"
    assert retain_until("PT36H", at) == "2026-02-01T22:00:00.000Z"
    assert retain_until("P1DT1H30M5S", at) == "2026-02-01T11:30:05.000Z"
    # Stored as created_at is: plain string order is time order.
    assert retain_until("P1D", at) < retain_until("P2D", at) < retain_until("P1M", at)


def test_an_unclassified_node_carries_neither(held: Memory, store: GraphStore) -> None:
    [made] = held.create_entities(S, [{"type": "Note", "name": "plain"}]).created
    props = node_by_id(store, made.id).props
    assert not {"classification", "retention", "retain_until"} & set(props)


@pytest.mark.parametrize(
    ("bad", "field", "says"),
    [
        ({"classification": ["phx"]}, "classification", "pii, phi, pci, secret"),
        ({"classification": "public"}, "classification", "omit it"),
        ({"classification": "none"}, "classification", "not a classification"),
        ({"classification": []}, "classification", "is empty"),
        ({"classification": " , "}, "classification", "is empty"),
        ({"classification": [3]}, "classification", "not a classification"),
        ({"classification": {"pii": True}}, "classification", "not a classification"),
        ({"retention": "30 days"}, "retention", "P30D"),
        ({"retention": "P"}, "retention", "ISO-8601 duration"),
        ({"retention": "PT"}, "retention", "ISO-8601 duration"),
        ({"retention": "P1DT"}, "retention", "ISO-8601 duration"),
        ({"retention": "P1.5D"}, "retention", "ISO-8601 duration"),
        ({"retention": "2027-02-30"}, "retention", "2027-01-31"),
        ({"retention": ""}, "retention", "not a retention"),
        ({"retention": 30}, "retention", "not a retention"),
        ({"retention": "P999Y"}, "retention", "200 years"),
        # Counted whole: days, weeks, months and hours past 200 years as much as years.
        ({"retention": "P3000000D"}, "retention", "200 years"),
        ({"retention": "P0Y2401M"}, "retention", "200 years"),
        ({"retention": "PT99999999999H"}, "retention", "200 years"),
        ({"retention": "P" + "9" * 40 + "W"}, "retention", "200 years"),
        ({"retention": "P" + "9" * 5_000 + "D"}, "retention", "(5002 characters)"),
        ({"retention": "P\u0663D"}, "retention", "not a retention"),  # ISO digits are ASCII
        # A date whose offset carries it off the calendar in UTC.
        ({"retention": "0001-01-01T00:00:00+14:00"}, "retention", "years 1 to 9999"),
        ({"retention": "9999-12-31T23:00:00-12:00"}, "retention", "years 1 to 9999"),
    ],
)
def test_a_bad_classification_or_retention_is_refused_and_nothing_written(
    held: Memory, store: GraphStore, bad: dict[str, Any], field: str, says: str
) -> None:
    batch = [{"type": "Note", "name": "fine"}, {"type": "Note", "name": "bad", **bad}]
    error = refused(store, lambda: held.create_entities(S, batch), InvalidInput)
    assert error.field == f"entities[1].{field}" and says in str(error), str(error)


def test_the_expiry_instant_is_the_store_s_to_set(held: Memory, store: GraphStore) -> None:
    batch = [{"type": "Note", "name": "bad", "retain_until": "2030-01-01T00:00:00Z"}]
    error = refused(store, lambda: held.create_entities(S, batch), UnknownField)
    assert error.field == "entities[0].retain_until"
    assert "retention" in str(error)  # the property to set instead is among those listed


def test_an_embedded_store_of_schema_8_gains_the_columns(tmp_path: Path) -> None:
    path = tmp_path / "old"
    made_at_schema(path, 8)
    store = EmbeddedStore.open(path)
    try:
        memory = Memory(store, granted=CLASSIFICATIONS)
        memory.advance_encounter(S, "after the upgrade")
        memory.create_entities(
            S, [{"type": "Note", "name": "n", "classification": "secret", "retention": "P1D"}]
        )
        props = memory.find_by_name("n").node.properties
        assert (props["classification"], props["retention"]) == ("secret", "P1D")
        assert props["retain_until"]
    finally:
        store.close()
