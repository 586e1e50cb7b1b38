"""`kenning-encounter review` as a real subprocess on the embedded store: the frozen,
unpinned nodes the operator's grant shows, a dry run by default, and an erasure only when
confirmed, leaving its tombstones on the spine (#16 item 6)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from tests.support.cli import run_cli

DAYS_AGO = 20
LONG_AGO = datetime.now(UTC) - timedelta(days=DAYS_AGO)
# Two-day half-lives: frozen after 16 working days. The memory is worked in daily since.
HALF_LIFE = ("--activation-half-life-days", "2")


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _seeded(data_dir: Path) -> str:
    """Four nodes recorded 20 days ago: one pinned then, one withheld (PHI), one used
    today; other work every day since, so those days count (memory/activation.py)."""
    at = {"now": LONG_AGO}
    store = EmbeddedStore.open(data_dir, clock=lambda: _stamp(at["now"]))
    try:
        memory = Memory(store, granted={"phi"})
        memory.advance_encounter("s", "long ago")
        memory.create_entities(
            "s",
            [
                {"type": "Note", "name": "stale note", "description": "Nobody came back."},
                {"type": "Note", "name": "runbook", "description": "Kept near on purpose."},
                {"type": "Note", "name": "used again", "description": "Read today."},
                {
                    "type": "Note",
                    "name": "patient chart",
                    "description": "Withheld from an ungranted operator.",
                    "classification": "phi",
                },
            ],
        )
        memory.pin_entities("s", ["runbook"], why="on purpose")
        encounter = memory.find_by_name("stale note").node.encounter
        assert encounter is not None
        memory.close_encounter("s", "done")
        for day in range(1, DAYS_AGO):
            at["now"] = LONG_AGO + timedelta(days=day)
            memory.advance_encounter("w", f"day {day}")
            memory.close_encounter("w", "worked")
        at["now"] = datetime.now(UTC)
        memory.advance_encounter("s", "today")
        memory.find_by_name("used again", session_id="s")  # a use today: hot again
        memory.close_encounter("s", "done")
    finally:
        store.close()
    return encounter


def test_review_lists_the_frozen_and_erases_only_when_confirmed(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    encounter = _seeded(data_dir)
    dry = run_cli("review", *HALF_LIFE, "--data-dir", str(data_dir), "--json")
    assert dry.returncode == 0, dry.stderr
    report = json.loads(dry.stdout)
    assert report["dry_run"] is True
    assert [q["name"] for q in report["queue"]] == ["stale note"]
    assert 19 <= report["queue"][0]["idle_days"] <= 21
    assert report["tombstones"] == {encounter: 1}
    told = run_cli("review", *HALF_LIFE, "--data-dir", str(data_dir))
    assert "review queue: 1 frozen node(s), unused for 16 days or more" in told.stderr
    assert "nothing erased: pass --yes to erase" in told.stderr
    granted = run_cli("review", *HALF_LIFE, "--data-dir", str(data_dir), "--grant", "phi", "--json")
    assert sorted(q["name"] for q in json.loads(granted.stdout)["queue"]) == [
        "patient chart",
        "stale note",
    ]
    store = EmbeddedStore.open(data_dir)  # the dry runs wrote nothing
    try:
        assert len(store.read(lambda tx: tx.authored_graph().nodes)) == 4
    finally:
        store.close()

    done = run_cli("review", *HALF_LIFE, "--yes", "--data-dir", str(data_dir))
    assert done.returncode == 0, done.stderr
    assert f"tombstones: {encounter} +1" in done.stderr
    store = EmbeddedStore.open(data_dir)
    try:
        names = sorted(n.name for n in store.read(lambda tx: tx.authored_graph().nodes))
        assert names == ["patient chart", "runbook", "used again"]
        sealed = store.read(lambda tx: tx.get_encounter(encounter))
        assert sealed is not None and sealed.tombstones == 1
    finally:
        store.close()
    empty = run_cli("review", *HALF_LIFE, "--data-dir", str(data_dir))
    assert empty.returncode == 0 and "the review queue is empty" in empty.stderr


def test_a_longer_half_life_freezes_nothing_yet(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    _seeded(data_dir)
    result = run_cli(
        "review", "--data-dir", str(data_dir), "--activation-half-life-days", "365", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["queue"] == []
    bad = run_cli("review", "--data-dir", str(data_dir), "--activation-half-life-days", "0")
    assert bad.returncode == 2 and "activation_half_life_days" in bad.stderr
