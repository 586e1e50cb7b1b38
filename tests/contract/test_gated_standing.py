"""Standing as a gated reader sees it, on every backend (memory/gates.py, activation.py).

A link is a use of both its ends, so a withheld node linked to a shown one moved the
shown one's ``used_at``: a reader not granted the class saw a visible node turn hot the
moment a write it may not see touched it. The reader now sees the standing the uses it
may see give (the node's creation, links to nodes it is shown, encounters' uses), on
every read that shows standing; a reader granted the class sees the link's use as ever.

The clock is the test's own: the public concept is made on day 0, the withheld
observation links to it on day 100 (half-life 30 days: cold by creation alone).
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.memory.dump import export
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.backends import BACKENDS, opened_store
from tests.support.standing_clock import MONTH, Clock, stamp

ALL = tuple(CLASSIFICATIONS)


@pytest.fixture(params=BACKENDS)
def timed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, Clock]]:
    clock = Clock()
    with opened_store(request.param, tmp_path / "memory", clock) as store:
        yield store, clock


def _work(writer: Memory, clock: Clock, upto: int) -> None:
    """The writer works every ten days up to ``upto``: the memory's time runs on."""
    for d in range(10, upto + 1, 10):
        clock.day(d)
        writer.advance_encounter("worker", f"day {d}")
        writer.close_encounter("worker", "worked")


def _planted(store: GraphStore, clock: Clock, classes: str = "secret") -> dict[str, str]:
    """A public concept and a public observation on day 0; on day 100 an observation of
    ``classes`` grounds the concept. Name -> id."""
    writer = Memory(store, granted=ALL, activation=MONTH)
    clock.day(0)
    writer.advance_encounter("writer", "lamps")
    made = writer.create_entities(
        "writer",
        [
            {"type": "Concept", "name": "lamp theory", "description": "lamps glow at dusk"},
            {"type": "Observation", "name": "lamp seen", "description": "a lamp at dusk"},
        ],
    ).created
    writer.close_encounter("writer", "noted")
    _work(writer, clock, 100)
    writer.advance_encounter("writer", "the ward")
    made += writer.create_entities(
        "writer",
        [
            {
                "type": "Observation",
                "name": "ward lamp",
                "description": "the ward lamp by the bed",
                "classification": classes,
            }
        ],
    ).created
    writer.create_relations(
        "writer", [{"source": "ward lamp", "type": "GROUNDS", "target": "lamp theory"}]
    )
    writer.close_encounter("writer", "noted")
    return {m.name: m.id for m in made}


def _standing(memory: Memory, clock: Clock) -> dict[str, Any]:
    """Every read that shows the concept's standing, as one map."""
    now = clock.at
    ids = _ids(memory)
    found = memory.find_by_name("lamp theory", now=now).node
    hits = {h.name: h.tier for h in memory.search("lamp", now=now, include_cold=True).hits}
    node = memory.store.read(lambda tx: tx.get_node(ids["lamp theory"]))
    outline = memory.store.read(lambda tx: tx.authored_outline())
    outlined = {n.name: n.used_at for n in outline.nodes}
    assert node is not None
    return {
        "find tier": found.tier,
        "find used": found.last_used_at,
        "search tier": hits.get("lamp theory"),
        "node used": node.used_at or node.created_at,
        "outline used": outlined["lamp theory"] or node.created_at,
    }


def _ids(memory: Memory) -> dict[str, str]:
    return {
        name: memory.find_by_name(name).node.id
        for name in ("lamp theory", "lamp seen")
        if memory.find_by_name(name).node
    }


def _as_created(tier: str) -> dict[str, Any]:
    return {
        "find tier": tier,
        "find used": stamp(0),
        "search tier": tier,
        "node used": stamp(0),
        "outline used": stamp(0),
    }


def test_a_withheld_link_moves_no_standing_a_gated_reader_sees(
    timed: tuple[GraphStore, Clock],
) -> None:
    store, clock = timed
    _planted(store, clock)
    gated = Memory(store, activation=MONTH)
    granted = Memory(store, granted=ALL, activation=MONTH)
    # The granted reader sees the link's use: hot, used on day 100.
    assert _standing(granted, clock) == {
        "find tier": "hot",
        "find used": stamp(100),
        "search tier": "hot",
        "node used": stamp(100),
        "outline used": stamp(100),
    }
    # The gated reader sees the concept as its creation left it: 100 days, cold.
    assert _standing(gated, clock) == _as_created("cold")
    # Its fellow, which nothing withheld touched, reads the same to both.
    seen = gated.find_by_name("lamp seen", now=clock.at).node
    assert (seen.tier, seen.last_used_at) == ("cold", stamp(0))


def test_a_partial_grant_sees_the_uses_of_what_it_covers(
    timed: tuple[GraphStore, Clock],
) -> None:
    store, clock = timed
    _planted(store, clock, classes="phi")
    assert _standing(Memory(store, granted=("phi",), activation=MONTH), clock)["find tier"] == "hot"
    assert _standing(Memory(store, granted=("pii",), activation=MONTH), clock) == _as_created(
        "cold"
    )


def test_a_later_visible_use_stands_beside_the_withheld_one(
    timed: tuple[GraphStore, Clock],
) -> None:
    """A use the reader may see after the withheld one is its latest use; one before it
    is what the reader sees in its place."""
    store, clock = timed
    ids = _planted(store, clock)
    writer = Memory(store, granted=ALL, activation=MONTH)
    gated = Memory(store, activation=MONTH)
    clock.day(100.5)
    writer.advance_encounter("writer", "more lamps")
    writer.create_relations(
        "writer", [{"source": "lamp seen", "type": "GROUNDS", "target": "lamp theory"}]
    )
    writer.close_encounter("writer", "noted")
    assert gated.find_by_name(ids["lamp theory"], now=clock.at).node.last_used_at == stamp(100.5)
    _work(writer, clock, 150)
    writer.advance_encounter("writer", "the ward again")
    writer.create_entities(
        "writer",
        [{"type": "Observation", "name": "ward lamp 2", "classification": "secret"}],
    )
    writer.create_relations(
        "writer", [{"source": "ward lamp 2", "type": "GROUNDS", "target": "lamp theory"}]
    )
    writer.close_encounter("writer", "noted")
    found = gated.find_by_name(ids["lamp theory"], now=clock.at).node
    assert (found.last_used_at, found.tier) == (stamp(100.5), "warm")
    granted = Memory(store, granted=ALL, activation=MONTH)
    assert granted.find_by_name(ids["lamp theory"], now=clock.at).node.last_used_at == stamp(150)


def test_withheld_uses_in_a_row_move_nothing_shown(timed: tuple[GraphStore, Clock]) -> None:
    """A second withheld use keeps the shown one the first left, not the first's."""
    store, clock = timed
    ids = _planted(store, clock)
    writer = Memory(store, granted=ALL, activation=MONTH)
    _work(writer, clock, 120)
    writer.advance_encounter("writer", "the ward again")
    writer.create_entities(
        "writer", [{"type": "Observation", "name": "ward lamp 2", "classification": "pii"}]
    )
    writer.create_relations(
        "writer", [{"source": "ward lamp 2", "type": "GROUNDS", "target": "lamp theory"}]
    )
    writer.close_encounter("writer", "noted")
    gated = Memory(store, activation=MONTH)
    assert _standing(gated, clock) == _as_created("cold")
    pii = Memory(store, granted=("pii",), activation=MONTH)
    assert pii.find_by_name(ids["lamp theory"], now=clock.at).node.last_used_at == stamp(120)
    secret = Memory(store, granted=("secret",), activation=MONTH)
    assert secret.find_by_name(ids["lamp theory"], now=clock.at).node.last_used_at == stamp(100)


def test_read_cypher_keeps_a_node_a_withheld_node_used_out_of_reach(
    timed: tuple[GraphStore, Clock],
) -> None:
    """read_cypher reads ``used_at`` as stored, and cannot be restated: a node a withheld
    node used is out of a gated query's reach, as the withheld node is; its fellow, used
    by nothing withheld, is not. No query shows the marks."""
    store, clock = timed
    _planted(store, clock)

    def rows(memory: Memory) -> list[list[Any]]:
        return [
            row
            for label in ("Concept", "Observation")
            for row in memory.read_cypher(
                f"MATCH (n:{label}) RETURN n.name AS name, n.used_at AS used"
            ).rows
        ]

    assert rows(Memory(store, activation=MONTH)) == [["lamp seen", None]]
    pii = rows(Memory(store, granted=("pii",), activation=MONTH))
    assert [r[0] for r in pii] == ["lamp seen"]
    granted = rows(Memory(store, granted=ALL, activation=MONTH))
    assert sorted(r[0] for r in granted) == ["lamp seen", "lamp theory", "ward lamp"]
    assert dict((r[0], r[1]) for r in granted)["lamp theory"] == stamp(100)
    whole = Memory(store, granted=ALL, activation=MONTH).read_cypher("MATCH (n) RETURN n")
    assert "used_marks" not in str(whole.rows) and "KenningUsed" not in str(whole.rows)


def test_an_export_not_granted_the_class_carries_the_use_it_may_see(
    timed: tuple[GraphStore, Clock],
) -> None:
    store, clock = timed
    ids = _planted(store, clock)

    def used(withheld: frozenset[str]) -> tuple[Any, Any]:
        out = io.BytesIO()
        export(store, out, app_version="test", withheld=withheld)
        lines = [json.loads(line) for line in out.getvalue().decode().splitlines()]
        [node] = [x for x in lines if x.get("kind") == "node" and x["id"] == ids["lamp theory"]]
        return node["used_at"], node["used_marks"]

    # Carried with the marks of the classes the export may see, and none of the others
    # (dump_format.py version 4): an import gates them as this memory does.
    assert used(frozenset(CLASSIFICATIONS)) in ((None, None), (stamp(0), None))
    marked = f"={stamp(0)};secret={stamp(100)}"
    assert used(frozenset({"pii"})) == used(frozenset()) == (stamp(100), marked)
