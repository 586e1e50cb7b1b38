"""The embedded backend's statements for the record of the past (store/ops/past.py).

One table, ``Past``, bookkeeping beside the memory like ``Meta``: read_cypher never sees
it (sandbox.INTERNAL_TABLES), and no statement of the present reads it.
"""

from __future__ import annotations

from typing import Final, LiteralString, cast

from kenning_encounter.store.ops.past import PastText
from kenning_encounter.vocabulary import AUTHORED_RELATION_TYPES

CREATE_TABLE: Final = (
    "CREATE NODE TABLE Past(key STRING, kind STRING, node STRING, name STRING, "
    "source STRING, target STRING, rel STRING, tick INT64, ended INT64, seq INT64, "
    "at STRING, moved_from STRING, moved_to STRING, encounter STRING, why STRING, "
    "body STRING, PRIMARY KEY(key))"
)

# Backfill for a store made before the record existed: a derived status is taken to
# have moved at the first relation of the kind that gives it (the graph still holds
# those relations and their ticks). Moves undone since, and deletions, left nothing.
_MOVE: Final = (
    "MERGE (p:Past {{key: 's:' + h.id + ':' + CAST(t AS STRING) + ':{seq}'}}) "
    "SET p.kind = 'status', p.node = h.id, p.tick = t, p.ended = t, p.seq = {seq}, "
    "p.moved_from = '{was}', p.moved_to = '{now}'"
)
BACKFILL: Final[tuple[str, ...]] = (
    "MATCH ()-[r:RESOLVES]->(h:Question) WHERE h.status = 'resolved' WITH h, min(r.tick) AS t "
    + _MOVE.format(seq=0, was="open", now="resolved"),
    "MATCH ()-[r:SUPPORTS]->(h:Hypothesis) WHERE h.status = 'supported' "
    "WITH h, min(r.tick) AS t " + _MOVE.format(seq=0, was="untested", now="supported"),
    "MATCH ()-[r:CHALLENGES]->(h:Hypothesis) WHERE h.status = 'challenged' "
    "WITH h, min(r.tick) AS t " + _MOVE.format(seq=1, was="untested", now="challenged"),
    # Support that came before the challenge: supported first, then challenged.
    "MATCH ()-[s:SUPPORTS]->(h:Hypothesis)<-[c:CHALLENGES]-() WHERE h.status = 'challenged' "
    "WITH h, min(s.tick) AS t, min(c.tick) AS ct WHERE t < ct "
    + _MOVE.format(seq=0, was="untested", now="supported"),
    "MATCH ()-[s:SUPPORTS]->(h:Hypothesis)<-[c:CHALLENGES]-() WHERE h.status = 'challenged' "
    "WITH h, min(s.tick) AS st, min(c.tick) AS t WHERE st < t "
    "MATCH (p:Past) WHERE p.key = 's:' + h.id + ':' + CAST(t AS STRING) + ':1' "
    "SET p.moved_from = 'supported'",
)

# A write's moves: their keys carry its own tick, so none is held yet, and an unwound
# MERGE would scan the whole table (tests/unit/test_embedded_columns.py).
STATUSES_PUT: Final = (
    "UNWIND $rows AS r CREATE (p:Past {key: r.key, kind: 'status', node: r.node, "
    "tick: $tick, ended: $tick, seq: r.seq, moved_from: r.before, moved_to: r.after, at: $at})"
)
# Deleted edges and nodes, as STATUSES_PUT: an edge's key carries this write's tick, a
# node's its id (a node is deleted once), so none is held yet.
EDGES_PUT: Final = (
    "UNWIND $rows AS r CREATE (p:Past {key: r.key, kind: 'edge', source: r.source, "
    "target: r.target, rel: r.rel, tick: r.tick, ended: $ended, at: $at, "
    "encounter: r.encounter, why: r.why})"
)
NODES_PUT: Final = (
    "UNWIND $rows AS r CREATE (p:Past {key: r.key, kind: 'node', node: r.node, name: r.name, "
    "tick: r.tick, ended: $ended, at: $at, body: r.body})"
)
DROP_ABOUT: Final = "MATCH (p:Past) WHERE p.node = $id OR p.source = $id OR p.target = $id DELETE p"
ABOUT_MANY: Final = (
    "MATCH (p:Past) WHERE p.node IN $ids OR p.source IN $ids OR p.target IN $ids "
    "RETURN p.kind, p.encounter, p.body"
)
LINKED_GONE: Final = (
    "MATCH (e:Past), (n:Past) WHERE e.kind = 'edge' AND (e.source = $id OR e.target = $id) "
    "AND n.kind = 'node' AND (n.node = e.source OR n.node = e.target) RETURN n.node"
)
MOVES_AFTER: Final = (
    "MATCH (p:Past) WHERE p.kind = 'status' AND p.node IN $ids AND p.tick > $tick "
    "RETURN p.node, p.tick, p.seq, p.moved_from, p.moved_to"
)
EDGES_AT: Final = (
    "MATCH (p:Past) WHERE p.kind = 'edge' AND p.tick <= $tick AND p.ended > $tick "
    "RETURN p.source, p.target, p.rel, p.tick, p.encounter, p.why, p.ended"
)
NODES_AT: Final = (
    "MATCH (p:Past) WHERE p.kind = 'node' AND p.tick <= $tick AND p.ended > $tick "
    "RETURN p.body, p.ended"
)
NODES_NAMED: Final = "MATCH (n:{label}) WHERE n.name = $name RETURN {n}"
NODES_UPTO: Final = "MATCH (n:{label}) WHERE n.tick <= $tick RETURN {n}"
TICK_AT_STEPS: Final[tuple[LiteralString, ...]] = (
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.opened_at <= $at THEN e.opened_tick END), "
    "min(CASE WHEN e.opened_at > $at THEN e.opened_tick END)",
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.sealed_at <= $at THEN e.sealed_tick END), "
    "min(CASE WHEN e.sealed_at > $at THEN e.sealed_tick END)",
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.dissolved_at <= $at THEN e.dissolved_tick END), "
    "min(CASE WHEN e.dissolved_at > $at THEN e.dissolved_tick END)",
    "MATCH (l:Locus) RETURN max(CASE WHEN l.created_at <= $at THEN l.tick END), "
    "min(CASE WHEN l.created_at > $at THEN l.tick END)",
    "MATCH (p:Past) RETURN max(CASE WHEN p.at <= $at THEN p.ended END), "
    "min(CASE WHEN p.at > $at THEN p.ended END)",
)
TICK_AT_NODES: Final = (
    "MATCH (n:{label}) RETURN max(CASE WHEN n.created_at <= $at THEN n.tick END), "
    "min(CASE WHEN n.created_at > $at THEN n.tick END)"
)
# The authored types in the pattern: the engine then scans their tables alone, not every
# relation (a node's RECORDED among them) filtered by type (at 10k nodes 10-12 ms -> 5.5).
TICK_AT_EDGES: Final = cast(
    LiteralString,
    f"MATCH ()-[r:{'|'.join(AUTHORED_RELATION_TYPES)}]->() RETURN "
    "max(CASE WHEN r.created_at <= $at THEN r.tick END), "
    "min(CASE WHEN r.created_at > $at THEN r.tick END)",
)

STAMP_AT_STEPS: Final[tuple[LiteralString, ...]] = (
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.opened_tick <= $tick THEN e.opened_at END)",
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.sealed_tick <= $tick THEN e.sealed_at END)",
    "MATCH (e:Encounter) RETURN max(CASE WHEN e.dissolved_tick <= $tick THEN e.dissolved_at END)",
    "MATCH (l:Locus) RETURN max(CASE WHEN l.tick <= $tick THEN l.created_at END)",
    "MATCH (p:Past) RETURN max(CASE WHEN p.ended <= $tick THEN p.at END)",
)
STAMP_AT_NODES: Final = (
    "MATCH (n:{label}) RETURN max(CASE WHEN n.tick <= $tick THEN n.created_at END)"
)
STAMP_AT_EDGES: Final = cast(
    LiteralString,
    f"MATCH ()-[r:{'|'.join(AUTHORED_RELATION_TYPES)}]->() RETURN "
    "max(CASE WHEN r.tick <= $tick THEN r.created_at END)",
)

PAST_TEXT: Final = PastText(
    statuses_put=STATUSES_PUT,
    edges_put=EDGES_PUT,
    nodes_put=NODES_PUT,
    drop_about=DROP_ABOUT,
    linked_gone=LINKED_GONE,
    about_many=ABOUT_MANY,
    moves_after=MOVES_AFTER,
    edges_at=EDGES_AT,
    nodes_at=NODES_AT,
    nodes_named=NODES_NAMED,
    nodes_upto=NODES_UPTO,
    tick_at_steps=TICK_AT_STEPS,
    tick_at_nodes=TICK_AT_NODES,
    tick_at_edges=TICK_AT_EDGES,
    stamp_at_steps=STAMP_AT_STEPS,
    stamp_at_nodes=STAMP_AT_NODES,
    stamp_at_edges=STAMP_AT_EDGES,
)
