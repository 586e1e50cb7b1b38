"""Loci made before directors: a migration gives each the Person that says so (#17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.persons import BEFORE_DIRECTORS
from kenning_encounter.store.port import GraphStore
from tests.support.backends import neo4j_unavailable, open_neo4j_store
from tests.support.embedded_store import made_at_schema


def _check_old_loci_directed(store: GraphStore) -> None:
    held = store.read(lambda tx: tx.directors_of(["old-1", "old-2"]))
    assert {p.id for p in held.values()} == {BEFORE_DIRECTORS.id}
    assert set(held) == {"old-1", "old-2"}
    assert held["old-1"].name == "unknown (before directors)"
    # A session advancing afterwards gets its own director; the old loci keep theirs.
    opened = Memory(store).advance_encounter("new", "w", director="Ada", director_key="ada@x")
    assert opened.encounter.director is not None and opened.encounter.director.name == "Ada"
    old = Memory(store).advance_encounter("old-1", "back again")
    assert old.encounter.director is not None
    assert old.encounter.director.id == BEFORE_DIRECTORS.id


def test_a_schema_7_store_gives_its_loci_the_before_directors_person(tmp_path: Path) -> None:
    path = tmp_path / "memory"
    made_at_schema(path, 7)
    import ladybug

    db = ladybug.Database(str(path / "graph.lbdb"))
    conn = ladybug.Connection(db)
    for i, locus in enumerate(("old-1", "old-2"), start=1):
        conn.execute(
            "CREATE (:Locus {id: $id, created_at: '2026-01-0" + str(i) + "', tick: $t})",
            {"id": locus, "t": i},
        )
    conn.close()
    db.close()
    store = EmbeddedStore.open(path)
    try:
        _check_old_loci_directed(store)
    finally:
        store.close()


def test_a_fresh_embedded_store_has_no_before_directors_person(tmp_path: Path) -> None:
    store = EmbeddedStore.open(tmp_path / "memory")
    try:
        assert store.read(lambda tx: tx.loci()) == []
        Memory(store).advance_encounter("s", "w")
        held = store.read(lambda tx: tx.director_of("s"))
        assert held is not None and held.id != BEFORE_DIRECTORS.id
    finally:
        store.close()


def test_neo4j_loci_without_a_director_get_one_when_the_store_opens() -> None:
    opened: Any = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    store = opened
    try:
        with store._driver.session(database=store.database) as session:  # pyright: ignore[reportPrivateUsage]
            for i, locus in enumerate(("old-1", "old-2"), start=1):
                session.run(
                    "CREATE (:Locus:KenningMemory {_memory: 'default', id: $id, "
                    "created_at: '2026-01-01', tick: $t})",
                    id=locus,
                    t=i,
                ).consume()
        assert store.read(lambda tx: tx.directors_of(["old-1"])) == {}
    finally:
        store.close()
    from kenning_encounter.store.neo4j import Neo4jStore
    from tests.support.neo4j_target import configured

    target = configured()
    assert target is not None
    again = Neo4jStore.open(target.uri, target.username, target.password, target.database)
    try:
        _check_old_loci_directed(again)
    finally:
        again.close()


def test_an_imported_memory_keeps_each_locus_director(tmp_path: Path) -> None:
    from kenning_encounter.memory import dump, load

    source = EmbeddedStore.open(tmp_path / "source")
    try:
        Memory(source).advance_encounter("s1", "w", director="Ada", director_key="ada@x")
        Memory(source).advance_encounter("s2", "w")
        before = source.read(lambda tx: tx.directors_of(tx.loci()))
        with (tmp_path / "d.jsonl").open("wb") as out:
            dump.export(source, out, app_version="test")
    finally:
        source.close()
    copy = EmbeddedStore.open(tmp_path / "copy")
    try:
        load.load(copy, load.verify(tmp_path / "d.jsonl"))
        held = copy.read(lambda tx: tx.directors_of(tx.loci()))
        assert held == before and sorted(held) == ["s1", "s2"]
        assert held["s1"].name == "Ada" and held["s2"].id != held["s1"].id
    finally:
        copy.close()
