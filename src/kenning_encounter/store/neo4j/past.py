"""The Neo4j backend's statements for the record of the past (store/ops/past.py).

Bookkeeping nodes ``:KenningPast`` beside the memory: they carry ``_memory`` but not the
memory label, so read_cypher (scoped by that label) never sees them, and no statement of
the present reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, LiteralString, cast

from kenning_encounter.store.ops.past import PastText

SCHEMA: Final[list[tuple[str, LiteralString]]] = [
    (
        "kenning_past_memory_key",
        "CREATE CONSTRAINT kenning_past_memory_key IF NOT EXISTS "
        "FOR (p:KenningPast) REQUIRE (p._memory, p.key) IS UNIQUE",
    ),
    (
        "kenning_past_memory_node",
        "CREATE INDEX kenning_past_memory_node IF NOT EXISTS "
        "FOR (p:KenningPast) ON (p._memory, p.node)",
    ),
    (
        "kenning_past_memory_kind",
        "CREATE INDEX kenning_past_memory_kind IF NOT EXISTS "
        "FOR (p:KenningPast) ON (p._memory, p.kind)",
    ),
]

# A node of the past's row: who recorded it and what revised it. SUPERSEDES joins two
# versions of one type, so the reviser's type need not be named (one text for every type,
# and for the union of them all: queries.NODES_NAMED_EACH).
NODE_ROW_MATCH: Final = (
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "OPTIONAL MATCH (s:KenningMemory)-[:SUPERSEDES]->(n) "
)
NODE_ROW_COLUMNS: Final = "properties(n), e.id, e.locus, s.id"
_NODE_ROW: Final = NODE_ROW_MATCH + "RETURN " + NODE_ROW_COLUMNS

PAST_TEXT: Final = PastText(
    statuses_put=(
        "UNWIND $rows AS r CREATE (p:KenningPast {_memory: $memory, key: r.key, "
        "kind: 'status', node: r.node, tick: $tick, ended: $tick, seq: r.seq, "
        "moved_from: r.before, moved_to: r.after, at: $at})"
    ),
    edges_put=(
        "UNWIND $rows AS r MERGE (p:KenningPast {_memory: $memory, key: r.key}) "
        "SET p.kind = 'edge', p.source = r.source, p.target = r.target, p.rel = r.rel, "
        "p.tick = r.tick, p.ended = $ended, p.at = $at, p.encounter = r.encounter, p.why = r.why"
    ),
    nodes_put=(
        "UNWIND $rows AS r MERGE (p:KenningPast {_memory: $memory, key: r.key}) "
        "SET p.kind = 'node', p.node = r.node, p.name = r.name, p.tick = r.tick, "
        "p.ended = $ended, p.at = $at, p.body = r.body"
    ),
    drop_about=(
        "MATCH (p:KenningPast {_memory: $memory}) "
        "WHERE p.node = $id OR p.source = $id OR p.target = $id DELETE p"
    ),
    about_many=(
        "MATCH (p:KenningPast {_memory: $memory}) "
        "WHERE p.node IN $ids OR p.source IN $ids OR p.target IN $ids "
        "RETURN p.kind, p.encounter, p.body"
    ),
    linked_gone=(
        "MATCH (e:KenningPast {_memory: $memory, kind: 'edge'}) "
        "WHERE e.source = $id OR e.target = $id "
        "MATCH (n:KenningPast {_memory: $memory, kind: 'node'}) "
        "WHERE n.node IN [e.source, e.target] RETURN n.node"
    ),
    moves_after=(
        "MATCH (p:KenningPast {_memory: $memory}) WHERE p.node IN $ids AND p.kind = 'status' "
        "AND p.tick > $tick RETURN p.node, p.tick, p.seq, p.moved_from, p.moved_to"
    ),
    edges_at=(
        "MATCH (p:KenningPast {_memory: $memory, kind: 'edge'}) "
        "WHERE p.tick <= $tick AND p.ended > $tick "
        "RETURN p.source, p.target, p.rel, p.tick, p.encounter, p.why, p.ended"
    ),
    nodes_at=(
        "MATCH (p:KenningPast {_memory: $memory, kind: 'node'}) "
        "WHERE p.tick <= $tick AND p.ended > $tick RETURN p.body, p.ended"
    ),
    nodes_named="MATCH (n:{label}:KenningMemory) WHERE n.name = $name " + _NODE_ROW,
    nodes_upto="MATCH (n:{label}:KenningMemory) WHERE n.tick <= $tick " + _NODE_ROW,
    tick_at_steps=(
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.opened_at <= $at THEN e.opened_tick END) AS latest, "
        "min(CASE WHEN e.opened_at > $at THEN e.opened_tick END) AS first_after",
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.sealed_at <= $at THEN e.sealed_tick END) AS latest, "
        "min(CASE WHEN e.sealed_at > $at THEN e.sealed_tick END) AS first_after",
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.dissolved_at <= $at THEN e.dissolved_tick END) AS latest, "
        "min(CASE WHEN e.dissolved_at > $at THEN e.dissolved_tick END) AS first_after",
        "MATCH (l:Locus:KenningMemory) "
        "RETURN max(CASE WHEN l.created_at <= $at THEN l.tick END) AS latest, "
        "min(CASE WHEN l.created_at > $at THEN l.tick END) AS first_after",
        "MATCH (p:KenningPast {_memory: $memory}) "
        "RETURN max(CASE WHEN p.at <= $at THEN p.ended END) AS latest, "
        "min(CASE WHEN p.at > $at THEN p.ended END) AS first_after",
    ),
    tick_at_nodes=(
        "MATCH (n:{label}:KenningMemory) "
        "RETURN max(CASE WHEN n.created_at <= $at THEN n.tick END) AS latest, "
        "min(CASE WHEN n.created_at > $at THEN n.tick END) AS first_after"
    ),
    tick_at_edges=(
        "MATCH (:KenningMemory)-[r]->(:KenningMemory) WHERE type(r) IN $rels "
        "RETURN max(CASE WHEN r.created_at <= $at THEN r.tick END) AS latest, "
        "min(CASE WHEN r.created_at > $at THEN r.tick END) AS first_after"
    ),
    stamp_at_steps=(
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.opened_tick <= $tick THEN e.opened_at END) AS stamp",
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.sealed_tick <= $tick THEN e.sealed_at END) AS stamp",
        "MATCH (e:Encounter:KenningMemory) "
        "RETURN max(CASE WHEN e.dissolved_tick <= $tick THEN e.dissolved_at END) AS stamp",
        "MATCH (l:Locus:KenningMemory) "
        "RETURN max(CASE WHEN l.tick <= $tick THEN l.created_at END) AS stamp",
        "MATCH (p:KenningPast {_memory: $memory}) "
        "RETURN max(CASE WHEN p.ended <= $tick THEN p.at END) AS stamp",
    ),
    stamp_at_nodes=(
        "MATCH (n:{label}:KenningMemory) "
        "RETURN max(CASE WHEN n.tick <= $tick THEN n.created_at END) AS stamp"
    ),
    stamp_at_edges=(
        "MATCH (:KenningMemory)-[r]->(:KenningMemory) WHERE type(r) IN $rels "
        "RETURN max(CASE WHEN r.tick <= $tick THEN r.created_at END) AS stamp"
    ),
)


# What was deleted since a tick and stood at it, nodes and relations in one trip.
ENDED_AT: Final = (
    "CALL () { MATCH (p:KenningPast {_memory: $memory, kind: 'node'}) "
    "WHERE p.tick <= $tick AND p.ended > $tick RETURN collect(p.body) AS nodes } "
    "CALL () { MATCH (p:KenningPast {_memory: $memory, kind: 'edge'}) "
    "WHERE p.tick <= $tick AND p.ended > $tick "
    "RETURN collect([p.source, p.target, p.rel, p.tick, p.encounter, p.why]) AS edges } "
    "RETURN nodes, edges"
)


# Backfill for a memory made before the record existed, once (a Meta flag says it ran):
# a derived status is taken to have moved at the first relation of the kind that gives
# it, as the embedded store's migration does (store/embedded/past.py).
BACKFILL_DONE: Final = (
    "OPTIONAL MATCH (m:Meta {_memory: $memory, key: 'past_backfill'}) RETURN m IS NOT NULL"
)
BACKFILL_MARK: Final = "MERGE (m:Meta {_memory: $memory, key: 'past_backfill'}) SET m.ival = 1"
_MOVE: Final = (
    "MERGE (p:KenningPast {{_memory: $memory, key: 's:' + h.id + ':' + toString(t) + ':{seq}'}}) "
    "ON CREATE SET p.kind = 'status', p.node = h.id, p.tick = t, p.ended = t, p.seq = {seq}, "
    "p.moved_from = '{was}', p.moved_to = '{now}'"
)
BACKFILL: Final[tuple[str, ...]] = (
    "MATCH (:KenningMemory)-[r:RESOLVES]->(h:Question:KenningMemory) "
    "WHERE h.status = 'resolved' WITH h, min(r.tick) AS t "
    + _MOVE.format(seq=0, was="open", now="resolved"),
    "MATCH (:KenningMemory)-[r:SUPPORTS]->(h:Hypothesis:KenningMemory) "
    "WHERE h.status = 'supported' WITH h, min(r.tick) AS t "
    + _MOVE.format(seq=0, was="untested", now="supported"),
    "MATCH (:KenningMemory)-[r:CHALLENGES]->(h:Hypothesis:KenningMemory) "
    "WHERE h.status = 'challenged' WITH h, min(r.tick) AS t "
    + _MOVE.format(seq=1, was="untested", now="challenged"),
    "MATCH (:KenningMemory)-[s:SUPPORTS]->(h:Hypothesis:KenningMemory)"
    "<-[c:CHALLENGES]-(:KenningMemory) WHERE h.status = 'challenged' "
    "WITH h, min(s.tick) AS t, min(c.tick) AS ct WHERE t < ct "
    + _MOVE.format(seq=0, was="untested", now="supported")
    + " WITH h, ct MATCH (p:KenningPast {_memory: $memory}) "
    "WHERE p.key = 's:' + h.id + ':' + toString(ct) + ':1' SET p.moved_from = 'supported'",
)


def backfill(run: Callable[[LiteralString], list[list[Any]]]) -> bool:
    """Run the backfill through ``run`` (one write transaction) unless it ran before;
    whether it ran now."""
    done = run(BACKFILL_DONE)
    if done and done[0][0]:
        return False
    for statement in BACKFILL:
        run(cast(LiteralString, statement))  # built from the literals above only
    run(BACKFILL_MARK)
    return True
