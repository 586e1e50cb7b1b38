"""The embedded store answers the read gate's question from a classified set it keeps.

The gate asks, for every id a read would show, whether the node carries a withheld
class (memory/gates.py). Reading each node for it cost infusion most of its time at
100k nodes, so the node cache (nodecache.py) keeps the classification of every
classified node, filled by one scan and moved by the one statement that creates
nodes (a node's classification is fixed when it is written). A mark the set missed
would show a withheld node: these tests hold the set to the engine through every
kind of write, an import's included, on a real embedded store.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kenning_encounter.memory import dump, load, operator
from kenning_encounter.memory.gates import Gate, GatedStore
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded import nodecache
from kenning_encounter.store.embedded import tx as tx_module
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.nodecache import NodeCache
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.embedded_store import read_uncached

S = "classes-locus"


def _engine_marks(store: EmbeddedStore) -> dict[str, str]:
    """Every classified node, read from the engine here (an oracle apart from the store)."""
    found: dict[str, str] = {}
    with store._reader() as conn:  # pyright: ignore[reportPrivateUsage]
        for label in ("Observation", "Question", "Hypothesis", "Concept", "Note", "Component"):
            rows = conn.execute(
                f"MATCH (n:{label}) WHERE n.classification IS NOT NULL "
                "RETURN n.id, n.classification"
            ).get_all()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
            found.update({str(i): str(c) for i, c in rows})  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    return found


def _all_ids(store: EmbeddedStore) -> list[str]:
    return sorted(n.id for n in store.read(lambda tx: list(tx.all_nodes())))


def _agree(store: EmbeddedStore, step: str, asked: list[str] | None = None) -> None:
    ids = asked if asked is not None else _all_ids(store)
    engine = {i: c for i, c in _engine_marks(store).items() if i in ids}
    first = store.read(lambda tx: tx.classified(ids))
    again = store.read(lambda tx: tx.classified(ids))
    uncached = read_uncached(store, lambda tx: tx.classified(ids))
    assert first == engine, step
    assert again == engine, step
    assert uncached == engine, step


def _entities(*specs: tuple[str, str, list[str] | None]) -> list[dict[str, object]]:
    out: list[dict[str, object]] = []
    for name, description, classes in specs:
        entity: dict[str, object] = {
            "type": "Observation",
            "name": name,
            "description": description,
        }
        if classes is not None:
            entity["classification"] = classes
        out.append(entity)
    return out


def test_the_classified_set_agrees_with_the_engine_through_every_kind_of_write(
    embedded: EmbeddedStore,
) -> None:
    memory = Memory(embedded, granted=CLASSIFICATIONS)
    memory.advance_encounter(S, "watch the marks")
    _agree(embedded, "an empty memory: the set is filled empty")
    memory.create_entities(
        S, _entities(("o1", "a phone number", ["pii"]), ("o2", "the weather", None))
    )
    _agree(embedded, "a classified node and a plain one")
    memory.create_entities(
        S,
        [
            {
                "type": "Observation",
                "name": "o3",
                "description": "the weather, and a diagnosis",
                "supersedes": "o2",
                "revision_why": "more was said",
                "classification": ["phi", "pii"],
            },
            {"type": "Note", "name": "n1", "description": "plain"},
        ],
    )
    _agree(embedded, "a revision that adds classes, a node with none")
    memory.delete_entities(S, ["o3"])
    _agree(embedded, "a revision undone")
    operator.forget(embedded, ["o1"])
    _agree(embedded, "a classified node forgotten")
    assert set(embedded.read(lambda tx: tx.classified(_all_ids(embedded)))) == set()


def test_a_node_written_after_the_set_was_filled_is_withheld(embedded: EmbeddedStore) -> None:
    """The set is moved by the commit itself: a read that filled it, then a write, then
    a gated read must hold the new node back (fails if the commit's marks are dropped)."""
    memory = Memory(embedded, granted=CLASSIFICATIONS)
    memory.advance_encounter(S, "fill, then write")
    memory.create_entities(S, _entities(("plain", "nothing sensitive", None)))
    gated = GatedStore(embedded, Gate(()))
    ids = _all_ids(embedded)
    assert gated.read(lambda tx: tx.get_nodes(ids)), "the set is filled by a gated read"
    made = memory.create_entities(S, _entities(("card", "a card number", ["pci"])))
    card = made.created[0].id
    encounter = embedded.read(lambda tx: tx.latest_encounter())
    assert encounter is not None
    shown = gated.read(lambda tx: tx.encounter_members([encounter.name]))
    assert card not in {i for ids in shown.values() for i in ids}
    assert card not in gated.read(lambda tx: tx.recorded_ids(encounter.name))
    _agree(embedded, "after the write")


def test_an_import_moves_the_set(embedded: EmbeddedStore, tmp_path: Path) -> None:
    """Imported nodes are created by the same statement: their marks reach the set of a
    store that had filled it before the import."""
    memory = Memory(embedded, granted=CLASSIFICATIONS)
    memory.advance_encounter(S, "to be exported")
    memory.create_entities(
        S, _entities(("secret", "the root password", ["secret"]), ("open", "the weather", None))
    )
    path = tmp_path / "memory.jsonl"
    with path.open("wb") as out:
        dump.export(embedded, out, app_version="test")
    target = EmbeddedStore.open(tmp_path / "target")
    try:
        assert target.read(lambda tx: tx.classified(["Observation:none"])) == {}, "filled empty"
        load.load(target, load.verify(path))
        ids = _all_ids(target)
        assert len(ids) == 2
        _agree(target, "after the import", ids)
        assert sorted(target.read(lambda tx: tx.classified(ids)).values()) == ["secret"]
    finally:
        target.close()


def test_a_second_gated_read_asks_no_classification_of_the_engine(tmp_path: Path) -> None:
    """Fails if the set is not kept: each read would scan, or read the nodes, again."""
    statements: list[str] = []
    store = EmbeddedStore.open(tmp_path / "m", tracer=lambda q, _p, _s: statements.append(q))
    try:
        memory = Memory(store, granted=CLASSIFICATIONS)
        memory.advance_encounter(S, "count statements")
        memory.create_entities(S, _entities(("o1", "seen", ["pii"]), ("o2", "seen too", None)))
        ids = _all_ids(store)
        statements.clear()
        assert list(store.read(lambda tx: tx.classified(ids)).values()) == ["pii"]
        assert statements, "the first read asks"
        statements.clear()
        store.read(lambda tx: tx.classified(ids))
        assert statements == []
    finally:
        store.close()


def test_a_mark_that_goes_leaves_an_older_reader_its_own_set() -> None:
    """An id written again (after its erasure) without its mark: a reader that took the
    set before that commit keeps the mark it saw."""
    cache = NodeCache()
    cache.offer_marks(0, {"a": "pii"})
    before = cache.get_marks(0)
    assert before == {"a": "pii"}
    cache.begin_commit()
    cache.end_commit(set(), [], set(), {"a": None, "b": "phi"})
    assert before == {"a": "pii"}
    assert cache.get_marks(2) == {"b": "phi"}
    cache.begin_commit()
    cache.end_commit(set(), [], set(), None)
    assert cache.get_marks(4) is None, "a write that cannot say forgets the set"


def test_a_memory_of_many_classified_nodes_reads_the_nodes_instead(
    embedded: EmbeddedStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the bound the set is not kept, and the gate still answers right (from the
    nodes): fails if a set cut at the bound were served as whole."""
    monkeypatch.setattr(nodecache, "MAX_MARKS", 2)
    monkeypatch.setattr(tx_module, "MAX_MARKS", 2)
    memory = Memory(embedded, granted=CLASSIFICATIONS)
    memory.advance_encounter(S, "many marks")
    memory.create_entities(
        S,
        _entities(
            ("a", "first", ["pii"]),
            ("b", "second", ["phi"]),
            ("c", "third", ["pci"]),
            ("d", "fourth", ["secret"]),
            ("f", "plain", None),
        ),
    )
    _agree(embedded, "four classified, the bound two: a scan cut at three")
    assert embedded._nodes.get_marks(embedded._nodes.generation) is nodecache.TOO_MANY  # pyright: ignore[reportPrivateUsage]
    memory.create_entities(S, _entities(("e", "fifth", ["secret"])))
    _agree(embedded, "one more after the set was refused")
