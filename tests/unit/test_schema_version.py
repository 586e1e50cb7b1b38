"""The store records its schema version; older stores migrate in place, newer ones are refused."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import ladybug
import pytest

from kenning_encounter.errors import SchemaVersionError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.embedded.schema import MIGRATIONS, SCHEMA_VERSION


def _make_store_at_version(path: Path, version: int) -> None:
    path.mkdir(parents=True)
    db = ladybug.Database(str(path / "graph.lbdb"))
    conn = ladybug.Connection(db)
    for v in range(1, version + 1):
        for stmt in MIGRATIONS[v]():
            conn.execute(stmt)
    conn.execute("MATCH (m:Meta {key: 'schema_version'}) SET m.ival = $v", {"v": version})
    if version == 1:  # a v1 store with real content, written the v1 way
        conn.execute("MATCH (m:Meta {key: 'clock'}) SET m.ival = 2")
        conn.execute(
            "CREATE (:Locus {id: 'old-session', created_at: '2026-01-01T00:00:00Z', tick: 1})"
        )
        conn.execute(
            "CREATE (:Encounter {id: 'E1', locus: 'old-session', purpose: 'v1 work', opened_tick: 1, "
            "opened_at: '2026-01-01T00:00:00Z', last_activity_at: '2026-01-01T00:00:00Z'})"
        )
        conn.execute(
            "CREATE (:Concept {id: 'con_0123456789ab', name: 'old idea', description: 'from v1', "
            "tick: 2, created_at: '2026-01-01T00:00:01Z'})"
        )
        conn.execute("CREATE (:NameKey {name: 'old idea', id: 'con_0123456789ab'})")
        conn.execute(
            "MATCH (e:Encounter {id: 'E1'}), (n:Concept {id: 'con_0123456789ab'}) "
            "CREATE (e)-[:RECORDED {tick: 2}]->(n)"
        )
    conn.close()
    db.close()


def test_a_v1_store_is_migrated_in_place(tmp_path: Path) -> None:
    path = tmp_path / "old"
    _make_store_at_version(path, 1)
    store = EmbeddedStore.open(path)
    try:
        assert store.schema_version() == SCHEMA_VERSION
        memory = Memory(store)
        # Left open by the old process, and still open: a restart ends no encounter.
        opened = store.read(lambda tx: tx.get_encounter("E1"))
        assert opened is not None and opened.is_open
        assert memory.find_by_name("old idea").node.description == "from v1"
        # Asked near its time: recorded in January and unused since, it has faded by now.
        near = datetime(2026, 1, 2, tzinfo=UTC)
        assert [h.name for h in memory.search("idea", now=near).hits] == ["old idea"]
        encounter = store.read(lambda tx: tx.get_encounter("E1"))
        assert encounter is not None and encounter.tombstones == 0
    finally:
        store.close()


def test_a_newer_store_is_refused_with_the_version_needed(tmp_path: Path) -> None:
    path = tmp_path / "new"
    _make_store_at_version(path, SCHEMA_VERSION)
    db = ladybug.Database(str(path / "graph.lbdb"))
    conn = ladybug.Connection(db)
    conn.execute(
        "MATCH (m:Meta {key: 'schema_version'}) SET m.ival = $v", {"v": SCHEMA_VERSION + 7}
    )
    conn.close()
    db.close()
    with pytest.raises(SchemaVersionError, match=f"schema version {SCHEMA_VERSION + 7}.*upgrade"):
        EmbeddedStore.open(path)


def test_a_fresh_store_is_at_the_current_version(embedded: EmbeddedStore) -> None:
    assert embedded.schema_version() == SCHEMA_VERSION


def test_v11_backfills_each_nodes_last_use_from_the_dated_edges_it_has(tmp_path: Path) -> None:
    """A memory made before relevance over time: both ends of a link made in March were
    last used then; a node never linked counts from its creation (no used_at)."""
    path = tmp_path / "old"
    _make_store_at_version(path, 10)
    db = ladybug.Database(str(path / "graph.lbdb"))
    conn = ladybug.Connection(db)
    made = (
        ("linked", "con_00000000000a"),
        ("linker", "con_00000000000b"),
        ("alone", "con_00000000000c"),
    )
    for name, node_id in made:
        conn.execute(
            "CREATE (:Concept {id: $id, name: $name, description: 'v10', tick: 2, "
            "created_at: '2026-01-01T00:00:01Z'})",
            {"id": node_id, "name": name},
        )
        conn.execute("CREATE (:NameKey {name: $name, id: $id})", {"name": name, "id": node_id})
    conn.execute(
        "MATCH (a:Concept {id: 'con_00000000000a'}), (b:Concept {id: 'con_00000000000b'}) "
        "CREATE (b)-[:INFORMS {tick: 3, encounter: 'E1', created_at: '2026-03-01T00:00:00Z'}]->(a)"
    )
    conn.close()
    db.close()
    store = EmbeddedStore.open(path)
    try:
        nodes = store.read(lambda tx: tx.get_nodes([i for _, i in made]))
        assert {n.name: n.used_at for n in nodes.values()} == {
            "linked": "2026-03-01T00:00:00Z",
            "linker": "2026-03-01T00:00:00Z",
            "alone": None,
        }
    finally:
        store.close()
