"""Every Cypher statement the Neo4j backend runs, in one place.

Values are always parameters. Labels and relationship types cannot be, so
templates carry ``{label}``-style slots that only ``render`` fills, and only
with names from the closed vocabulary. The property names match the embedded
backend's columns, so a read_cypher query reads the same on either store.

Bookkeeping nodes mirror the embedded tables: ``Meta`` (the global clock and
the schema version), ``NameKey`` (live name -> head id) and ``SourceKey`` (a
Component's source triple -> id), each unique by a constraint.
"""

from __future__ import annotations

import sys
from typing import Final, LiteralString, cast

from kenning_encounter.store.neo4j.ledger import SCHEMA as LEDGER_SCHEMA
from kenning_encounter.store.ops.text import (
    LoadText,
    NodeText,
    RelationText,
    SpineText,
    text_of,
)
from kenning_encounter.textproc import TOKENIZER_VERSION
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    NODE_TYPES,
    RELATION_TYPES,
)

_ALLOWED_NAMES: Final = frozenset(NODE_TYPES) | frozenset(RELATION_TYPES)
FULLTEXT_INDEX: Final = "kenning_text"
FULLTEXT_ANALYZER: Final = "whitespace"
TEXT_PROPERTY: Final = "_terms"  # derived: the tokenizer's output for name + description
TEXT_LENGTH: Final = "_len"  # derived: how many tokens that is
# Follows the tokenizer's version: when its output changes, every node's tokens are derived again.
TEXT_FORMAT: Final = TOKENIZER_VERSION
# 2: every node of the memory also carries MEMORY_LABEL (read_cypher is scoped by it).
SCHEMA_VERSION: Final = 2
# The one label every node of the memory carries beside its type: what read_cypher's
# scope adds to a node pattern that names no label (neo4j/scope.py).
MEMORY_LABEL: Final = "KenningMemory"


def _checked(name: str) -> str:
    if name not in _ALLOWED_NAMES:
        raise ValueError(f"not a vocabulary name: {name!r}")
    return name


def render(template: str, **names: str) -> LiteralString:
    """Fill label and relationship-type slots with vocabulary names only."""
    filled = template.format(**{slot: _checked(value) for slot, value in names.items()})
    # Safe to treat as a literal: every slot came from the closed vocabulary.
    return cast(LiteralString, filled)


def alternatives(names: tuple[str, ...]) -> str:
    """``A|B|C`` for a label or type expression, each name checked."""
    return "|".join(_checked(n) for n in names)


# --- schema (one statement each; schema changes run outside data transactions) ---
def schema_statements() -> list[tuple[str, LiteralString]]:
    """(name, statement) pairs; every statement is idempotent (IF NOT EXISTS)."""
    out: list[tuple[str, LiteralString]] = []
    for label in NODE_TYPES:
        name = f"kenning_{label.lower()}_id"
        stmt = f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{_checked(label)}) REQUIRE n.id IS UNIQUE"
        out.append((name, cast(LiteralString, stmt)))
    fixed: list[tuple[str, LiteralString]] = [
        (
            "kenning_meta_key",
            "CREATE CONSTRAINT kenning_meta_key IF NOT EXISTS FOR (m:Meta) REQUIRE m.key IS UNIQUE",
        ),
        (
            "kenning_name_key",
            "CREATE CONSTRAINT kenning_name_key IF NOT EXISTS "
            "FOR (k:NameKey) REQUIRE k.name IS UNIQUE",
        ),
        (
            "kenning_source_key",
            "CREATE CONSTRAINT kenning_source_key IF NOT EXISTS "
            "FOR (k:SourceKey) REQUIRE k.key IS UNIQUE",
        ),
        (
            "kenning_encounter_locus",
            "CREATE INDEX kenning_encounter_locus IF NOT EXISTS FOR (e:Encounter) ON (e.locus)",
        ),
    ]
    out += fixed
    out.append((FULLTEXT_INDEX, fulltext_index()))
    out += LEDGER_SCHEMA  # the infusion ledger's own labels, beside the memory
    return out


def fulltext_index() -> LiteralString:
    """The lexical index: our own tokens (``_terms``), split on whitespace only.

    Nodes carry the shared tokenizer's output, so query terms and indexed terms
    are the same words on every backend, and so are the corpus statistics.
    """
    labels = alternatives(AUTHORED_NODE_TYPES)
    statement = (
        f"CREATE FULLTEXT INDEX {FULLTEXT_INDEX} IF NOT EXISTS FOR (n:{labels}) "
        f"ON EACH [n.{TEXT_PROPERTY}] OPTIONS {{indexConfig: "
        f"{{`fulltext.analyzer`: '{FULLTEXT_ANALYZER}', `fulltext.eventually_consistent`: false}}}}"
    )
    return cast(LiteralString, statement)


SHOW_CONSTRAINT_NAMES: Final = "SHOW CONSTRAINTS YIELD name"
SHOW_INDEX_NAMES: Final = "SHOW INDEXES YIELD name"
AWAIT_INDEXES: Final = "CALL db.awaitIndexes(60)"
SERVER_VERSION: Final = (
    "CALL dbms.components() YIELD name, versions, edition "
    "RETURN name, versions[0] AS version, edition"
)
GDS_VERSION: Final = "RETURN gds.version() AS version"

# --- meta -------------------------------------------------------------------
META_INIT: Final = (
    "MERGE (c:Meta {key: 'clock'}) ON CREATE SET c.ival = 0 "
    "MERGE (v:Meta {key: 'schema_version'}) ON CREATE SET v.ival = $version "
    "MERGE (d:Meta {key: 'text_docs'}) ON CREATE SET d.ival = 0 "
    "MERGE (l:Meta {key: 'text_len'}) ON CREATE SET l.ival = 0 "
    "MERGE (f:Meta {key: 'text_format'}) ON CREATE SET f.ival = 0 "
    "RETURN v.ival, f.ival"
)
META_GET: Final = "MATCH (m:Meta {key: $key}) RETURN m.ival"
# Schema 1 -> 2: the memory label on the nodes made before it (in batches, autocommit).
MIGRATE_MEMORY_LABEL: Final = cast(
    LiteralString,
    f"MATCH (n:{alternatives(tuple(NODE_TYPES))}) WHERE NOT n:KenningMemory "
    "CALL (n) { SET n:KenningMemory } IN TRANSACTIONS OF 10000 ROWS",
)
SCHEMA_VERSION_SET: Final = "MATCH (v:Meta {key: 'schema_version'}) SET v.ival = $version"
# Writing the clock node takes its exclusive lock, held to commit: every write
# transaction starts here, so writers from any process queue in tick order.
CLOCK_NEXT: Final = "MATCH (c:Meta {key: 'clock'}) SET c.ival = c.ival + 1 RETURN c.ival"
CLOCK_UNDO: Final = "MATCH (c:Meta {key: 'clock'}) SET c.ival = c.ival - 1"

CLOCK_LOCK: Final = "MATCH (c:Meta {key: 'clock'}) SET c.ival = c.ival"

# --- registries ---------------------------------------------------------------
NAME_GET: Final = "MATCH (k:NameKey {name: $name}) RETURN k.id"
NAMES_GET: Final = "UNWIND $names AS nm MATCH (k:NameKey {name: nm}) RETURN k.name, k.id"
NAME_PUT: Final = "UNWIND $rows AS r MERGE (k:NameKey {name: r.name}) SET k.id = r.id"
NAME_DROP: Final = "MATCH (k:NameKey {name: $name}) WHERE k.id = $id DELETE k"
SOURCE_GET: Final = "MATCH (k:SourceKey {key: $key}) RETURN k.id"
SOURCE_PUT: Final = "UNWIND $rows AS r MERGE (k:SourceKey {key: r.key}) SET k.id = r.id"
SOURCE_DROP: Final = "MATCH (k:SourceKey {key: $key}) WHERE k.id = $id DELETE k"

# --- authored nodes -----------------------------------------------------------
NODES_GET: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "OPTIONAL MATCH (s:{label}:KenningMemory)-[:SUPERSEDES]->(n) "
    "RETURN properties(n), e.id, e.locus, s.id"
)
NODES_ALL: Final = (
    "MATCH (n:{label}:KenningMemory) "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "OPTIONAL MATCH (s:{label}:KenningMemory)-[:SUPERSEDES]->(n) "
    "RETURN properties(n), e.id, e.locus, s.id"
)
HEADS_BY_STATUS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.status IN $statuses "
    "AND NOT EXISTS {{ MATCH (n)<-[:SUPERSEDES]-() }} "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "RETURN properties(n), e.id, e.locus, null ORDER BY n.tick DESC LIMIT $limit"
)
RECENT_HEADS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE NOT EXISTS {{ MATCH (n)<-[:SUPERSEDES]-() }} "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "RETURN properties(n), e.id, e.locus, null ORDER BY n.tick DESC LIMIT $limit"
)
# One statement per type for a whole batch: the nodes, their RECORDED edges, their
# live names, and the lexical corpus counters.
NODES_CREATE: Final = (
    "MATCH (e:Encounter:KenningMemory {{id: $encounter}}) UNWIND $rows AS r "
    "CREATE (e)-[:RECORDED {{tick: $tick}}]->(n:{label}:KenningMemory) SET n = r "
    "MERGE (k:NameKey {{name: r.name}}) SET k.id = r.id "
    "WITH count(n) AS made, sum(r._len) AS tokens "
    "MATCH (d:Meta {{key: 'text_docs'}}) MATCH (l:Meta {{key: 'text_len'}}) "
    "SET d.ival = d.ival + made, l.ival = l.ival + tokens"
)
NODE_SET_STATUS: Final = "MATCH (n:{label}:KenningMemory {{id: $id}}) SET n.status = $status"
NODE_DELETE: Final = (
    "MATCH (n:{label}:KenningMemory {{id: $id}}) WITH n, coalesce(n._len, 0) AS tokens DETACH DELETE n "
    "WITH tokens MATCH (d:Meta {{key: 'text_docs'}}) MATCH (l:Meta {{key: 'text_len'}}) "
    "SET d.ival = d.ival - 1, l.ival = l.ival - tokens"
)

# --- authored edges -----------------------------------------------------------
EDGE_CREATE: Final = (
    "MATCH (a:{source}:KenningMemory {{id: $s}}) MATCH (b:{target}:KenningMemory {{id: $t}}) "
    "CREATE (a)-[:{rel} {{tick: $tick, encounter: $encounter, created_at: $at}}]->(b)"
)
EDGE_CREATE_SUPERSEDES: Final = (
    "MATCH (a:{source}:KenningMemory {{id: $s}}) MATCH (b:{target}:KenningMemory {{id: $t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: $tick, encounter: $encounter, created_at: $at, "
    "revision_why: $why}}]->(b)"
)
EDGE_COUNT: Final = "MATCH (a:{source}:KenningMemory {{id: $s}})-[r:{rel}]->(b:{target}:KenningMemory {{id: $t}}) RETURN count(r)"
EDGE_DELETE: Final = "MATCH (a:{source}:KenningMemory {{id: $s}})-[r:{rel}]->(b:{target}:KenningMemory {{id: $t}}) DELETE r"
EDGES_OUT_MANY: Final = (
    "MATCH (n:{label}:KenningMemory)-[r]->(m) WHERE n.id IN $ids AND type(r) IN $rels "
    "RETURN n.id, m.id, type(r), r.tick, r.encounter, r.revision_why"
)
EDGES_IN_MANY: Final = (
    "MATCH (n:{label}:KenningMemory)<-[r]-(m) WHERE n.id IN $ids AND type(r) IN $rels "
    "RETURN m.id, n.id, type(r), r.tick, r.encounter, r.revision_why"
)
# Typed by pattern, not filtered by $rels: the planner then reads only those types.
EDGES_ALL: Final = cast(
    LiteralString,
    f"MATCH (a:KenningMemory)-[r:{alternatives(AUTHORED_RELATION_TYPES)}]->(b:KenningMemory) "
    "RETURN a.id, b.id, type(r), r.tick, r.encounter, r.revision_why",
)
PREDECESSORS: Final = "MATCH (n:{label}:KenningMemory {{id: $id}})-[r:SUPERSEDES]->(p:{label}:KenningMemory) RETURN p.id, r.revision_why"


# --- spine ----------------------------------------------------------------------
LOCUS_GET: Final = "MATCH (l:Locus:KenningMemory {id: $id}) RETURN l.id"
LOCUS_CREATE: Final = "CREATE (:Locus:KenningMemory {id: $id, created_at: $at, tick: $tick})"
LOCI: Final = "MATCH (l:Locus:KenningMemory) RETURN l.id ORDER BY l.tick"
ENC_CREATE: Final = (
    "MATCH (l:Locus:KenningMemory {id: $locus}) "
    "CREATE (l)-[:OPENED {tick: $tick}]->(:Encounter:KenningMemory {id: $name, locus: $locus, "
    "purpose: $purpose, opened_tick: $tick, opened_at: $at, last_activity_at: $at, "
    "tombstones: 0})"
)
ENC_NEXT: Final = (
    "MATCH (p:Encounter:KenningMemory {id: $previous}) MATCH (e:Encounter:KenningMemory {id: $name}) "
    "CREATE (p)-[:NEXT_ENCOUNTER {tick: $tick}]->(e)"
)
ENC_ANCHOR: Final = (
    "MATCH (a:Encounter:KenningMemory {id: $anchor}) MATCH (e:Encounter:KenningMemory {id: $name}) "
    "CREATE (e)-[:INSTANTIATED_AFTER {tick: $tick}]->(a)"
)
ENC_GET: Final = "MATCH (e:Encounter:KenningMemory {id: $name}) RETURN properties(e)"
ENC_GET_MANY: Final = (
    "UNWIND $names AS n MATCH (e:Encounter:KenningMemory {id: n}) RETURN properties(e)"
)
ENC_OPEN_OF: Final = (
    "MATCH (e:Encounter:KenningMemory {locus: $locus}) WHERE e.sealed_at IS NULL AND e.dissolved_at IS NULL "
    "RETURN properties(e) ORDER BY e.opened_tick DESC LIMIT 1"
)
ENC_LAST_OF: Final = "MATCH (e:Encounter:KenningMemory {locus: $locus}) RETURN properties(e) ORDER BY e.opened_tick DESC LIMIT 1"
ENC_LATEST: Final = (
    "MATCH (e:Encounter:KenningMemory) RETURN properties(e) ORDER BY e.opened_tick DESC LIMIT 1"
)
ENC_LIST: Final = (
    "MATCH (e:Encounter:KenningMemory) WHERE ($unsealed = false OR e.sealed_at IS NULL) "
    "AND ($exclude = '' OR e.locus <> $exclude) "
    "RETURN properties(e) ORDER BY e.opened_tick DESC LIMIT $limit"
)
ENC_SEAL: Final = (
    "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.sealed_tick = $tick, e.sealed_at = $at, "
    "e.summary = $summary, e.last_activity_at = $at"
)
ENC_DISSOLVE: Final = "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.dissolved_at = $at"
ENC_TOUCH: Final = "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.last_activity_at = $at"
ENC_TOMBSTONES: Final = "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.tombstones = coalesce(e.tombstones, 0) + $count"
SPINE: Final = "MATCH (a:Encounter:KenningMemory)-[r]->(b:Encounter:KenningMemory) RETURN a.id, type(r), b.id ORDER BY a.opened_tick"
ENC_RECORDED: Final = "MATCH (:Encounter:KenningMemory {id: $name})-[:RECORDED]->(n) RETURN n.id"
ENC_MEMBERS: Final = (
    "MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) WHERE e.id IN $names "
    "RETURN e.id, n.id ORDER BY n.tick, coalesce(n.ord, 0)"
)
ENC_NODES: Final = (
    "MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) WHERE e.id IN $names "
    "RETURN n.id ORDER BY n.tick DESC LIMIT $limit"
)

# --- lexical search ----------------------------------------------------------------
# The procedure yields hits best first and the filter keeps that order, so LIMIT can
# stop early; an ORDER BY here would score and sort every hit (5x slower at 10k nodes).
FULLTEXT_QUERY: Final = (
    "CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score "
    "WHERE node:KenningMemory AND ($types IS NULL OR any(l IN labels(node) WHERE l IN $types)) "
    "AND ($heads_only = false OR NOT EXISTS { MATCH (node)<-[:SUPERSEDES]-() }) "
    "RETURN node.id, score LIMIT $limit"
)
TEXT_COUNTERS: Final = (
    "MATCH (d:Meta {key: 'text_docs'}) MATCH (l:Meta {key: 'text_len'}) RETURN d.ival, l.ival"
)
# Document frequency of each term: how many nodes the index finds for it alone.
TEXT_DOC_FREQS: Final = (
    "UNWIND $terms AS t CALL (t) { "
    "CALL db.index.fulltext.queryNodes($index, t.query) YIELD node RETURN count(node) AS df } "
    "RETURN t.term, df"
)
FULLTEXT_SHOW: Final = (
    "SHOW FULLTEXT INDEXES YIELD name, labelsOrTypes, properties, options "
    "WHERE name = $name RETURN labelsOrTypes, properties, options"
)
FULLTEXT_DROP: Final = "DROP INDEX kenning_text IF EXISTS"
# Deriving every node's tokens again (a new store, or a changed tokenizer).
TEXT_SOURCES: Final = "MATCH (n:{label}:KenningMemory) RETURN n.id, n.name, n.description"
TEXT_SET: Final = "UNWIND $rows AS r MATCH (n:{label}:KenningMemory {{id: r.id}}) SET n._terms = r._terms, n._len = r._len"
TEXT_RESET: Final = (
    "MATCH (d:Meta {key: 'text_docs'}) MATCH (l:Meta {key: 'text_len'}) "
    "MATCH (f:Meta {key: 'text_format'}) SET d.ival = $docs, l.ival = $tokens, f.ival = $format"
)

# --- read_cypher -----------------------------------------------------------------------
EXPLAIN_PREFIX: Final = "EXPLAIN "


# --- a whole memory in bulk: export pages, import writes (store/ops/load.py) ------------
# Every node it creates carries the memory's label, as the statements above do.
COUNT_LOCI: Final = "MATCH (l:Locus:KenningMemory) RETURN count(l)"
COUNT_ENCOUNTERS: Final = "MATCH (e:Encounter:KenningMemory) RETURN count(e)"
COUNT_SPINE: Final = (
    "MATCH (:KenningMemory)-[r:OPENED|NEXT_ENCOUNTER|INSTANTIATED_AFTER]->"
    "(:Encounter:KenningMemory) RETURN count(r)"
)
COUNT_NODES: Final = "MATCH (n:{label}:KenningMemory) RETURN count(n)"
COUNT_RELATIONS: Final = (
    "MATCH (n:{label}:KenningMemory)-[r]->(:KenningMemory) WHERE type(r) IN $rels RETURN count(r)"
)
DUMP_LOCI: Final = (
    "MATCH (l:Locus:KenningMemory) WHERE l.id > $after RETURN l.id, l.tick, l.created_at "
    "ORDER BY l.id LIMIT $limit"
)
DUMP_ENCOUNTERS: Final = (
    "MATCH (e:Encounter:KenningMemory) WHERE e.id > $after "
    "RETURN properties(e) ORDER BY e.id LIMIT $limit"
)
DUMP_SPINE_INTO: Final = (
    "MATCH (a:KenningMemory)-[r:OPENED|NEXT_ENCOUNTER]->(e:Encounter:KenningMemory) "
    "WHERE e.id IN $names RETURN a.id, type(r), e.id, r.tick"
)
DUMP_SPINE_ANCHOR: Final = (
    "MATCH (e:Encounter:KenningMemory)-[r:INSTANTIATED_AFTER]->(a:Encounter:KenningMemory) "
    "WHERE e.id IN $names RETURN e.id, type(r), a.id, r.tick"
)
# Keyset paging in creation order; nodes older than the ord property read it as 0.
DUMP_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WITH n, coalesce(n.ord, 0) AS o "
    "WHERE $first OR n.tick > $tick OR (n.tick = $tick AND (o > $ord OR (o = $ord AND n.id > $id))) "
    "WITH n, o ORDER BY n.tick, o, n.id LIMIT $limit "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[r:RECORDED]->(n) "
    "RETURN properties(n), e.id, e.locus, null, r.tick"
)
DUMP_NODE_IDS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id > $after RETURN n.id ORDER BY n.id LIMIT $limit"
)
DUMP_RELATIONS: Final = (
    "MATCH (n:{label}:KenningMemory)-[r]->(m:KenningMemory) WHERE n.id IN $ids "
    "AND type(r) IN $rels "
    "RETURN n.id, m.id, type(r), r.tick, r.encounter, r.revision_why, r.created_at"
)
LOAD_LOCI: Final = (
    "UNWIND $rows AS r "
    "CREATE (:Locus:KenningMemory {id: r.id, created_at: r.created_at, tick: r.tick})"
)
# SET from the map: a property that is null is simply not stored, as on a live write.
LOAD_ENCOUNTERS: Final = "UNWIND $rows AS r CREATE (e:Encounter:KenningMemory) SET e = r"
LOAD_OPENED: Final = (
    "UNWIND $rows AS r MATCH (l:Locus:KenningMemory {id: r.source}) "
    "MATCH (e:Encounter:KenningMemory {id: r.target}) CREATE (l)-[:OPENED {tick: r.tick}]->(e)"
)
LOAD_NEXT: Final = (
    "UNWIND $rows AS r MATCH (p:Encounter:KenningMemory {id: r.source}) "
    "MATCH (e:Encounter:KenningMemory {id: r.target}) "
    "CREATE (p)-[:NEXT_ENCOUNTER {tick: r.tick}]->(e)"
)
LOAD_ANCHOR: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {id: r.source}) "
    "MATCH (a:Encounter:KenningMemory {id: r.target}) "
    "CREATE (e)-[:INSTANTIATED_AFTER {tick: r.tick}]->(a)"
)
LOAD_EDGES: Final = (
    "UNWIND $rows AS r MATCH (a:{source}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{target}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:{rel} {{tick: r.tick, encounter: r.encounter, created_at: r.at}}]->(b)"
)
LOAD_SUPERSEDES: Final = (
    "UNWIND $rows AS r MATCH (a:{source}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{target}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: r.tick, encounter: r.encounter, created_at: r.at, "
    "revision_why: r.why}}]->(b)"
)
MARKER_GET: Final = "MATCH (m:Meta {key: $key}) RETURN m.sval, m.ival"
MARKER_PUT: Final = "MERGE (m:Meta {key: $key}) SET m.sval = $digest, m.ival = $done"
MARKER_DROP: Final = "MATCH (m:Meta {key: $key}) DELETE m"
CLOCK_SET: Final = "MATCH (c:Meta {key: 'clock'}) SET c.ival = $value"
CLEAR_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WITH n, n.id AS id LIMIT $limit DETACH DELETE n RETURN id"
)
CLEAR_REGISTRIES: Final = ("MATCH (k:NameKey) DELETE k", "MATCH (k:SourceKey) DELETE k")

ENC_CREATE_STEPS: Final = (ENC_CREATE,)
SPINE_TEXT: Final = text_of(SpineText, sys.modules[__name__])
NODE_TEXT: Final = text_of(NodeText, sys.modules[__name__])
RELATION_TEXT: Final = text_of(RelationText, sys.modules[__name__])
LOAD_TEXT: Final = text_of(LoadText, sys.modules[__name__])
