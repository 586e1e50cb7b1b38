"""KNDL facts in and out, on every backend: hand-written facts in KNDL's documented shape
become observations with citations, supersessions and provenance; what the memory holds
goes out as facts and comes back the same; a bad fact is refused naming its file, the
fact and the field, with nothing written."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import InvalidInput, KenningError
from kenning_encounter.memory import kndl
from kenning_encounter.memory.kndl_facts import read_facts
from kenning_encounter.memory.kndl_import import run
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, bulk_read
from tests.support.backends import neo4j_unavailable, open_neo4j_store
from tests.support.dumps import seed

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kndl"
CI = FIXTURES / "ci-cache"
MEM = "default"


def _fresh(store: GraphStore, tmp_path: Path, name: str) -> GraphStore:
    """An empty store of the same backend (on Neo4j: the test database emptied again)."""
    if store.backend == "embedded":
        return EmbeddedStore.open(tmp_path / name)
    opened = open_neo4j_store()
    if isinstance(opened, str):
        neo4j_unavailable(opened)
    return opened


def _state(store: GraphStore) -> tuple[int, dict[str, int]]:
    return bulk_read(store, lambda tx: (tx.clock(), tx.dump_counts()))


def _raw(folder: Path) -> dict[str, dict[str, Any]]:
    return {
        (d := json.loads(p.read_text()))["@id"]: d for p in sorted(folder.glob("facts/*.fact.json"))
    }


def _by_label(facts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Exported facts keyed by label, their references to other facts given as labels."""
    label = {f["@id"]: f["label"] for f in facts}

    def many(value: Any) -> list[str]:
        items: list[str] = (value if isinstance(value, list) else [value]) if value else []
        return sorted(label.get(i, i) for i in items)  # a subject may be another fact

    return {
        f["label"]: {
            "statement": f["statement"],
            "subject": many(f.get("subject")),
            "source": many(f.get("source")),
            "supersedes": label.get(f.get("supersedes", "")),
            "derivedFrom": sorted(label[d] for d in f.get("derivedFrom", [])),
            "validFrom": f.get("validFrom"),
            "validUntil": f.get("validUntil"),
            "observedAt": f.get("observedAt"),
            "predicate": f.get("predicate"),
            "object": f.get("object"),
            "@type": f["@type"],
        }
        for f in facts
    }


def test_facts_become_observations_with_citations(store: GraphStore) -> None:
    m = Memory(store)
    done = run(m, CI, MEM)
    assert (done.facts, done.citations, done.subjects) == (6, 5, 2)
    assert done.not_held["confidence"] == 6  # read, and not kept, on purpose
    assert "predicate" not in done.not_held and "object" not in done.not_held
    rate = m.find_by_name("fact:cache-hit-rate-2026-05-16").node.properties
    assert (rate["predicate"], rate["object"], rate["object_type"]) == ("hitRate", "0.79", "number")
    disk = m.find_by_name("fact:runner-r7-disk-full").node
    assert disk.type == "Observation"
    assert disk.description.startswith("Runner r7 ran out of disk space")
    assert disk.properties["t_observed"] == "2026-05-08T23:40:00Z"
    assert disk.properties["valid_until"] == "2026-05-10T09:00:00Z"
    # trace_provenance walks incoming edges, and OBSERVED_AT leaves the observation.
    cited = store.read(
        lambda tx: [
            (e.type, tx.get_nodes([e.target])[e.target])
            for e in tx.edges_of(disk.id)
            if e.type == "OBSERVED_AT"
        ]
    )
    assert [(t, n.type, n.props.get("uri")) for t, n in cited] == [
        ("OBSERVED_AT", "Citation", "human://priya")
    ]
    # The chain of three revisions, newest the live one, each with the reason it got.
    head = m.find_by_name("fact:cache-hit-rate-2026-05-16")
    assert head.node.superseded_by is None
    assert [h.name for h in head.history] == [
        "fact:cache-hit-rate-2026-05-09",
        "fact:cache-hit-rate-2026-05-02",
    ]
    # Derived facts are Concepts resting on what they were derived from.
    dip = m.find_by_name("fact:eviction-explains-dip").node
    assert dip.type == "Concept"
    grounds = {n.name for n in m.trace_provenance(dip.id, depth=1).grounding}
    assert {"fact:runner-r7-disk-full", "fact:cache-hit-rate-2026-05-09"} <= grounds
    alert = m.find_by_name("fact:disk-alerts-protect-cache").node
    edges = m.trace_provenance(alert.id, depth=1).edges
    assert any(e.type == "SUPPORTS" and e.source == dip.id for e in edges)
    # One import session, one encounter, sealed.
    assert {disk.encounter, dip.encounter, head.node.encounter} == {done.encounter}


def test_import_then_export_keeps_statements_subjects_supersedes_and_derivations(
    store: GraphStore,
) -> None:
    run(Memory(store), CI, MEM)
    out = kndl.export_facts(store, MEM)
    assert all(f["@id"].startswith(f"urn:kenning:{MEM}:") for f in out)
    got = _by_label(out)
    raw = _raw(CI)
    assert set(got) == set(raw)
    for fact_id, src in raw.items():
        mine = got[fact_id]
        subjects = src.get("subject", [])
        assert mine["statement"] == src["statement"]
        assert mine["subject"] == sorted(subjects if isinstance(subjects, list) else [subjects])
        assert mine["source"] == [src["source"]]
        assert mine["supersedes"] == src.get("supersedes")
        assert mine["derivedFrom"] == sorted(src.get("derivedFrom", []))
        for key in ("validFrom", "validUntil", "observedAt", "predicate", "object"):
            assert mine[key] == src.get(key)
    assert sum(f.get("object") is not None for f in out) == 3


def test_memory_to_facts_and_back_gives_the_same_facts(store: GraphStore, tmp_path: Path) -> None:
    seed(store)
    m = Memory(store)
    m.advance_encounter("kndl-extra", "facts with subjects")
    m.create_entities(
        "kndl-extra",
        [
            {
                "type": "Observation",
                "name": "o9",
                "description": "the queue backs up at noon",
                "predicate": "backsUpAt",
                "object": "12:00",
            },
            {
                "type": "Concept",
                "name": "c9",
                "description": "noon load",
                "predicate": "peaksAbove",
                "object": "1e3",
                "object_type": "number",
            },
            {"type": "Concept", "name": "c10", "description": "capacity plan"},
            {"type": "Concept", "name": "c11", "description": "rests on nothing yet"},
        ],
    )
    m.create_relations(
        "kndl-extra",
        [
            {"source": "o9", "type": "ABOUT", "target": "c1"},
            {"source": "o9", "type": "INFORMS", "target": "c9"},
            {"source": "c9", "type": "SUPPORTS", "target": "c10"},
            {"source": "cit1", "type": "GROUNDS", "target": "c10"},
        ],
    )
    first = kndl.export_facts(store, MEM)
    assert len(first) >= 6
    folder = tmp_path / "facts-out"
    for rel, doc in kndl.as_files(first).items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(json.dumps(doc))
    copy = _fresh(store, tmp_path, "copy")
    try:
        run(Memory(copy), folder, MEM)
        second = kndl.export_facts(copy, MEM)
        # A Concept stays one though nothing grounds it: its @type says so.
        assert Memory(copy).find_by_name("c11").node.type == "Concept"
    finally:
        copy.close()
    assert _by_label(second) == _by_label(first)
    assert any(f.get("derivedFrom") for f in first) and any(f.get("supersedes") for f in first)


def test_a_second_import_of_the_same_facts_is_refused_and_writes_nothing(
    store: GraphStore,
) -> None:
    m = Memory(store)
    run(m, CI, MEM)
    before = _state(store)
    with pytest.raises(InvalidInput, match="imported before"):
        run(m, CI, MEM)
    assert _state(store) == before


def test_later_facts_revise_and_rest_on_facts_imported_earlier(
    store: GraphStore, tmp_path: Path
) -> None:
    m = Memory(store)
    run(m, CI, MEM)
    later = tmp_path / "later"
    (later / "facts").mkdir(parents=True)
    (later / "facts" / "a.fact.json").write_text(
        json.dumps(
            {
                "@context": "../context/v1.jsonld",
                "@id": "fact:cache-hit-rate-2026-05-23",
                "@type": "Fact",
                "statement": "The shared build cache served 83% of artifact requests on 23 May",
                "subject": "service:build-cache",
                "source": "https://ci.example.org/reports/2026-05-02",
                "supersedes": "fact:cache-hit-rate-2026-05-16",
                "validFrom": "2026-05-23T00:00:00Z",
            }
        )
    )
    done = run(m, later, MEM)
    assert (done.citations, done.subjects) == (0, 0)  # the citation and subject are reused
    head = m.find_by_name("fact:cache-hit-rate-2026-05-23")
    assert [h.name for h in head.history] == [
        "fact:cache-hit-rate-2026-05-16",
        "fact:cache-hit-rate-2026-05-09",
        "fact:cache-hit-rate-2026-05-02",
    ]


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "kndl"
    shutil.copytree(CI, target)
    return target


def _edit(folder: Path, slug: str, change: Callable[[dict[str, Any]], None]) -> str:
    path = folder / "facts" / f"{slug}.fact.json"
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return str(path)


def _set(**values: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        for key, value in values.items():
            if value is None:
                doc.pop(key.replace("_", "@", 1) if key.startswith("_") else key, None)
            else:
                doc[key] = value

    return change


BAD: list[tuple[str, str, Callable[[dict[str, Any]], None], str, str]] = [
    ("runner-r7-disk-full", "statement", _set(statement=None), "statement", "is required"),
    ("runner-r7-disk-full", "validFrom", _set(validFrom="8 May"), "validFrom", "ISO-8601"),
    ("runner-r7-disk-full", "unknown", _set(colour="red"), "colour", "not a KNDL fact field"),
    ("runner-r7-disk-full", "negated", _set(negated=True), "negated", "known false"),
    ("runner-r7-disk-full", "confidence", _set(confidence=1.5), "confidence", "from 0 to 1"),
    ("runner-r7-disk-full", "type", _set(**{"@type": "Claim"}), "@type", "must be 'Fact'"),
    ("runner-r7-disk-full", "context", _set(_context=None), "@context", "is required"),
    ("runner-r7-disk-full", "hidden", _set(label="disk\u200bfull"), "label", "U+200B"),
    ("runner-r7-disk-full", "escape", _set(statement="full \x1b[31m"), "statement", "U+001B"),
    (
        "eviction-explains-dip",
        "derivedFrom",
        _set(derivedFrom=["fact:nowhere"]),
        "derivedFrom",
        "neither a fact of this import",
    ),
    (
        "cache-hit-rate-2026-05-16",
        "supersedes",
        _set(supersedes="fact:cache-hit-rate-2026-05-02"),
        "supersedes",
        "a chain is a line",
    ),
    (
        "cache-hit-rate-2026-05-02",
        "cycle",
        _set(supersedes="fact:cache-hit-rate-2026-05-16"),
        "supersedes",
        "cycle",
    ),
    ("runner-r7-disk-full", "span", _set(validUntil="2026-01-01T00:00:00Z"), "valid", "before"),
    ("runner-r7-disk-full", "label", _set(label="x" * 300), "label", "limit"),
    (
        "runner-r7-disk-full",
        "object list",
        _set(object=[1, 2]),
        "object",
        "a number, true or false",
    ),
    ("runner-r7-disk-full", "object node", _set(object={"@id": "a b"}), "object", "not an IRI"),
    ("runner-r7-disk-full", "predicate", _set(predicate=7), "predicate", "non-empty string"),
]

TRIPLES: list[Any] = ["full", 720, 0.41, -2.5e-07, True, False, {"@id": "urn:x:customer:9281"}]


def test_a_fact_keeps_its_predicate_and_object_through_import_and_export(
    store: GraphStore, tmp_path: Path
) -> None:
    """Each form an object takes comes back as it went in; confidence does not."""
    docs = [
        {
            "@id": f"fact:t{i}",
            "@type": "Fact",
            "statement": f"triple {i}",
            "subject": "customer:9281",
            "predicate": f"p{i}",
            "object": value,
            "confidence": 0.5,
        }
        for i, value in enumerate(TRIPLES)
    ]
    path = tmp_path / "triples.jsonld"
    path.write_text(json.dumps({"@context": {}, "@graph": docs}))
    done = run(Memory(store), path, MEM)
    assert done.not_held == {"confidence": len(TRIPLES)}
    out = {f["label"]: f for f in kndl.export_facts(store, MEM)}
    for doc in docs:
        mine = out[doc["@id"]]
        assert (mine["predicate"], mine["object"]) == (doc["predicate"], doc["object"])
        assert type(mine["object"]) is type(doc["object"])
        assert "confidence" not in mine
    held = Memory(store).find_by_name("fact:t6").node.properties
    assert (held["object"], held["object_type"]) == ("urn:x:customer:9281", "iri")
    assert "object_type" not in Memory(store).find_by_name("fact:t0").node.properties


@pytest.mark.parametrize(
    ("props", "field", "why"),
    [
        ({"object": "lots", "object_type": "number"}, "object", "not a JSON number"),
        ({"object": "7\u0662\u0660", "object_type": "number"}, "object", "not a JSON number"),
        ({"object": "yes", "object_type": "boolean"}, "object", "not true or false"),
        ({"object": "a b", "object_type": "iri"}, "object", "not an IRI"),
        ({"object": "1", "object_type": "integer"}, "object_type", "use one of: string"),
        ({"object_type": "number"}, "object_type", "only goes with object"),
    ],
)
def test_a_triple_whose_object_is_not_its_type_is_refused(
    store: GraphStore, props: dict[str, str], field: str, why: str
) -> None:
    m = Memory(store)
    m.advance_encounter("triples", "bad objects")
    before = _state(store)
    entity = {"type": "Observation", "name": "t", "predicate": "p", **props}
    with pytest.raises(InvalidInput, match=why) as refused:
        m.create_entities("triples", [entity])
    assert refused.value.field == f"entities[0].{field}"
    assert _state(store) == before


@pytest.mark.parametrize(
    ("slug", "field", "why"),
    [(b[0], b[3], b[4]) for b in BAD],
    ids=[b[1] for b in BAD],
)
def test_a_bad_fact_is_refused_naming_file_fact_and_field(
    store: GraphStore, tmp_path: Path, slug: str, field: str, why: str
) -> None:
    change = next(b[2] for b in BAD if b[0] == slug and b[3] == field and b[4] == why)
    folder = _copy(tmp_path)
    path = _edit(folder, slug, change)
    before = _state(store)
    with pytest.raises(KenningError) as refused:
        run(Memory(store), folder, MEM)
    message = str(refused.value)
    assert path in message and f"(fact:{slug})" in message, message
    assert field in message and why in message, message
    assert _state(store) == before  # nothing written, not even the import's encounter


def test_an_import_from_a_folder_named_with_hidden_characters_is_whole(
    store: GraphStore, tmp_path: Path
) -> None:
    """The import's own words about its file show the path on one line (plaintext.one_line);
    they are never refused midway, after the facts were written, for what the path holds."""
    folder = tmp_path / "odd\x1b[0m\u202edir"
    shutil.copytree(CI, folder)
    done = run(Memory(store), folder, MEM)
    encounter = store.read(lambda tx: tx.get_encounter(done.encounter))
    assert encounter is not None and encounter.summary is not None
    for said in (encounter.purpose, encounter.summary):
        assert "odd\ufffd[0m\ufffddir" in said and "\x1b" not in said and "\u202e" not in said


def test_a_derived_chain_cannot_revise_a_held_observation(
    store: GraphStore, tmp_path: Path
) -> None:
    m = Memory(store)
    run(m, CI, MEM)
    later = tmp_path / "later.fact.json"
    later.write_text(
        json.dumps(
            {
                "@context": {"@vocab": "urn:example:"},
                "@id": "fact:r7-revised",
                "@type": "Fact",
                "statement": "r7 filled its disk because the cache evicted nothing",
                "supersedes": "fact:runner-r7-disk-full",
                "derivedFrom": ["fact:cache-hit-rate-2026-05-09"],
            }
        )
    )
    before = _state(store)
    with pytest.raises(KenningError, match=r"later\.fact\.json \(fact:r7-revised\)\.supersedes"):
        run(m, later, MEM)
    assert _state(store) == before


def test_a_graph_document_and_duplicate_ids(tmp_path: Path) -> None:
    facts = [f for f in _raw(CI).values()]
    for f in facts:
        f.pop("@context")
    doc = tmp_path / "all.jsonld"
    doc.write_text(json.dumps({"@context": {"@vocab": "urn:example:"}, "@graph": facts}))
    assert {f.id for f in read_facts(doc)} == set(_raw(CI))
    doc.write_text(json.dumps({"@context": {}, "@graph": [facts[0], facts[0]]}))
    with pytest.raises(InvalidInput, match=r"@graph\[1\] \(fact:[^)]+\)\.@id: is also the @id"):
        read_facts(doc)


def _one(tmp_path: Path, **fields: Any) -> Path:
    path = tmp_path / "one.fact.json"
    doc = {
        "@context": {"@vocab": "urn:example:"},
        "@id": "fact:dana-phone",
        "@type": "Fact",
        "statement": "Dana's on-call phone number is in the rota sheet",
        "subject": "person:dana",
        "source": "human://priya",
        **fields,
    }
    path.write_text(json.dumps(doc))
    return path


def test_classification_and_retention_are_carried_and_the_export_gates_them(
    store: GraphStore, tmp_path: Path
) -> None:
    from kenning_encounter.memory.gates import Gate, GatedStore

    m = Memory(store)
    run(m, _one(tmp_path, classification=["PII", "PHI"], retention="P90D"), MEM)
    node = store.read(lambda tx: tx.get_node(tx.head_id_by_name("fact:dana-phone") or ""))
    assert node is not None
    assert (node.props["classification"], node.props["retention"]) == ("phi,pii", "P90D")
    granted = kndl.export_facts(GatedStore(store, Gate(["pii", "phi"])), MEM)
    assert [(f["classification"], f["retention"]) for f in granted] == [(["PHI", "PII"], "P90D")]
    assert kndl.export_facts(GatedStore(store, Gate(["pii"])), MEM) == []


def test_an_unknown_class_is_refused_naming_the_field(store: GraphStore, tmp_path: Path) -> None:
    before = _state(store)
    with pytest.raises(InvalidInput, match=r"one\.fact\.json \(fact:dana-phone\)\.classification"):
        run(Memory(store), _one(tmp_path, classification="HR"), MEM)
    assert _state(store) == before


def test_facts_of_several_tenants_are_not_mixed_in_one_memory(tmp_path: Path) -> None:
    folder = _copy(tmp_path)
    _edit(folder, "runner-r7-disk-full", _set(tenant="acme"))
    with pytest.raises(InvalidInput, match="several tenants"):
        read_facts(folder)
    for fact in _raw(folder):
        _edit(folder, fact.removeprefix("fact:"), _set(tenant="acme"))
    assert {f.tenant for f in read_facts(folder)} == {"acme"}


def test_a_classified_fact_held_already_is_seen_by_the_checks(
    store: GraphStore, tmp_path: Path
) -> None:
    m = Memory(store)  # granted nothing: its reads do not show the fact
    run(m, _one(tmp_path, classification="PII"), MEM)
    before = _state(store)
    with pytest.raises(InvalidInput, match="imported before"):
        run(m, _one(tmp_path, classification="PII"), MEM)
    assert _state(store) == before


def test_a_subject_or_source_spelt_like_a_fact_takes_a_name_of_its_own(
    store: GraphStore, tmp_path: Path
) -> None:
    folder = tmp_path / "spelt"
    folder.mkdir()
    base = {"@context": {"@vocab": "urn:example:"}, "@type": "Fact"}
    for slug, extra in [
        ("a", {"statement": "the nightly build failed"}),
        ("b", {"statement": "the failure was a flaky test", "subject": "fact:a"}),
        ("c", {"statement": "retrying passed", "source": "fact:a", "subject": "fact:b"}),
    ]:
        doc = {**base, "@id": f"fact:{slug}", **extra}
        (folder / f"{slug}.fact.json").write_text(json.dumps(doc))
    m = Memory(store)
    run(m, folder, MEM)
    about = m.find_by_name("subject: fact:a").node
    assert (about.type, about.properties["source_key"]) == ("Component", "fact:a")
    cited = m.find_by_name("source: fact:a").node
    assert (cited.type, cited.properties["uri"]) == ("Citation", "fact:a")
    got = {f["label"]: f for f in kndl.export_facts(store, MEM)}
    assert (got["fact:b"]["subject"], got["fact:c"]["source"]) == ("fact:a", "fact:a")
    assert got["fact:c"]["subject"] == "fact:b"


def test_one_held_node_revised_twice_under_two_names_is_refused(
    store: GraphStore, tmp_path: Path
) -> None:
    m = Memory(store)
    run(m, CI, MEM)
    head = m.find_by_name("fact:cache-hit-rate-2026-05-16").node
    folder = tmp_path / "twice"
    folder.mkdir()
    for slug, ref in [("a", "fact:cache-hit-rate-2026-05-16"), ("b", kndl.iri(MEM, head.id))]:
        doc = {
            "@context": {"@vocab": "urn:example:"},
            "@id": f"fact:{slug}",
            "@type": "Fact",
            "statement": f"revision {slug}",
            "supersedes": ref,
        }
        (folder / f"{slug}.fact.json").write_text(json.dumps(doc))
    before = _state(store)
    with pytest.raises(KenningError, match=rf"b\.fact\.json \(fact:b\)\.supersedes: {head.id}"):
        run(m, folder, MEM)
    assert _state(store) == before
    (folder / "a.fact.json").unlink()  # by our IRI alone, it revises the held node
    run(m, folder, MEM)
    assert m.find_by_name("fact:b").history[0].id == head.id


def test_a_schema_10_store_takes_a_triple_after_its_migration(tmp_path: Path) -> None:
    from tests.support.embedded_store import made_at_schema

    made_at_schema(tmp_path / "memory", 10)
    store = EmbeddedStore.open(tmp_path / "memory")
    try:
        m = Memory(store)
        m.advance_encounter("triples", "after the upgrade")
        triple = {"predicate": "hitRate", "object": "0.5", "object_type": "number"}
        m.create_entities("triples", [{"type": "Concept", "name": "rate", **triple}])
        assert {k: m.find_by_name("rate").node.properties[k] for k in triple} == triple
    finally:
        store.close()
