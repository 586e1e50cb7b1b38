"""Mass baselines and drift across encounters."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kenning_encounter.abandon import Abandoned, Call, run_as
from kenning_encounter.analytics.baseline import FILE_NAME, Baseline, BaselineStore
from kenning_encounter.analytics.orient import orient_panel
from kenning_encounter.store.records import EdgeRecord, NodeRecord


def node(node_id: str, kind: str, tick: int, encounter: str) -> NodeRecord:
    return NodeRecord(
        id=node_id,
        type=kind,
        name=f"{kind.lower()} {node_id}",
        description="",
        tick=tick,
        created_at="2025-01-01T00:00:00+00:00",
        encounter=encounter,
    )


def baseline(
    encounter: str | None, tick: int, saved_at: str = "2025-01-01T00:00:00+00:00"
) -> Baseline:
    return Baseline(encounter=encounter, saved_at=saved_at, tick=tick, node_count=0, entries=())


class Memory:
    """Records growing over encounters, as the store would hand them out."""

    def __init__(self) -> None:
        self.nodes: list[NodeRecord] = []
        self.edges: list[EdgeRecord] = []
        self.tick = 0

    def add(self, node_id: str, kind: str, encounter: str) -> None:
        self.tick += 1
        self.nodes.append(node(node_id, kind, self.tick, encounter))

    def relate(self, source: str, target: str, kind: str = "GROUNDS") -> None:
        self.tick += 1
        self.edges.append(EdgeRecord(source, target, kind, self.tick))


def first_encounter() -> Memory:
    """Six concepts; c0 (heaviest) down to c5 (one grounding), and riser r with one."""
    m = Memory()
    for i in range(6):
        m.add(f"c{i}", "Concept", "e1")
    m.add("r", "Concept", "e1")
    m.add("gone", "Concept", "e1")
    for i in range(6):
        for j in range(8 - i):
            m.add(f"o{i}_{j}", "Observation", "e1")
            m.relate(f"o{i}_{j}", f"c{i}")
    m.add("or", "Observation", "e1")
    m.relate("or", "r")
    for j in range(5):
        m.add(f"og{j}", "Observation", "e1")
        m.relate(f"og{j}", "gone")
    return m


def test_drift_finds_a_planted_riser_a_new_node_and_a_faller(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    m = first_encounter()
    first = orient_panel(m.nodes, m.edges, baselines=store, encounter="e1")
    assert first.drift is not None
    assert first.drift.baseline_encounter is None  # nothing earlier to compare with

    # Encounter e2: r gains a crowd of groundings, a new concept arrives with
    # more still, c1 loses all but one of its groundings, and "gone" is deleted.
    for j in range(12):
        m.add(f"n_or{j}", "Observation", "e2")
        m.relate(f"n_or{j}", "r")
    m.add("fresh", "Concept", "e2")
    for j in range(15):
        m.add(f"n_of{j}", "Observation", "e2")
        m.relate(f"n_of{j}", "fresh")
    m.nodes = [n for n in m.nodes if n.id != "gone"]
    m.edges = [e for e in m.edges if e.target != "gone"]
    m.edges = [e for e in m.edges if e.target != "c1" or e.source == "o1_0"]

    second = orient_panel(m.nodes, m.edges, baselines=store, encounter="e2")
    drift = second.drift
    assert drift is not None
    assert drift.baseline_encounter == "e1"
    assert drift.risers.items[0].node.id == "r"
    assert drift.risers.items[0].after is not None and drift.risers.items[0].after <= 2
    assert drift.new.items[0].node.id == "fresh"
    assert drift.new.total == 28  # fresh and its 27 observations
    fallers = {s.node.id: s for s in drift.fallers.items}
    assert fallers["gone"].after is None
    assert fallers["c1"].before == 2
    assert fallers["c1"].after is not None and fallers["c1"].after > 5
    assert "c0" not in fallers  # pushed down a place or two only
    assert "fresh" not in [s.node.id for s in drift.risers.items]
    assert "risers" in second.text and "«concept r» [Concept r]" in second.text


def test_orienting_twice_in_one_encounter_still_compares_with_the_one_before(
    tmp_path: Path,
) -> None:
    store = BaselineStore(tmp_path)
    m = first_encounter()
    orient_panel(m.nodes, m.edges, baselines=store, encounter="e1")
    m.add("fresh", "Concept", "e2")
    orient_panel(m.nodes, m.edges, baselines=store, encounter="e2")
    again = orient_panel(m.nodes, m.edges, baselines=store, encounter="e2")
    assert again.drift is not None
    assert again.drift.baseline_encounter == "e1"
    assert [n.node.id for n in again.drift.new.items] == ["fresh"]


def test_a_reading_outside_an_encounter_compares_but_is_not_saved(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    m = first_encounter()
    orient_panel(m.nodes, m.edges, baselines=store, encounter="e1")
    outside = orient_panel(m.nodes, m.edges, baselines=store, encounter=None)
    assert outside.drift is not None and outside.drift.baseline_encounter == "e1"
    assert [b.encounter for b in store.all()] == ["e1"]


def test_previous_is_the_latest_baseline_of_another_encounter(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path)
    store.save(baseline("e1", 10))
    store.save(baseline("e2", 20))
    store.save(baseline("e3", 30))
    assert store.previous("e3") == baseline("e2", 20)
    assert store.previous("e4") == baseline("e3", 30)
    assert store.previous(None) == baseline("e3", 30)
    # A later reading in e2 replaces e2's earlier one and becomes the latest.
    store.save(baseline("e2", 40))
    assert store.previous("e3") == baseline("e2", 40)
    assert [b.encounter for b in store.all()] == ["e1", "e3", "e2"]


def test_only_a_few_encounters_are_kept(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path, keep=3)
    for i in range(6):
        store.save(baseline(f"e{i}", i))
    assert [b.encounter for b in store.all()] == ["e3", "e4", "e5"]
    stored = json.loads((tmp_path / FILE_NAME).read_text(encoding="utf-8"))
    assert len(stored["baselines"]) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == [FILE_NAME]  # no temporary left


def test_a_damaged_file_costs_one_reading_and_is_replaced(tmp_path: Path) -> None:
    (tmp_path / FILE_NAME).write_text("{not json", encoding="utf-8")
    store = BaselineStore(tmp_path)
    assert store.previous("e1") is None
    store.save(baseline("e1", 5))
    assert store.previous("e2") == baseline("e1", 5)


def test_the_directory_is_made_on_first_save(tmp_path: Path) -> None:
    store = BaselineStore(tmp_path / "analytics")
    assert store.previous("e1") is None
    store.save(baseline("e0", 1))
    assert (tmp_path / "analytics" / FILE_NAME).is_file()


def test_keep_must_leave_room_for_a_previous_encounter(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="keep must be at least 2"):
        BaselineStore(tmp_path, keep=1)


def test_a_reading_its_caller_gave_up_is_not_saved(tmp_path: Path) -> None:
    # A reading's last step can end after its caller left; saving it is one more step.
    store = BaselineStore(tmp_path)
    m = first_encounter()
    orient_panel(m.nodes, m.edges, baselines=store, encounter="e1")
    saved = store.all()
    later = saved[0].model_copy(update={"encounter": "e2", "tick": saved[0].tick + 1})
    call = Call()
    call.abandon()
    with pytest.raises(Abandoned):
        run_as(call, lambda: store.save(later))
    assert store.all() == saved
    store.save(later)  # the same reading, outside a call given up: saved
    assert [b.encounter for b in store.all()] == ["e1", "e2"]
