"""What the read gate costs on Neo4j, in statements, with nothing withheld and with a class
withheld, and how another server's classified node turns its work on.

Every server with the default (empty) grant reads through the gate. What a withheld node
made of a shown one (a status it moved) costs the relations into such nodes, asked again;
a memory that never held a class its reader is not granted skips that and pays what a
read paid before the gate read statuses at all (memory/gates.py ``withheld_in_use``).
The counts below are those; the second half pins what the same reads cost once a
withheld node has touched the nodes they show.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kenning_encounter.infusion.config import InfusionConfig
from kenning_encounter.infusion.pipeline import Infuser
from kenning_encounter.memory.gates import Gate, GatedReads
from kenning_encounter.memory.service import Memory
from kenning_encounter.vocabulary import CLASSIFICATIONS
from tests.integration.test_neo4j_write_round_trips import Recorder
from tests.support.backends import HAVE_NEO4J_BACKEND, neo4j_target, neo4j_unavailable
from tests.support.neo4j_target import configured, empty_marked

pytestmark = pytest.mark.neo4j

ALL = tuple(CLASSIFICATIONS)


@pytest.fixture
def servers() -> Iterator[tuple[Memory, Memory, Recorder]]:
    """Two stores on one memory, as two servers: a reader with the default grant whose
    statements are recorded, and a writer granted every class."""
    if not HAVE_NEO4J_BACKEND:
        neo4j_unavailable(f"the Neo4j backend is not importable; tried {neo4j_target().uri}")
    target = configured()
    if target is None:
        neo4j_unavailable("no Neo4j named")
    from neo4j.exceptions import ServiceUnavailable

    from kenning_encounter.store.neo4j import Neo4jStore

    try:
        empty_marked(target)
    except ServiceUnavailable as exc:
        neo4j_unavailable(f"no Neo4j answered at {target.uri}: {exc}")
    recorder = Recorder()
    auth = (target.username, target.password)
    reading = Neo4jStore.open(target.uri, *auth, target.database, tracer=recorder)
    writing = Neo4jStore.open(target.uri, *auth, target.database)
    try:
        yield Memory(reading), Memory(writing, granted=ALL), recorder
    finally:
        reading.close()
        writing.close()


def _plant(writer: Memory) -> int:
    """Evidence that moved statuses (a hypothesis supported, a question resolved), one left
    untested, and a revised concept; nothing classified. The tick after it."""
    writer.advance_encounter("w", "lanterns")
    writer.create_entities(
        "w",
        [
            {"type": "Observation", "name": "lantern glows", "description": "the lantern glows"},
            {"type": "Hypothesis", "name": "lantern gas", "description": "the lantern burns gas"},
            {"type": "Hypothesis", "name": "lantern oil", "description": "the lantern burns oil"},
            {"type": "Question", "name": "lantern why", "description": "why the lantern glows"},
            {"type": "Concept", "name": "lantern theory", "description": "a lantern theory"},
        ],
    )
    writer.create_relations(
        "w",
        [
            {"source": "lantern glows", "type": "SUPPORTS", "target": "lantern gas"},
            {"source": "lantern glows", "type": "RESOLVES", "target": "lantern why"},
        ],
    )
    writer.create_entities(
        "w",
        [
            {
                "type": "Concept",
                "name": "lantern theory 2",
                "description": "the lantern theory revised",
                "supersedes": "lantern theory",
                "revision_why": "better",
            }
        ],
    )
    return writer.store.read(lambda tx: tx.clock())


def _reads(reader: Memory, tick: int) -> dict[str, Callable[[], Any]]:
    infuser = Infuser(reader.store, InfusionConfig())
    sessions = iter(range(1_000))
    return {
        "search": lambda: reader.search("lantern"),
        "find_by_name": lambda: reader.find_by_name("lantern oil"),
        "trace_provenance": lambda: reader.trace_provenance("lantern gas"),
        "as_of search": lambda: reader.search("lantern", as_of=tick),
        "search, superseded too": lambda: reader.search("lantern", include_superseded=True),
        "as_of search, superseded too": lambda: reader.search(
            "lantern", as_of=tick, include_superseded=True
        ),
        "as_of find_by_name": lambda: reader.find_by_name("lantern gas", as_of=tick),
        "infuse": lambda: infuser.infuse("r", "tell me about the lantern"),
        "re-entry": lambda: reader.advance_encounter(f"r{next(sessions)}", "again"),
    }


def _costs(recorder: Recorder, reads: dict[str, Callable[[], Any]]) -> dict[str, int]:
    """Each read's statements once the node cache has met what it reads (asked twice)."""
    out: dict[str, int] = {}
    for name, read in reads.items():
        recorder.during(read)
        out[name] = len(recorder.during(read))
    return out


# What each read sent before the gate read statuses (main at cf02427), with nothing withheld.
NOTHING_WITHHELD = {
    "search": 1,
    "find_by_name": 2,
    "trace_provenance": 5,
    # The search, the moment and the caller's statistics in one read (memory/asof.py).
    "as_of search": 6,
    "search, superseded too": 3,
    "as_of search, superseded too": 6,
    "as_of find_by_name": 5,
    "infuse": 3,
    "re-entry": 8,
}


def test_a_memory_with_nothing_withheld_pays_nothing_for_the_gate_s_statuses(
    servers: tuple[Memory, Memory, Recorder],
) -> None:
    reader, writer, recorder = servers
    tick = _plant(writer)
    assert _costs(recorder, _reads(reader, tick)) == NOTHING_WITHHELD
    assert reader.find_by_name("lantern gas").node.status == "supported"
    # Writes: a node; a relation that moves a status; one that moves none; an unlink.
    reader.advance_encounter("m", "mine")
    lamp = [{"type": "Observation", "name": "lamp lit"}]
    challenge = [{"source": "lamp lit", "type": "CHALLENGES", "target": "lantern oil"}]
    support = [{"source": "lamp lit", "type": "SUPPORTS", "target": "lantern gas"}]
    assert len(recorder.during(reader.create_entities, "m", lamp)) == 2
    assert len(recorder.during(reader.create_relations, "m", challenge)) == 4
    assert len(recorder.during(reader.create_relations, "m", support)) == 3
    assert len(recorder.during(reader.delete_relations, "m", challenge)) == 17


def test_another_server_s_classified_node_turns_the_gate_s_work_on_at_the_next_read(
    servers: tuple[Memory, Memory, Recorder],
) -> None:
    reader, writer, recorder = servers
    tick = _plant(writer)
    reads = _reads(reader, tick)
    assert _costs(recorder, reads) == NOTHING_WITHHELD
    # Another server writes a node of a class the reader is not granted: it challenges
    # the untested hypothesis, and revises the concept.
    secret = {"type": "Observation", "description": "a lantern", "classification": "secret"}
    writer.create_entities("w", [{**secret, "name": "vault lantern"}])
    writer.create_relations(
        "w", [{"source": "vault lantern", "type": "CHALLENGES", "target": "lantern oil"}]
    )
    writer.create_entities(
        "w",
        [
            {
                "type": "Concept",
                "name": "lantern theory 3",
                "supersedes": "lantern theory 2",
                "revision_why": "kept apart",
                "classification": "secret",
            }
        ],
    )
    # The reader's very next read reads the challenge away, as the evidence it may see gives.
    assert reader.find_by_name("lantern oil").node.status == "untested"
    assert writer.find_by_name("lantern oil").node.status == "challenged"
    assert reader.find_by_name("lantern theory 2").node.superseded_by == "withheld"
    assert {h.name: h.status for h in reader.search("lantern").hits if h.type == "Hypothesis"} == {
        "lantern gas": "supported",
        "lantern oil": "untested",
    }
    # What the same reads cost now that a withheld node touched what they show.
    assert _costs(recorder, reads) == {
        "search": 3,
        "find_by_name": 4,
        "trace_provenance": 6,
        "as_of search": 9,
        "search, superseded too": 5,
        "as_of search, superseded too": 9,
        "as_of find_by_name": 8,
        "infuse": 5,
        "re-entry": 13,
    }


def test_a_classified_write_notes_its_class_once(
    servers: tuple[Memory, Memory, Recorder],
) -> None:
    # The reader's store writes here, granted every class, so its statements are counted.
    reader, _, recorder = servers
    granted = Memory(reader.backend, granted=ALL)
    granted.advance_encounter("g", "notes")
    plain = recorder.during(granted.create_entities, "g", [{"type": "Note", "name": "a"}])
    first = recorder.during(
        granted.create_entities, "g", [{"type": "Note", "name": "b", "classification": "pii"}]
    )
    again = recorder.during(
        granted.create_entities, "g", [{"type": "Note", "name": "c", "classification": "pii"}]
    )
    assert (len(plain), len(first), len(again)) == (2, 3, 2)
    assert [s for s in first if "c.classes" in s and "SET" in s], first


def test_an_older_memory_s_classes_are_read_from_its_nodes_and_its_past(
    neo4j_store: Any, raw_driver: Any
) -> None:
    # A memory made before the clock carried its classes (schema 7) finds them when a
    # store opens it: a standing node's, and one an undo left in the record of the past.
    from kenning_encounter.store.neo4j import Neo4jStore

    writer = Memory(neo4j_store, granted=ALL)
    writer.advance_encounter("w", "old")
    writer.create_entities(
        "w",
        [
            {"type": "Note", "name": "card", "classification": "pci"},
            {"type": "Note", "name": "vault", "classification": "secret"},
            {"type": "Note", "name": "plain"},
        ],
    )
    writer.delete_entities("w", ["vault"])
    with raw_driver.session(database=neo4j_target().database) as s:
        s.run(
            "MATCH (c:Meta {key: 'clock'}) REMOVE c.classes WITH c "
            "MATCH (v:Meta {_memory: c._memory, key: 'schema_version'}) SET v.ival = 7"
        ).consume()
    assert neo4j_store.read(lambda tx: tx.classes_used()) == frozenset()  # as before schema 8
    t = neo4j_target()
    again = Neo4jStore.open(t.uri, t.username, t.password, t.database)
    try:
        assert again.read(lambda tx: tx.classes_used()) == {"pci", "secret"}
    finally:
        again.close()


def test_a_search_of_every_version_brings_what_the_gate_asks(
    servers: tuple[Memory, Memory, Recorder],
) -> None:
    # A search of every version reads its hits without the node cache's synchronisation.
    # The classes the gate then asks come with its statement: a synchronisation of its
    # own, between the nodes read and the reads after, would drop what another server
    # changed meanwhile and have those reads fetch the nodes again.
    reader, writer, recorder = servers
    tick = _plant(writer)
    _costs(recorder, _reads(reader, tick))  # the reader holds the lanterns
    writer.create_entities("w", [{"type": "Observation", "name": "lantern smokes"}])
    writer.delete_entities("w", ["lantern smokes"])  # a deletion: every cache starts again
    sent = recorder.during(lambda: reader.search("lantern", as_of=tick, include_superseded=True))
    # The search; the moment's synchronisation; its nodes; the past's three; and the
    # count of the withheld nodes the caller's statistics leave out (memory/reads.py).
    assert len(sent) == 7, sent
    assert len([x for x in sent if "_touched > $since" in x]) == 1, sent


def test_a_class_first_used_while_a_read_runs_is_heard_by_that_read(
    servers: tuple[Memory, Memory, Recorder],
) -> None:
    # A read takes no lock: it synchronised while nothing was withheld, then another
    # server noted a class, made a node of it and challenged a hypothesis with it, and
    # only then did the read fetch the hypothesis. That node was changed after the clock
    # the read's classes stand at, so they are asked again, and the challenge is read away.
    reader, writer, recorder = servers
    _plant(writer)
    oil = writer.find_by_name("lantern oil").node.id

    def work(tx: Any) -> tuple[str | None, list[str]]:
        assert tx.moment() is not None  # the read's synchronisation, before the write
        assert tx.classes_used() == frozenset()
        writer.create_entities(
            "w", [{"type": "Observation", "name": "vault lantern", "classification": "secret"}]
        )
        writer.create_relations(
            "w", [{"source": "vault lantern", "type": "CHALLENGES", "target": "lantern oil"}]
        )
        recorder.sent, recorder.on = [], True
        try:
            found = GatedReads(tx, Gate(())).get_nodes([oil])[oil]
        finally:
            recorder.on = False
        return found.status, recorder.sent

    shown, sent = reader.backend.read(work)
    assert shown == "untested"
    assert len([s for s in sent if "RETURN c.ival, coalesce(c.classes" in s]) == 1, sent
