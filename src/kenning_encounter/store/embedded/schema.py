"""The embedded store's schema, generated from the vocabulary, and its migrations.

Each node type is a node table; each relation type is one relationship table
whose FROM/TO pairs are the vocabulary's endpoint rules, so the engine itself
refuses a relation between the wrong types. Two registry tables make the
uniqueness rules primary keys: ``NameKey`` (live name -> head id) and
``SourceKey`` (a Component's source triple -> id).

Versions are applied in order; a fresh store walks the same path as an old one,
so every migration runs in every test that opens a store.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from kenning_encounter.store.embedded.infusion_log import CREATE_TABLE as INFUSION_LOG_TABLE
from kenning_encounter.store.embedded.ledger import CREATE_TABLE as LEDGER_TABLE
from kenning_encounter.store.embedded.past import BACKFILL as PAST_BACKFILL
from kenning_encounter.store.embedded.past import CREATE_TABLE as PAST_TABLE
from kenning_encounter.store.persons import BEFORE_DIRECTORS
from kenning_encounter.vocabulary import NODE_TYPES, RELATION_TYPES, NodeType, RelationType

SCHEMA_VERSION: Final = 14


def _node_columns(t: NodeType) -> list[str]:
    if t.name == "Locus":
        return ["id STRING", "created_at STRING", "tick INT64"]
    if t.name == "Encounter":
        return [
            "id STRING",
            "locus STRING",
            "purpose STRING",
            "opened_tick INT64",
            "opened_at STRING",
            "sealed_tick INT64",
            "sealed_at STRING",
            "summary STRING",
            "dissolved_at STRING",
            "last_activity_at STRING",
        ]
    cols = ["id STRING", "tick INT64", "created_at STRING"]
    cols += [f"{p.name} STRING" for p in t.props if p.since == 1]  # later ones: their migration
    return cols


def _rel_columns(r: RelationType) -> list[str]:
    cols = ["tick INT64"]
    if r.authored:
        cols += ["encounter STRING", "created_at STRING"]
    cols += [f"{p.name} STRING" for p in r.props]
    return cols


def node_ddl(t: NodeType) -> str:
    return f"CREATE NODE TABLE {t.name}({', '.join(_node_columns(t))}, PRIMARY KEY(id))"


def rel_ddl(r: RelationType) -> str:
    pairs = ", ".join(f"FROM {s} TO {t}" for s, t in r.pairs())
    return f"CREATE REL TABLE {r.name}({pairs}, {', '.join(_rel_columns(r))})"


def _v1() -> list[str]:
    stmts = [
        "CREATE NODE TABLE Meta(key STRING, ival INT64, sval STRING, PRIMARY KEY(key))",
        "CREATE NODE TABLE NameKey(name STRING, id STRING, PRIMARY KEY(name))",
        "CREATE NODE TABLE SourceKey(key STRING, id STRING, PRIMARY KEY(key))",
    ]
    # Types added later are made by their own migration, so old and new stores agree.
    stmts += [node_ddl(t) for t in NODE_TYPES.values() if t.since == 1]
    stmts += [rel_ddl(r) for r in RELATION_TYPES.values() if r.since == 1]
    stmts.append("CREATE (:Meta {key: 'clock', ival: 0})")
    stmts.append("CREATE (:Meta {key: 'schema_version', ival: 1})")
    return stmts


def _v2() -> list[str]:
    # v2: operator hard-deletion leaves a tombstone count on the recording encounter.
    return ["ALTER TABLE Encounter ADD tombstones INT64 DEFAULT 0"]


def _v3() -> list[str]:
    # v3: a node's place within the write that created it, so the order of what an
    # encounter recorded is exact even inside one batch (one tick).
    return [
        f"ALTER TABLE {name} ADD ord INT64 DEFAULT 0"
        for name, t in NODE_TYPES.items()
        if t.authored
    ]


def _v4() -> list[str]:
    # v4: each node carries its recording encounter, that encounter's locus and its
    # successor, kept in the same transaction as the RECORDED and SUPERSEDES edges they
    # mirror. Following those edges made every node lookup ten times slower.
    stmts: list[str] = []
    for name, t in NODE_TYPES.items():
        if not t.authored:
            continue
        stmts += [
            f"ALTER TABLE {name} ADD encounter STRING",
            f"ALTER TABLE {name} ADD locus STRING",
            f"ALTER TABLE {name} ADD superseded_by STRING",
            f"MATCH (e:Encounter)-[:RECORDED]->(n:{name}) SET n.encounter = e.id, n.locus = e.locus",
            f"MATCH (s:{name})-[:SUPERSEDES]->(n:{name}) SET n.superseded_by = s.id",
        ]
    return stmts


def _v5() -> list[str]:
    # v5: the infusion ledger, shared by every server on the store and kept across
    # restarts (store/embedded/ledger.py). Bookkeeping beside the memory, like Meta.
    return [LEDGER_TABLE]


def _v6() -> list[str]:
    # v6: world time, the span a node states it held (valid_from / valid_until).
    return [
        f"ALTER TABLE {name} ADD {p.name} STRING"
        for name, t in NODE_TYPES.items()
        for p in t.props
        if p.since == 6
    ]


def _v7() -> list[str]:
    # v7: the infusion log, one entry per prompt for the inspector (store/infusion_log.py).
    return [INFUSION_LOG_TABLE]


def _v8() -> list[str]:
    # v8: directors (Person, DIRECTED_BY), confirmations and referent claims (#17 1-3).
    # Loci made before directors are directed by one explicit Person that says so: the
    # configured director of today is no evidence of who directed them.
    stmts = [
        "CREATE NODE TABLE Person(id STRING, name STRING, director_key STRING, "
        "created_at STRING, tick INT64, PRIMARY KEY(id))"
    ]
    # Process edges carry only a tick by default; these say when, and a claim by whom.
    extra = {
        "DIRECTED_BY": "",
        "CONFIRMED": ", created_at STRING, why STRING",
        "REFERENT_CLAIM": ", encounter STRING, created_at STRING",
    }
    for name, columns in extra.items():
        stmts.append(rel_ddl(RELATION_TYPES[name]).removesuffix(")") + columns + ")")
    before = BEFORE_DIRECTORS
    stmts += [
        "MATCH (l:Locus) WITH min(l.created_at) AS first, count(l) AS n WHERE n > 0 "
        f"CREATE (:Person {{id: '{before.id}', name: '{before.name}', "
        f"director_key: '{before.key}', created_at: first, tick: 0}})",
        f"MATCH (l:Locus), (p:Person {{id: '{before.id}'}}) "
        "CREATE (l)-[:DIRECTED_BY {tick: l.tick}]->(p)",
    ]
    return stmts


def _v9() -> list[str]:
    # v9: classification, retention and the instant it runs out (memory/classification.py).
    return [
        f"ALTER TABLE {name} ADD {p.name} STRING"
        for name, t in NODE_TYPES.items()
        for p in t.props
        if p.since == 9
    ]


def _v10() -> list[str]:
    # v10: the record of the past as_of reads need (store/ops/past.py), backfilled with
    # the status moves the graph's relations still show (store/embedded/past.py).
    return [PAST_TABLE, *PAST_BACKFILL]


def _v11() -> list[str]:
    # v11: relevance over time (memory/activation.py). CONSULTED and PINNED are process
    # edges; each node mirrors the latest use its edges show (used_at) and whether a pin
    # is in force (pinned: the pinning encounter), kept in the same transaction as the
    # edges, so a tier is one column read. Backfilled from the dated edges already there
    # (authored relations, confirmations, claims): creation alone counts when none is.
    stmts: list[str] = []
    for name in ("CONSULTED", "PINNED"):
        columns = ", created_at STRING" + (", why STRING, state STRING" if name == "PINNED" else "")
        stmts.append(rel_ddl(RELATION_TYPES[name]).removesuffix(")") + columns + ")")
    for name, t in NODE_TYPES.items():
        if not t.authored:
            continue
        stmts += [
            f"ALTER TABLE {name} ADD used_at STRING",
            f"ALTER TABLE {name} ADD pinned STRING",
            f"MATCH (n:{name})-[r]-() WHERE r.created_at IS NOT NULL "
            "WITH n, max(r.created_at) AS at SET n.used_at = at",
        ]
    return stmts


def _v12() -> list[str]:
    # v12: a fact in triple form on Observations and Concepts (predicate, object and its
    # type), so KNDL facts keep theirs.
    return [
        f"ALTER TABLE {name} ADD {p.name} STRING"
        for name, t in NODE_TYPES.items()
        for p in t.props
        if p.since == 12
    ]


def _v13() -> list[str]:
    # v13: a dissolution keeps its tick, as a seal does, so the past sees the encounter
    # open until then. Encounters dissolved before keep none (memory/asof.py).
    return ["ALTER TABLE Encounter ADD dissolved_tick INT64"]


def _v14() -> list[str]:
    # v14: what a reader not granted a class may not learn from a use or an erasure
    # (store/uses.py): each node's uses by links to classified nodes, and each
    # encounter's erased classified nodes by class. Nothing to backfill: a store made
    # before holds none, and its readers see what they saw.
    stmts = [
        f"ALTER TABLE {name} ADD used_marks STRING" for name, t in NODE_TYPES.items() if t.authored
    ]
    return [*stmts, "ALTER TABLE Encounter ADD tombstones_marked STRING"]


MIGRATIONS: Final[dict[int, Callable[[], list[str]]]] = {
    1: _v1,
    2: _v2,
    3: _v3,
    4: _v4,
    5: _v5,
    6: _v6,
    7: _v7,
    8: _v8,
    9: _v9,
    10: _v10,
    11: _v11,
    12: _v12,
    13: _v13,
    14: _v14,
}
