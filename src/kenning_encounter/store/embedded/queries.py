"""Every query the embedded backend runs, in one place.

Values are always parameters. Labels and relation types cannot be, so
templates carry ``{label}``-style slots that only ``render`` fills, and only
with names from the closed vocabulary.
"""

from __future__ import annotations

import functools
import sys
from dataclasses import dataclass
from typing import Final, LiteralString, cast

from kenning_encounter.store.ops.activation import ActivationText
from kenning_encounter.store.ops.identity import IdentityText
from kenning_encounter.store.ops.text import (
    LoadText,
    NodeText,
    RelationText,
    SpineText,
    text_of,
)
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, NODE_TYPES, RELATION_TYPES

_ALLOWED_NAMES: Final = frozenset(NODE_TYPES) | frozenset(RELATION_TYPES)


def render(template: str, **names: str) -> LiteralString:
    """A template's slots filled: vocabulary names, and for an authored ``label`` the
    columns of a whole node (``{n}``, ``{p}``, ``{q}``: that variable's, ``stored_columns``
    order), which the engine hands over about six times quicker than the node itself."""
    for value in names.values():
        if value not in _ALLOWED_NAMES:
            raise ValueError(f"not a vocabulary name: {value!r}")
    whole = _WHOLE.get(names.get("label", ""), {})
    # Safe to treat as a literal: every slot came from the closed vocabulary.
    return cast(LiteralString, template.format(**whole, **names))


# --- meta -------------------------------------------------------------------
SHOW_TABLES: Final = "CALL show_tables() RETURN name"
META_GET: Final = "MATCH (m:Meta {key: $key}) RETURN m.ival"
META_GET_MANY: Final = "MATCH (m:Meta) WHERE m.key IN $keys RETURN m.key, m.ival"
META_SET: Final = "MATCH (m:Meta {key: $key}) SET m.ival = $value"
# The key is a parameter although it never varies: the engine keeps the plan of a
# statement sent with parameters, and plans one sent without anew each time (a
# millisecond, here at every write).
CLOCK_NEXT: Final = "MATCH (m:Meta {key: $key}) SET m.ival = m.ival + 1 RETURN m.ival"

# --- registries (uniqueness by primary key) ---------------------------------
NAME_GET: Final = "MATCH (k:NameKey {name: $name}) RETURN k.id"
NAMES_GET: Final = "UNWIND $names AS nm MATCH (k:NameKey {name: nm}) RETURN k.name, k.id"


@dataclass(frozen=True)
class KeyText:
    """A key table's writes (tx.py ``_put_keys``): which keys are held ($keys), new keys
    made ($keys, $ids: one list per column, as nodes_create binds them), held ones
    pointed elsewhere ($rows of key, id). Never an unwound MERGE: it scans the table."""

    get: LiteralString
    create: LiteralString
    move: LiteralString


NAME_KEYS: Final = KeyText(
    "UNWIND $keys AS k MATCH (n:NameKey {name: k}) RETURN n.name",
    "UNWIND range(1, size($keys)) AS i CREATE (:NameKey {name: $keys[i], id: $ids[i]})",
    "UNWIND $rows AS r MATCH (k:NameKey {name: r.key}) SET k.id = r.id",
)
SOURCE_KEYS: Final = KeyText(
    "UNWIND $keys AS k MATCH (s:SourceKey {key: k}) RETURN s.key",
    "UNWIND range(1, size($keys)) AS i CREATE (:SourceKey {key: $keys[i], id: $ids[i]})",
    "UNWIND $rows AS r MATCH (s:SourceKey {key: r.key}) SET s.id = r.id",
)
# One key, set or moved: a MERGE of plain parameters seeks (unwound, it scans).
NAME_SET: Final = "MERGE (k:NameKey {name: $name}) SET k.id = $id"
NAMES_DROP: Final = "UNWIND $rows AS r MATCH (k:NameKey {name: r.name}) WHERE k.id = r.id DELETE k"
SOURCE_GET: Final = "MATCH (k:SourceKey {key: $key}) RETURN k.id"
SOURCE_SET: Final = "MERGE (k:SourceKey {key: $key}) SET k.id = $id"
SOURCE_DROP: Final = "MATCH (k:SourceKey {key: $key}) WHERE k.id = $id DELETE k"

# --- authored nodes ---------------------------------------------------------
NODES_GET: Final = "UNWIND $ids AS i MATCH (n:{label} {{id: i}}) RETURN {n}"
NODES_ALL: Final = "MATCH (n:{label}) RETURN {n}"
# A type's nodes a page at a time, by the engine's own row offsets: one result holding a
# million nodes whole did not fit the buffer pool (tx.py ``all_nodes``).
NODES_LAST_OFFSET: Final = "MATCH (n:{label}) RETURN max(offset(id(n)))"
# A page of a type's rows by offset; its last column is the row's offset.
NODES_PAGE: Final = (
    "MATCH (n:{label}) WHERE offset(id(n)) >= $lo AND offset(id(n)) < $hi RETURN {n}, offset(id(n))"
)
NODES_OUTLINE_PAGE: Final = (
    "MATCH (n:{label}) WHERE offset(id(n)) >= $lo AND offset(id(n)) < $hi RETURN {o}, offset(id(n))"
)
# The newest heads, as ids (their nodes come from the node read): ordering whole rows made
# the engine carry every column of every head through the sort, 5 ms a type at 100k
# nodes against about 1 ms for the ids.
HEADS_BY_STATUS: Final = (
    "MATCH (n:{label}) WHERE n.status IN $statuses AND n.superseded_by IS NULL "
    "RETURN n.id ORDER BY n.tick DESC, n.ord DESC LIMIT $limit"
)
RECENT_HEADS: Final = (
    "MATCH (n:{label}) WHERE n.superseded_by IS NULL "
    "RETURN n.id ORDER BY n.tick DESC, n.ord DESC LIMIT $limit"
)
NODE_SET_SUCCESSOR: Final = "MATCH (n:{label} {{id: $id}}) SET n.superseded_by = $successor"
# A write's revisions of one type at once (tx.py ``_create_revisions``): a row of $rows
# is a revision, as ``EDGE_CREATE_SUPERSEDES`` and ``NODE_SET_SUCCESSOR`` make one. Each
# MATCH binds one node by its key: two in one MATCH of an unwound row made the engine
# join both tables whole (84 ms for two revisions among 20k nodes, 0.6 ms this way).
REVISIONS_CREATE: Final = (
    "UNWIND $rows AS r MATCH (a:{label} {{id: r.s}}) WITH a, r "
    "MATCH (b:{label} {{id: r.t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: $tick, encounter: r.encounter, created_at: $at, "
    "revision_why: r.why}}]->(b)"
)
SUCCESSORS_SET: Final = "UNWIND $rows AS r MATCH (n:{label} {{id: r.t}}) SET n.superseded_by = r.s"


def node_columns(label: str) -> list[str]:
    """A type's stored columns, in the order its table declares them."""
    t = NODE_TYPES[label]
    return ["id", "tick", "ord", "created_at", "encounter", "locus", *(p.name for p in t.props)]


def nodes_create(label: str, columns: list[str] | None = None) -> LiteralString:
    """CREATE for a batch of one type, each column given as one list parameter named
    after it (``$id``, ``$name``, ...), row i taking element i of every list.

    ``columns`` (default: all of the type's) names the ones the rows give a value; a
    column left out is null. Both shapes are the engine's quick path: bound as one
    list per column, a batch is created in about two thirds of the time a list of
    row structs takes; and a column every row leaves null is bound as a value of no
    type, cast row by row, which made creation about three times slower than naming
    only the columns with values. Label and columns come from the vocabulary.
    """
    if label not in NODE_TYPES:
        raise ValueError(f"not a vocabulary name: {label!r}")
    known = [*node_columns(label), *STANDING_COLUMNS]
    chosen = node_columns(label) if columns is None else columns
    unknown = [c for c in chosen if c not in known]
    if unknown or "id" not in chosen:
        raise ValueError(f"not columns of {label} (or no id): {unknown or chosen!r}")
    assignments = ", ".join(f"{c}: ${c}[i]" for c in chosen)
    return cast(
        LiteralString, f"UNWIND range(1, size($id)) AS i CREATE (n:{label} {{{assignments}}})"
    )


# The mirrors of a node's process edges (memory/activation.py): an import carries them
# over as dumped; a write leaves them to the statements that write those edges.
STANDING_COLUMNS: Final = ("used_at", "pinned", "used_marks")


@functools.cache
def stored_columns(label: str) -> tuple[str, ...]:
    """Every column an authored type's table holds (its migrations' too), in the order a
    whole-node read returns them (``render``'s ``{n}``)."""
    return (*node_columns(label), *STANDING_COLUMNS, "superseded_by")


# An outline's columns (``NodeRecord.outline``), in this order; a type without a status
# has no status column.
OUTLINE_COLUMNS: Final = (
    "id",
    "tick",
    "ord",
    "created_at",
    "encounter",
    "locus",
    "name",
    "classification",
    "used_at",
    "pinned",
    "used_marks",
    "superseded_by",
    "status",
)


@functools.cache
def outline_columns(label: str) -> tuple[str, ...]:
    """The columns of a node an outline read returns (``render``'s ``{o}``): every type
    holds all of them but the status, which comes last where it is held."""
    held = stored_columns(label)
    missing = [c for c in OUTLINE_COLUMNS[:-1] if c not in held]
    if missing:
        raise ValueError(f"{label} lacks an outline's columns {missing}")
    return tuple(c for c in OUTLINE_COLUMNS if c in held)


_WHOLE: Final[dict[str, dict[str, str]]] = {
    label: {var: ", ".join(f"{var}.{c}" for c in stored_columns(label)) for var in "npq"}
    | {"o": ", ".join(f"n.{c}" for c in outline_columns(label))}
    for label in AUTHORED_NODE_TYPES
}


# The encounter is matched once, before the UNWIND: matched inside it, the anchoring
# cost several times the creation and grew with the table. (Creating node and edge in
# one statement is faster still, but its log records failed to replay after a kill.)
NODES_RECORD: Final = (
    "MATCH (e:Encounter {{id: $encounter}}) UNWIND $ids AS i MATCH (n:{label} {{id: i}}) "
    "CREATE (e)-[:RECORDED {{tick: $tick}}]->(n)"
)
# Every classified node of a type, for the read gate's set (nodecache.py).
# The classifications a type's nodes carry, and the bodies of deleted nodes that name
# one (the record of the past): what the store's classes_used starts from when it opens.
CLASSES_LIVE: Final = (
    "MATCH (n:{label}) WHERE n.classification IS NOT NULL RETURN DISTINCT n.classification"
)
CLASSES_PAST: Final = (
    "MATCH (p:Past) WHERE p.kind = 'node' AND p.body CONTAINS 'classification' RETURN p.body"
)
MARKS_ALL: Final = (
    "MATCH (n:{label}) WHERE n.classification IS NOT NULL "
    "RETURN n.id, n.classification LIMIT $limit"
)
NODES_SET_STATUS: Final = "UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n.status = r.status"
NODES_DELETE: Final = "UNWIND $ids AS i MATCH (n:{label} {{id: i}}) DETACH DELETE n"

# --- authored edges ---------------------------------------------------------
# A link is a use of both its ends (memory/activation.py): their used_at follows.
# Relations of one type between two node types. Each end is its own MATCH, bound by
# key (both in one MATCH of an unwound row join the tables whole).
EDGES_CREATE: Final = (
    "UNWIND $rows AS r MATCH (a:{source} {{id: r.s}}) MATCH (b:{target} {{id: r.t}}) "
    "CREATE (a)-[:{rel} {{tick: $tick, encounter: r.encounter, created_at: $at}}]->(b) "
    "SET a.used_at = $at, b.used_at = $at, a.used_marks = NULL, b.used_marks = NULL"
)
EDGE_CREATE_SUPERSEDES: Final = (
    "MATCH (a:{source} {{id: $s}}), (b:{target} {{id: $t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: $tick, encounter: $encounter, created_at: $at, "
    "revision_why: $why}}]->(b)"
)
EDGE_COUNT: Final = (
    "MATCH (a:{source} {{id: $s}})-[r:{rel}]->(b:{target} {{id: $t}}) RETURN count(r)"
)
EDGE_DELETE: Final = "MATCH (a:{source} {{id: $s}})-[r:{rel}]->(b:{target} {{id: $t}}) DELETE r"
EDGES_OUT_MANY: Final = (
    "MATCH (n:{label})-[r]->(m) WHERE n.id IN $ids AND label(r) IN $rels "
    "RETURN n.id, m.id, label(r), r.tick, r.encounter, r.revision_why"
)
EDGES_IN_MANY: Final = (
    "MATCH (n:{label})<-[r]-(m) WHERE n.id IN $ids AND label(r) IN $rels "
    "RETURN m.id, n.id, label(r), r.tick, r.encounter, r.revision_why"
)
# Every relation of one node, either way: a seek on the node's key, where a list of ids
# (``WHERE n.id IN $ids``) scans the node's whole table. The relation comes whole, so
# its direction is read from its ends (``_SRC``) against the node's own id.
EDGES_OF_ONE: Final = "MATCH (n:{label} {{id: $id}})-[r]-(m) RETURN id(n), m.id, r"
EDGES_ALL: Final = (
    "MATCH (a)-[r]->(b) WHERE label(r) IN $rels "
    "RETURN a.id, b.id, label(r), r.tick, r.encounter, r.revision_why"
)
EDGES_WRITTEN_IN: Final = (
    "MATCH (a)-[r]->(b) WHERE label(r) IN $rels AND r.encounter IN $encounters "
    "RETURN a.id, b.id, label(r), r.tick, r.encounter, r.revision_why"
)
# The same a relation type and a page of its row offsets at a time (tx.py
# ``authored_graph``): three million relations as one result ran the buffer pool out.
EDGES_LAST_OFFSET: Final = "MATCH ()-[r:{rel}]->() RETURN max(offset(id(r)))"
# A page of one relation type (its type is the caller's): ends, tick, encounter, reason.
EDGES_PAGE: Final = (
    "MATCH (a)-[r:{rel}]->(b) WHERE offset(id(r)) >= $lo AND offset(id(r)) < $hi "
    "RETURN a.id, b.id, r.tick, r.encounter, NULL"
)
# The same for one pair of node types, the ends by their row offsets (tx.py
# ``_edges_by_pair``).
EDGES_PAIR_LAST_OFFSET: Final = "MATCH (:{source})-[r:{rel}]->(:{target}) RETURN max(offset(id(r)))"
EDGES_PAIR_PAGE: Final = (
    "MATCH (a:{source})-[r:{rel}]->(b:{target}) WHERE offset(id(r)) >= $lo "
    "AND offset(id(r)) < $hi RETURN offset(id(a)), offset(id(b)), r.tick, r.encounter, NULL"
)
# An outline's relations: a page as three lists, not a row per relation (tx._relation_columns).
EDGES_PAIR_COLUMNS: Final = (
    "MATCH (a:{source})-[r:{rel}]->(b:{target}) WHERE offset(id(r)) >= $lo "
    "AND offset(id(r)) < $hi RETURN collect(offset(id(a))), collect(offset(id(b))), collect(r.tick)"
)
SUPERSEDES_PAIR_PAGE: Final = (
    "MATCH (a:{source})-[r:SUPERSEDES]->(b:{target}) WHERE offset(id(r)) >= $lo "
    "AND offset(id(r)) < $hi "
    "RETURN offset(id(a)), offset(id(b)), r.tick, r.encounter, r.revision_why"
)
SUPERSEDES_PAGE: Final = (
    "MATCH (a)-[r:SUPERSEDES]->(b) WHERE offset(id(r)) >= $lo AND offset(id(r)) < $hi "
    "RETURN a.id, b.id, r.tick, r.encounter, r.revision_why"
)
PREDECESSORS: Final = (
    "MATCH (n:{label} {{id: $id}})-[r:SUPERSEDES]->(p:{label}) RETURN p.id, r.revision_why"
)
PREDECESSORS_MANY: Final = (
    "UNWIND $ids AS i MATCH (n:{label} {{id: i}})-[:SUPERSEDES]->(p:{label}) RETURN n.id, p.id"
)
# A chain's walks. SHORTEST, not the engine's default walk semantics: those keep every
# path they find, and a walk of a few hundred links fills the buffer pool. A bound over
# VAR_LENGTH_DEFAULT needs the connection's var_length_extend_max_depth raised first.
CHAIN_OLDER: Final = (
    "MATCH (n:{label} {{id: $id}})-[:SUPERSEDES* SHORTEST 1..{hops}]->(p:{label})"
    "<-[e:SUPERSEDES]-(s:{label}) RETURN {p}, s.id, e.tick, e.encounter, e.revision_why"
)
CHAIN_NEWER: Final = (
    "MATCH (n:{label} {{id: $id}})<-[:SUPERSEDES* SHORTEST 1..{hops}]-(q:{label})"
    "-[e:SUPERSEDES]->(t:{label}) RETURN {q}, t.id, e.tick, e.encounter, e.revision_why"
)
CHAIN_ENDS: Final = (
    "MATCH (n:{label} {{id: $id}}) "
    "OPTIONAL MATCH (n)-[:SUPERSEDES* SHORTEST 1..{hops}]->(p:{label}) WITH n, count(p) AS older "
    "OPTIONAL MATCH (n)<-[:SUPERSEDES* SHORTEST 1..{hops}]-(q:{label}) "
    "RETURN older, count(q), max(CASE WHEN q.superseded_by IS NULL THEN q.id END)"
)
# One link each way, before any walk: most nodes were never revised, and a walk's cost
# grows with its type's table (4 ms a walk at 100k nodes), this with nothing (0.8 ms).
# OPTIONAL MATCH keeps the plan starting from the node; a plain MATCH scanned the table.
CHAIN_STEPS: Final = (
    "MATCH (n:{label} {{id: $id}}) "
    "OPTIONAL MATCH (n)-[:SUPERSEDES]->(p:{label}) WITH n, count(p) AS older "
    "OPTIONAL MATCH (n)<-[:SUPERSEDES]-(q:{label}) RETURN older, count(q)"
)
VAR_LENGTH_DEFAULT: Final = 30  # the engine's own bound on a walk's length
VAR_LENGTH_SET: Final = "CALL var_length_extend_max_depth={hops}"

# --- spine ------------------------------------------------------------------
LOCUS_GET: Final = "MATCH (l:Locus {id: $id}) RETURN l.id"
LOCUS_CREATE: Final = "CREATE (:Locus {id: $id, created_at: $at, tick: $tick})"
LOCI: Final = "MATCH (l:Locus) RETURN l.id ORDER BY l.tick"
ENC_CREATE: Final = (
    "CREATE (:Encounter {id: $name, locus: $locus, purpose: $purpose, opened_tick: $tick, "
    "opened_at: $at, last_activity_at: $at, tombstones: 0})"
)
ENC_OPENED: Final = (
    "MATCH (l:Locus {id: $locus}), (e:Encounter {id: $name}) "
    "CREATE (l)-[:OPENED {tick: $tick}]->(e)"
)
ENC_NEXT: Final = (
    "MATCH (p:Encounter {id: $previous}), (e:Encounter {id: $name}) "
    "CREATE (p)-[:NEXT_ENCOUNTER {tick: $tick}]->(e)"
)
ENC_ANCHOR: Final = (
    "MATCH (a:Encounter {id: $anchor}), (e:Encounter {id: $name}) "
    "CREATE (e)-[:INSTANTIATED_AFTER {tick: $tick}]->(a)"
)
ENC_GET: Final = "MATCH (e:Encounter {id: $name}) RETURN e"
ENC_GET_MANY: Final = "UNWIND $names AS n MATCH (e:Encounter {id: n}) RETURN e"
# Every open one (one, rarely two): the caller picks the newest (ops/spine.py).
ENC_OPEN_OF: Final = (
    "MATCH (:Locus {id: $locus})-[:OPENED]->(e:Encounter) WHERE e.sealed_at IS NULL "
    "AND e.dissolved_at IS NULL RETURN e"
)
ENC_LAST_OF: Final = (
    "MATCH (:Locus {id: $locus})-[:OPENED]->(e:Encounter) "
    "RETURN e ORDER BY e.opened_tick DESC LIMIT 1"
)
ENC_LATEST: Final = "MATCH (e:Encounter) RETURN e ORDER BY e.opened_tick DESC LIMIT 1"
ENC_LIST: Final = (
    "MATCH (e:Encounter) WHERE ($unsealed = false OR e.sealed_at IS NULL) "
    "AND ($exclude = '' OR e.locus <> $exclude) "
    "RETURN e ORDER BY e.opened_tick DESC SKIP $offset LIMIT $limit"
)
# A seal is work at its own moment: it does not stretch the span (memory/activation.py).
ENC_SPANS: Final = (
    "MATCH (e:Encounter) WITH e.opened_at AS a, coalesce(e.last_activity_at, e.opened_at) AS b, "
    "e.sealed_at AS c WHERE b >= $since OR c >= $since RETURN a, b, c"
)
ENC_SPANS_HIDING: Final = (
    "MATCH (e:Encounter) WHERE NOT e.locus IN $loci "
    "WITH e.opened_at AS a, coalesce(e.last_activity_at, e.opened_at) AS b, "
    "e.sealed_at AS c WHERE b >= $since OR c >= $since RETURN a, b, c"
)
ENC_SEAL: Final = (
    "MATCH (e:Encounter {id: $name}) SET e.sealed_tick = $tick, e.sealed_at = $at, "
    "e.summary = $summary"
)
ENC_DISSOLVE: Final = (
    "MATCH (e:Encounter {id: $name}) SET e.dissolved_tick = $tick, e.dissolved_at = $at"
)
ENC_TOUCH: Final = "MATCH (e:Encounter {id: $name}) SET e.last_activity_at = $at"
ENC_TOMBSTONES: Final = "MATCH (e:Encounter {id: $name}) SET e.tombstones = e.tombstones + $count"
# $labels are Neo4j's (its read_cypher scope); the sandbox reads the marks themselves.
ENC_TOMBSTONES_MARKED: Final = "MATCH (e:Encounter {id: $name}) SET e.tombstones_marked = $marks"
ENC_TOUCHING: Final = (
    "MATCH (e:Encounter)-[:RECORDED|:CONFIRMED|:CONSULTED|:PINNED]->(n:{label}) "
    "WHERE n.id IN $ids RETURN DISTINCT e.id"
)
ENC_WITHDRAW: Final = (
    "MATCH (e:Encounter) WHERE e.id IN $names SET e.purpose = $text, "
    "e.summary = CASE WHEN e.summary IS NULL THEN NULL ELSE $text END"
)
# Every erasure counts itself (infusion/select.py).
ERASURES_COUNT: Final = (
    "MERGE (m:Meta {key: 'erasures'}) ON CREATE SET m.ival = 1 ON MATCH SET m.ival = m.ival + 1"
)
SPINE: Final = (
    "MATCH (a:Encounter)-[r]->(b:Encounter) RETURN a.id, label(r), b.id ORDER BY a.opened_tick"
)
ENC_RECORDED: Final = "MATCH (e:Encounter {id: $name})-[:RECORDED]->(n) RETURN n.id"
ENC_MEMBERS: Final = (
    "MATCH (e:Encounter)-[:RECORDED]->(n) WHERE e.id IN $names "
    "RETURN e.id, n.id, n.tick, n.ord ORDER BY n.tick, n.ord"
)
ENC_NODES: Final = (
    "MATCH (e:Encounter)-[:RECORDED]->(n) WHERE e.id IN $names "
    "RETURN n.id ORDER BY n.tick DESC, n.ord DESC LIMIT $limit"
)

ENC_CREATE_STEPS: Final = (ENC_CREATE, ENC_OPENED)
SPINE_TEXT: Final = text_of(SpineText, sys.modules[__name__])
NODE_TEXT: Final = text_of(NodeText, sys.modules[__name__])
RELATION_TEXT: Final = text_of(RelationText, sys.modules[__name__])

# --- a whole memory in bulk: export pages, import writes (store/ops/load.py) ------------
COUNT_LOCI: Final = "MATCH (l:Locus) RETURN count(l)"
COUNT_ENCOUNTERS: Final = "MATCH (e:Encounter) RETURN count(e)"
COUNT_SPINE: Final = (
    "MATCH (a)-[r]->(b:Encounter) "
    "WHERE label(r) IN ['OPENED', 'NEXT_ENCOUNTER', 'INSTANTIATED_AFTER'] RETURN count(r)"
)
COUNT_NODES: Final = "MATCH (n:{label}) RETURN count(n)"
COUNT_RELATIONS: Final = "MATCH (n:{label})-[r]->() WHERE label(r) IN $rels RETURN count(r)"
COUNT_PERSONS: Final = "MATCH (p:Person) RETURN count(p)"
COUNT_CLAIMS: Final = "MATCH ()-[r:REFERENT_CLAIM]->() RETURN count(r)"
COUNT_CONFIRMATIONS: Final = "MATCH ()-[r:CONFIRMED]->() RETURN count(r)"
COUNT_CONSULTATIONS: Final = "MATCH ()-[r:CONSULTED]->() RETURN count(r)"
COUNT_PINS: Final = "MATCH ()-[r:PINNED]->() RETURN count(r)"
COUNT_PAST: Final = "MATCH (p:Past) WHERE p.kind = $kind RETURN count(p)"
DUMP_PERSONS: Final = (
    "MATCH (p:Person) WHERE p.id > $after "
    "RETURN p.id, p.name, p.director_key, p.tick, p.created_at ORDER BY p.id LIMIT $limit"
)
DUMP_LOCI: Final = (
    "MATCH (l:Locus) WHERE l.id > $after WITH l ORDER BY l.id LIMIT $limit "
    "OPTIONAL MATCH (l)-[d:DIRECTED_BY]->(p:Person) "
    "RETURN l.id, l.tick, l.created_at, p.id, d.tick"
)
DUMP_ENCOUNTERS: Final = (
    "MATCH (e:Encounter) WHERE e.id > $after RETURN e ORDER BY e.id LIMIT $limit"
)
DUMP_SPINE_INTO: Final = (
    "MATCH (a)-[r]->(e:Encounter) WHERE e.id IN $names "
    "AND label(r) IN ['OPENED', 'NEXT_ENCOUNTER'] RETURN a.id, label(r), e.id, r.tick"
)
DUMP_SPINE_ANCHOR: Final = (
    "MATCH (e:Encounter)-[r:INSTANTIATED_AFTER]->(a:Encounter) WHERE e.id IN $names "
    "RETURN e.id, label(r), a.id, r.tick"
)
# Keyset paging in creation order: (tick, ord, id) after the last row of the page before.
DUMP_NODES: Final = (
    "MATCH (n:{label}) WHERE $first OR n.tick > $tick OR (n.tick = $tick AND "
    "(n.ord > $ord OR (n.ord = $ord AND n.id > $id))) "
    "WITH n ORDER BY n.tick, n.ord, n.id LIMIT $limit "
    "OPTIONAL MATCH (:Encounter)-[r:RECORDED]->(n) "
    "RETURN {n}, r.tick ORDER BY n.tick, n.ord, n.id"
)
DUMP_NODE_IDS: Final = (
    "MATCH (n:{label}) WHERE n.id > $after RETURN n.id ORDER BY n.id LIMIT $limit"
)
DUMP_RELATIONS: Final = (
    "MATCH (n:{label})-[r]->(m) WHERE n.id IN $ids AND label(r) IN $rels "
    "RETURN n.id, m.id, label(r), r.tick, r.encounter, r.revision_why, r.created_at"
)
DUMP_CLAIMS: Final = (
    "MATCH (a:{label})-[r:REFERENT_CLAIM]->(b) WHERE a.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
DUMP_CONFIRMATIONS: Final = (
    "MATCH (e:Encounter)-[r:CONFIRMED]->(n:{label}) WHERE n.id IN $ids "
    "RETURN n.id, e.id, r.tick, r.created_at, r.why"
)
DUMP_CONSULTATIONS: Final = (
    "MATCH (e:Encounter)-[r:CONSULTED]->(n:{label}) WHERE n.id IN $ids "
    "RETURN n.id, e.id, r.tick, r.created_at"
)
DUMP_PINS: Final = (
    "MATCH (e:Encounter)-[r:PINNED]->(n:{label}) WHERE n.id IN $ids "
    "RETURN n.id, e.id, r.tick, r.created_at, r.why, r.state"
)
DUMP_PAST: Final = (
    "MATCH (p:Past) WHERE p.kind = $kind AND p.key > $after "
    "RETURN p.key, p.node, p.source, p.target, p.rel, p.tick, p.ended, p.seq, p.at, "
    "p.moved_from, p.moved_to, p.encounter, p.why, p.body ORDER BY p.key LIMIT $limit"
)
LOAD_PERSONS: Final = (
    "UNWIND $rows AS r CREATE (:Person {id: r.id, name: r.name, director_key: r.key, "
    "created_at: r.created_at, tick: r.tick})"
)
LOAD_LOCI: Final = (
    "UNWIND $rows AS r CREATE (:Locus {id: r.id, created_at: r.created_at, tick: r.tick})"
)
LOAD_DIRECTED: Final = (
    "UNWIND $rows AS r MATCH (l:Locus {id: r.locus}), (p:Person {id: r.person}) "
    "CREATE (l)-[:DIRECTED_BY {tick: r.tick}]->(p)"
)
LOAD_ENCOUNTERS: Final = (
    "UNWIND $rows AS r CREATE (:Encounter {id: r.id, locus: r.locus, purpose: r.purpose, "
    "opened_tick: r.opened_tick, opened_at: r.opened_at, sealed_tick: r.sealed_tick, "
    "sealed_at: r.sealed_at, summary: r.summary, dissolved_at: r.dissolved_at, "
    "dissolved_tick: r.dissolved_tick, last_activity_at: r.last_activity_at, "
    "tombstones: r.tombstones})"
)
LOAD_TOMBSTONES_MARKED: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter {id: r.id}) SET e.tombstones_marked = r.marks"
)
# Each end is its own MATCH: a comma pattern after UNWIND is planned as a join over
# both whole tables (25x slower per batch at 20k nodes, and growing with the memory).
LOAD_OPENED: Final = (
    "UNWIND $rows AS r MATCH (l:Locus {id: r.source}) MATCH (e:Encounter {id: r.target}) "
    "CREATE (l)-[:OPENED {tick: r.tick}]->(e)"
)
LOAD_NEXT: Final = (
    "UNWIND $rows AS r MATCH (p:Encounter {id: r.source}) MATCH (e:Encounter {id: r.target}) "
    "CREATE (p)-[:NEXT_ENCOUNTER {tick: r.tick}]->(e)"
)
LOAD_ANCHOR: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter {id: r.source}) MATCH (a:Encounter {id: r.target}) "
    "CREATE (e)-[:INSTANTIATED_AFTER {tick: r.tick}]->(a)"
)
LOAD_EDGES: Final = (
    "UNWIND $rows AS r MATCH (a:{source} {{id: r.s}}) MATCH (b:{target} {{id: r.t}}) "
    "CREATE (a)-[:{rel} {{tick: r.tick, encounter: r.encounter, created_at: r.at}}]->(b)"
)
# The successor's id is mirrored on the revised node, as create_edge leaves it.
LOAD_SUPERSEDES: Final = (
    "UNWIND $rows AS r MATCH (a:{source} {{id: r.s}}) MATCH (n:{target} {{id: r.t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: r.tick, encounter: r.encounter, created_at: r.at, "
    "revision_why: r.why}}]->(n) SET n.superseded_by = a.id"
)
LOAD_CLAIMS: Final = (
    "UNWIND $rows AS r MATCH (a:{label} {{id: r.s}}), (b:{label} {{id: r.t}}) "
    "CREATE (a)-[:REFERENT_CLAIM {{tick: r.tick, encounter: r.encounter, created_at: r.at, "
    "resolution: r.resolution, why: r.why}}]->(b)"
)
LOAD_CONFIRMATIONS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter {{id: r.encounter}}), (n:{label} {{id: r.node}}) "
    "CREATE (e)-[:CONFIRMED {{tick: r.tick, created_at: r.at, why: r.why}}]->(n)"
)
LOAD_CONSULTATIONS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter {{id: r.encounter}}) MATCH (n:{label} {{id: r.node}}) "
    "CREATE (e)-[:CONSULTED {{tick: r.tick, created_at: r.at}}]->(n)"
)
LOAD_PINS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter {{id: r.encounter}}) MATCH (n:{label} {{id: r.node}}) "
    "CREATE (e)-[:PINNED {{tick: r.tick, created_at: r.at, why: r.why, state: r.state}}]->(n)"
)
LOAD_PAST: Final = (
    "UNWIND $rows AS r CREATE (:Past {key: r.key, kind: r.kind, node: r.node, name: r.name, "
    "source: r.source, target: r.target, rel: r.rel, tick: r.tick, ended: r.ended, "
    "seq: r.seq, at: r.at, moved_from: r.moved_from, moved_to: r.moved_to, "
    "encounter: r.encounter, why: r.why, body: r.body})"
)
MARKER_GET: Final = "MATCH (m:Meta {key: $key}) RETURN m.sval, m.ival"
MARKER_PUT: Final = "MERGE (m:Meta {key: $key}) SET m.sval = $digest, m.ival = $done"
MARKER_DROP: Final = "MATCH (m:Meta {key: $key}) DELETE m"
CLOCK_SET: Final = "MATCH (m:Meta {key: 'clock'}) SET m.ival = $value"
# The ids go back to the transaction: the node cache must drop them.
CLEAR_NODES: Final = "MATCH (n:{label}) WITH n, n.id AS id LIMIT $limit DETACH DELETE n RETURN id"
CLEAR_REGISTRIES: Final = (
    "MATCH (k:NameKey) DELETE k",
    "MATCH (k:SourceKey) DELETE k",
    "MATCH (p:Past) DELETE p",
)
LOAD_TEXT: Final = text_of(LoadText, sys.modules[__name__])

# --- directors, confirmations, referent claims (store/ops/identity.py) -----------------
PERSON_MERGE: Final = (
    "MERGE (p:Person {id: $id}) "
    "ON CREATE SET p.name = $name, p.director_key = $key, p.tick = $tick, p.created_at = $at"
)
LOCUS_DIRECT: Final = (
    "MATCH (l:Locus {id: $locus}), (p:Person {id: $id}) "
    "CREATE (l)-[:DIRECTED_BY {tick: $tick}]->(p)"
)
DIRECT_STEPS: Final = (PERSON_MERGE, LOCUS_DIRECT)
DIRECTORS_OF: Final = (
    "UNWIND $loci AS i MATCH (l:Locus {id: i})-[:DIRECTED_BY]->(p:Person) "
    "RETURN l.id, p.id, p.name, p.director_key, p.tick, p.created_at"
)
CONFIRM: Final = (
    "MATCH (e:Encounter {{id: $encounter}}) UNWIND $ids AS i MATCH (n:{label} {{id: i}}) "
    "CREATE (e)-[:CONFIRMED {{tick: $tick, created_at: $at, why: $why}}]->(n) "
    "SET n.used_at = $at, n.used_marks = NULL"
)
CONFIRMATIONS_OF: Final = (
    "MATCH (e:Encounter)-[r:CONFIRMED]->(n:{label}) WHERE n.id IN $ids "
    "RETURN n.id, e.id, r.tick, r.created_at"
)
# Every confirmation, for the node cache's whole read (tx.py ``warm``).
CONFIRMATIONS_ALL: Final = (
    "MATCH (e:Encounter)-[r:CONFIRMED]->(n) RETURN n.id, e.id, r.tick, r.created_at"
)
CLAIM_CREATE: Final = (
    "MATCH (a:{label} {{id: $s}}), (b:{label} {{id: $t}}) "
    "CREATE (a)-[:REFERENT_CLAIM {{tick: $tick, encounter: $encounter, created_at: $at, "
    "resolution: $resolution, why: $why}}]->(b)"
)
CLAIMS_OUT: Final = (
    "MATCH (a:{label})-[r:REFERENT_CLAIM]->(b) WHERE a.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
CLAIMS_IN: Final = (
    "MATCH (a)-[r:REFERENT_CLAIM]->(b:{label}) WHERE b.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
# Only when some locus lacks a director: a store without such loci gets no such Person.
DIRECT_UNDIRECTED: Final = (
    "MATCH (l:Locus) WHERE NOT EXISTS { MATCH (l)-[:DIRECTED_BY]->(:Person) } "
    "WITH collect(l) AS loci WHERE size(loci) > 0 "
    "MERGE (p:Person {id: $id}) "
    "ON CREATE SET p.name = $name, p.director_key = $key, p.tick = 0, p.created_at = $at "
    "WITH p, loci UNWIND loci AS l CREATE (l)-[:DIRECTED_BY {tick: l.tick}]->(p) "
    "RETURN count(*)"
)
IDENTITY_TEXT: Final = text_of(IdentityText, sys.modules[__name__])

# --- consultations and pins (store/ops/activation.py) ----------------------------------
CONSULT: Final = (
    "MATCH (e:Encounter {{id: $encounter}}) UNWIND $ids AS i MATCH (n:{label} {{id: i}}) "
    "MERGE (e)-[r:CONSULTED]->(n) SET r.tick = $tick, r.created_at = $at, n.used_at = $at, "
    "n.used_marks = NULL"
)
PIN: Final = (
    "MATCH (e:Encounter {{id: $encounter}}) UNWIND $ids AS i MATCH (n:{label} {{id: i}}) "
    "CREATE (e)-[:PINNED {{tick: $tick, created_at: $at, why: $why, state: $state}}]->(n) "
    "SET n.pinned = $pinned, n.used_at = $at, n.used_marks = NULL"
)
MARK_USES: Final = "UNWIND $rows AS r MATCH (n:{label} {{id: r.id}}) SET n.used_marks = r.marks"
# A node's uses (ActivationOps.node_uses), for a reader face that hides sessions: each
# with the encounter that made it, and that encounter's session.
USES_LINKED: Final = (
    "MATCH (n:{label})-[r]-(m) WHERE n.id IN $ids AND label(r) IN $links "
    "MATCH (e:Encounter) WHERE e.id = r.encounter "
    "RETURN n.id AS node, e.id AS enc, e.locus AS locus, r.tick AS tick, "
    "r.created_at AS at, 'link' AS kind, NULL AS state, m.classification AS other"
)
USES_PROCESS: Final = (
    "MATCH (e:Encounter)-[r]->(n:{label}) WHERE n.id IN $ids AND label(r) IN $process "
    "RETURN n.id AS node, e.id AS enc, e.locus AS locus, r.tick AS tick, "
    "r.created_at AS at, label(r) AS kind, r.state AS state, NULL AS other"
)
USES_UNION: Final = False
LOCI_USES: Final = (
    "MATCH (e:Encounter) WHERE e.locus IN $loci OPTIONAL MATCH (e)-[:PINNED]->(n) "
    "RETURN e.opened_at, coalesce(e.sealed_at, e.dissolved_at), collect(n.id), e.id"
)
ACTIVATION_TEXT: Final = text_of(ActivationText, sys.modules[__name__])
