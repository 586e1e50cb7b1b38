"""Standing in a dump (memory/activation.py): each node's last use and pin, and the
CONSULTED and PINNED edges behind them, survive a round trip on every backend; a dump
written before standing travelled still imports, its nodes standing from creation; an
export that holds back classified nodes holds back their standing too."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import dump, load
from kenning_encounter.memory.activation import last_use
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore
from tests.contract.test_dump import _write
from tests.support.dumps import fingerprint, seed, standing

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "dumps"
# The seed of the version before standing travelled, exported by that version.
BEFORE_STANDING = FIXTURES / "version-2-before-standing.jsonl"


def _export(store: GraphStore, path: Path, **kw: Any) -> dump.Exported:
    with path.open("wb") as out:
        return dump.export(store, out, app_version="test", **kw)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A dump of the seeded memory (embedded) and its standing."""
    folder = tmp_path_factory.mktemp("standing-source")
    store = EmbeddedStore.open(folder / "memory")
    try:
        seed(store)
        _export(store, folder / "memory.jsonl")
        yield folder / "memory.jsonl", standing(store)
    finally:
        store.close()


def test_the_seed_holds_standing_worth_carrying(seeded: tuple[Path, dict[str, Any]]) -> None:
    """What the round trips compare is not empty: a pinned node hot among warm ones, uses
    later than creation, and both record kinds in the dump."""
    path, held = seeded
    tiers = {tier for tier, _, _ in held.values()}
    assert {"hot", "warm"} <= tiers
    assert sum(1 for _, _, pinned in held.values() if pinned) == 2  # c1 and o5; h3 unpinned
    counts = _lines(path)[0]["counts"]
    assert counts["consultation"] == 3 and counts["pin"] == 4


def test_tier_and_last_use_survive_a_round_trip_on_each_backend(
    store: GraphStore, seeded: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    path, held = seeded
    load.load(store, load.verify(path))
    assert standing(store) == held
    _export(store, tmp_path / "again.jsonl")
    back = EmbeddedStore.open(tmp_path / "back")
    try:
        load.load(back, load.verify(tmp_path / "again.jsonl"))
        assert standing(back) == held
    finally:
        back.close()


def test_a_dump_from_before_standing_imports_with_standing_from_creation(
    store: GraphStore, tmp_path: Path
) -> None:
    head = _lines(BEFORE_STANDING)[0]
    assert head["version"] == 2 and "pin" not in head["counts"]
    verified = load.verify(BEFORE_STANDING)
    assert not verified.standing
    done = load.load(store, verified)
    assert done.counts == head["counts"] and done.clock == head["clock"]
    nodes = store.read(lambda tx: tx.authored_graph().nodes)
    assert len(nodes) == head["counts"]["node"]
    assert all(n.used_at is None and n.pinned is None for n in nodes)
    assert all(last_use(n) == n.created_at for n in nodes)
    # Exported again it carries standing (none yet) and round-trips like any other.
    _export(store, tmp_path / "again.jsonl")
    again = _lines(tmp_path / "again.jsonl")
    assert again[0]["counts"]["pin"] == again[0]["counts"]["consultation"] == 0
    copy = EmbeddedStore.open(tmp_path / "copy")
    try:
        load.load(copy, load.verify(tmp_path / "again.jsonl"))
        assert fingerprint(copy) == fingerprint(store)
    finally:
        copy.close()


def test_a_dump_from_before_standing_with_a_pin_line_is_refused(tmp_path: Path) -> None:
    lines = _lines(BEFORE_STANDING)
    node = next(line for line in lines if line["kind"] == "node")
    pin = {
        "kind": "pin",
        "node": node["id"],
        "encounter": node["encounter"],
        "tick": node["tick"],
        "created_at": None,
        "why": None,
        "state": "pinned",
    }
    lines.insert(-1, pin)
    with pytest.raises(InvalidInput, match=r"unknown kind 'pin'.*counts no standing"):
        load.verify(_write(lines, tmp_path / "mixed.jsonl", reseal=True))


def test_an_export_holding_back_a_node_holds_back_its_standing(
    store: GraphStore, tmp_path: Path
) -> None:
    """o5 (pii) is pinned and linked: held back, no pin names it, and the dump imports."""
    seed(store)
    o5 = next(n.id for n in store.read(lambda tx: tx.authored_graph().nodes) if n.name == "o5")
    full = _export(store, tmp_path / "full.jsonl")
    held = _export(store, tmp_path / "held.jsonl", withheld=frozenset({"pii"}))
    assert held.held_back == 1
    assert full.counts["pin"] - held.counts["pin"] == 1
    assert o5 not in (tmp_path / "held.jsonl").read_text()
    copy = EmbeddedStore.open(tmp_path / "copy")
    try:
        load.load(copy, load.verify(tmp_path / "held.jsonl"))
        pinned = {n.name for n in copy.read(lambda tx: tx.authored_graph().nodes) if n.pinned}
        assert pinned == {"c1"}
    finally:
        copy.close()
