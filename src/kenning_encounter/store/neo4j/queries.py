"""Every Cypher statement the Neo4j backend runs, in one place.

Values are always parameters. Labels and relationship types cannot be, so
templates carry ``{label}``-style slots that only ``render`` fills, and only
with names from the closed vocabulary. The property names match the embedded
backend's columns, so a read_cypher query reads the same on either store.

Bookkeeping nodes mirror the embedded tables: ``Meta`` (the global clock and
the schema version), ``NameKey`` (live name -> head id) and ``SourceKey`` (a
Component's source triple -> id), each unique by a constraint within its memory.

Several memories may share a database: statements name the label ``KenningMemory``
and the engine makes each one the store's memory's (namespace.py). Bookkeeping
patterns say ``_memory: $memory`` themselves.
"""

from __future__ import annotations

import functools
import sys
from typing import Final, LiteralString, cast

from kenning_encounter.store.neo4j import classified, past
from kenning_encounter.store.neo4j.baselines import SCHEMA as BASELINE_SCHEMA
from kenning_encounter.store.neo4j.infusion_log import SCHEMA as INFUSION_LOG_SCHEMA
from kenning_encounter.store.neo4j.ledger import LABELS as LEDGER_LABELS
from kenning_encounter.store.neo4j.ledger import LEGACY_CONSTRAINTS as LEDGER_LEGACY_CONSTRAINTS
from kenning_encounter.store.neo4j.ledger import LEGACY_INDEXES as LEDGER_LEGACY_INDEXES
from kenning_encounter.store.neo4j.ledger import SCHEMA as LEDGER_SCHEMA
from kenning_encounter.store.neo4j.meanings import SCHEMA as MEANING_SCHEMA
from kenning_encounter.store.neo4j.past import SCHEMA as PAST_SCHEMA
from kenning_encounter.store.ops.activation import ActivationText
from kenning_encounter.store.ops.identity import IdentityText
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
TOUCHED: Final = "_touched"  # bookkeeping: the tick of the last write that changed it
# Follows the tokenizer's version: when its output changes, every node's tokens are derived again.
TEXT_FORMAT: Final = TOKENIZER_VERSION
# 2: every node of the memory also carries the memory label (read_cypher is scoped by it).
# 3: memories have names: every node of ours carries ``_memory``, keys are unique per memory.
# 4: a classified node carries a label per class (classified.py; read_cypher's gate).
# 5: each node mirrors its latest use, used_at (standing.py backfills older memories).
# 7: a node a classified node resolves, supports or challenges carries a label per class
#    of those nodes (classified.py; read_cypher's gate keeps it from who may not see them).
# 8: the clock carries the classes the memory's nodes have carried (``classes``), which
#    the read gate asks before any work a withheld class calls for (memory/gates.py).
# 9: a node whose latest use was a link to a classified node carries that use by class
#    (``used_marks``, a ``KenningUsed_<class>`` label), and an encounter the classified
#    nodes an erasure took from it (``tombstones_marked``): nothing to migrate (uses and
#    erasures before it carry none), but a server of 8 would neither write nor clear
#    them, so it must not open a memory a server of 9 has (nor write, from 9 on: SHAPE).
SCHEMA_VERSION: Final = 9


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
# Keys are unique per memory (namespace.py): a composite over ``_memory`` lets several
# memories share a database, and never meets another application's nodes (no ``_memory``).
_KEYED: Final = (("Meta", "key"), ("NameKey", "name"), ("SourceKey", "key"))


def _unique(name: str, label: str, prop: str) -> tuple[str, LiteralString]:
    statement = (
        f"CREATE CONSTRAINT {name} IF NOT EXISTS FOR (n:{label}) "
        f"REQUIRE (n._memory, n.{prop}) IS UNIQUE"
    )
    return name, cast(LiteralString, statement)


def _per_type_indexes(prop: str, suffix: str) -> list[tuple[str, LiteralString]]:
    """A range index on (_memory, ``prop``) for each authored type."""
    out: list[tuple[str, LiteralString]] = []
    for label in AUTHORED_NODE_TYPES:
        name = f"kenning_{label.lower()}_memory_{suffix}"
        statement = (
            f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{_checked(label)}) ON (n._memory, n.{prop})"
        )
        out.append((name, cast(LiteralString, statement)))
    return out


def _world_time_indexes() -> list[tuple[str, LiteralString]]:
    """A window over when things held in the world seeks these."""
    return _per_type_indexes("valid_from", "valid_from")


def _touched_indexes() -> list[tuple[str, LiteralString]]:
    """What a node cache asks of the nodes changed since it last looked (nodecache.py,
    NODES_TOUCHED_SINCE)."""
    return _per_type_indexes("_touched", "touched")


def schema_statements() -> list[tuple[str, LiteralString]]:
    """(name, statement) pairs; every statement is idempotent (IF NOT EXISTS)."""
    out: list[tuple[str, LiteralString]] = [
        _unique(f"kenning_{label.lower()}_memory_id", _checked(label), "id") for label in NODE_TYPES
    ]
    out += [_unique(f"kenning_{label.lower()}_memory_{p}", label, p) for label, p in _KEYED]
    out.append(
        (
            "kenning_encounter_memory_locus",
            "CREATE INDEX kenning_encounter_memory_locus IF NOT EXISTS "
            "FOR (e:Encounter) ON (e._memory, e.locus)",
        )
    )
    out += _world_time_indexes()
    out += _touched_indexes()
    out.append((FULLTEXT_INDEX, fulltext_index()))
    out += dump_indexes()  # an export's paging order
    out += LEDGER_SCHEMA  # the infusion ledger's own labels, beside the memory
    out += MEANING_SCHEMA + BASELINE_SCHEMA  # derived data every replica shares
    out += INFUSION_LOG_SCHEMA  # the inspector's infusion log, beside the memory
    out += PAST_SCHEMA  # the record of the past as_of reads stand on
    out += classified.schema()  # retention and the classification gate (classified.py)
    return out


# Schema < 3 knew one memory per database: its keys were unique outright. These go once
# the nodes they covered carry ``_memory`` (MIGRATE_MEMORY_NAME).
LEGACY_CONSTRAINTS: Final = (
    *(f"kenning_{label.lower()}_id" for label in NODE_TYPES),
    "kenning_meta_key",
    "kenning_name_key",
    "kenning_source_key",
    *LEDGER_LEGACY_CONSTRAINTS,
)
LEGACY_INDEXES: Final = ("kenning_encounter_locus", *LEDGER_LEGACY_INDEXES)


def drop_legacy(name: str) -> LiteralString:
    """Dropping a constraint or index of schema < 3, by its name (those names only)."""
    if name in LEGACY_CONSTRAINTS:
        return cast(LiteralString, f"DROP CONSTRAINT {name} IF EXISTS")
    if name in LEGACY_INDEXES:
        return f"DROP INDEX {name} IF EXISTS"  # narrowed to the literal names above
    raise ValueError(f"not a legacy schema name: {name!r}")


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
# The kernel's row alone: from 2025.01 the server also lists its Cypher versions.
SERVER_VERSION: Final = (
    "CALL dbms.components() YIELD name, versions, edition WHERE name = 'Neo4j Kernel' "
    "RETURN name, versions[0] AS version, edition"
)
GDS_VERSION: Final = "RETURN gds.version() AS version"

# --- meta -------------------------------------------------------------------
META_INIT: Final = (
    "MERGE (c:Meta {_memory: $memory, key: 'clock'}) ON CREATE SET c.ival = 0 "
    "MERGE (v:Meta {_memory: $memory, key: 'schema_version'}) ON CREATE SET v.ival = $version "
    "MERGE (d:Meta {_memory: $memory, key: 'text_docs'}) ON CREATE SET d.ival = 0 "
    "MERGE (l:Meta {_memory: $memory, key: 'text_len'}) ON CREATE SET l.ival = 0 "
    "MERGE (f:Meta {_memory: $memory, key: 'text_format'}) ON CREATE SET f.ival = 0 "
    "MERGE (m:Meta {_memory: $memory, key: 'made'}) ON CREATE SET m.ival = $made "
    "WITH v, f, m, c, coalesce(c.shape, []) AS was "
    "SET c.shape = CASE WHEN all(i IN range(0, size(was) - 1) WHERE was[i] <= $shape[i]) "
    "THEN $shape ELSE was END "
    "RETURN v.ival, f.ival, m.ival, was"
)
# The newest shape of the servers that opened the memory, [schema version, text format]:
# META_INIT sets this server's on the clock as it opens, never lowering it, and answers
# the one it found. Every write reads it with its tick and refuses when a newer server
# has opened the memory since this one did (Neo4jTx._reserve).
SHAPE: Final = (SCHEMA_VERSION, TEXT_FORMAT)
META_GET: Final = "MATCH (m:Meta {_memory: $memory, key: $key}) RETURN m.ival"
META_GET_MANY: Final = "MATCH (m:Meta {_memory: $memory}) WHERE m.key IN $keys RETURN m.key, m.ival"
# Schema 1 -> 2: the memory label on the nodes made before it (in batches, autocommit).
MIGRATE_MEMORY_LABEL: Final = cast(
    LiteralString,
    f"MATCH (n:{alternatives(tuple(NODE_TYPES))}) WHERE NOT n:KenningMemory "
    "CALL (n) { SET n:KenningMemory } IN TRANSACTIONS OF 10000 ROWS",
)
# Schema < 3 -> 3: the one memory a database held before names is the one named
# "default". Sent as written (never namespaced): these nodes have no ``_memory`` yet.
# The version node without ``_memory`` is how such a store is recognised.
LEGACY_VERSION: Final = (
    "MATCH (v:Meta {key: 'schema_version'}) WHERE v._memory IS NULL RETURN v.ival"
)
MIGRATE_MEMORY_NAME: Final = cast(
    tuple[LiteralString, ...],
    (
        "MATCH (n:KenningMemory) WHERE n._memory IS NULL "
        "CALL (n) { SET n._memory = 'default' } IN TRANSACTIONS OF 10000 ROWS",
        # Only the keys a store of ours wrote: a Meta node of anyone else stays theirs.
        "MATCH (n:Meta) WHERE n._memory IS NULL AND n.key IN "
        "['clock', 'schema_version', 'text_docs', 'text_len', 'text_format', 'import'] "
        "SET n._memory = 'default'",
        *(
            f"MATCH (n:{label}) WHERE n._memory IS NULL "
            "CALL (n) { SET n._memory = 'default' } IN TRANSACTIONS OF 10000 ROWS"
            for label in ("NameKey", "SourceKey", *LEDGER_LABELS)
        ),
    ),
)
SCHEMA_VERSION_SET: Final = (
    "MATCH (v:Meta {_memory: $memory, key: 'schema_version'}) SET v.ival = $version"
)
# Plans kept once made. While a memory grows, the server plans a statement again whenever
# the data has outgrown the statistics its plan was made on (at most every 10 s,
# ``cypher.min_replan_interval``): 100-400 ms a time for a batch's statements, longer than
# the batch. The statements a write sends with every call seek by unique keys, ids and
# element ids only, so their plan is the same at any size; they keep the server's first
# plan (``replan=skip``; a schema change still clears it).
# tests/integration/test_neo4j_kept_plans.py plans each on an empty memory and finds no
# scan: a statement that would need one must not carry this prefix.
KEEP_PLAN: Final = "CYPHER replan=skip "

# Writing the clock node takes its exclusive lock, held to commit: every write
# transaction starts here, so writers from any process queue in tick order.
CLOCK_NEXT: Final = KEEP_PLAN + (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = c.ival + 1 "
    "RETURN [c.ival, coalesce(c.classes, []), coalesce(c.shape, [])]"
)
# The same, then the locus's open encounter (ops/spine.py ``open_encounter_of``): a write's
# first question asked with its reservation, after the lock (Neo4jTx.begin_write).
CLOCK_NEXT_OPEN_OF: Final = KEEP_PLAN + (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = c.ival + 1 WITH c "
    "OPTIONAL MATCH (e:Encounter:KenningMemory {locus: $locus}) "
    "WHERE e.sealed_at IS NULL AND e.dissolved_at IS NULL "
    "RETURN [c.ival, coalesce(c.classes, []), coalesce(c.shape, [])], properties(e) ORDER BY e.opened_tick DESC LIMIT 1"
)
# A batch write's first statement (Neo4jTx.begin_batch): the same, the heads of $names,
# and the head nodes of $named (the names a batch revises by). $names and $named hold '',
# which names nothing, first: never empty, their type is always a list of strings, so one
# plan serves every batch (see NODES_CREATE_ALL). A head node is sought by the element id
# its NameKey noted when the node was made (``eid``, set by NODES_CREATE_ALL), and only
# taken when it still carries the key's id: a key written otherwise (an import, a
# rename), or an element id the database gave to another node since, finds nothing, and
# the write reads that node by id instead. A branch per type here made this plan take
# half a second, made again every few seconds while the data grows.
BATCH_BEGIN: Final = KEEP_PLAN + (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = c.ival + 1 WITH c "
    "OPTIONAL MATCH (e:Encounter:KenningMemory {locus: $locus}) "
    "WHERE e.sealed_at IS NULL AND e.dissolved_at IS NULL "
    "WITH c, e ORDER BY e.opened_tick DESC LIMIT 1 "
    "CALL () { UNWIND $names AS nm MATCH (k:NameKey {_memory: $memory, name: nm}) "
    "RETURN collect([k.name, k.id]) AS held } "
    "CALL () { UNWIND $named AS nm MATCH (k:NameKey {_memory: $memory, name: nm}) "
    "CALL (k) { MATCH (n:KenningMemory) WHERE elementId(n) = k.eid AND k.id = n.id "
    "RETURN n } OPTIONAL MATCH (x:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "OPTIONAL MATCH (s:KenningMemory)-[:SUPERSEDES]->(n) "
    "RETURN collect([properties(n), x.id, x.locus, s.id, elementId(n)]) AS found } "
    "RETURN [c.ival, coalesce(c.classes, []), coalesce(c.shape, [])], properties(e), held, found"
)
CLOCK_UNDO: Final = (
    KEEP_PLAN + "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = c.ival - 1"
)

CLOCK_LOCK: Final = "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = c.ival"

# --- registries ---------------------------------------------------------------
NAME_GET: Final = "MATCH (k:NameKey {_memory: $memory, name: $name}) RETURN k.id"
NAMES_GET: Final = (
    "UNWIND $names AS nm MATCH (k:NameKey {_memory: $memory, name: nm}) RETURN k.name, k.id"
)
NAME_PUT: Final = (
    "UNWIND $rows AS r MERGE (k:NameKey {_memory: $memory, name: r.name}) SET k.id = r.id"
)
NAME_SET: Final = "MERGE (k:NameKey {_memory: $memory, name: $name}) SET k.id = $id"
NAMES_DROP: Final = (
    "UNWIND $rows AS r MATCH (k:NameKey {_memory: $memory, name: r.name}) WHERE k.id = r.id "
    "DELETE k"
)
SOURCE_GET: Final = "MATCH (k:SourceKey {_memory: $memory, key: $key}) RETURN k.id"
SOURCE_PUT: Final = (
    "UNWIND $rows AS r MERGE (k:SourceKey {_memory: $memory, key: r.key}) SET k.id = r.id"
)
SOURCE_SET: Final = "MERGE (k:SourceKey {_memory: $memory, key: $key}) SET k.id = $id"
SOURCE_DROP: Final = "MATCH (k:SourceKey {_memory: $memory, key: $key}) WHERE k.id = $id DELETE k"

# --- authored nodes -----------------------------------------------------------
NODES_GET: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    "OPTIONAL MATCH (s:{label}:KenningMemory)-[:SUPERSEDES]->(n) "
    "RETURN properties(n), e.id, e.locus, s.id, elementId(n)"
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
    "RETURN n.id ORDER BY n.tick DESC, coalesce(n.ord, 0) DESC LIMIT $limit"
)
RECENT_HEADS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE NOT EXISTS {{ MATCH (n)<-[:SUPERSEDES]-() }} "
    "RETURN n.id ORDER BY n.tick DESC, coalesce(n.ord, 0) DESC LIMIT $limit"
)
# The same heads as node rows (NODES_GET's columns; a head has no reviser), for a read
# with no node cache to answer a fetch of the ids: a write's re-entry, one round trip.
_HEAD_COLUMNS: Final = "RETURN properties(n), e.id, e.locus, null, elementId(n) "
_HEAD_ROWS: Final = (
    "WITH n ORDER BY n.tick DESC, coalesce(n.ord, 0) DESC LIMIT $limit "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
    + _HEAD_COLUMNS
    + "ORDER BY n.tick DESC, coalesce(n.ord, 0) DESC"
)
HEADS_BY_STATUS_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.status IN $statuses "
    "AND NOT EXISTS {{ MATCH (n)<-[:SUPERSEDES]-() }} " + _HEAD_ROWS
)
RECENT_HEADS_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE NOT EXISTS {{ MATCH (n)<-[:SUPERSEDES]-() }} "
    + _HEAD_ROWS
)


def heads_many(asks: list[tuple[str, bool]]) -> LiteralString:
    """Lists of heads in one statement: for each (type, by status) a branch of
    HEADS_BY_STATUS_NODES or RECENT_HEADS_NODES with its own $statuses<i> and $limit<i>,
    its rows led by its index i."""
    branches: list[str] = []
    for i, (label, by_status) in enumerate(asks):
        branch = render(HEADS_BY_STATUS_NODES if by_status else RECENT_HEADS_NODES, label=label)
        branch = branch.replace("$statuses", f"$statuses{i}").replace("$limit", f"$limit{i}")
        columns = (
            f"RETURN {i} AS ask, properties(n) AS p, e.id AS enc, e.locus AS locus, "
            "null AS successor, elementId(n) AS eid "
        )
        if _HEAD_COLUMNS not in branch:
            raise ValueError("internal: a head branch lost its columns")
        branches.append(branch.replace(_HEAD_COLUMNS, columns))
    return cast(LiteralString, " UNION ALL ".join(branches))


NODES_SET_STATUS: Final = (
    "UNWIND $rows AS r MATCH (n:{label}:KenningMemory {{id: r.id}}) SET n.status = r.status"
)
# A type's status moves with their record of the past ($past: the rows of PAST_TEXT's
# statuses_put) in one statement: the record first, in a subquery that leaves the rows be.
NODES_SET_STATUS_KEPT: Final = (
    "CALL () {{ "
    + past.PAST_TEXT.statuses_put.replace("$rows", "$past").replace("{", "{{").replace("}", "}}")
    + " }} "
    + NODES_SET_STATUS
)
NODES_DELETE: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids WITH n, coalesce(n._len, 0) AS tokens DETACH DELETE n "
    "WITH count(*) AS docs, sum(tokens) AS tokens "
    "MATCH (d:Meta {{_memory: $memory, key: 'text_docs'}}) MATCH (l:Meta {{_memory: $memory, key: 'text_len'}}) "
    "SET d.ival = d.ival - docs, l.ival = l.ival - tokens"
)

# --- authored edges -----------------------------------------------------------
# A link is a use of both its ends (memory/activation.py): their used_at follows.
EDGES_CREATE: Final = KEEP_PLAN + (
    "UNWIND $rows AS r MATCH (a:{source}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{target}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:{rel} {{tick: $tick, encounter: r.encounter, created_at: $at}}]->(b) "
    "SET a.used_at = $at, b.used_at = $at, a._touched = $tick, b._touched = $tick, "
    "a.used_marks = null, b.used_marks = null "
    + classified.UNUSED_AB
    + classified.MOVED_BY_SOURCE
    + "WITH count(*) AS made OPTIONAL MATCH (e:Encounter:KenningMemory {{id: $touch}}) "
    "SET e.last_activity_at = $at"
)
# A node's moved labels made again from the relations into it that stand (classified.py),
# after one of them went: {label} its type; $ids the nodes.
MOVED_RELABEL: Final = (
    "UNWIND $ids AS id MATCH (b:{label}:KenningMemory {{id: id}}) "
    + cast(LiteralString, "REMOVE b:" + ":".join(sorted(classified.MOVED_LABELS)) + " ")
    + "WITH b OPTIONAL MATCH (a:KenningMemory)-[r]->(b) "
    "WHERE type(r) IN ['CHALLENGES', 'RESOLVES', 'SUPPORTS'] "
    + cast(
        LiteralString,
        f"WITH b, collect([x IN labels(a) WHERE x STARTS WITH '{classified.CLASS_LABEL_PREFIX}' "
        f"| '{classified.MOVED_LABEL_PREFIX}' + substring(x, {len(classified.CLASS_LABEL_PREFIX)})]) AS ls ",
    )
    + "SET b:$(reduce(acc = [], l IN ls | acc + l))"
)
EDGE_CREATE_SUPERSEDES: Final = KEEP_PLAN + (
    "MATCH (a:{source}:KenningMemory {{id: $s}}) MATCH (b:{target}:KenningMemory {{id: $t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: $tick, encounter: $encounter, created_at: $at, "
    "revision_why: $why}}]->(b) SET b._touched = $tick"
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
EDGES_WRITTEN_IN: Final = cast(
    LiteralString,
    f"MATCH (a:KenningMemory)-[r:{alternatives(AUTHORED_RELATION_TYPES)}]->(b:KenningMemory) "
    "WHERE r.encounter IN $encounters "
    "RETURN a.id, b.id, type(r), r.tick, r.encounter, r.revision_why",
)
PREDECESSORS: Final = "MATCH (n:{label}:KenningMemory {{id: $id}})-[r:SUPERSEDES]->(p:{label}:KenningMemory) RETURN p.id, r.revision_why"
PREDECESSORS_MANY: Final = (
    "MATCH (n:{label}:KenningMemory)-[:SUPERSEDES]->(p:{label}:KenningMemory) "
    "WHERE n.id IN $ids RETURN n.id, p.id"
)
# A chain's walks: DISTINCT lets the planner walk breadth first, each version once (a
# walk that keeps every path costs the square of the chain's length).
CHAIN_OLDER: Final = (
    "MATCH (n:{label}:KenningMemory {{id: $id}})-[:SUPERSEDES*1..{hops}]->(p:{label}:KenningMemory) "
    "WITH DISTINCT p MATCH (s:{label}:KenningMemory)-[e:SUPERSEDES]->(p) "
    "OPTIONAL MATCH (enc:Encounter:KenningMemory)-[:RECORDED]->(p) "
    "RETURN properties(p), enc.id, enc.locus, s.id, s.id AS other, e.tick, e.encounter, e.revision_why"
)
CHAIN_NEWER: Final = (
    "MATCH (n:{label}:KenningMemory {{id: $id}})<-[:SUPERSEDES*1..{hops}]-(q:{label}:KenningMemory) "
    "WITH DISTINCT q MATCH (q)-[e:SUPERSEDES]->(t:{label}:KenningMemory) "
    "OPTIONAL MATCH (enc:Encounter:KenningMemory)-[:RECORDED]->(q) "
    "OPTIONAL MATCH (u:{label}:KenningMemory)-[:SUPERSEDES]->(q) "
    "RETURN properties(q), enc.id, enc.locus, u.id, t.id, e.tick, e.encounter, e.revision_why"
)
CHAIN_STEPS: Final = (
    "MATCH (n:{label}:KenningMemory {{id: $id}}) "
    "RETURN COUNT {{ (n)-[:SUPERSEDES]->(:{label}:KenningMemory) }}, "
    "COUNT {{ (n)<-[:SUPERSEDES]-(:{label}:KenningMemory) }}"
)
CHAIN_ENDS: Final = (
    "MATCH (n:{label}:KenningMemory {{id: $id}}) "
    "OPTIONAL MATCH (n)-[:SUPERSEDES*1..{hops}]->(p:{label}:KenningMemory) "
    "WITH n, count(DISTINCT p) AS older "
    "OPTIONAL MATCH (n)<-[:SUPERSEDES*1..{hops}]-(q:{label}:KenningMemory) "
    "WITH n, older, count(DISTINCT q) AS newer "
    "OPTIONAL MATCH (n)<-[:SUPERSEDES*1..{hops}]-(h:{label}:KenningMemory) "
    "WHERE NOT EXISTS {{ MATCH (h)<-[:SUPERSEDES]-() }} "
    "RETURN older, newer, h.id"
)


# --- spine ----------------------------------------------------------------------
LOCUS_GET: Final = "MATCH (l:Locus:KenningMemory {id: $id}) RETURN l.id"
LOCUS_CREATE: Final = "CREATE (:Locus:KenningMemory {id: $id, created_at: $at, tick: $tick})"
# Both at once: the locus made when absent, and whether it was (ops/spine.py ensure_locus).
LOCUS_ENSURE: Final = (
    "OPTIONAL MATCH (o:Locus:KenningMemory {id: $id}) "
    "FOREACH (_ IN CASE WHEN o IS NULL THEN [1] ELSE [] END | "
    "CREATE (:Locus:KenningMemory {id: $id, created_at: $at, tick: $tick})) "
    "RETURN o IS NULL"
)
LOCI: Final = "MATCH (l:Locus:KenningMemory) RETURN l.id ORDER BY l.tick"
ENC_CREATE: Final = (
    "MATCH (l:Locus:KenningMemory {id: $locus}) "
    "CREATE (l)-[:OPENED {tick: $tick}]->(:Encounter:KenningMemory {id: $name, locus: $locus, "
    "purpose: $purpose, opened_tick: $tick, opened_at: $at, last_activity_at: $at, "
    "tombstones: 0})"
)
# ENC_CREATE and its link in one statement: after $previous (the locus's last encounter)
# or else $anchor (the memory's latest); either may be null.
ENC_CREATE_LINKED: Final = (
    "MATCH (l:Locus:KenningMemory {id: $locus}) "
    "CREATE (l)-[:OPENED {tick: $tick}]->(e:Encounter:KenningMemory {id: $name, locus: $locus, "
    "purpose: $purpose, opened_tick: $tick, opened_at: $at, last_activity_at: $at, "
    "tombstones: 0}) "
    "WITH e OPTIONAL MATCH (p:Encounter:KenningMemory {id: $previous}) "
    "FOREACH (_ IN CASE WHEN p IS NULL THEN [] ELSE [1] END | "
    "CREATE (p)-[:NEXT_ENCOUNTER {tick: $tick}]->(e)) "
    "WITH e OPTIONAL MATCH (a:Encounter:KenningMemory {id: $anchor}) WHERE $previous IS NULL "
    "FOREACH (_ IN CASE WHEN a IS NULL THEN [] ELSE [1] END | "
    "CREATE (e)-[:INSTANTIATED_AFTER {tick: $tick}]->(a))"
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
    "RETURN properties(e) ORDER BY e.opened_tick DESC SKIP $offset LIMIT $limit"
)
# ENC_LIST twice in one statement, for a re-entry (ops/spine.py reentry_encounters).
ENC_REENTRY: Final = (
    "CALL () { MATCH (e:Encounter:KenningMemory) WITH e ORDER BY e.opened_tick DESC "
    "LIMIT $recent RETURN collect(properties(e)) AS recent } "
    "CALL () { MATCH (e:Encounter:KenningMemory) WHERE e.sealed_at IS NULL "
    "AND e.locus <> $exclude WITH e ORDER BY e.opened_tick DESC LIMIT $unsealed "
    "RETURN collect(properties(e)) AS unsealed } "
    "RETURN recent, unsealed"
)
# A seal is work at its own moment: it does not stretch the span (memory/activation.py).
ENC_SPANS: Final = (
    "MATCH (e:Encounter:KenningMemory) WITH e.opened_at AS a, coalesce(e.last_activity_at, e.opened_at) AS b, "
    "e.sealed_at AS c WHERE b >= $since OR c >= $since RETURN a, b, c"
)
ENC_SPANS_HIDING: Final = (
    "MATCH (e:Encounter:KenningMemory) WHERE NOT e.locus IN $loci "
    "WITH e.opened_at AS a, coalesce(e.last_activity_at, e.opened_at) AS b, "
    "e.sealed_at AS c WHERE b >= $since OR c >= $since RETURN a, b, c"
)
ENC_SEAL: Final = (
    "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.sealed_tick = $tick, e.sealed_at = $at, "
    "e.summary = $summary"
)
ENC_DISSOLVE: Final = (
    "MATCH (e:Encounter:KenningMemory {id: $name}) "
    "SET e.dissolved_tick = $tick, e.dissolved_at = $at"
)
ENC_TOUCH: Final = (
    KEEP_PLAN + "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.last_activity_at = $at"
)
ENC_TOMBSTONES: Final = "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.tombstones = coalesce(e.tombstones, 0) + $count"
# $labels: the classes the marks name (classified.py ``USED_LABEL_PREFIX``), for read_cypher.
ENC_TOMBSTONES_MARKED: Final = (
    "MATCH (e:Encounter:KenningMemory {id: $name}) SET e.tombstones_marked = $marks, e:$($labels)"
)
ENC_TOUCHING: Final = (
    "MATCH (e:Encounter:KenningMemory)-[:RECORDED|CONFIRMED|CONSULTED|PINNED]->"
    "(n:{label}:KenningMemory) WHERE n.id IN $ids RETURN DISTINCT e.id"
)
ENC_WITHDRAW: Final = (
    "MATCH (e:Encounter:KenningMemory) WHERE e.id IN $names SET e.purpose = $text, "
    "e.summary = CASE WHEN e.summary IS NULL THEN NULL ELSE $text END"
)
# Every erasure's transaction counts itself here: a server serving the memory beside the
# operator's CLI sees the count move and drops what it cached of node text (infusion/select.py).
ERASURES_COUNT: Final = (
    "MERGE (m:Meta {_memory: $memory, key: 'erasures'}) "
    "ON CREATE SET m.ival = 1 ON MATCH SET m.ival = m.ival + 1"
)
# Every write that deletes a node (an undo, an erasure, an operator's deletion) or empties
# the memory counts itself here: a node cache in another process then starts again.
# The count carries the clock as the deleting write left it (``tick``): a node cache
# trusts nothing it read while that write may still have been being applied.
DELETIONS_COUNT: Final = (
    "OPTIONAL MATCH (c:Meta {_memory: $memory, key: 'clock'}) "
    "MERGE (m:Meta {_memory: $memory, key: 'deletions'}) "
    "ON CREATE SET m.ival = 1 ON MATCH SET m.ival = m.ival + 1 "
    "SET m.tick = c.ival"
)
# The classes the memory's nodes have carried, kept on its clock (so a writer, who holds
# the clock, sets them in order, and every read's synchronisation reads them): a write
# adds those of the nodes it makes ($classes), and nothing takes one away, so a class a
# deleted node carried still counts for the record of the past.
CLASSES_NOTE: Final = (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) "
    "SET c.classes = [x IN $all WHERE x IN coalesce(c.classes, []) OR x IN $classes]"
)
# Schema < 8 -> 8: the classes of the nodes made before the clock carried them, standing
# or in the record of the past (a deleted node's body names its classification; a body
# that names one is taken to carry every class its text holds: more, never fewer).
CLASSES_MIGRATE: Final = (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) "
    "CALL (c) { MATCH (n:KenningMemory) WHERE n.classification IS NOT NULL "
    "RETURN collect(DISTINCT n.classification) AS live } "
    "CALL (c) { MATCH (p:KenningPast {_memory: $memory, kind: 'node'}) "
    "WHERE p.body CONTAINS 'classification' RETURN collect(p.body) AS gone } "
    "SET c.classes = [x IN $all WHERE x IN coalesce(c.classes, []) "
    "OR any(m IN live WHERE x IN split(m, ',')) OR any(b IN gone WHERE b CONTAINS x)]"
)
# The same, read alone, with the clock they stand at.
CLASSES_USED: Final = (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) RETURN c.ival, coalesce(c.classes, [])"
)
# A write marks the stored nodes it changed (status, successor, use, pin) with its tick;
# the statements that link, revise, confirm, consult and pin mark theirs themselves.
NODES_TOUCH: Final = (
    KEEP_PLAN + "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids SET n._touched = $tick"
)


def _synchronisation() -> str:
    # The clock is read first, and a writer holds the clock's lock until it commits:
    # a change this statement does not see has a tick above the clock it returns, or
    # that tick itself while its write is being applied ($since is one below the last
    # synchronisation's clock, so the next asks for that tick again: nodecache.py). Each
    # branch seeks its index (hinted: for a type with few nodes touched the planner
    # would scan every touched node of it instead).
    seeks = " UNION ALL ".join(
        f"MATCH (n:{label}:KenningMemory) USING INDEX n:{label}(_memory, _touched) "
        "WHERE n._touched > $since RETURN n.id AS id"
        for label in AUTHORED_NODE_TYPES
    )
    return (
        "MATCH (c:Meta {_memory: $memory, key: 'clock'}) "
        "OPTIONAL MATCH (x:Meta {_memory: $memory, key: 'erasures'}) "
        "OPTIONAL MATCH (d:Meta {_memory: $memory, key: 'deletions'}) "
        "OPTIONAL MATCH (t:Meta {_memory: $memory, key: 'text_docs'}) "
        "OPTIONAL MATCH (l:Meta {_memory: $memory, key: 'text_len'}) "
        "OPTIONAL MATCH (m:Meta {_memory: $memory, key: 'made'}) "
        # the memory's identity rides with the deletions: both say what the cache may keep
        "WITH c.ival AS clock, coalesce(x.ival, 0) AS erasures, "
        # and the classes its nodes have carried (memory/gates.py asks before its work)
        "[coalesce(d.ival, 0), d.tick, m.ival, coalesce(c.classes, [])] AS deletions, "
        "coalesce(t.ival, 0) AS docs, coalesce(l.ival, 0) AS tokens, "
        # at most $over ids: more than the cache would drop one by one empties it instead
        f"COLLECT {{ {seeks} }}[0..$over] AS touched "
    )


# A node cache's synchronisation (nodecache.py): the clock, the erasure and deletion
# counts, the lexical counters (TEXT_COUNTERS's, which a read then need not ask again),
# and the ids of nodes changed after the tick $since.
NODES_TOUCHED_SINCE: Final = cast(
    LiteralString, _synchronisation() + "RETURN clock, erasures, deletions, docs, tokens, touched"
)

# The same, then NAMES_GET's pairs: a lookup by name, a read's first statement, takes the
# synchronisation its node reads would ask next (tx.py head_ids_by_names).
NAMES_GET_SYNCED: Final = cast(
    LiteralString,
    _synchronisation()
    + "CALL () { UNWIND $names AS nm MATCH (k:NameKey {_memory: $memory, name: nm}) "
    "RETURN collect([k.name, k.id]) AS held } "
    "RETURN clock, erasures, deletions, docs, tokens, touched, held",
)

SPINE: Final = "MATCH (a:Encounter:KenningMemory)-[r]->(b:Encounter:KenningMemory) RETURN a.id, type(r), b.id ORDER BY a.opened_tick"
ENC_RECORDED: Final = "MATCH (:Encounter:KenningMemory {id: $name})-[:RECORDED]->(n) RETURN n.id"
# One row per encounter, its members listed in order (tx.py reads it): a row per member
# took four times as long to hand over (900 members of 12 encounters at 100k nodes).
ENC_MEMBERS: Final = (
    "MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) WHERE e.id IN $names "
    "WITH e, n ORDER BY n.tick, coalesce(n.ord, 0) RETURN e.id, collect(n.id)"
)
ENC_NODES: Final = (
    "MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) WHERE e.id IN $names "
    "RETURN n.id ORDER BY n.tick DESC, coalesce(n.ord, 0) DESC LIMIT $limit"
)

# --- lexical search ----------------------------------------------------------------
# The procedure yields hits best first and the filter keeps that order, so LIMIT can
# stop early; an ORDER BY here would score and sort every hit (5x slower at 10k nodes).
# One row: the clock and the classes the memory's nodes have carried (CLASSES_NOTE),
# which the read gate asks of the hits' statuses next, and the hits in order.
_FULLTEXT_FILTER: Final = (
    "MATCH (c:Meta {_memory: $memory, key: 'clock'}) "
    "CALL () { CALL db.index.fulltext.queryNodes($index, $query) YIELD node, score "
    "WHERE node:KenningMemory AND ($types IS NULL OR any(l IN labels(node) WHERE l IN $types)) "
    "AND none(l IN labels(node) WHERE l IN $hidden) "
    "AND ($heads_only = false OR NOT EXISTS { MATCH (node)<-[:SUPERSEDES]-() }) "
)
_FULLTEXT_KEPT: Final = (
    "RETURN node.id AS id, score LIMIT $limit } "
    "RETURN [c.ival, coalesce(c.classes, [])], collect([id, score])"
)
FULLTEXT_QUERY: Final = _FULLTEXT_FILTER + _FULLTEXT_KEPT
# Whether a node was recorded in a session a reader hides ($loci: their ids). Its own
# text, so a reader hiding nothing sends the statements it always sent.
_IN_HIDDEN_LOCUS: Final = (
    "EXISTS { MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(node) WHERE e.locus IN $loci } "
)
# FULLTEXT_QUERY for a reader hiding loci: their nodes take no candidate's place.
FULLTEXT_QUERY_HIDING: Final = _FULLTEXT_FILTER + "AND NOT " + _IN_HIDDEN_LOCUS + _FULLTEXT_KEPT


# The same search for heads of every type, each hit brought with its node row and its
# recording encounter, so the read that follows (infusion's) need not fetch them; and
# first the node cache's synchronisation (NODES_TOUCHED_SINCE's columns: $since is a tick
# no clock reaches when the read has synchronised already or has no cache), whose clock
# and erasure count are also a search's present (memory/activation.py WorkTime): two
# round trips less.
#
# The index is asked for its best $fetch hits only (it then keeps the top of them,
# not every hit in order: a fifth of the query at 100k nodes). The hits it gives are
# filtered (another memory's, a withheld class's ($hidden: their labels), a superseded
# node) and the best $limit kept; the one row
# says how many it gave (``seen``): as many as $fetch with fewer than $limit kept, the
# caller asks again for more (text.py search_remembered).
#
# The same statement counts what the caller's statistics need and this process has not
# counted yet (text.py stats), so that a search is still one statement: the document
# frequencies of $count's terms (as TEXT_DOC_FREQS_SHOWN counts them; none asked, none
# counted) and, for a gated caller, the withheld classes' documents and tokens (as
# withheld_text_totals counts them).
def _fulltext_nodes(
    types: bool, withheld: frozenset[str], hiding: bool, counts: bool
) -> LiteralString:
    of_types = "AND any(l IN labels(node) WHERE l IN $types) " if types else ""
    unhidden = f"AND NOT {_IN_HIDDEN_LOCUS}" if hiding else ""
    held_back = "[0, 0] AS held_back "
    counted = counts and bool(withheld or hiding)
    if counted:
        scans = _unseen_scans(withheld, hiding)
        # Counted unless this process counted them at the moment the statement reads
        # ($counted_at: clock, erasures, deletions; null when it has none): a list of the
        # one count, or empty. The scan is as large as what is held back, which hidden
        # loci can make a large share of the memory.
        held_back = (
            "CALL (clock, erasures, deletions) { WITH 1 AS go "
            "WHERE $counted_at IS NULL OR [clock, erasures, deletions[0]] <> $counted_at "
            f"CALL () {{ CALL () {{ {scans} }} "
            "RETURN [count(n), coalesce(sum(n._len), 0)] AS totals } "
            "RETURN collect(totals) AS held_back } "
        )
    statement = _synchronisation() + (
        "CALL () { CALL db.index.fulltext.queryNodes($index, $query, {limit: $fetch}) "
        "YIELD node, score RETURN collect([node, score]) AS found } "
        "CALL (found) { UNWIND found AS hit WITH hit[0] AS node, hit[1] AS score "
        f"WHERE node:KenningMemory {of_types}"
        "AND none(l IN labels(node) WHERE l IN $hidden) "
        f"{unhidden}"
        "AND NOT EXISTS { MATCH (node)<-[:SUPERSEDES]-() } "
        "WITH node, score LIMIT $limit "
        "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(node) "
        "RETURN collect([node.id, score, [l IN labels(node) WHERE l IN $kinds][0], "
        "properties(node), e.id, e.locus, properties(e)]) AS hits } "
        "CALL () { UNWIND $count AS t CALL (t) { "
        "CALL db.index.fulltext.queryNodes($index, t.query) YIELD node WHERE node:KenningMemory "
        "AND none(l IN labels(node) WHERE l IN $hidden) "
        f"{unhidden}"
        "RETURN count(node) AS df } "
        "RETURN collect([t.term, df]) AS dfs } "
        + (held_back if counted else "WITH *, " + held_back)
        + "RETURN clock, erasures, deletions, docs, tokens, touched, size(found), hits, dfs, "
        "held_back"
    )
    return cast(LiteralString, statement)


@functools.cache
def fulltext_query_nodes(
    types: bool, withheld: frozenset[str], hiding: bool = False, counts: bool = True
) -> LiteralString:
    """The search's statement (above): of some types only ($types) or of every type, for
    a caller who may not see ``withheld`` (classes of the closed vocabulary: labels are
    no parameters) and, ``hiding``, the sessions $loci. One text per gate, so the server's
    plan cache keeps each. ``counts``: whether what is held back is counted (a caller
    keeping no statistics, the infusion's search, need not scan it)."""
    return _fulltext_nodes(types, withheld, hiding, counts)


# With the erasure count (ERASURES_COUNT): frequencies counted before an erasure go.
TEXT_COUNTERS: Final = (
    "MATCH (d:Meta {_memory: $memory, key: 'text_docs'}) "
    "MATCH (l:Meta {_memory: $memory, key: 'text_len'}) "
    "OPTIONAL MATCH (x:Meta {_memory: $memory, key: 'erasures'}) "
    "RETURN d.ival, l.ival, coalesce(x.ival, 0)"
)
# Document frequency of each term: how many nodes the index finds for it alone.
TEXT_DOC_FREQS: Final = (
    "UNWIND $terms AS t CALL (t) { "
    "CALL db.index.fulltext.queryNodes($index, t.query) YIELD node WHERE node:KenningMemory "
    "RETURN count(node) AS df } "
    "RETURN t.term, df"
)
# The same, less the nodes of the withheld classes ($hidden: their labels, classified.py).
_TEXT_DOC_FREQS_SHOWN: Final = (
    "UNWIND $terms AS t CALL (t) { "
    "CALL db.index.fulltext.queryNodes($index, t.query) YIELD node WHERE node:KenningMemory "
    "AND none(l IN labels(node) WHERE l IN $hidden) "
)
_TEXT_DOC_FREQS_COUNT: Final = "RETURN count(node) AS df } RETURN t.term, df"
TEXT_DOC_FREQS_SHOWN: Final = _TEXT_DOC_FREQS_SHOWN + _TEXT_DOC_FREQS_COUNT
# The same, less the nodes of the sessions a reader hides ($loci) too.
TEXT_DOC_FREQS_UNHIDDEN: Final = (
    _TEXT_DOC_FREQS_SHOWN + "AND NOT " + _IN_HIDDEN_LOCUS + _TEXT_DOC_FREQS_COUNT
)


def _unseen_scans(withheld: frozenset[str], hiding: bool) -> str:
    """A union whose rows are the nodes (``n``) a caller may not see, each once: those of
    each withheld class (a scan of its label: a classified node is rare) and, ``hiding``,
    those recorded in the sessions $loci (through their encounters)."""
    scans = [
        f"MATCH (n:{classified.class_label(c)}:KenningMemory) RETURN n" for c in sorted(withheld)
    ]
    if hiding:
        scans.append(
            "MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) WHERE e.locus IN $loci RETURN n"
        )
    return " UNION ".join(scans)


def withheld_text_totals(withheld: frozenset[str], hiding: bool = False) -> LiteralString:
    """How many documents, of how many tokens, carry a withheld class or (``hiding``)
    were recorded in a session of $loci, each node once. Classes from the closed
    vocabulary only (labels are no parameters)."""
    scans = _unseen_scans(withheld, hiding)
    return cast(LiteralString, f"CALL () {{ {scans} }} RETURN count(n), sum(n._len)")


FULLTEXT_SHOW: Final = (
    "SHOW FULLTEXT INDEXES YIELD name, labelsOrTypes, properties, options "
    "WHERE name = $name RETURN labelsOrTypes, properties, options"
)
FULLTEXT_DROP: Final = "DROP INDEX kenning_text IF EXISTS"
# Deriving every node's tokens again (a new store, or a changed tokenizer).
TEXT_SOURCES: Final = "MATCH (n:{label}:KenningMemory) RETURN n.id, n.name, n.description"
TEXT_SET: Final = "UNWIND $rows AS r MATCH (n:{label}:KenningMemory {{id: r.id}}) SET n._terms = r._terms, n._len = r._len"
TEXT_RESET: Final = (
    "MATCH (d:Meta {_memory: $memory, key: 'text_docs'}) MATCH (l:Meta {_memory: $memory, key: 'text_len'}) "
    "MATCH (f:Meta {_memory: $memory, key: 'text_format'}) SET d.ival = $docs, l.ival = $tokens, f.ival = $format"
)

# --- read_cypher -----------------------------------------------------------------------
EXPLAIN_PREFIX: Final = "EXPLAIN "


# --- reads of many ids across types, in one round trip (tx.py) --------------------------
def _own_ids(label: str) -> str:
    """The ids of ``$ids`` that name a node of this type (its prefix): every branch of a
    union is given the one list, so the plan is one whatever the mix of types, but each
    seeks only its own ids (given every id, each branch sought them all: a third of a
    node read's time at 100k nodes)."""
    prefix = NODE_TYPES[_checked(label)].id_prefix
    if not prefix.isalpha() or not prefix.islower():
        raise ValueError(f"unexpected id prefix {prefix!r} of {label}")
    return f"[i IN $ids WHERE i STARTS WITH '{prefix}_']"


# One branch per authored type, each seeking its own index with its own ids (``_own_ids``;
# a type with none costs an empty seek): a statement per read instead of one per type.
# Infusion reads the edges of ids of every type per prompt.
def _each_type(branch: str, tail: str) -> LiteralString:
    """A union of ``branch`` for every authored type (``{label}``; ``{ids}``: that type's
    own ids of $ids), then ``tail``."""
    branches = [
        branch.format(label=_checked(label), ids=_own_ids(label)) for label in AUTHORED_NODE_TYPES
    ]
    return _union(branches, tail)


def _union(branches: list[str], tail: str) -> LiteralString:
    return cast(LiteralString, f"CALL () {{ {' UNION ALL '.join(branches)} }} {tail}")


EDGES_OUT_EACH: Final = _each_type(
    "MATCH (n:{label}:KenningMemory)-[r]->(m) WHERE n.id IN {ids} AND type(r) IN $rels "
    "RETURN n.id AS s, m.id AS t, type(r) AS rel, r.tick AS tick, r.encounter AS enc, "
    "r.revision_why AS why",
    "RETURN s, t, rel, tick, enc, why",
)
EDGES_IN_EACH: Final = _each_type(
    "MATCH (n:{label}:KenningMemory)<-[r]-(m) WHERE n.id IN {ids} AND type(r) IN $rels "
    "RETURN m.id AS s, n.id AS t, type(r) AS rel, r.tick AS tick, r.encounter AS enc, "
    "r.revision_why AS why",
    "RETURN s, t, rel, tick, enc, why",
)
# Both directions in one round trip, for a neighbourhood: an edge between two of the ids
# comes back once from each end, as the two statements above give it.
EDGES_BOTH: Final = (  # {label}: ids of that one type
    "MATCH (n:{label}:KenningMemory)-[r]->(m) WHERE n.id IN $ids AND type(r) IN $rels "
    "RETURN n.id AS s, m.id AS t, type(r) AS rel, r.tick AS tick, r.encounter AS enc, "
    "r.revision_why AS why UNION ALL "
    "MATCH (n:{label}:KenningMemory)<-[r]-(m) WHERE n.id IN $ids AND type(r) IN $rels "
    "RETURN m.id AS s, n.id AS t, type(r) AS rel, r.tick AS tick, r.encounter AS enc, "
    "r.revision_why AS why"
)
EDGES_BOTH_EACH: Final = _each_type(
    EDGES_BOTH.replace("$ids", "{ids}"), "RETURN s, t, rel, tick, enc, why"
)


# The record of the past's reads that ask every authored type (store/ops/past.py).
NODES_NAMED_EACH: Final = _each_type(
    "MATCH (n:{label}:KenningMemory {{name: $name}}) RETURN n, '{label}' AS label",
    past.NODE_ROW_MATCH + "RETURN label, " + past.NODE_ROW_COLUMNS,
)
TICK_AT_EACH: Final = _union(
    [
        *past.PAST_TEXT.tick_at_steps,
        *(past.PAST_TEXT.tick_at_nodes.format(label=label) for label in AUTHORED_NODE_TYPES),
        past.PAST_TEXT.tick_at_edges,
    ],
    "RETURN latest, first_after",
)
STAMP_AT_EACH: Final = _union(
    [
        *past.PAST_TEXT.stamp_at_steps,
        *(past.PAST_TEXT.stamp_at_nodes.format(label=label) for label in AUTHORED_NODE_TYPES),
        past.PAST_TEXT.stamp_at_edges,
    ],
    "RETURN max(stamp)",
)


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
COUNT_PERSONS: Final = "MATCH (p:Person:KenningMemory) RETURN count(p)"
COUNT_CLAIMS: Final = "MATCH (:KenningMemory)-[r:REFERENT_CLAIM]->(:KenningMemory) RETURN count(r)"
COUNT_CONFIRMATIONS: Final = (
    "MATCH (:Encounter:KenningMemory)-[r:CONFIRMED]->(:KenningMemory) RETURN count(r)"
)
COUNT_CONSULTATIONS: Final = (
    "MATCH (:Encounter:KenningMemory)-[r:CONSULTED]->(:KenningMemory) RETURN count(r)"
)
COUNT_PINS: Final = "MATCH (:Encounter:KenningMemory)-[r:PINNED]->(:KenningMemory) RETURN count(r)"
COUNT_PAST: Final = "MATCH (p:KenningPast {_memory: $memory, kind: $kind}) RETURN count(p)"
DUMP_PERSONS: Final = (
    "MATCH (p:Person:KenningMemory) WHERE p.id > $after "
    "RETURN p.id, p.name, p.director_key, p.tick, p.created_at ORDER BY p.id LIMIT $limit"
)
DUMP_LOCI: Final = (
    "MATCH (l:Locus:KenningMemory) WHERE l.id > $after WITH l ORDER BY l.id LIMIT $limit "
    "OPTIONAL MATCH (l)-[d:DIRECTED_BY]->(p:Person:KenningMemory) "
    "RETURN l.id, l.tick, l.created_at, p.id, d.tick"
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
# Keyset paging in creation order; nodes older than the ord property read it as 0. The
# (_memory, tick) index (DUMP_INDEXES) hands the nodes over in tick order from the page's
# first tick, so a page reads about its own rows and sorts only within a tick: an export
# is linear, not a sort of the whole type per page. (Ticks start at 1: the first page
# asks for tick 0 onwards.)
DUMP_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.tick >= $tick "
    "WITH n, coalesce(n.ord, 0) AS o ORDER BY n._memory, n.tick, o, n.id "
    "WHERE n.tick > $tick OR o > $ord OR (o = $ord AND n.id > $id) "
    "WITH n, o LIMIT $limit "
    "OPTIONAL MATCH (e:Encounter:KenningMemory)-[r:RECORDED]->(n) "
    "RETURN properties(n), e.id, e.locus, null, r.tick"
)


def dump_indexes() -> list[tuple[str, LiteralString]]:
    """A range index on (_memory, tick) per authored type: what DUMP_NODES pages by."""
    return _per_type_indexes("tick", "tick")


DUMP_NODE_IDS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id > $after RETURN n.id ORDER BY n.id LIMIT $limit"
)
DUMP_RELATIONS: Final = (
    "MATCH (n:{label}:KenningMemory)-[r]->(m:KenningMemory) WHERE n.id IN $ids "
    "AND type(r) IN $rels "
    "RETURN n.id, m.id, type(r), r.tick, r.encounter, r.revision_why, r.created_at"
)
DUMP_CLAIMS: Final = (
    "MATCH (a:{label}:KenningMemory)-[r:REFERENT_CLAIM]->(b:KenningMemory) WHERE a.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
DUMP_CONFIRMATIONS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "MATCH (e:Encounter:KenningMemory)-[r:CONFIRMED]->(n) "
    "RETURN n.id, e.id, r.tick, r.created_at, r.why"
)
DUMP_CONSULTATIONS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "MATCH (e:Encounter:KenningMemory)-[r:CONSULTED]->(n) "
    "RETURN n.id, e.id, r.tick, r.created_at"
)
DUMP_PINS: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "MATCH (e:Encounter:KenningMemory)-[r:PINNED]->(n) "
    "RETURN n.id, e.id, r.tick, r.created_at, r.why, r.state"
)
DUMP_PAST: Final = (
    "MATCH (p:KenningPast {_memory: $memory, kind: $kind}) WHERE p.key > $after "
    "RETURN p.key, p.node, p.source, p.target, p.rel, p.tick, p.ended, p.seq, p.at, "
    "p.moved_from, p.moved_to, p.encounter, p.why, p.body ORDER BY p.key LIMIT $limit"
)
LOAD_PERSONS: Final = (
    "UNWIND $rows AS r CREATE (p:Person:KenningMemory {id: r.id}) "
    "SET p.name = r.name, p.director_key = r.key, p.tick = r.tick, p.created_at = r.created_at"
)
LOAD_LOCI: Final = (
    "UNWIND $rows AS r "
    "CREATE (:Locus:KenningMemory {id: r.id, created_at: r.created_at, tick: r.tick})"
)
LOAD_DIRECTED: Final = (
    "UNWIND $rows AS r MATCH (l:Locus:KenningMemory {id: r.locus}) "
    "MATCH (p:Person:KenningMemory {id: r.person}) CREATE (l)-[:DIRECTED_BY {tick: r.tick}]->(p)"
)
# SET from the map: a property that is null is simply not stored, as on a live write.
LOAD_ENCOUNTERS: Final = "UNWIND $rows AS r CREATE (e:Encounter:KenningMemory) SET e += r"
# $rows' labels: the classes the marks name (classified.py ``USED_LABEL_PREFIX``).
LOAD_TOMBSTONES_MARKED: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {id: r.id}) "
    "SET e.tombstones_marked = r.marks, e:$(r.labels)"
)
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
# An import's nodes, every type's of a batch at once: each row carries its encounter and
# the tick of its RECORDED edge (tx.load_nodes). Names and the corpus counters are
# written once per batch after it (NAME_PUT, LOAD_TEXT_COUNTERS): kept out of this
# statement, they cost it no eager pass over its rows.
LOAD_NODES: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {{id: r.encounter}}) "
    "CREATE (e)-[:RECORDED {{tick: r.recorded}}]->(n:{label}:KenningMemory) "
    "SET n += r.props, n:$(r.classes)"
)
LOAD_TEXT_COUNTERS: Final = (
    "MATCH (d:Meta {_memory: $memory, key: 'text_docs'}) "
    "MATCH (l:Meta {_memory: $memory, key: 'text_len'}) "
    "SET d.ival = d.ival + $docs, l.ival = l.ival + $tokens"
)
LOAD_EDGES: Final = (
    "UNWIND $rows AS r MATCH (a:{source}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{target}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:{rel} {{tick: r.tick, encounter: r.encounter, created_at: r.at}}]->(b) "
    + classified.MOVED_BY_SOURCE
)
LOAD_SUPERSEDES: Final = (
    "UNWIND $rows AS r MATCH (a:{source}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{target}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:SUPERSEDES {{tick: r.tick, encounter: r.encounter, created_at: r.at, "
    "revision_why: r.why}}]->(b)"
)
LOAD_CLAIMS: Final = (
    "UNWIND $rows AS r MATCH (a:{label}:KenningMemory {{id: r.s}}) "
    "MATCH (b:{label}:KenningMemory {{id: r.t}}) "
    "CREATE (a)-[:REFERENT_CLAIM {{tick: r.tick, encounter: r.encounter, created_at: r.at, "
    "resolution: r.resolution, why: r.why}}]->(b)"
)
LOAD_CONFIRMATIONS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {{id: r.encounter}}) "
    "MATCH (n:{label}:KenningMemory {{id: r.node}}) "
    "CREATE (e)-[:CONFIRMED {{tick: r.tick, created_at: r.at, why: r.why}}]->(n)"
)
LOAD_CONSULTATIONS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {{id: r.encounter}}) "
    "MATCH (n:{label}:KenningMemory {{id: r.node}}) "
    "CREATE (e)-[:CONSULTED {{tick: r.tick, created_at: r.at}}]->(n)"
)
LOAD_PINS: Final = (
    "UNWIND $rows AS r MATCH (e:Encounter:KenningMemory {{id: r.encounter}}) "
    "MATCH (n:{label}:KenningMemory {{id: r.node}}) "
    "CREATE (e)-[:PINNED {{tick: r.tick, created_at: r.at, why: r.why, state: r.state}}]->(n)"
)
# SET from the map: a column that is null is not stored, as on a live write.
LOAD_PAST: Final = "UNWIND $rows AS r CREATE (p:KenningPast {_memory: $memory}) SET p += r"
MARKER_GET: Final = "MATCH (m:Meta {_memory: $memory, key: $key}) RETURN m.sval, m.ival"
MARKER_PUT: Final = (
    "MERGE (m:Meta {_memory: $memory, key: $key}) SET m.sval = $digest, m.ival = $done"
)
MARKER_DROP: Final = "MATCH (m:Meta {_memory: $memory, key: $key}) DELETE m"
CLOCK_SET: Final = "MATCH (c:Meta {_memory: $memory, key: 'clock'}) SET c.ival = $value"
CLEAR_NODES: Final = (
    "MATCH (n:{label}:KenningMemory) WITH n, n.id AS id LIMIT $limit DETACH DELETE n RETURN id"
)
CLEAR_REGISTRIES: Final = (
    "MATCH (k:NameKey {_memory: $memory}) DELETE k",
    "MATCH (k:SourceKey {_memory: $memory}) DELETE k",
    "MATCH (p:KenningPast {_memory: $memory}) DELETE p",
)

ENC_CREATE_STEPS: Final = (ENC_CREATE,)
SPINE_TEXT: Final = text_of(SpineText, sys.modules[__name__])
NODE_TEXT: Final = text_of(NodeText, sys.modules[__name__])
RELATION_TEXT: Final = text_of(RelationText, sys.modules[__name__])
LOAD_TEXT: Final = text_of(LoadText, sys.modules[__name__])


# --- one round trip where the shared text takes one per type (tx.py) ---------------------
# Each takes one list, never empty, and the same text every time: the plan cache keys on
# the text and the parameters' types (an empty list is a type of its own), so one plan
# serves every batch, whatever types it holds.
#
# A batch's nodes ($rows of {label, classes, props, source}: label an authored type, checked
# by authored_label; classes its class labels (classified.class_labels); source a
# Component's key, else null), their RECORDED edges, live names,
# source keys, and the corpus counters ($made nodes, $tokens tokens), touching the
# encounter when $touched_at is given (Neo4jTx.touch_encounter). The type label is
# set from the row (a dynamic label), so one short statement serves every type.
#
# A row's ``revises``, when not null, is the element id of the node it revises (read by
# this write, Neo4jTx.create_nodes): its SUPERSEDES edge is made here, and the revised
# node is marked for the node caches. The statement answers how many it made, which the
# write checks: a shortfall ends the write, so nothing is left half made. Sought by
# element id, so one branch serves every type (a dynamic label in a MATCH scans every
# node; a branch per type made a plan of half a second, made again as the data grew).
NODES_CREATE_ALL: Final = KEEP_PLAN + (
    "MATCH (e:Encounter:KenningMemory {id: $encounter}) "
    "SET e.last_activity_at = coalesce($touched_at, e.last_activity_at) WITH e "
    "CALL (e) { UNWIND $rows AS r "
    "CREATE (e)-[:RECORDED {tick: $tick}]->(n:KenningMemory) "
    "SET n:$(r.label), n:$(r.classes), n += r.props "
    "MERGE (k:NameKey {_memory: $memory, name: r.props.name}) "
    "SET k.id = r.props.id, k.eid = elementId(n) "
    "WITH n, r WHERE r.revises IS NOT NULL "
    "MATCH (b:KenningMemory) WHERE elementId(b) = r.revises AND b.id = r.revised "
    "CREATE (n)-[:SUPERSEDES {tick: $tick, encounter: $encounter, created_at: $at, "
    "revision_why: r.why}]->(b) SET b._touched = $tick RETURN count(*) AS revised } "
    "CALL () { UNWIND $rows AS r WITH r WHERE r.source IS NOT NULL "
    "MERGE (k:SourceKey {_memory: $memory, key: r.source}) SET k.id = r.props.id } "
    "MATCH (d:Meta {_memory: $memory, key: 'text_docs'}) "
    "MATCH (l:Meta {_memory: $memory, key: 'text_len'}) "
    "SET d.ival = d.ival + $made, l.ival = l.ival + $tokens RETURN revised"
)


def authored_label(name: str) -> str:
    """A type name as NODES_CREATE_ALL's dynamic label: authored vocabulary types only."""
    if name not in AUTHORED_NODE_TYPES:
        raise ValueError(f"not an authored node type: {name!r}")
    return name


def _nodes_get_all() -> LiteralString:
    # Only the seeks are per type (each its own index); what every node needs besides is
    # matched once, after them, which keeps the plan small and quick to make again. Every
    # branch is given the one list and takes its own type's ids from it (``_own_ids``):
    # one list per type would be planned anew for each new mix of list sizes (the plan
    # cache keys on them), 300 ms a time at 100k nodes.
    seeks = " UNION ALL ".join(
        f"MATCH (n:{label}:KenningMemory) WHERE n.id IN {_own_ids(label)} "
        f"RETURN n, '{label}' AS label"
        for label in AUTHORED_NODE_TYPES
    )
    statement = (
        f"CALL () {{ {seeks} }} "
        "OPTIONAL MATCH (e:Encounter:KenningMemory)-[:RECORDED]->(n) "
        "OPTIONAL MATCH (s:KenningMemory)-[:SUPERSEDES]->(n) "
        "RETURN label, properties(n), e.id, e.locus, s.id, properties(e), elementId(n)"
    )
    return cast(LiteralString, statement)


# The confirmations of nodes of any types ($ids), as CONFIRMATIONS_OF gives them for one:
# infusion asks about nodes of four or five types a prompt, a round trip each before.
CONFIRMATIONS_OF_ALL: Final = _each_type(
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN {ids} RETURN n",
    "MATCH (e:Encounter:KenningMemory)-[r:CONFIRMED]->(n) RETURN n.id, e.id, r.tick, r.created_at",
)

# Infusion's tension in one round trip: the CHALLENGES relations touching $ids either way
# (EDGES_BOTH_EACH's rows, the last column null), then their latest confirmations
# (CONFIRMATIONS_OF_ALL's, the relation's columns null but the encounter in t).
TENSION_EACH: Final = (
    _each_type(
        EDGES_BOTH.replace("$ids", "{ids}").replace("$rels", "['CHALLENGES']"),
        "RETURN s, t, rel, tick, enc, why, null AS at",
    )
    + " UNION ALL "
    + _each_type(
        "MATCH (n:{label}:KenningMemory) WHERE n.id IN {ids} RETURN n",
        "MATCH (e:Encounter:KenningMemory)-[r:CONFIRMED]->(n) "
        "RETURN n.id AS s, e.id AS t, null AS rel, r.tick AS tick, null AS enc, "
        "null AS why, r.created_at AS at",
    )
)

# The classified among ids of any types ($ids): what the read gate needs of the ids an
# answer names, a row only for those that carry a class. Each branch reads its type's
# (_memory, classification) index, which holds only classified nodes; every branch takes
# every id here (a branch's own ids, as _own_ids gives them, made the planner filter that
# index by the list row by row: three times slower at 100k nodes).
CLASSIFIED_ALL: Final = _each_type(
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "AND n.classification IS NOT NULL RETURN n.id AS id, n.classification AS c",
    "RETURN id, c",
)


# The ids of the memory's $limit newest nodes, newest first: what a server reads into its
# node cache once the memory is open (Neo4jStore.warm_cache).
NODES_NEWEST: Final = _each_type(
    "MATCH (n:{label}:KenningMemory) WHERE n.tick IS NOT NULL RETURN n.id AS id, n.tick AS tick",
    "RETURN id ORDER BY tick DESC LIMIT $limit",
)

# Node rows of every type by id ($ids, of any types), each led by its type and followed by
# its recording encounter's properties, which a read then need not fetch again.
NODES_GET_ALL: Final = _nodes_get_all()

# --- directors, confirmations, referent claims (store/ops/identity.py) -----------------
# MERGE: two servers opening sessions for one director at once meet one Person (the
# composite constraint on (_memory, id) makes the second wait, then match).
# The person and the locus's tie to it in one statement: one round trip.
DIRECT_STEPS: Final = (
    "MERGE (p:Person:KenningMemory {id: $id}) "
    "ON CREATE SET p.name = $name, p.director_key = $key, p.tick = $tick, p.created_at = $at "
    "WITH p MATCH (l:Locus:KenningMemory {id: $locus}) "
    "CREATE (l)-[:DIRECTED_BY {tick: $tick}]->(p)",
)
DIRECTORS_OF: Final = (
    "UNWIND $loci AS i MATCH (l:Locus:KenningMemory {id: i})-[:DIRECTED_BY]->"
    "(p:Person:KenningMemory) RETURN l.id, p.id, p.name, p.director_key, p.tick, p.created_at"
)
CONFIRM: Final = (
    "MATCH (e:Encounter:KenningMemory {{id: $encounter}}) UNWIND $ids AS i "
    "MATCH (n:{label}:KenningMemory {{id: i}}) "
    "CREATE (e)-[:CONFIRMED {{tick: $tick, created_at: $at, why: $why}}]->(n) "
    "SET n.used_at = $at, n._touched = $tick, n.used_marks = null " + classified.UNUSED_N
)
CONFIRMATIONS_OF: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id IN $ids "
    "MATCH (e:Encounter:KenningMemory)-[r:CONFIRMED]->(n) "
    "RETURN n.id, e.id, r.tick, r.created_at"
)
CLAIM_CREATE: Final = (
    "MATCH (a:{label}:KenningMemory {{id: $s}}) MATCH (b:{label}:KenningMemory {{id: $t}}) "
    "CREATE (a)-[:REFERENT_CLAIM {{tick: $tick, encounter: $encounter, created_at: $at, "
    "resolution: $resolution, why: $why}}]->(b)"
)
CLAIMS_OUT: Final = (
    "MATCH (a:{label}:KenningMemory)-[r:REFERENT_CLAIM]->(b:KenningMemory) WHERE a.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
CLAIMS_IN: Final = (
    "MATCH (a:KenningMemory)-[r:REFERENT_CLAIM]->(b:{label}:KenningMemory) WHERE b.id IN $ids "
    "RETURN a.id, b.id, r.resolution, r.why, r.tick, r.encounter, r.created_at"
)
# Loci made before directors: directed by the Person that says so (store/persons.py).
# Run at every start, idempotent; a locus made since is never without one, because its
# DIRECTED_BY is written in the same transaction as the locus.
DIRECT_UNDIRECTED: Final = (
    "MATCH (l:Locus:KenningMemory) WHERE NOT EXISTS { MATCH (l)-[:DIRECTED_BY]->() } "
    "WITH collect(l) AS loci WHERE size(loci) > 0 "
    "MERGE (p:Person:KenningMemory {id: $id}) "
    "ON CREATE SET p.name = $name, p.director_key = $key, p.tick = 0, p.created_at = $at "
    "WITH p, loci UNWIND loci AS l MERGE (l)-[d:DIRECTED_BY]->(p) "
    "ON CREATE SET d.tick = l.tick RETURN count(d)"
)
IDENTITY_TEXT: Final = text_of(IdentityText, sys.modules[__name__])

# --- consultations and pins (store/ops/activation.py) ----------------------------------
CONSULT: Final = (
    "MATCH (e:Encounter:KenningMemory {{id: $encounter}}) UNWIND $ids AS i "
    "MATCH (n:{label}:KenningMemory {{id: i}}) "
    "MERGE (e)-[r:CONSULTED]->(n) SET r.tick = $tick, r.created_at = $at, n.used_at = $at, "
    "n._touched = $tick, n.used_marks = null " + classified.UNUSED_N
)
PIN: Final = (
    "MATCH (e:Encounter:KenningMemory {{id: $encounter}}) UNWIND $ids AS i "
    "MATCH (n:{label}:KenningMemory {{id: i}}) "
    "CREATE (e)-[:PINNED {{tick: $tick, created_at: $at, why: $why, state: $state}}]->(n) "
    "SET n.pinned = $pinned, n.used_at = $at, n._touched = $tick, n.used_marks = null "
    + classified.UNUSED_N
)
# The labels read_cypher's scope keeps out of reach (classified.py ``USED_LABEL_PREFIX``).
MARK_USES: Final = (
    "UNWIND $rows AS r MATCH (n:{label}:KenningMemory {{id: r.id}}) "
    "SET n.used_marks = r.marks, n._touched = $tick, n:$(r.labels)"
)
# A node's uses (ActivationOps.node_uses), for a reader face that hides sessions: each
# with the encounter that made it, and that encounter's session.
USES_LINKED: Final = (
    "MATCH (n:{label}:KenningMemory)-[r]-(m:KenningMemory) WHERE n.id IN $ids AND type(r) IN $links "
    "MATCH (e:Encounter:KenningMemory {{id: r.encounter}}) "
    "RETURN n.id AS node, e.id AS enc, e.locus AS locus, r.tick AS tick, "
    "r.created_at AS at, 'link' AS kind, NULL AS state, m.classification AS other"
)
USES_PROCESS: Final = (
    "MATCH (e:Encounter:KenningMemory)-[r]->(n:{label}:KenningMemory) WHERE n.id IN $ids AND type(r) IN $process "
    "RETURN n.id AS node, e.id AS enc, e.locus AS locus, r.tick AS tick, "
    "r.created_at AS at, type(r) AS kind, r.state AS state, NULL AS other"
)
USES_UNION: Final = True
LOCI_USES: Final = (
    "MATCH (e:Encounter:KenningMemory) WHERE e.locus IN $loci OPTIONAL MATCH (e)-[:PINNED]->(n:KenningMemory) "
    "RETURN e.opened_at, coalesce(e.sealed_at, e.dissolved_at), collect(n.id), e.id"
)
ACTIVATION_TEXT: Final = text_of(ActivationText, sys.modules[__name__])
