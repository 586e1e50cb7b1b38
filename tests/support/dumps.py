"""A memory holding every kind of thing a dump carries, and a fingerprint of all of it."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from typing import Any

from kenning_encounter.errors import NotFound
from kenning_encounter.memory import operator, spine
from kenning_encounter.memory.activation import Activation, WorkTime, last_use
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.port import GraphStore, ReadTx
from kenning_encounter.vocabulary import CLASSIFICATIONS

A, B, C = "session-a", "session-b", "session-c"


def seed(store: GraphStore) -> None:
    """Three loci; sealed, dissolved and open encounters; revisions with reasons, a
    renaming one, a Component revised on its source; statuses moved by relations; an
    agent's deletion and an operator's (a tombstone); the gate's marks (store/uses.py)."""
    m = Memory(store, granted=CLASSIFICATIONS)  # it writes a classified note, and links it
    m.advance_encounter(A, "first pass")
    m.create_entities(
        A,
        [
            {
                "type": "Observation",
                "name": "o1",
                "description": "the cache misses",
                "t_observed": "2024-01-02T03:04:05Z",
            },
            {"type": "Concept", "name": "c1", "description": "caching in layers"},
            {"type": "Question", "name": "q1", "description": "why the misses?"},
            {"type": "Hypothesis", "name": "h1", "description": "eviction too eager"},
            {
                "type": "Component",
                "name": "cmp1",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": "cache.py",
            },
            {
                "type": "Citation",
                "name": "cit1",
                "kind": "web",
                "uri": "https://example.org/x",
                "snapshot": "2024-01-01",
            },
            {"type": "Note", "name": "n1", "description": "plan: measure"},
        ],
    )
    m.create_relations(
        A,
        [
            {"source": "o1", "type": "SUPPORTS", "target": "h1"},
            {"source": "cit1", "type": "RESOLVES", "target": "q1"},
            {"source": "o1", "type": "OBSERVED_AT", "target": "cmp1"},
            {"source": "o1", "type": "GROUNDS", "target": "c1"},
        ],
    )
    m.close_encounter(A, "first pass done")
    m.advance_encounter(B, "second look")
    m.create_entities(
        B,
        [
            {"type": "Hypothesis", "name": "h2", "description": "the key is too wide"},
            {"type": "Question", "name": "q2", "description": "which keys collide?"},
            {"type": "Observation", "name": "o2", "description": "collisions seen"},
            {
                "type": "Concept",
                "name": "c1",
                "description": "caching in two layers",
                "supersedes": "c1",
                "revision_why": "sharper",
            },
            {
                "type": "Component",
                "name": "cmp1",
                "description": "the cache module",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": "cache.py",
                "supersedes": "cmp1",
                "revision_why": "described",
            },
            {"type": "Note", "name": "scratch"},
        ],
    )
    m.create_relations(B, [{"source": "o2", "type": "CHALLENGES", "target": "h2"}])
    m.delete_entities(B, ["scratch"])
    later = datetime.now(UTC) + timedelta(days=1)
    assert spine.dissolve_idle(store, 60.0, now=later)  # B's encounter: its session went quiet
    m.advance_encounter(A, "third pass")
    m.create_entities(
        A,
        [
            {"type": "Observation", "name": "private", "description": "an address"},
            {"type": "Observation", "name": "o4", "description": "it holds"},
        ],
    )
    m.create_relations(A, [{"source": "o4", "type": "INFORMS", "target": "c1"}])
    m.find_by_name("o1", session_id=A)  # a consultation from an encounter sealed since
    m.close_encounter(A, "third pass done")
    operator.forget(store, ["private"])
    _seed_marks(store, m)
    m.advance_encounter(C, "still open", director="Ada", director_key="ada@example.org")
    m.create_entities(C, [{"type": "Note", "name": "n3", "description": "draft"}])
    m.create_entities(
        C,
        [
            {
                "type": "Note",
                "name": "n3 final",
                "supersedes": "n3",
                "revision_why": "renamed when done",
            }
        ],
    )
    _seed_identity_and_past(m)


def _seed_identity_and_past(m: Memory) -> None:
    """C's open encounter: world time, classification and retention on a node; referent
    claims revised; confirmations; a status moved and moved back by a relation deleted;
    a node an agent deleted with its relation (both kept in the record of the past)."""
    m.create_entities(
        C,
        [
            {"type": "Concept", "name": "layered caching", "description": "caches stacked"},
            {"type": "Concept", "name": "cache tiers", "description": "tiers of caches"},
            {
                "type": "Observation",
                "name": "o5",
                "description": "the tier hit rate",
                "valid_from": "2024-02-01T00:00:00Z",
                "valid_until": "2024-03-01T00:00:00Z",
                "classification": "pii",
                "retention": "P30D",
            },
            {"type": "Hypothesis", "name": "h3", "description": "tiers help the cache"},
            {"type": "Note", "name": "oops", "description": "a slip about the cache"},
        ],
    )
    m.claim_referents(
        C,
        [
            {"source": "c1", "target": "layered caching", "resolution": "proposed"},
            {"source": "c1", "target": "cache tiers", "resolution": "distinct", "why": "no"},
        ],
    )
    m.claim_referents(
        C, [{"source": "c1", "target": "layered caching", "resolution": "confirmed", "why": "yes"}]
    )
    m.confirm_entities(C, ["o4", "h1"], why="re-read")
    m.confirm_entities(C, ["o4"])
    m.create_relations(
        C,
        [
            {"source": "o5", "type": "SUPPORTS", "target": "h3"},
            {"source": "oops", "type": "INFORMS", "target": "c1"},
        ],
    )
    m.delete_relations(C, [{"source": "o5", "type": "SUPPORTS", "target": "h3"}])
    m.delete_entities(C, ["oops"])
    _seed_standing(m)


def _seed_standing(m: Memory) -> None:
    """Consultations (one read twice: one edge, its latest tick), a pin in force with its
    reason, a pin undone, and a pin on a classified node."""
    m.find_by_name("h1", session_id=C)
    m.trace_provenance("o4", depth=2, session_id=C)
    m.find_by_name("h1", session_id=C)
    m.pin_entities(C, ["c1"], why="the layered design")
    m.pin_entities(C, ["h3", "o5"])
    m.pin_entities(C, ["h3"], pinned=False, why="tested")


def _seed_marks(store: GraphStore, m: Memory) -> None:
    """A's fourth pass: a phi observation's links are the latest uses of the Component (a
    node's ``used_marks``) and of a concept an agent deletes then (the record of the past
    keeps its marks); a secret note an operator erases (``tombstones_marked``)."""
    m.advance_encounter(A, "fourth pass")
    m.create_entities(
        A,
        [
            {
                "type": "Observation",
                "name": "o6",
                "description": "the ward's cache",
                "classification": "phi",
            },
            {"type": "Concept", "name": "c6", "description": "ward caching"},
            {
                "type": "Note",
                "name": "n8",
                "description": "a ward note",
                "classification": "secret",
            },
        ],
    )
    m.create_relations(
        A,
        [
            {"source": "o6", "type": "OBSERVED_AT", "target": "cmp1"},
            {"source": "o6", "type": "ABOUT", "target": "c6"},
        ],
    )
    m.delete_entities(A, ["c6"])
    m.close_encounter(A, "fourth pass done")
    operator.forget(store, ["n8"])


# read_cypher in each dialect: what the port's reads do not return (edge stamps, the
# ticks of spine, RECORDED, DIRECTED_BY and CONFIRMED edges, each locus's tick and time,
# the persons, each confirmation's reason).
_EDGE_STAMPS = {
    "embedded": "MATCH (a)-[r]->(b) RETURN a.id, label(r), b.id, r.tick, r.created_at",
    "neo4j": "MATCH (a)-[r]->(b) RETURN a.id, type(r), b.id, r.tick, r.created_at",
}
_LOCI = "MATCH (l:Locus) RETURN l.id, l.tick, l.created_at"
_PERSONS = "MATCH (p:Person) RETURN p.id, p.name, p.director_key, p.tick, p.created_at"
_CONFIRMED = "MATCH (e:Encounter)-[r:CONFIRMED]->(n) RETURN e.id, n.id, r.tick, r.why"
_PINNED = "MATCH (e:Encounter)-[r:PINNED]->(n) RETURN e.id, n.id, r.tick, r.why, r.state"
_CONSULTED = "MATCH (e:Encounter)-[r:CONSULTED]->(n) RETURN e.id, n.id, r.tick, r.created_at"


def _cypher(store: GraphStore, query: str) -> list[tuple[Any, ...]]:
    result = store.read_cypher(query, row_cap=100_000, char_cap=50_000_000, timeout_s=60)
    assert not result.truncated
    return sorted(tuple(r) for r in result.rows)


def _canon(record: Any) -> str:
    fields = asdict(record)
    fields.pop("terms", None)  # a node's tokens as one store keeps them: derived, not data
    return json.dumps(fields, sort_keys=True)


def _past(tx: ReadTx, live: list[str], times: list[str]) -> dict[str, Any]:
    """The record of the past as the as_of reads see it: what stood at every tick, every
    status move, and the tick each stored time names."""
    clock = tx.clock()
    edges = {(t, _canon(e)) for t in range(clock + 1) for e in tx.ended_edges_at(t)}
    gone = {t: tx.ended_nodes_at(t) for t in range(clock + 1)}
    ids = sorted({*live, *(n.id for nodes in gone.values() for n in nodes)})
    return {
        "ended_edges": sorted(edges),
        "ended_nodes": sorted((t, _canon(n)) for t, nodes in gone.items() for n in nodes),
        "moves": [_canon(m) for m in tx.moves_after(ids, 0)],
        "ticks_at": {at: tx.tick_at(at) for at in times},
    }


def fingerprint(store: GraphStore) -> dict[str, Any]:
    def work(tx: ReadTx) -> dict[str, Any]:
        graph = tx.authored_graph()
        encounters = tx.encounters(limit=1_000_000)
        names = sorted({n.name for n in graph.nodes})
        components = sorted(
            (str(n.props["source_kind"]), str(n.props["source_label"]), str(n.props["source_key"]))
            for n in graph.nodes
            if n.type == "Component"
        )
        live = [n.id for n in graph.nodes]
        times = sorted(
            {n.created_at for n in graph.nodes}
            | {t for e in encounters for t in (e.opened_at, e.sealed_at, e.last_activity_at) if t}
        )
        return {
            "standing": sorted((n.id, n.used_at, n.pinned) for n in graph.nodes),
            "clock": tx.clock(),
            "nodes": sorted(_canon(n) for n in graph.nodes),
            "edges": sorted(_canon(e) for e in graph.edges),
            "encounters": sorted(_canon(e) for e in encounters),
            "loci": tx.loci(),
            "spine": sorted(tx.spine()),
            "members": tx.encounter_members([e.name for e in encounters]),
            "names": tx.head_ids_by_names(names),
            "sources": {t: tx.component_id_by_source(*t) for t in components},
            "directors": {k: _canon(p) for k, p in tx.directors_of(tx.loci()).items()},
            "claims": [_canon(c) for c in tx.claims_of(live)],
            "confirmations": {k: _canon(c) for k, c in tx.confirmations_of(live).items()},
            "past": _past(tx, live, times),
        }

    found = store.read(work)
    found["stamps"] = _cypher(store, _EDGE_STAMPS[store.backend])
    found["loci_stamps"] = _cypher(store, _LOCI)
    found["persons"] = _cypher(store, _PERSONS)
    found["confirmed"] = _cypher(store, _CONFIRMED)
    found["pinned"] = _cypher(store, _PINNED)
    found["consulted"] = _cypher(store, _CONSULTED)
    return found


def standing(store: GraphStore) -> dict[str, tuple[str, str, str | None]]:
    """Each node's tier (40 days after the memory's last write: a pin keeps a node hot
    while the rest are warm), last use and pin, as the reads see them, in the working time
    the store's encounters give."""
    nodes = store.read(lambda tx: tx.authored_graph().nodes)
    latest = max(_instant(last_use(n)) for n in nodes)
    now = latest + timedelta(days=40)
    # A 30-day half-life, and a pause that ages the memory whole up to 60 days.
    policy = Activation(30.0, pause_ages_days=60.0)
    present = store.read(lambda tx: WorkTime().present(tx, policy, now))
    return {n.id: (policy.tier(n, present), last_use(n), n.pinned) for n in nodes}


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def as_of_answers(store: GraphStore) -> dict[int, Any]:
    """search, find_by_name and trace_provenance at every past tick, as a client sees them."""
    memory = Memory(store, granted=("pii",))
    clock = store.read(lambda tx: tx.clock())
    names = ("c1", "h1", "h3", "cmp1", "n3", "n3 final", "oops", "o5", "scratch")
    answers: dict[int, Any] = {}
    # Every fourth tick, and each of the last ten: the seed's deletions, its moved and
    # restored status, its claims (a read per tick of all of them takes minutes on Neo4j).
    for tick in sorted({*range(1, clock + 1, 4), *range(max(1, clock - 9), clock + 1)}):
        hits = memory.search("cache", limit=100, include_superseded=True, as_of=tick).hits
        found: dict[str, Any] = {}
        for name in names:
            try:
                looked = memory.find_by_name(name, as_of=tick)
                traced = memory.trace_provenance(name, depth=3, as_of=tick)
            except NotFound:
                continue
            found[name] = (looked.model_dump(), traced.model_dump())
        # By id: an index that saw a deletion scores a little differently from one rebuilt.
        answers[tick] = (sorted((h.id, h.status, h.name) for h in hits), found)
    return answers
