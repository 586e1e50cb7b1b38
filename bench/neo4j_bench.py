"""Writes and searches on the Neo4j store, next to the raw driver doing the same work.

Both run in one database at once, interleaved step by step (our batch, then the raw
batch; our search, then the raw search), so a busy machine slows both alike and the
ratio stays meaningful where the absolute figures do not.

- create: batched create_entities through the memory service on Neo4jStore against
  the official driver alone, hand-written for the same result. Per batch, one
  managed write transaction of three statements: (1) the clock (a counter node
  whose lock orders writers, as ours does) with the open-encounter check and its
  activity touch; (2) which of the batch's names are taken (a refusal needs it, and
  so do the revisions, which name the node they revise); (3) one UNWIND creating
  the nodes with the same properties and tokens, their RECORDED edges, the name
  registry, the SUPERSEDES edges of revisions and the two corpus counters. A
  uniqueness constraint on ids and on names and a synchronous fulltext index on the
  same tokens, as ours has.
- search: Memory.search (validation, fulltext, head filter, node hydration) against
  one raw read transaction doing the fulltext query, the head filter and the
  hydration (properties, encounter, locus) in one statement.

Ours is also counted: statements per create_entities call (the raw side sends three).

It needs a throwaway server: it EMPTIES the database it is given, the URI on
its command line or KENNING_ENCOUNTER_TEST_NEO4J_URI (never NEO4J_URI), with the
test credentials, and refuses one that carries no test marker (the launcher's
does: scripts/neo4j-test-server start; a scratch server: ... mark). With no URI,
or nothing answering there, it returns {"skipped": reason}; any other failure
raises.

    python -m bench.neo4j_bench [--quick] [bolt://127.0.0.1:7687]
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from tests.support.neo4j_target import URI_VAR, at, configured, empty_marked

from bench.stats import pct, search_versus_raw
from bench.synth import SynthMemory, generate
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j import Neo4jStore
from kenning_encounter.store.neo4j.text import lucene_term, query_terms, text_props

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction

GOALS = "writes >= 3000 entities/s and <= 1.3x raw; search p95 <= 2x raw"

# The raw side's schema is made once for a whole run and dropped at its end: a schema
# change clears the server's plan cache, which would make every size pay both sides'
# first plans again (the warm-up run is there to pay them).
_RAW_SCHEMA = (
    "CREATE CONSTRAINT bench_node_id IF NOT EXISTS FOR (n:BenchNode) REQUIRE n.id IS UNIQUE",
    "CREATE CONSTRAINT bench_name IF NOT EXISTS FOR (k:BenchName) REQUIRE k.name IS UNIQUE",
    "CREATE CONSTRAINT bench_meta IF NOT EXISTS FOR (m:BenchMeta) REQUIRE m.key IS UNIQUE",
    "CREATE CONSTRAINT bench_enc IF NOT EXISTS FOR (e:BenchEncounter) REQUIRE e.id IS UNIQUE",
    "CREATE FULLTEXT INDEX bench_text IF NOT EXISTS FOR (n:BenchNode) ON EACH "
    "[n._terms] OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', "
    "`fulltext.eventually_consistent`: false}}",
    "CALL db.awaitIndexes(60)",
)
_RAW_SEED = "UNWIND ['clock', 'docs', 'tokens'] AS k MERGE (m:BenchMeta {key: k}) SET m.ival = 0"
# its own nodes only: the test marker stays
_RAW_EMPTY = (
    "MATCH (n) WHERE n:BenchNode OR n:BenchEncounter OR n:BenchName OR n:BenchMeta "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS"
)
_RAW_DROP = (
    "DROP INDEX bench_text IF EXISTS",
    "DROP CONSTRAINT bench_node_id IF EXISTS",
    "DROP CONSTRAINT bench_name IF EXISTS",
    "DROP CONSTRAINT bench_meta IF EXISTS",
    "DROP CONSTRAINT bench_enc IF EXISTS",
)
_RAW_OPEN = (
    "CREATE (:BenchEncounter {id: $id, locus: $locus, opened_at: $at, last_activity_at: $at})"
)
_RAW_SEAL = "MATCH (e:BenchEncounter {id: $id}) SET e.sealed_at = $at"
_RAW_BEGIN = (
    "MATCH (c:BenchMeta {key: 'clock'}) SET c.ival = c.ival + 1 "
    "WITH c MATCH (e:BenchEncounter {id: $encounter}) WHERE e.sealed_at IS NULL "
    "SET e.last_activity_at = $at RETURN c.ival"
)
_RAW_NAMES = "UNWIND $names AS nm MATCH (k:BenchName {name: nm}) RETURN k.name, k.id"
_RAW_CREATE = (
    "MATCH (e:BenchEncounter {id: $encounter}) "
    "CALL (e) { UNWIND $rows AS r "
    "CREATE (e)-[:RECORDED {tick: $tick}]->(n:BenchNode) SET n = r.props "
    "MERGE (k:BenchName {name: r.props.name}) SET k.id = r.props.id "
    "WITH n, r WHERE r.revises IS NOT NULL MATCH (o:BenchNode {id: r.revises}) "
    "CREATE (n)-[:SUPERSEDES {tick: $tick, revision_why: r.why}]->(o) } "
    "MATCH (d:BenchMeta {key: 'docs'}) MATCH (t:BenchMeta {key: 'tokens'}) "
    "SET d.ival = d.ival + $made, t.ival = t.ival + $tokens"
)
_RAW_SEARCH = (
    "CALL db.index.fulltext.queryNodes('bench_text', $q) YIELD node, score "
    "WHERE NOT EXISTS { MATCH (node)<-[:SUPERSEDES]-() } "
    "WITH node, score LIMIT $limit "
    "OPTIONAL MATCH (e:BenchEncounter)-[:RECORDED]->(node) "
    "RETURN properties(node), e.id, e.locus, score"
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Raw:
    """The hand-written side: the same memory, kept with the driver alone."""

    def __init__(self, driver: Driver) -> None:
        self.driver = driver
        self.session = driver.session()
        self.serial = 0
        self.encounters = 0
        self.open: dict[str, str] = {}  # locus -> its open encounter

    def advance(self, locus: str) -> None:
        previous = self.open.pop(locus, None)
        if previous is not None:
            self.seal(previous)
        self.encounters += 1
        name = f"E{self.encounters}"
        self.session.execute_write(
            lambda tx: tx.run(_RAW_OPEN, id=name, locus=locus, at=_now()).consume()
        )
        self.open[locus] = name

    def seal(self, name: str) -> None:
        self.session.execute_write(lambda tx: tx.run(_RAW_SEAL, id=name, at=_now()).consume())

    def close(self, locus: str) -> None:
        name = self.open.pop(locus, None)
        if name is not None:
            self.seal(name)

    def create(self, locus: str, batch: list[dict[str, Any]]) -> None:
        encounter = self.open[locus]

        def work(tx: ManagedTransaction) -> None:
            at = _now()
            begun = tx.run(_RAW_BEGIN, encounter=encounter, at=at).single()
            if begun is None:
                raise RuntimeError(f"raw: {encounter} is not open")
            tick = int(begun[0])
            names = [e["name"] for e in batch]
            holders = {str(r[0]): str(r[1]) for r in tx.run(_RAW_NAMES, names=names)}
            rows: list[dict[str, Any]] = []
            tokens = 0
            for ord_, e in enumerate(batch):
                revises = holders.get(e["supersedes"]) if e.get("supersedes") else None
                if e["name"] in holders and revises is None:
                    raise RuntimeError(f"raw: the name {e['name']!r} is taken")
                self.serial += 1
                lexical = text_props(e["name"], e.get("description", ""))
                tokens += int(lexical["_len"])
                props = {
                    "id": f"n{self.serial}",
                    "type": e["type"],
                    "tick": tick,
                    "ord": ord_,
                    "created_at": at,
                    "name": e["name"],
                    "description": e.get("description", ""),
                    **lexical,
                }
                rows.append({"props": props, "revises": revises, "why": e.get("revision_why")})
            params = {"rows": rows, "encounter": encounter, "tick": tick}
            tx.run(_RAW_CREATE, params, made=len(rows), tokens=tokens).consume()

        self.session.execute_write(work)

    def search(self, query: str, limit: int = 10) -> list[Any]:
        text = " ".join(lucene_term(t) for t in query_terms(query))
        return self.session.execute_read(
            lambda tx: tx.run(_RAW_SEARCH, q=text, limit=limit).values()
        )


class _Counter:
    """A tracer that counts the statements our store sends while ``on``."""

    def __init__(self) -> None:
        self.on = False
        self.statements = 0

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        if self.on:
            self.statements += 1


def _timed(work: Any, *args: Any) -> float:
    started = time.perf_counter()
    work(*args)
    return time.perf_counter() - started


def run_size(uri: str, nodes: int, searches: int) -> dict[str, Any]:
    import neo4j

    synth: SynthMemory = generate(nodes, seed=nodes)
    queries = (synth.queries * (searches // len(synth.queries) + 1))[:searches]
    target = at(uri)
    empty_marked(target)
    counter = _Counter()
    store = Neo4jStore.open(
        target.uri, target.username, target.password, target.database, tracer=counter
    )
    driver = neo4j.GraphDatabase.driver(
        target.uri, auth=target.auth, notifications_min_severity="OFF"
    )
    raw = _Raw(driver)
    ours_s = raw_s = 0.0
    created = batches = 0
    ours_search: list[float] = []
    raw_search: list[float] = []
    try:
        driver.execute_query(_RAW_SEED)
        memory = Memory(store)
        for step in synth.steps:
            if step.kind == "advance":
                memory.advance_encounter(step.session, str(step.payload))
                raw.advance(step.session)
            elif step.kind == "entities":
                counter.on = True
                ours_s += _timed(memory.create_entities, step.session, step.payload)
                counter.on = False
                raw_s += _timed(raw.create, step.session, step.payload)
                created += len(step.payload)
                batches += 1
            elif step.kind == "relations":
                memory.create_relations(step.session, step.payload)
            else:
                memory.close_encounter(step.session, str(step.payload))
                raw.close(step.session)
        for query in queries:
            ours_search.append(_timed(lambda t=query: memory.search(t, limit=10)) * 1000)
            raw_search.append(_timed(raw.search, query) * 1000)
    finally:
        store.close()
        raw.session.close()
        with driver.session() as session:  # auto-commit: the delete runs in batches
            session.run(_RAW_EMPTY).consume()
        driver.close()
    ours_rate, raw_rate = created / ours_s, created / raw_s
    return {
        "nodes": nodes,
        "batches": batches,
        "ours_entities_per_s": round(ours_rate),
        "raw_entities_per_s": round(raw_rate),
        "write_ratio": round(raw_rate / ours_rate, 2),
        "ours_statements_per_batch": round(counter.statements / batches, 1),
        **search_versus_raw(ours_search, raw_search),
        "raw_search_p99_ms": round(pct(raw_search, 0.99), 3),
    }


def run(quick: bool = False, uri: str | None = None) -> dict[str, Any]:
    import neo4j
    from neo4j.exceptions import ServiceUnavailable

    named = at(uri) if uri else configured()
    if named is None:
        return {"skipped": f"no Neo4j named: pass a bolt URI or set {URI_VAR}"}
    target = named.uri
    try:
        with neo4j.GraphDatabase.driver(target, auth=named.auth, connection_timeout=5.0) as d:
            d.verify_connectivity()
    except ServiceUnavailable as exc:  # only a silent server is a skip; a bad login raises
        return {"skipped": f"no Neo4j answered at {target}: {exc}"}
    sizes = [1_000] if quick else [1_000, 10_000]
    searches = 100 if quick else 500
    with neo4j.GraphDatabase.driver(target, auth=named.auth) as driver:
        empty_marked(named)  # before the schema: its index is then built on nothing
        for statement in _RAW_SCHEMA:
            driver.execute_query(statement)
        try:
            run_size(target, 300, 50)  # warm the server's plan cache and JIT for both sides
            rows = [run_size(target, n, searches) for n in sizes]
        finally:
            for statement in _RAW_DROP:
                driver.execute_query(statement)
    return {"uri": target, "goals": GOALS, "rows": rows}


if __name__ == "__main__":
    import json
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(json.dumps(run(quick="--quick" in sys.argv, uri=args[0] if args else None), indent=2))
