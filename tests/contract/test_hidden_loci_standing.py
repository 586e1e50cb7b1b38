"""Standing as a reader face hiding sessions sees it, on every backend (memory/gates.py
``HidingReads``, memory/activation.py).

A node's standing is written by whichever session used it last: a link at either end, a
confirmation, a consultation or a pin moves its ``used_at`` (a pin its ``pinned`` too),
and the memory's work spans are every session's encounters. So a reader hiding a session
saw a node it may see turn hot, or pinned, the moment the hidden session touched it, and
its clock ran on while only the hidden session worked. It now sees the standing the
sessions it shows gave the node, exactly as before the hidden use, on every read that
shows standing (find_by_name, search's tiers and scores, trace_provenance, the node and
outline records, orient's fading section, infusion's tier filter); a reader that hides
nothing sees the use as ever.

The clock is the test's own: the concept is made on day 0, a worker session works every
ten days, and the hidden session uses the concept on day 100 (half-life 30 days: cold by
its creation alone).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.analytics.orient import build_panel
from kenning_encounter.infusion.config import preset
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.backends import BACKENDS, opened_store
from tests.support.standing_clock import MONTH, Clock, stamp

OPEN, WORKER, SECRET = "open-session", "worker-session", "secret-session"
HIDDEN = frozenset({SECRET})
ALL = tuple(CLASSIFICATIONS)
PROMPT = "why do lamps glow at dusk"
_viewers = itertools.count()
# The uses whose encounter is left open when the reader reads: a use is looked for in the
# hidden session's encounters, open or sealed.
OPEN_AFTER = frozenset({"link shown", "confirm"})


@pytest.fixture(params=BACKENDS)
def timed(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[GraphStore, Clock]]:
    clock = Clock()
    with opened_store(request.param, tmp_path / "memory", clock) as store:
        yield store, clock


def _work(writer: Memory, clock: Clock, start: int, upto: int, session: str = WORKER) -> None:
    """``session`` works every ten days from ``start`` to ``upto``: the memory's time runs."""
    for d in range(start, upto + 1, 10):
        clock.day(d)
        writer.advance_encounter(session, f"day {d}")
        writer.close_encounter(session, "worked")


def _planted(store: GraphStore, clock: Clock) -> Memory:
    """A concept and an observation by the open session on day 0, the worker on to day 100."""
    writer = Memory(store, activation=MONTH)
    clock.day(0)
    writer.advance_encounter(OPEN, "lamps")
    writer.create_entities(
        OPEN,
        [
            {"type": "Concept", "name": "lamp theory", "description": "lamps glow at dusk"},
            {"type": "Observation", "name": "lamp seen", "description": "a lamp at dusk"},
        ],
    )
    writer.close_encounter(OPEN, "noted")
    _work(writer, clock, 10, 100)
    return writer


def _standing(
    store: GraphStore, clock: Clock, hidden: frozenset[str], granted: tuple[str, ...] = ()
) -> dict[str, Any]:
    """Every read that shows a node's standing, of both nodes, as one map."""
    memory = Memory(store, granted=granted, hidden_loci=hidden, activation=MONTH)
    now = clock.at
    out: dict[str, Any] = {}
    hits = {
        h.name: (h.tier, h.score) for h in memory.search("lamp", now=now, include_cold=True).hits
    }
    # As orient reads it (server/tools_analytics.py): the hidden sessions' nodes left out.
    whole = memory.store.read(lambda tx: tx.authored_outline()).without_loci(hidden)
    outline = {n.name: n for n in whole.nodes}
    present = memory.store.read(lambda tx: memory.work_time.present(tx, MONTH, now))
    for name in ("lamp theory", "lamp seen"):
        found = memory.find_by_name(name, now=now).node
        traced = memory.trace_provenance(name, now=now).node
        node = memory.store.read(lambda tx, i=found.id: tx.get_node(i))
        assert node is not None
        shown = outline[name]
        out[name] = {
            "find": (found.tier, found.last_used_at, found.pinned),
            "trace": (traced.tier, traced.last_used_at, traced.pinned),
            "search": hits.get(name),
            "node": (node.used_at, node.pinned),
            "outline": (shown.used_at, shown.pinned),
            "activation": MONTH.level(shown, present),
        }
    panel = build_panel(list(outline.values()), [], standing=(MONTH, present))
    assert panel.fading is not None
    out["fading"] = panel.fading.tiers
    infuser = Infuser(memory.store, preset("balanced"), activation=MONTH, hidden_loci=hidden)
    infused = infuser.infuse(f"viewer-{next(_viewers)}", PROMPT, now=now)["meta"]
    out["infused"] = memory.find_by_name("lamp theory").node.id in infused.get("ranked", [])
    return out


def _use(writer: Memory, kind: str) -> None:
    """The hidden session uses the concept (or both nodes) in the way ``kind`` names."""
    writer.advance_encounter(SECRET, "private")
    if kind == "link":
        writer.create_entities(
            SECRET, [{"type": "Observation", "name": "ward lamp", "description": "ward light"}]
        )
        writer.create_relations(
            SECRET, [{"source": "ward lamp", "type": "GROUNDS", "target": "lamp theory"}]
        )
    elif kind == "link deleted":  # the link's edge goes with the node: the time stays
        writer.create_entities(
            SECRET, [{"type": "Observation", "name": "ward lamp", "description": "ward light"}]
        )
        writer.create_relations(
            SECRET, [{"source": "ward lamp", "type": "GROUNDS", "target": "lamp theory"}]
        )
        writer.delete_entities(SECRET, ["ward lamp"])
    elif kind == "link shown":
        writer.create_relations(
            SECRET, [{"source": "lamp seen", "type": "GROUNDS", "target": "lamp theory"}]
        )
    elif kind == "consult":
        writer.find_by_name("lamp theory", session_id=SECRET)
    elif kind == "confirm":
        writer.confirm_entities(SECRET, ["lamp theory"])
    elif kind == "pin":
        writer.pin_entities(SECRET, ["lamp theory"])
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["link", "link deleted", "link shown", "consult", "confirm", "pin"]
)
def test_a_hidden_session_s_use_moves_no_standing_a_hiding_reader_sees(
    timed: tuple[GraphStore, Clock], kind: str
) -> None:
    store, clock = timed
    writer = _planted(store, clock)
    before = _standing(store, clock, HIDDEN)
    theory = before["lamp theory"]
    assert theory["find"] == ("cold", stamp(0), False)
    assert theory["node"] == (None, None)
    assert before["infused"] is False  # cold: out of infusion's default recall
    # A reader granted every class reads through no class gate: the same standing.
    assert _standing(store, clock, HIDDEN, ALL) == before
    _use(writer, kind)
    if kind not in OPEN_AFTER:
        writer.close_encounter(SECRET, "done")
    assert _standing(store, clock, HIDDEN) == before
    assert _standing(store, clock, HIDDEN, ALL) == before
    # A reader hiding nothing sees the use: the concept is hot, used on day 100.
    shown = _standing(store, clock, frozenset())["lamp theory"]
    assert shown["find"] == ("hot", stamp(100), kind == "pin")
    assert shown["node"][0] == stamp(100)
    assert shown["activation"] == 1.0
    assert _standing(store, clock, frozenset(), ALL)["infused"] is True


def test_a_visible_use_after_the_hidden_one_stands(timed: tuple[GraphStore, Clock]) -> None:
    """A use the reader may see after the hidden one is the latest it sees; a pin the
    hidden session lifts still stands to it, and one it lays does not."""
    store, clock = timed
    writer = _planted(store, clock)
    _use(writer, "confirm")
    writer.close_encounter(SECRET, "done")
    clock.day(100.5)
    writer.advance_encounter(OPEN, "again")
    writer.find_by_name("lamp theory", session_id=OPEN)
    writer.pin_entities(OPEN, ["lamp theory"])
    writer.close_encounter(OPEN, "pinned")
    clock.day(101)
    writer.advance_encounter(SECRET, "unpin")
    writer.pin_entities(SECRET, ["lamp theory"], pinned=False)
    writer.close_encounter(SECRET, "lifted")
    hiding = Memory(store, hidden_loci=HIDDEN, activation=MONTH)
    found = hiding.find_by_name("lamp theory", now=clock.at).node
    assert (found.last_used_at, found.pinned, found.tier) == (stamp(100.5), True, "hot")
    plain = Memory(store, activation=MONTH).find_by_name("lamp theory", now=clock.at).node
    assert (plain.last_used_at, plain.pinned) == (stamp(101), False)
    # A use the reader sees after the hidden unpin: the latest use is its own, the pin
    # it saw laid still stands (the same reader, read again after the write).
    clock.day(101.5)
    writer.advance_encounter(OPEN, "read")
    writer.find_by_name("lamp theory", session_id=OPEN)
    writer.close_encounter(OPEN, "read")
    found = hiding.find_by_name("lamp theory", now=clock.at).node
    assert (found.last_used_at, found.pinned) == (stamp(101.5), True)
    plain = Memory(store, activation=MONTH).find_by_name("lamp theory", now=clock.at).node
    assert (plain.last_used_at, plain.pinned) == (stamp(101.5), False)
    # The open session lifts its own pin; the hidden one pins again: not pinned to the reader.
    clock.day(102)
    writer.advance_encounter(OPEN, "unpin")
    writer.pin_entities(OPEN, ["lamp theory"], pinned=False)
    writer.close_encounter(OPEN, "lifted")
    clock.day(103)
    writer.advance_encounter(SECRET, "pin")
    writer.pin_entities(SECRET, ["lamp theory"])
    writer.close_encounter(SECRET, "pinned")
    found = hiding.find_by_name("lamp theory", now=clock.at).node
    assert (found.last_used_at, found.pinned) == (stamp(102), False)
    plain = Memory(store, activation=MONTH).find_by_name("lamp theory", now=clock.at).node
    assert (plain.last_used_at, plain.pinned) == (stamp(103), True)


def test_a_hidden_session_s_work_does_not_age_what_a_hiding_reader_sees(
    timed: tuple[GraphStore, Clock],
) -> None:
    """The visible work stops on day 50 and only the hidden session works on, every ten
    days to day 200: to the reader hiding it the memory stood idle since day 50 (a pause
    ages it by 15 days at most), so the concept is 65 working days old, warm; to a reader
    hiding nothing it is 200, cold."""
    store, clock = timed
    writer = Memory(store, activation=MONTH)
    clock.day(0)
    writer.advance_encounter(OPEN, "lamps")
    writer.create_entities(OPEN, [{"type": "Concept", "name": "lamp theory", "description": "x"}])
    writer.close_encounter(OPEN, "noted")
    _work(writer, clock, 10, 50)
    at = clock.day(200)
    hiding = Memory(store, hidden_loci=HIDDEN, activation=MONTH)
    before = hiding.find_by_name("lamp theory", now=at).node
    _work(writer, clock, 60, 200, session=SECRET)
    for reader in (hiding, Memory(store, hidden_loci=HIDDEN, activation=MONTH)):
        found = reader.find_by_name("lamp theory", now=at).node
        assert found == before and found.tier == "warm"
        node = reader.store.read(lambda tx, i=found.id: tx.get_node(i))
        present = reader.store.read(lambda tx, r=reader: r.work_time.present(tx, MONTH, at))
        assert node is not None
        assert MONTH.age_in_half_lives(node, present) * 30 == pytest.approx(65.0)
        assert {h.name: h.tier for h in reader.search("lamp", now=at).hits} == {
            "lamp theory": "warm"
        }
    plain = Memory(store, activation=MONTH).find_by_name("lamp theory", now=at).node
    assert plain.tier == "cold"
