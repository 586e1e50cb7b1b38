"""A chain renamed by a version its reader may not see (a hidden session's, or a withheld
class's) is found by every name the reader may see, on every backend: each name lookup
stands at the newest version the reader sees, read as revised (``superseded_by`` says
``hidden`` or ``withheld``), as a lookup by id does. The unseen version's own name finds
nothing, and no answer or refusal names its id or its words. A write by a name whose
holder is withheld is refused, naming the field and the fix, and writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from kenning_encounter.errors import KenningError, NotFound, SupersessionRule, Withheld
from kenning_encounter.memory import conflicts
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore
from kenning_encounter.store.records import HIDDEN_SUCCESSOR, WITHHELD_SUCCESSOR
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.support.counted import Counter

OPEN = "open-session"
SECRET = "secret-session"
WORD = "zqxsecret"  # in every word the unseen versions hold
UNSEEN = {"hidden": HIDDEN_SUCCESSOR, "withheld": WITHHELD_SUCCESSOR}


def _revise(writer: Memory, session: str, old: str, name: str, text: str, how: str) -> str:
    revision: dict[str, Any] = {
        "type": "Hypothesis",
        "name": name,
        "description": text,
        "supersedes": old,
        "revision_why": f"reason {text}",
    }
    if how == "withheld" and WORD in text:
        revision["classification"] = ["secret"]
    return writer.create_entities(session, [revision]).created[0].id


def _plant(store: GraphStore, how: str) -> dict[str, Any]:
    """Two chains revised unseen: ``plan`` renamed in sight and then by the unseen version;
    ``ferry`` revised unseen twice, keeping its name (which the registry then gives the
    unseen version) and then renaming it."""
    writer = Memory(store, granted=CLASSIFICATIONS)
    writer.advance_encounter(OPEN, "plans")
    made = writer.create_entities(
        OPEN,
        [
            {"type": "Hypothesis", "name": "lantern plan", "description": "ferry at dawn"},
            {"type": "Hypothesis", "name": "ferry note", "description": "ferry is slow"},
            {"type": "Observation", "name": "tide table", "description": "low tide at six"},
        ],
    ).created
    ids: dict[str, Any] = {"v1": made[0].id, "w1": made[1].id, "tide": made[2].id}
    writer.create_relations(
        OPEN, [{"source": "tide table", "type": "SUPPORTS", "target": "lantern plan"}]
    )
    ids["v2"] = _revise(writer, OPEN, ids["v1"], "harbour plan", "ferry at seven", how)
    ids["before"] = store.read(lambda tx: tx.clock())
    unseen = OPEN
    if how == "hidden":
        writer.advance_encounter(SECRET, "private plans")
        unseen = SECRET
    ids["v3"] = _revise(writer, unseen, ids["v2"], f"{WORD} plan", f"{WORD} boat", how)
    ids["w2"] = _revise(writer, unseen, ids["w1"], "ferry note", f"{WORD} swim", how)
    ids["w3"] = _revise(writer, unseen, ids["w2"], f"{WORD} ferry", f"{WORD} swims", how)
    return ids


def _reader(store: GraphStore, how: str) -> Memory:
    # The default grant is empty: a default server withholds the secret class.
    return Memory(store, hidden_loci=frozenset({SECRET}) if how == "hidden" else frozenset())


def _leaks(text: str, ids: dict[str, Any], given: str = "") -> list[str]:
    """What of the unseen versions ``text`` names: their ids, their words (the ref the
    caller gave, echoed back, is its own words)."""
    told = text.replace(given, "<given>") if given else text
    return [x for x in (ids["v3"], ids["w2"], ids["w3"], WORD) if x in told]


@pytest.mark.parametrize("how", list(UNSEEN))
def test_every_name_the_reader_sees_finds_the_newest_version_it_sees(
    store: GraphStore, how: str
) -> None:
    ids = _plant(store, how)
    reader = _reader(store, how)
    word = UNSEEN[how]
    now = store.read(lambda tx: tx.clock())
    answers: list[str] = []
    # (ref, the newest version shown, the version the ref names when it is not that one)
    cases = [
        ("lantern plan", ids["v2"], ids["v1"]),
        ("harbour plan", ids["v2"], None),
        (ids["v1"], ids["v2"], ids["v1"]),
        (ids["v2"], ids["v2"], None),
        ("ferry note", ids["w1"], None),
        (ids["w1"], ids["w1"], None),
    ]
    for ref, newest, named in cases:
        for as_of in (None, now):
            found = reader.find_by_name(ref, as_of=as_of)
            got = (found.node.id, found.node.superseded_by, found.resolved_from)
            assert got == (newest, word, named), (ref, as_of)
            answers.append(found.model_dump_json())
        # Before the unseen revision, the same version stood as the live head.
        then = reader.find_by_name(ref, as_of=ids["before"])
        assert (then.node.id, then.node.superseded_by, then.resolved_from) == (
            newest,
            None,
            named,
        ), ref
        chain = reader.chain_history(ref)
        versions = [ids["v1"], ids["v2"]] if newest == ids["v2"] else [ids["w1"]]
        assert [v.id for v in chain.versions] == versions, ref
        assert chain.head is None and not any(v.head for v in chain.versions), ref
        answers.append(chain.model_dump_json())
        # A trace stands at the version the ref names (by a name: the newest shown that
        # holds it), as it does for a reader who sees everything.
        traced = reader.trace_provenance(ref)
        assert traced.node.id == (named or newest), ref
        answers.append(traced.model_dump_json())
        about = conflicts.conflicts(reader.store, about=ref, hidden_loci=reader.hidden_loci)
        answers.append(about.model_dump_json())
    for text in answers:
        assert not _leaks(text, ids), text


@pytest.mark.parametrize("how", list(UNSEEN))
def test_the_unseen_versions_name_finds_nothing_and_is_never_told(
    store: GraphStore, how: str
) -> None:
    ids = _plant(store, how)
    reader = _reader(store, how)
    now = store.read(lambda tx: tx.clock())
    reads = {
        "find_by_name": lambda ref: reader.find_by_name(ref),
        "find_by_name as_of": lambda ref: reader.find_by_name(ref, as_of=now),
        "trace_provenance": lambda ref: reader.trace_provenance(ref),
        "chain_history": lambda ref: reader.chain_history(ref),
        "conflicts about": lambda ref: conflicts.conflicts(
            reader.store, about=ref, hidden_loci=reader.hidden_loci
        ),
    }
    for ref in (f"{WORD} plan", f"{WORD} ferry", ids["v3"], ids["w2"], ids["w3"]):
        for read, call in reads.items():
            with pytest.raises(NotFound) as info:
                call(ref)
            assert not _leaks(str(info.value), ids, ref), (read, ref, str(info.value))
    for query in (WORD, f"{WORD} plan", "swim boat"):
        for hit in reader.search(query, include_superseded=True).hits:
            assert not _leaks(hit.model_dump_json(), ids), (query, hit)
    # A reader who sees everything finds the unseen version by that name.
    assert Memory(store, granted=CLASSIFICATIONS).find_by_name(f"{WORD} plan").node.id == ids["v3"]
    assert Memory(store, granted=CLASSIFICATIONS).find_by_name("ferry note").node.id == ids["w3"]


def test_a_write_by_a_name_a_withheld_version_holds_is_refused_and_writes_nothing(
    store: GraphStore,
) -> None:
    ids = _plant(store, "withheld")
    writer = Memory(store)  # not granted the secret class
    session = "gated-writer"
    writer.advance_encounter(session, "writing beside")
    before = store.read(lambda tx: tx.clock())
    revise = {
        "type": "Hypothesis",
        "name": "ferry plan, public",
        "description": "a public version",
        "revision_why": "public",
    }
    # (the write, the field its refusal names, the refusal)
    writes: list[tuple[Any, str, type[KenningError]]] = [
        # "ferry note" is held by the withheld version: the version shown under that name
        # is an older one, which a write by that name must not reach in its stead.
        (
            lambda: writer.create_relations(
                session, [{"source": "tide table", "type": "SUPPORTS", "target": "ferry note"}]
            ),
            "relations[0].target",
            Withheld,
        ),
        (lambda: writer.pin_entities(session, ["ferry note"]), "refs[0]", Withheld),
        (lambda: writer.confirm_entities(session, ["ferry note"]), "refs[0]", Withheld),
        (lambda: writer.delete_entities(session, ["ferry note"]), "refs[0]", Withheld),
        (
            lambda: writer.delete_relations(
                session, [{"source": "tide table", "type": "SUPPORTS", "target": "ferry note"}]
            ),
            "relations[0].target",
            Withheld,
        ),
        (
            lambda: writer.create_entities(session, [{**revise, "supersedes": "ferry note"}]),
            "entities[0].supersedes",
            Withheld,
        ),
        # "harbour plan" names the version shown, which a withheld version revised.
        (
            lambda: writer.create_entities(session, [{**revise, "supersedes": "harbour plan"}]),
            "entities[0].supersedes",
            SupersessionRule,
        ),
    ]
    for write, field, refusal in writes:
        with pytest.raises(refusal) as info:
            write()
        message = str(info.value)
        assert message.startswith(f"{field}: "), message
        assert not _leaks(message, ids, "ferry note"), message
        # The fix a caller without the class can act on; by a name, the version it sees.
        assert "granted" in message, message
        assert field.endswith("supersedes") or "find_by_name" in message, message
        assert store.read(lambda tx: tx.clock()) == before, message
    # The fix taken: the version this server shows, by the id find_by_name gives.
    shown = writer.find_by_name("ferry note").node.id
    assert [n["id"] for n in writer.pin_entities(session, [shown]).nodes] == [ids["w1"]]


def test_a_name_a_withheld_version_holds_is_found_along_its_chain_not_by_a_scan(
    counted: tuple[GraphStore, Counter],
) -> None:
    """The newest version shown that carries a name a withheld version holds is in that
    version's chain (the registry keeps a name with its chain): walked by id, not sought
    among every node of every type by its name (a scan of each type's nodes)."""
    store, counter = counted
    ids = _plant(store, "withheld")
    reader = _reader(store, "withheld")
    start = len(counter.texts)
    found = reader.find_by_name("ferry note")
    assert (found.node.id, found.node.superseded_by) == (ids["w1"], WITHHELD_SUCCESSOR)
    sent = counter.texts[start:]
    # Each backend's ``nodes_named`` (the embedded query; Neo4j's, namespaced).
    by_name = ("WHERE n.name = $name", "KenningMemory {_memory: $memory, name: $name}")
    scans = [t for t in sent if any(s in t for s in by_name)]
    assert scans == [], scans
