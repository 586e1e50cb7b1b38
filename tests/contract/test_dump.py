"""export / import: a dump round-trips on every backend and across them, and a damaged
dump, a non-empty target or an interrupted import never leaves a memory half made."""

from __future__ import annotations

import hashlib
import io
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import Conflict, InvalidInput
from kenning_encounter.memory import asof, dump, load
from kenning_encounter.memory import dump_format as fmt
from kenning_encounter.memory.load import bulk_write
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, ReadTx, bulk_read
from tests.support.backends import neo4j_unavailable, open_neo4j_store
from tests.support.dumps import as_of_answers, fingerprint, seed


def _export(store: GraphStore, path: Path, **kw: Any) -> dump.Exported:
    with path.open("wb") as out:
        return dump.export(store, out, app_version="test", **kw)


def _fresh(store: GraphStore, tmp_path: Path, name: str) -> GraphStore:
    """An empty store of the same backend (on Neo4j: the test database emptied again)."""
    if store.backend == "embedded":
        return EmbeddedStore.open(tmp_path / name)
    opened = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    return opened


def _emptiness(store: GraphStore) -> tuple[int, dict[str, int], Any]:
    return bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts(), tx.load_marker()))


EMPTY = (0, dict.fromkeys(fmt.KINDS, 0), None)


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A dump of the seeded memory (embedded) and that memory's fingerprint."""
    folder = tmp_path_factory.mktemp("dump-source")
    store = EmbeddedStore.open(folder / "memory")
    try:
        seed(store)
        _export(store, folder / "memory.jsonl")
        yield folder / "memory.jsonl", fingerprint(store)
    finally:
        store.close()


@pytest.fixture(scope="module")
def source_as_of(
    source: tuple[Path, dict[str, Any]], tmp_path_factory: pytest.TempPathFactory
) -> dict[int, Any]:
    """The as_of answers of the seeded memory, read from an embedded import of its dump
    (the seeded memory itself is closed with its fixture)."""
    path = tmp_path_factory.mktemp("dump-as-of") / "memory"
    store = EmbeddedStore.open(path)
    try:
        load.load(store, load.verify(source[0]))
    finally:
        store.close()
    store = EmbeddedStore.open(path)  # the text index is derived again on opening
    try:
        return as_of_answers(store)
    finally:
        store.close()


def test_a_dump_round_trips_on_each_backend(store: GraphStore, tmp_path: Path) -> None:
    seed(store)
    before = fingerprint(store)
    then = as_of_answers(store)
    # Sorted: an index that saw a deletion scores a little differently from one rebuilt.
    hits = sorted(h.id for h in Memory(store).search("cache", limit=100).hits)
    steps: list[tuple[int, int]] = []
    exported = _export(
        store, tmp_path / "d.jsonl", page=4, progress=lambda d, t: steps.append((d, t))
    )
    assert exported.clock == before["clock"] > 0
    assert steps[-1] == (sum(exported.counts.values()),) * 2  # the last step says all
    copy = _fresh(store, tmp_path, "copy")
    try:
        verified = load.verify(tmp_path / "d.jsonl")
        done = load.load(copy, verified, batch_size=7)
        assert (done.clock, done.counts, done.resumed_at) == (exported.clock, exported.counts, 0)
        assert fingerprint(copy) == before
        assert _emptiness(copy)[2] is None  # the marker went with the last batch
        if store.backend == "neo4j":
            assert as_of_answers(copy) == then
    finally:
        copy.close()
    if store.backend == "embedded":  # the text index is derived again on opening
        reopened = EmbeddedStore.open(tmp_path / "copy")
        try:
            assert sorted(h.id for h in Memory(reopened).search("cache", limit=100).hits) == hits
            assert as_of_answers(reopened) == then
        finally:
            reopened.close()


def test_embedded_to_neo4j_to_embedded_keeps_the_fingerprint(
    source: tuple[Path, dict[str, Any]], source_as_of: dict[int, Any], tmp_path: Path
) -> None:
    path, before = source
    neo = open_neo4j_store()
    if isinstance(neo, str):
        neo4j_unavailable(neo)
    try:
        load.load(neo, load.verify(path))
        assert fingerprint(neo) == before
        assert as_of_answers(neo) == source_as_of
        hits = sorted(h.id for h in Memory(neo).search("cache").hits)
        _export(neo, tmp_path / "from-neo4j.jsonl")
    finally:
        neo.close()
    assert (
        json.loads((tmp_path / "from-neo4j.jsonl").read_bytes().splitlines()[0])["backend"]
        == "neo4j"
    )
    back = EmbeddedStore.open(tmp_path / "back")
    try:
        load.load(back, load.verify(tmp_path / "from-neo4j.jsonl"))
        assert fingerprint(back) == before
    finally:
        back.close()
    reopened = EmbeddedStore.open(tmp_path / "back")
    try:
        assert sorted(h.id for h in Memory(reopened).search("cache").hits) == hits != []
        assert as_of_answers(reopened) == source_as_of
    finally:
        reopened.close()


# --- damaged dumps: refused whole, nothing written ---------------------------------------
def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(raw) for raw in path.read_bytes().splitlines()]


def _write(lines: list[dict[str, Any]], path: Path, *, reseal: bool) -> Path:
    """The lines as a dump; ``reseal`` counts and checksums them again, so only the
    check under test can refuse them."""
    body = [lines[0], *(line for line in lines[1:] if line["kind"] != "end")]
    raws = [
        (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
        for line in body
    ]
    end = next(line for line in lines if line["kind"] == "end")
    if reseal:
        counts = dict.fromkeys(end["counts"], 0)
        for line in body[1:]:
            counts[line["kind"]] = counts.get(line["kind"], 0) + 1
        end = {
            "kind": "end",
            "counts": counts,
            "sha256": hashlib.sha256(b"".join(raws)).hexdigest(),
        }
    path.write_bytes(b"".join(raws) + (json.dumps(end) + "\n").encode())
    return path


def _first(lines: list[dict[str, Any]], **match: Any) -> dict[str, Any]:
    return next(line for line in lines if all(line.get(k) == v for k, v in match.items()))


def _retype(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="node", type="Note")["type"] = "Memo"


def _misprefix(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="node", type="Note")["type"] = "Concept"


def _id_with_a_line_break(lines: list[dict[str, Any]]) -> None:
    """An id a tool could never name (a pattern's '$' took the line break after it)."""
    node = _first(lines, kind="node", name="n1")
    node["id"] += "\n"


def _person_id_with_a_line_break(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="person")["id"] += "\n"


def _future_tick(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="node", name="n1")["tick"] = lines[0]["clock"] + 1


def _bad_status(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="node", type="Question")["status"] = "maybe"


def _forbidden_endpoint(lines: list[dict[str, Any]]) -> None:
    note = _first(lines, kind="node", name="n1")["id"]
    _first(lines, kind="relation", type="SUPPORTS")["target"] = note


def _dangling(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="relation", type="GROUNDS")["target"] = "con_000000000000"


def _note_revision(lines: list[dict[str, Any]]) -> dict[str, Any]:
    return next(
        line
        for line in lines
        if line["kind"] == "relation"
        and line["type"] == "SUPERSEDES"
        and line["target"].startswith("not_")
    )


def _second_successor(lines: list[dict[str, Any]]) -> None:
    """Another Note (n1, revising nothing) claims to revise n3 as well."""
    revision = _note_revision(lines)
    second = {**revision, "source": _first(lines, kind="node", name="n1")["id"]}
    lines.insert(lines.index(revision) + 1, second)


def _cycle(lines: list[dict[str, Any]]) -> None:
    revision = _note_revision(lines)
    back = {**revision, "source": revision["target"], "target": revision["source"]}
    lines.insert(lines.index(revision) + 1, back)


def _no_reason(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="relation", type="SUPERSEDES")["revision_why"] = ""


def _out_of_order(lines: list[dict[str, Any]]) -> None:
    """A node no relation names, moved after the relations."""
    note = _first(lines, kind="node", name="n1")
    lines.remove(note)
    lines.insert(-1, note)


def _two_openings(lines: list[dict[str, Any]]) -> None:
    opened = _first(lines, kind="spine", type="OPENED")
    lines.insert(lines.index(opened) + 1, dict(opened))


def _unknown_field(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="encounter")["colour"] = "blue"


def _closed_encounter_write(lines: list[dict[str, Any]]) -> None:
    sealed = _first(lines, kind="encounter", name="E1")
    _first(lines, kind="node", name="n1")["tick"] = sealed["sealed_tick"] + 1


def _unknown_director(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="locus")["director"] = "per_0000000000000000"


def _claim_on_a_note(lines: list[dict[str, Any]]) -> None:
    notes = [line["id"] for line in lines if line["kind"] == "node" and line["type"] == "Note"]
    claim = _first(lines, kind="claim")
    claim["source"], claim["target"] = notes[0], notes[1]


def _bad_resolution(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="claim")["resolution"] = "maybe"


def _confirmation_of_nothing(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="confirmation")["node"] = "obs_000000000000"


def _bad_moved_status(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="status_move")["after"] = "proven"


def _deleted_relation_forbidden(lines: list[dict[str, Any]]) -> None:
    note = _first(lines, kind="node", name="n1")["id"]
    _first(lines, kind="deleted_relation", type="SUPPORTS")["target"] = note


def _ended_before_it_began(lines: list[dict[str, Any]]) -> None:
    gone = _first(lines, kind="deleted_node")
    gone["ended"] = gone["tick"] - 1


def _pin_of_nothing(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="pin")["node"] = "con_000000000000"


def _bad_pin_state(lines: list[dict[str, Any]]) -> None:
    _first(lines, kind="pin")["state"] = "stuck"


def _consulted_twice(lines: list[dict[str, Any]]) -> None:
    consulted = _first(lines, kind="consultation")
    lines.insert(lines.index(consulted) + 1, dict(consulted))


def _consulted_from_a_sealed_encounter(lines: list[dict[str, Any]]) -> None:
    """A consultation of the open encounter (C's, the seed's last) said to be E1's."""
    [still_open] = [
        x["name"]
        for x in lines
        if x["kind"] == "encounter" and x["sealed_tick"] is None and x["dissolved_at"] is None
    ]
    _first(lines, kind="consultation", encounter=still_open)["encounter"] = "E1"


def _pinned_by_no_encounter(lines: list[dict[str, Any]]) -> None:
    node = next(line for line in lines if line["kind"] == "node" and line["pinned"])
    node["pinned"] = "E99"


def _pin_not_mirrored(lines: list[dict[str, Any]]) -> None:
    node = next(line for line in lines if line["kind"] == "node" and line["pinned"])
    node["pinned"] = None


def _revised(lines: list[dict[str, Any]]) -> set[str]:
    return {r["target"] for r in lines if r["kind"] == "relation" and r["type"] == "SUPERSEDES"}


def _live_name_twice(lines: list[dict[str, Any]]) -> None:
    """Another head takes n1's name: two live nodes would answer to it."""
    revised = _revised(lines)
    other = next(
        line
        for line in lines
        if line["kind"] == "node" and line["id"] not in revised and line["name"] not in ("n1",)
    )
    other["name"] = "n1"


def _source_twice(lines: list[dict[str, Any]]) -> None:
    component = _first(lines, kind="node", type="Component")
    twin = {**component, "id": "cmp_" + "0" * 12, "name": "the same file"}
    lines.insert(lines.index(component) + 1, twin)


def _n1_props(**props: str) -> Callable[[list[dict[str, Any]]], None]:
    def edit(lines: list[dict[str, Any]]) -> None:
        _first(lines, kind="node", name="n1")["props"].update(props)

    return edit


RESEALED: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    # What no tool could have written (validate.py holds a write to the same checks); text
    # is taken as it comes (test_written_text.py: readers show it one line per line).
    "live name twice": (_live_name_twice, "names the live node"),
    "source triple twice": (_source_twice, "names the live node"),
    "time that is no time": (_n1_props(valid_from="last Tuesday"), "not an ISO-8601 time"),
    "time off the calendar": (
        _n1_props(valid_from="0001-01-01T00:00:00+14:00"),
        "years 1 to 9999",
    ),
    "span ending first": (
        _n1_props(valid_from="2026-06-02", valid_until="2026-06-01"),
        "before valid_from",
    ),
    "class outside the vocabulary": (_n1_props(classification="bogus"), "not a classification"),
    "retention past 200 years": (_n1_props(retention="P3000000D"), "longer than 200 years"),
    "retention not as a write keeps it": (_n1_props(retention="p30d"), "as a write keeps it"),
    "pin of no node": (_pin_of_nothing, "names no node of the dump"),
    "pin state outside the two": (_bad_pin_state, "is one of: pinned, unpinned"),
    "consultation twice": (_consulted_twice, "the same consultation appears twice"),
    "consultation from a sealed encounter": (
        _consulted_from_a_sealed_encounter,
        "outside encounter 'E1'",
    ),
    "node pinned by no encounter": (_pinned_by_no_encounter, "names no encounter of the dump"),
    "pin in force not mirrored": (_pin_not_mirrored, "disagrees with its latest pin"),
    "locus directed by no person": (_unknown_director, "names no person of the dump"),
    "claim between Notes": (_claim_on_a_note, "joins two referents of one type"),
    "claim resolution outside the vocabulary": (_bad_resolution, "is one of: proposed"),
    "confirmation of no node": (_confirmation_of_nothing, "names no node of the dump"),
    "status move outside the type's": (_bad_moved_status, "status is one of"),
    "deleted relation on a forbidden endpoint": (_deleted_relation_forbidden, "SUPPORTS"),
    "deleted node ended before it began": (_ended_before_it_began, "before it began"),
    "unknown type": (_retype, "not an authored node type"),
    "id of another type": (_misprefix, "is not the id of a Concept"),
    "id with a line break after it": (_id_with_a_line_break, "is not the id of a Note"),
    "person id with a line break after it": (
        _person_id_with_a_line_break,
        "is not the id of a Person",
    ),
    "tick past the clock": (_future_tick, "past the dumped clock"),
    "status outside the type's": (_bad_status, "status is one of"),
    "forbidden endpoint": (_forbidden_endpoint, "SUPPORTS"),
    "dangling endpoint": (_dangling, "names no node of the dump"),
    "second successor": (_second_successor, "has a successor already"),
    "supersession cycle": (_cycle, "close a cycle"),
    "revision without reason": (_no_reason, "carries its reason"),
    "kinds out of order": (_out_of_order, "comes after"),
    "encounter opened twice": (_two_openings, "opened twice"),
    "unknown field": (_unknown_field, "unknown field(s) colour"),
    "write in a sealed encounter": (_closed_encounter_write, "outside encounter 'E1'"),
}


@pytest.mark.parametrize("damage", sorted(RESEALED))
def test_a_dump_that_breaks_a_rule_is_refused_with_nothing_written(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path, damage: str
) -> None:
    edit, words = RESEALED[damage]
    lines = _lines(source[0])
    edit(lines)
    path = _write(lines, tmp_path / "bad.jsonl", reseal=True)
    with pytest.raises(InvalidInput, match=r"line|spine|relations|pins") as refused:
        load.load(store, load.verify(path))
    assert words in str(refused.value)
    assert _emptiness(store) == EMPTY


def _truncate(path: Path, tmp: Path) -> Path:
    raws = path.read_bytes().splitlines(keepends=True)
    (tmp / "cut.jsonl").write_bytes(b"".join(raws[:-3]))
    return tmp / "cut.jsonl"


def _cut_mid_line(path: Path, tmp: Path) -> Path:
    (tmp / "cut.jsonl").write_bytes(path.read_bytes()[:-10])
    return tmp / "cut.jsonl"


def _edit_in_place(path: Path, tmp: Path) -> Path:
    lines = _lines(path)
    _first(lines, kind="node", name="o1")["description"] = "the cache hits"
    return _write(lines, tmp / "edited.jsonl", reseal=False)


def _recount(path: Path, tmp: Path) -> Path:
    lines = _lines(path)
    lines[-1]["counts"]["node"] += 1
    return _write(lines, tmp / "recounted.jsonl", reseal=False)


UNSEALED: dict[str, tuple[Callable[[Path, Path], Path], str]] = {
    "truncated": (_truncate, "ends before its trailer"),
    "cut mid-line": (_cut_mid_line, "cut short"),
    "edited": (_edit_in_place, "do not match its checksum"),
    "miscounted": (_recount, "not what its trailer counts"),
}


@pytest.mark.parametrize("damage", sorted(UNSEALED))
def test_a_truncated_or_edited_dump_is_refused_with_nothing_written(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path, damage: str
) -> None:
    spoil, words = UNSEALED[damage]
    with pytest.raises(InvalidInput, match=words):
        load.load(store, load.verify(spoil(source[0], tmp_path)))
    assert _emptiness(store) == EMPTY


def test_a_dump_with_a_reseal_of_its_own_lines_passes(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The resealing the damage tests use is sound: unedited, it makes a valid dump."""
    path = _write(_lines(source[0]), tmp_path / "same.jsonl", reseal=True)
    load.load(store, load.verify(path))
    assert fingerprint(store) == source[1]


# What version 2 added is in the fingerprint: a dump without it does not round-trip.
DROPPABLE = (
    "claim",
    "confirmation",
    "consultation",
    "pin",
    "deleted_node",
    "deleted_relation",
    "status_move",
)


@pytest.mark.parametrize("kind", DROPPABLE)
def test_a_dump_without_a_kind_of_record_does_not_round_trip(
    source: tuple[Path, dict[str, Any]], tmp_path: Path, kind: str
) -> None:
    lines = _lines(source[0])
    kept = [line for line in lines if line["kind"] != kind]
    assert len(kept) < len(lines)  # the seed holds some of the kind
    kept[0]["counts"][kind] = 0
    if kind == "pin":  # the pins in force go too, or the mirrors refuse the dump
        for line in kept:
            if line["kind"] in ("node", "deleted_node"):
                line["pinned"] = None
    store = EmbeddedStore.open(tmp_path / "copy")
    try:
        load.load(store, load.verify(_write(kept, tmp_path / "less.jsonl", reseal=True)))
        assert fingerprint(store) != source[1]
    finally:
        store.close()


def test_a_dump_without_its_directors_is_refused(
    source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    lines = [line for line in _lines(source[0]) if line["kind"] != "person"]
    lines[0]["counts"]["person"] = 0
    with pytest.raises(InvalidInput, match="names no person of the dump"):
        load.verify(_write(lines, tmp_path / "undirected.jsonl", reseal=True))


# --- other versions ---------------------------------------------------------------------
VERSION_1 = Path(__file__).resolve().parents[1] / "fixtures" / "dumps" / "version-1.jsonl"


def test_a_version_1_dump_imports_directed_as_before_directors_with_no_past(
    store: GraphStore, tmp_path: Path
) -> None:
    """A dump the previous version wrote (the fixture: the seed of that version, exported
    by it) imports as the store migration leaves such a memory."""
    from kenning_encounter.store.persons import BEFORE_DIRECTORS

    head = _lines(VERSION_1)[0]
    assert head["version"] == 1
    done = load.load(store, load.verify(VERSION_1))
    assert done.counts == head["counts"] and done.clock == head["clock"]
    held = fingerprint(store)
    directors = store.read(lambda tx: tx.directors_of(tx.loci()))
    assert sorted(directors) == ["session-a", "session-b", "session-c"]
    assert {p.id for p in directors.values()} == {BEFORE_DIRECTORS.id}
    assert held["persons"][0][:3] == (
        BEFORE_DIRECTORS.id,
        BEFORE_DIRECTORS.name,
        BEFORE_DIRECTORS.key,
    )
    past = held["past"]
    assert past["moves"] == past["ended_edges"] == past["ended_nodes"] == []
    assert held["claims"] == [] and held["confirmations"] == {}
    assert len(held["nodes"]) == head["counts"]["node"]
    _exported_again_round_trips(store, tmp_path)


def _exported_again_round_trips(store: GraphStore, tmp_path: Path) -> None:
    """An imported older dump, exported again, is a dump of this version, and that
    round-trips like any other."""
    held = fingerprint(store)
    _export(store, tmp_path / "again.jsonl")
    assert _lines(tmp_path / "again.jsonl")[0]["version"] == fmt.VERSION
    copy = EmbeddedStore.open(tmp_path / "copy")
    try:
        load.load(copy, load.verify(tmp_path / "again.jsonl"))
        assert fingerprint(copy) == held
    finally:
        copy.close()


VERSION_2 = VERSION_1.with_name("version-2.jsonl")


def test_a_version_2_dump_imports_its_dissolutions_placed_by_their_time(
    store: GraphStore, tmp_path: Path
) -> None:
    """A version 2 dump (the fixture: the seed of that version, exported by it) kept no
    tick of a dissolution: it imports with none, and a read of the past places the
    dissolution by its time. Exported again, it round-trips as this version's dump."""
    head = _lines(VERSION_2)[0]
    assert head["version"] == 2
    load.load(store, load.verify(VERSION_2))

    def dissolved_as_of(tick: int) -> tuple[int | None, str | None]:
        def work(tx: ReadTx) -> tuple[int | None, str | None]:
            e = asof.view(tx, tick).get_encounter("E5")  # dissolved by tick 9, unstamped
            assert e is not None
            return e.dissolved_tick, e.dissolved_at

        return store.read(work)

    now = dissolved_as_of(head["clock"])
    assert now[0] is None and now[1] is not None
    assert dissolved_as_of(8) == (None, None)  # its session's last write: still open
    assert dissolved_as_of(10) == now  # the first write stamped after the dissolution
    _exported_again_round_trips(store, tmp_path)


def test_a_dissolution_tick_without_its_time_is_refused_by_field(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    lines = _lines(source[0])
    dissolved = next(x for x in lines if x["kind"] == "encounter" and x["dissolved_at"])
    assert isinstance(dissolved["dissolved_tick"], int)  # this version keeps it
    for broken, says in (
        ({"dissolved_at": None}, "a dissolved_tick needs a dissolved_at"),
        ({"dissolved_tick": dissolved["opened_tick"]}, "dissolved after it opens"),
        ({"dissolved_tick": "9"}, "must be an integer"),
    ):
        edited = [{**x, **broken} if x is dissolved else x for x in lines]
        path = _write(edited, tmp_path / "broken.jsonl", reseal=True)
        with pytest.raises(InvalidInput, match=says) as refused:
            load.verify(path)
        assert refused.value.field.endswith("encounter.dissolved_tick")
    lines[0]["version"] = 2  # a version 2 line has no such field
    path = _write(lines, tmp_path / "mixed.jsonl", reseal=True)
    with pytest.raises(InvalidInput, match=r"unknown field.*dissolved_tick"):
        load.verify(path)
    assert _emptiness(store) == EMPTY


# The gate's marks (store/uses.py), as the seed leaves them: cmp1's, c6's in the record of
# the past, and the tombstones of the encounter n8 was erased from. Each broken form, the
# field the refusal names, and what it says.
def _marked(lines: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    field = "tombstones_marked" if kind == "encounter" else "used_marks"
    return next(x for x in lines if x["kind"] == kind and x.get(field))


_BROKEN_MARKS: list[tuple[str, Callable[[dict[str, Any]], Any], str]] = [
    ("node", lambda x: "", "must be a non-empty string or null"),
    ("node", lambda x: 7, "must be a non-empty string or null"),
    ("node", lambda x: x["used_marks"].replace(";", ","), "is not an ISO-8601 time"),
    ("node", lambda x: x["used_marks"] + ";phi", "'phi' is no key=value pair"),
    ("node", lambda x: x["used_marks"].replace("phi=", "hipaa="), "'hipaa' is not a class"),
    ("node", lambda x: x["used_marks"].replace("phi=", "pii,phi="), "not as a write keeps it"),
    ("node", lambda x: x["used_marks"] + ";phi=" + x["used_at"], "names 'phi' twice"),
    ("node", lambda x: x["used_marks"].replace("phi=", "phi=soon"), "is not an ISO-8601 time"),
    ("node", lambda x: x["used_marks"].replace("phi=2", "phi=1"), "is none of its uses"),
    ("deleted_node", lambda x: x["used_marks"][1:], "is no key=value pair"),
    ("deleted_node", lambda x: "phi=" + x["used_at"] + "Q", "is not an ISO-8601 time"),
    ("encounter", lambda x: "=1", "'' is not a classification"),
    ("encounter", lambda x: "secret=-1", "is not a count"),
    ("encounter", lambda x: "secret=\u0661", "is not a count"),
    ("encounter", lambda x: "phi=1;secret=1", "more than the encounter's 1 tombstones"),
    ("encounter", lambda x: "secret=1;", "'' is no key=value pair"),
]


def test_a_malformed_mark_is_refused_by_line_and_field_with_nothing_written(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    lines = _lines(source[0])
    for kind, broken, says in _BROKEN_MARKS:
        line = _marked(lines, kind)
        field = "tombstones_marked" if kind == "encounter" else "used_marks"
        edited = [{**x, field: broken(x)} if x is line else x for x in lines]
        path = _write(edited, tmp_path / "broken.jsonl", reseal=True)
        with pytest.raises(InvalidInput, match=re.escape(says)) as refused:
            load.load(store, load.verify(path))
        number = lines.index(line) + 1
        assert refused.value.field == f"line {number}: {kind}.{field}", says
        assert "export it again from the source memory" in str(refused.value)
    assert _emptiness(store) == EMPTY
    # The source's own marks pass, and a line of version 3 carries none: each kind's
    # line is refused for its field until the field is gone from every line of it.
    load.verify(source[0])
    lines[0]["version"] = 3
    for kind, field in (
        ("encounter", "tombstones_marked"),
        ("node", "used_marks"),
        ("deleted_node", "used_marks"),
    ):
        with pytest.raises(InvalidInput, match=rf"{kind}: unknown field\(s\) {field}"):
            load.verify(_write(lines, tmp_path / "mixed.jsonl", reseal=True))
        lines = [{k: v for k, v in x.items() if k != field or x["kind"] != kind} for x in lines]
    assert load.verify(_write(lines, tmp_path / "v3.jsonl", reseal=True)).version == 3


VERSION_3 = VERSION_1.with_name("version-3.jsonl")


def test_a_version_3_dump_imports_with_no_marks(store: GraphStore, tmp_path: Path) -> None:
    """A version 3 dump (the fixture: the seed of that version, exported by it) carried no
    marks of the gate's: it imports as before, none marked. Exported again, it is this
    version's dump and round-trips."""
    head = _lines(VERSION_3)[0]
    assert head["version"] == 3
    done = load.load(store, load.verify(VERSION_3))
    assert done.counts == head["counts"] and done.clock == head["clock"]
    graph = store.read(lambda tx: tx.authored_graph())
    encounters = store.read(lambda tx: tx.encounters(limit=100))
    assert len(graph.nodes) == head["counts"]["node"]
    assert all(n.used_marks is None for n in graph.nodes)
    assert all(e.tombstones_marked is None for e in encounters)
    assert sum(e.tombstones for e in encounters) == 1  # the seed's erasure, unclassified
    _exported_again_round_trips(store, tmp_path)


def test_a_dump_from_a_newer_version_is_refused_with_the_fix(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    lines = _lines(source[0])
    lines[0]["version"] = 5
    path = _write(lines, tmp_path / "future.jsonl", reseal=True)
    with pytest.raises(InvalidInput, match=r"version 5 is newer.*versions 1, 2, 3, 4.*upgrade"):
        load.verify(path)
    assert _emptiness(store) == EMPTY


def test_a_version_1_dump_with_a_version_2_record_is_refused(tmp_path: Path) -> None:
    lines = _lines(VERSION_1)
    lines.insert(
        1,
        {
            "kind": "person",
            "id": "per_0123456789abcdef",
            "name": "x",
            "key": None,
            "tick": 0,
            "created_at": "",
        },
    )
    with pytest.raises(InvalidInput, match="unknown kind 'person' for a version 1 dump"):
        load.verify(_write(lines, tmp_path / "mixed.jsonl", reseal=True))


# --- the target ---------------------------------------------------------------------------
def test_a_non_empty_target_is_refused_and_kept(
    store: GraphStore, source: tuple[Path, dict[str, Any]]
) -> None:
    Memory(store).advance_encounter("someone", "already here")
    before = fingerprint(store)
    with pytest.raises(Conflict, match=r"not empty \(1 locus\(s\), 1 encounter\(s\)\)"):
        load.load(store, load.verify(source[0]))
    assert fingerprint(store) == before
    with pytest.raises(Conflict, match="not empty"):  # --restart clears only an import's leftovers
        load.load(store, load.verify(source[0]), restart=True)
    assert fingerprint(store) == before


class Interrupted(Exception):
    pass


def _interrupt_after_first_batch(store: GraphStore, dumped: load.Verified) -> None:
    def stop(done: int, total: int) -> None:
        raise Interrupted(done)

    with pytest.raises(Interrupted):
        load.load(store, dumped, batch_size=5, progress=stop)


def test_an_interrupted_import_resumes_with_its_dump(
    store: GraphStore, source: tuple[Path, dict[str, Any]]
) -> None:
    dumped = load.verify(source[0])
    _interrupt_after_first_batch(store, dumped)
    clock, counts, marker = _emptiness(store)
    assert marker is not None and marker.done == 5 and counts["locus"] == 3 and clock == 0
    done = load.load(store, dumped)
    assert done.resumed_at == 5
    assert fingerprint(store) == source[1]


def test_an_interrupted_import_takes_another_dump_only_after_restart(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    dumped = load.verify(source[0])
    _interrupt_after_first_batch(store, dumped)
    other = EmbeddedStore.open(tmp_path / "other")
    try:
        Memory(other).advance_encounter("elsewhere", "a different memory")
        _export(other, tmp_path / "other.jsonl")
        expected = fingerprint(other)
    finally:
        other.close()
    second = load.verify(tmp_path / "other.jsonl")
    with pytest.raises(Conflict, match=r"unfinished import of another dump.*--restart"):
        load.load(store, second)
    done = load.load(store, second, restart=True)
    assert done.resumed_at == 0
    assert fingerprint(store) == expected


def test_restart_clears_the_persons_and_the_past_an_interrupted_import_wrote(
    store: GraphStore, source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    dumped = load.verify(source[0])
    total = sum(dumped.counts.values())

    def stop(done: int, total: int) -> None:
        raise Interrupted(done)

    with pytest.raises(Interrupted):  # all but the last record in: the past is there
        load.load(store, dumped, batch_size=total - 1, progress=stop)
    counts = _emptiness(store)[1]
    assert counts["person"] and counts["deleted_node"] and counts["claim"]
    assert counts["consultation"] and counts["pin"]
    while bulk_write(store, lambda tx: tx.clear_some(load.BATCH)):
        pass
    assert _emptiness(store) == EMPTY


def test_an_export_refuses_when_the_memory_moves_under_it(store: GraphStore) -> None:
    seed(store)
    memory = Memory(store)

    def write_meanwhile(done: int, total: int) -> None:
        memory.create_entities("session-c", [{"type": "Note", "name": f"late {done}"}])

    with pytest.raises(Conflict, match="written during the export"):
        dump.export(store, io.BytesIO(), app_version="test", page=3, progress=write_meanwhile)


def test_a_memory_mid_import_is_not_served_until_the_import_ends(
    source: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    import anyio

    from kenning_encounter.errors import ConfigError
    from kenning_encounter.server.context import Runtime
    from tests.e2e.conftest import make_settings

    settings = make_settings(tmp_path / "memory")
    dumped = load.verify(source[0])
    target = EmbeddedStore.open(settings.resolved_data_dir)
    try:
        _interrupt_after_first_batch(target, dumped)
    finally:
        target.close()

    async def serve() -> str:
        async with Runtime(settings).session() as context:
            return context.store.backend

    with pytest.raises(ConfigError, match=r"unfinished import \(5 records .*--restart"):
        anyio.run(serve)
    target = EmbeddedStore.open(settings.resolved_data_dir)
    try:
        load.load(target, dumped)
    finally:
        target.close()
    assert anyio.run(serve) == "embedded"
