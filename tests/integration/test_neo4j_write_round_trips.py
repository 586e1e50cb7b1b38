"""Round trips on Neo4j: a batch costs a fixed number of statements, whatever it holds.

Each statement is a round trip to the server, and on a write each one is made while
the clock lock is held, so every writer of every process waits for it. A batch's
statements must therefore not grow with its size or with how many types it mixes,
and a revision costs its edge, not lookups of its own. The statements' text must
not change with the batch either: the server's plan cache keys on it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from kenning_encounter.errors import NotFound
from kenning_encounter.memory.service import Memory
from tests.support.backends import HAVE_NEO4J_BACKEND, neo4j_target, neo4j_unavailable
from tests.support.neo4j_target import configured, empty_marked

pytestmark = pytest.mark.neo4j


class Recorder:
    """A tracer keeping the text of every statement sent while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.sent: list[str] = []

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        if self.on:
            self.sent.append(statement)

    def during(self, work: Any, *args: Any) -> list[str]:
        self.sent, self.on = [], True
        try:
            work(*args)
        finally:
            self.on = False
        return self.sent


@pytest.fixture
def traced() -> Iterator[tuple[Memory, Recorder]]:
    if not HAVE_NEO4J_BACKEND:
        neo4j_unavailable(f"the Neo4j backend is not importable; tried {neo4j_target().uri}")
    target = configured()
    if target is None:
        neo4j_unavailable("no Neo4j named")
    from neo4j.exceptions import ServiceUnavailable

    from kenning_encounter.store.neo4j import Neo4jStore

    recorder = Recorder()
    try:
        empty_marked(target)
    except ServiceUnavailable as exc:
        neo4j_unavailable(f"no Neo4j answered at {target.uri}: {exc}")
    store = Neo4jStore.open(
        target.uri, target.username, target.password, target.database, tracer=recorder
    )
    try:
        yield Memory(store), recorder
    finally:
        store.close()


def _mixed(prefix: str) -> list[dict[str, Any]]:
    """Four of every authored type."""
    out: list[dict[str, Any]] = []
    for i in range(4):
        out += [
            {"type": "Observation", "name": f"{prefix} obs {i}", "description": "seen"},
            {"type": "Concept", "name": f"{prefix} concept {i}", "description": "an idea"},
            {"type": "Question", "name": f"{prefix} question {i}", "description": "why?"},
            {"type": "Hypothesis", "name": f"{prefix} guess {i}", "description": "because"},
            {"type": "Note", "name": f"{prefix} note {i}", "description": "aside"},
            {
                "type": "Component",
                "name": f"{prefix} file {i}",
                "description": "a file",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": f"{prefix}/{i}.py",
            },
            {
                "type": "Citation",
                "name": f"{prefix} cite {i}",
                "description": "a paper",
                "kind": "web",
            },
        ]
    return out


def test_a_batch_costs_the_same_statements_whatever_its_size_and_types(
    traced: tuple[Memory, Recorder],
) -> None:
    memory, recorder = traced
    memory.advance_encounter("s", "round trips")
    one = recorder.during(memory.create_entities, "s", [{"type": "Note", "name": "lone"}])
    mixed = _mixed("m")
    many = recorder.during(memory.create_entities, "s", mixed)
    # Each Component still looks its source key up alone (a lookup, before the writes).
    lookups = [s for s in many if s.startswith("MATCH (k:SourceKey")]
    assert len(lookups) == sum(1 for e in mixed if e["type"] == "Component")
    # Else the same statements, text and number, for 1 node and for 28 of 7 types.
    assert [s for s in many if s not in lookups] == one
    assert len(one) <= 4
    # and they did the whole work: every node, name and source key, searchable at once
    assert memory.find_by_name("m cite 3").node.type == "Citation"
    assert memory.find_by_name("lone").node.type == "Note"
    hits = memory.search("paper", limit=10).hits
    assert sorted(h.name for h in hits) == [f"m cite {i}" for i in range(4)]
    with pytest.raises(Exception, match="exists already"):
        memory.create_entities(
            "s",
            [
                {
                    "type": "Component",
                    "name": "another",
                    "source_kind": "file",
                    "source_label": "repo",
                    "source_key": "m/2.py",
                }
            ],
        )


def test_revisions_cost_no_statement_of_their_own(
    traced: tuple[Memory, Recorder],
) -> None:
    memory, recorder = traced
    memory.advance_encounter("s", "revisions")
    made = memory.create_entities("s", _mixed("r")).created
    plain = recorder.during(memory.create_entities, "s", [{"type": "Note", "name": "plain"}])
    by_id = {n.name: n.id for n in made}
    revisions = [
        {
            "type": "Concept",
            "name": f"r concept {i}",
            "supersedes": f"r concept {i}",
            "revision_why": "better",
        }
        for i in range(3)
    ] + [
        {
            "type": "Note",
            "name": "r note 0 v2",
            "supersedes": by_id["r note 0"],
            "revision_why": "better",
        },
        {"type": "Observation", "name": "fresh", "description": "new"},
    ]
    by_name = recorder.during(memory.create_entities, "s", revisions[:3])
    sent = recorder.during(memory.create_entities, "s", revisions[3:])
    # A plain batch is two statements: the first reserves the tick and reads the open
    # encounter, the names and the nodes revised by name; the second creates the nodes
    # and makes the revisions. A node revised by id is read on its own, all at once.
    assert len(plain) == 2
    assert by_name == plain
    assert len(sent) == 3 and sent[0] == plain[0] and sent[2] == plain[1]
    for i in range(3):
        found = memory.find_by_name(f"r concept {i}")
        assert found.resolved_from is None and [h.id for h in found.history] == [
            by_id[f"r concept {i}"]
        ]
    assert memory.find_by_name("r note 0").resolved_from == by_id["r note 0"]


def test_nodes_of_many_types_read_at_once_as_one_by_one(traced: tuple[Memory, Recorder]) -> None:
    memory, recorder = traced
    memory.advance_encounter("s", "reads")
    batch = memory.create_entities("s", _mixed("g"))
    made = batch.created
    memory.create_entities(
        "s",
        [
            {
                "type": "Concept",
                "name": "g concept 1",
                "supersedes": "g concept 1",
                "revision_why": "why",
            }
        ],
    )
    store = memory.store
    ids = [n.id for n in made] + ["con_000000000000"]  # one that is not there
    # Before any read has cached them (store/neo4j/nodecache.py): the node cache's
    # synchronisation, then one statement for the nodes of every type; then the read
    # gate asks after the one revision not among them (a withheld one ends the chain).
    sent = recorder.during(store.read, lambda tx: tx.get_nodes(ids))
    read, successor = [s for s in sent if "_touched > $since" not in s]
    assert all(f"MATCH (n:{t}:" in read for t in ("Observation", "Concept", "Citation"))
    assert "MATCH (n:Concept:" in successor
    together = store.read(lambda tx: tx.get_nodes(ids))
    alone = {i: store.read(lambda tx, i=i: tx.get_node(i)) for i in ids}
    assert together == {i: n for i, n in alone.items() if n is not None}
    assert len(together) == len(made)
    revised = next(n for n in made if n.name == "g concept 1")
    assert together[revised.id].superseded_by is not None
    assert {n.type for n in together.values()} == {
        "Observation", "Concept", "Question", "Hypothesis", "Note", "Component", "Citation",
    }  # fmt: skip
    assert all(n.encounter == batch.encounter and n.locus == "s" for n in together.values())


def test_a_write_touches_its_encounter_in_a_statement_it_sends_anyway(
    traced: tuple[Memory, Recorder],
) -> None:
    """The encounter's last activity (what keeps it from the idle sweep) is set by the
    statement that creates the nodes, or the relations; a write that creates neither
    touches it at its end."""
    memory, recorder = traced
    memory.advance_encounter("s", "touches")
    store = memory.store

    def activity() -> str:
        encounter = store.read(lambda tx: tx.open_encounter_of("s"))
        assert encounter is not None and encounter.last_activity_at is not None
        return encounter.last_activity_at

    sent = recorder.during(memory.create_entities, "s", [{"type": "Note", "name": "a"}])
    assert not [s for s in sent if "SET e.last_activity_at = $at" in s]  # no touch of its own
    [created] = store.read(
        lambda tx: list(tx.get_nodes([memory.find_by_name("a").node.id]).values())
    )
    assert activity() == created.created_at  # set by the statement that made the node
    memory.create_entities("s", [{"type": "Note", "name": "b"}])
    before = activity()
    related = recorder.during(
        memory.create_relations, "s", [{"source": "a", "type": "INFORMS", "target": "b"}]
    )
    [touching] = [s for s in related if "SET e.last_activity_at = $at" in s]
    assert "CREATE (a)-[:INFORMS" in touching and activity() >= before
    confirmed = recorder.during(memory.confirm_entities, "s", ["a"])
    [touching] = [s for s in confirmed if "SET e.last_activity_at = $at" in s]
    assert touching == confirmed[-1]  # its own statement, at the write's end


def test_a_search_asks_the_index_again_when_its_best_hits_were_revised(
    traced: tuple[Memory, Recorder],
) -> None:
    """The index is asked for a few more hits than the page holds; when superseded nodes
    fill all of them, it is asked again for more, and the page is still full."""
    memory, recorder = traced
    memory.advance_encounter("s", "revised words")
    strong = [
        {"type": "Note", "name": f"strong {i}", "description": "zephyr zephyr zephyr zephyr"}
        for i in range(70)
    ]
    for part in (strong[:35], strong[35:]):
        memory.create_entities("s", part)
    for start in (0, 35):
        memory.create_entities(
            "s",
            [
                {
                    "type": "Note",
                    "name": f"strong {i} v2",
                    "description": "reworded",
                    "supersedes": f"strong {i}",
                    "revision_why": "the word went",
                }
                for i in range(start, start + 35)
            ],
        )
    weak = [
        {"type": "Note", "name": f"weak {i}", "description": f"a zephyr among many other words {i}"}
        for i in range(30)
    ]
    memory.create_entities("s", weak)

    # A page of ten, asked of the store (a search asks for a pool of candidates wider
    # than the revised nodes here, memory/reads.py POOL).
    def page() -> list[Any]:
        return memory.store.search_read("zephyr", lambda _tx, hits, _stats: hits, limit=10)

    sent = recorder.during(page)
    asked = [s for s in sent if "db.index.fulltext.queryNodes" in s]
    assert len(asked) == 2  # the first answer was all revised nodes
    assert len(page()) == 10
    found = memory.search("zephyr", limit=10)
    assert len(found.hits) == 10
    assert all(h.name.startswith("weak ") for h in found.hits)
    # a page the first answer fills asks once, and counts the words' statistics with it
    assert len([s for s in recorder.during(memory.search, "among") if "queryNodes" in s]) == 1


def test_a_revision_the_create_statement_could_not_make_ends_the_write(
    traced: tuple[Memory, Recorder],
) -> None:
    """The create statement seeks a revised node by the element id this write read, and
    checks its id; it answers how many revisions it made, and a shortfall ends the write
    with nothing written (here the element id read is made to name another node)."""
    from kenning_encounter.errors import StoreError
    from kenning_encounter.memory.writes import new_id
    from kenning_encounter.store.neo4j.tx import Neo4jTx
    from kenning_encounter.store.records import EdgeRecord, NodeRecord

    memory, _ = traced
    memory.advance_encounter("s", "a revision gone astray")
    old, other = memory.create_entities(
        "s", [{"type": "Note", "name": "old"}, {"type": "Note", "name": "other"}]
    ).created
    before = memory.store.read(lambda tx: tx.clock())

    def work(tx: Neo4jTx) -> None:
        encounter = tx.open_encounter_of("s")
        assert encounter is not None
        tx.get_nodes([old.id, other.id])  # what a revising write reads first
        tx._element_ids[old.id] = tx._element_ids[other.id]  # pyright: ignore[reportPrivateUsage]
        record = NodeRecord(new_id("Note"), "Note", "old v2", "", tx.tick, tx.now)
        revises = [EdgeRecord(record.id, old.id, "SUPERSEDES", tx.tick, encounter.name, "why")]
        tx.create_nodes([record], encounter.name, revises=revises)

    with pytest.raises(StoreError, match="made 0 of its 1 revisions"):
        memory.store.write(work)  # pyright: ignore[reportArgumentType]
    assert memory.store.read(lambda tx: tx.clock()) == before
    assert memory.find_by_name("old").node.id == old.id
    assert all(h.name != "old v2" for h in memory.search("old v2").hits)


def _name_key(memory: Memory, name: str, change: str, **params: Any) -> None:
    """Rewrite the NameKey of ``name`` behind the store's back (``change`` sets ``k``)."""
    store: Any = memory.store
    with store._driver.session(database=store.database) as session:
        session.run(
            "MATCH (k:NameKey {_memory: 'default', name: $name}) " + change, name=name, **params
        ).consume()


@pytest.mark.parametrize("key", ["noting no element id", "noting another node's"])
def test_a_name_key_whose_element_id_fails_is_read_by_id(
    traced: tuple[Memory, Recorder], key: str
) -> None:
    """The first statement takes a head revised by name only when the element id its key
    noted still names the node of the key's id; a key written otherwise (an import, a
    rename) or an id the database gave to another node costs the read by id instead, and
    the right node is revised."""
    memory, recorder = traced
    memory.advance_encounter("s", "keys")
    old, other = memory.create_entities(
        "s", [{"type": "Note", "name": "kept"}, {"type": "Note", "name": "neighbour"}]
    ).created
    if key == "noting no element id":
        _name_key(memory, "kept", "REMOVE k.eid")
    else:
        _name_key(
            memory,
            "kept",
            "MATCH (n:Note {_memory: 'default', id: $other}) SET k.eid = elementId(n)",
            other=other.id,
        )
    # The statement takes no node by a key whose element id fails; the batch asks by id.
    start = memory.store.write(lambda tx: tx.begin_batch("s", ["kept"], [], ["kept"]))
    assert start.heads == {"kept": old.id} and set(start.nodes) == {old.id}
    revision = [{"type": "Note", "name": "kept", "supersedes": "kept", "revision_why": "v2"}]
    sent = recorder.during(memory.create_entities, "s", revision)
    assert len(sent) == 3  # the node was read by its id
    found = memory.find_by_name("kept")
    assert [h.id for h in found.history] == [old.id]
    assert memory.find_by_name("neighbour").node.id == other.id
    again = [{"type": "Note", "name": "kept", "supersedes": "kept", "revision_why": "v3"}]
    assert len(recorder.during(memory.create_entities, "s", again)) == 2  # noted anew


def test_a_neighbourhood_is_one_statement_whatever_its_types(
    traced: tuple[Memory, Recorder],
) -> None:
    # Infusion asks the neighbourhood of its concepts (one type), then of what it found
    # (several): both directions come in one statement either way, as the two it would
    # take a direction at a time give them.
    memory, recorder = traced
    memory.advance_encounter("s", "links")
    c0, c1, o0, h0, q0 = memory.create_entities(
        "s",
        [
            {"type": "Concept", "name": "backoff"},
            {"type": "Concept", "name": "jitter"},
            {"type": "Observation", "name": "storm at nine"},
            {"type": "Hypothesis", "name": "cron overlap"},
            {"type": "Question", "name": "why nine"},
        ],
    ).created
    memory.create_relations(
        "s",
        [
            {"source": c0.id, "type": "SUPPORTS", "target": c1.id},
            {"source": o0.id, "type": "ABOUT", "target": c0.id},
            {"source": c1.id, "type": "RAISES", "target": q0.id},
            {"source": o0.id, "type": "SUPPORTS", "target": h0.id},
        ],
    )
    rels = ["SUPPORTS", "ABOUT", "RAISES"]
    for ids in ([c0.id, c1.id], [c0.id, o0.id, q0.id]):
        store = memory.store
        sent = recorder.during(store.read, lambda tx, ids=ids: tx.neighbourhood(ids, rels))
        assert len([s for s in sent if "[r]" in s]) == 1, sent  # then the nodes it reached
        got = store.read(lambda tx, ids=ids: tx.neighbourhood(ids, rels))
        each = store.read(lambda tx, ids=ids: tx.edges_out_of(ids, rels) + tx.edges_into(ids, rels))
        assert sorted(map(repr, got.edges)) == sorted(map(repr, each))
        assert {n.id for n in got.nodes} == {e.source for e in each} | {e.target for e in each}


def test_the_tension_of_what_surfaced_is_one_statement(
    traced: tuple[Memory, Recorder],
) -> None:
    # Infusion asks the challenges of what it surfaced and their confirmations together.
    memory, recorder = traced
    memory.advance_encounter("s", "doubts")
    o0, h0, c0 = memory.create_entities(
        "s",
        [
            {"type": "Observation", "name": "storm at nine"},
            {"type": "Hypothesis", "name": "cron overlap"},
            {"type": "Concept", "name": "backoff"},
        ],
    ).created
    memory.create_relations("s", [{"source": o0.id, "type": "CHALLENGES", "target": h0.id}])
    memory.confirm_entities("s", [o0.id])
    ids = [o0.id, h0.id, c0.id]
    sent = recorder.during(memory.store.read, lambda tx: tx.tension_of(ids))
    asked = [s for s in sent if "CONFIRMED" in s or "CHALLENGES" in s]
    assert len(asked) == 1 and "CONFIRMED" in asked[0] and "CHALLENGES" in asked[0], sent
    challenges, confirmations = memory.store.read(lambda tx: tx.tension_of(ids))
    assert [(e.source, e.target) for e in challenges.edges] == [(o0.id, h0.id)] * 2  # both ends
    assert set(confirmations) == {o0.id}


def test_a_lookup_by_name_synchronises_in_its_first_statement(
    traced: tuple[Memory, Recorder],
) -> None:
    # find_by_name reads the names first and then the node: the node cache's
    # synchronisation comes with the names, not as a statement between them. With the
    # node and its session's director kept, the lookup is that and the chain's one look.
    memory, recorder = traced
    memory.advance_encounter("s", "names")
    memory.create_entities("s", [{"type": "Concept", "name": "café", "description": "x"}])
    # Not kept yet: the gate's question about the node found reads it whole, and the
    # lookup reads it from there (no question of its class alone, no second read).
    first = recorder.during(memory.find_by_name, "café")
    assert not [s for s in first if "classification IS NOT NULL" in s], first
    assert len([s for s in first if "WHERE n.id IN $ids OPTIONAL MATCH" in s]) == 1, first
    sent = recorder.during(memory.find_by_name, "cafe\u0301")  # asked in another form
    assert len(sent) == 2, sent
    assert "NameKey" in sent[0] and "_touched > $since" in sent[0]
    assert memory.find_by_name("cafe\u0301").node.name == "café"
    with pytest.raises(NotFound):  # a miss is still a miss
        memory.find_by_name("nothing of that name")


def test_a_status_a_relation_moves_is_taken_from_the_ends_it_read(
    traced: tuple[Memory, Recorder],
) -> None:
    # The write read both ends to check the relation: the move's "before" is that read,
    # not a node read of its own.
    memory, recorder = traced
    memory.advance_encounter("s", "evidence")
    memory.create_entities(
        "s", [{"type": "Observation", "name": "seen"}, {"type": "Hypothesis", "name": "guess"}]
    )
    sent = recorder.during(
        memory.create_relations, "s", [{"source": "seen", "type": "SUPPORTS", "target": "guess"}]
    )
    assert not [s for s in sent if "WHERE n.id IN $ids OPTIONAL MATCH (e:Encounter" in s], sent
    # the clock, ends and names; edges; the move with its record; the link
    assert len(sent) == 4, sent
    moved = [s for s in sent if "SET n.status" in s]
    assert len(moved) == 1 and "KenningPast" in moved[0], sent
    assert memory.find_by_name("guess").node.status == "supported"
