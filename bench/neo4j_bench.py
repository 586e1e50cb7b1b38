"""Writes and searches on the Neo4j store, next to the raw driver doing the same work.

- create: batched create_entities through the memory service on Neo4jStore
  (validation, clock lock and tick, name registry, RECORDED anchoring, fulltext
  index kept current) against the official driver alone running one managed
  transaction per batch: UNWIND CREATE of the nodes and their RECORDED edges,
  with a uniqueness constraint and a fulltext index on the same properties;
- search: Memory.search (validation, fulltext, head filter, node hydration)
  against the bare fulltext query through the driver.

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
from typing import Any

from tests.support.neo4j_store import open_emptied
from tests.support.neo4j_target import URI_VAR, at, configured

from bench.stats import search_versus_raw
from bench.synth import creation_time, generate
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.neo4j.text import lucene_term, query_terms, text_props

_RAW_SETUP = (
    "CREATE CONSTRAINT bench_node_id IF NOT EXISTS FOR (n:BenchNode) REQUIRE n.id IS UNIQUE",
    "CREATE FULLTEXT INDEX bench_text IF NOT EXISTS FOR (n:BenchNode) ON EACH "
    "[n._terms] OPTIONS {indexConfig: {`fulltext.analyzer`: 'whitespace', "
    "`fulltext.eventually_consistent`: false}}",
    "CALL db.awaitIndexes(60)",
)
_RAW_TEARDOWN = (
    "DROP INDEX bench_text IF EXISTS",
    "DROP CONSTRAINT bench_node_id IF EXISTS",
    # its own nodes only: the test marker stays
    "MATCH (n) WHERE n:BenchNode OR n:BenchEncounter "
    "CALL (n) { DETACH DELETE n } IN TRANSACTIONS OF 10000 ROWS",
)
_RAW_CREATE = (
    "MERGE (e:BenchEncounter {id: 'E1'}) WITH e UNWIND $rows AS r "
    "CREATE (e)-[:RECORDED {tick: $tick}]->(:BenchNode {id: r.id, type: r.type, "
    "name: r.name, description: r.description, tick: $tick, _terms: r._terms, _len: r._len})"
)
_RAW_SEARCH = (
    "CALL db.index.fulltext.queryNodes('bench_text', $q) YIELD node, score "
    "RETURN node.id, score LIMIT 10"
)


def _raw_run(
    uri: str, batches: list[list[dict[str, Any]]], queries: list[str]
) -> tuple[float, list[float]]:
    import neo4j

    driver = neo4j.GraphDatabase.driver(uri, auth=at(uri).auth, notifications_min_severity="OFF")
    try:
        for statement in _RAW_SETUP:
            driver.execute_query(statement)
        elapsed = 0.0
        serial = 0
        with driver.session() as session:
            for tick, batch in enumerate(batches, start=1):
                started = time.perf_counter()
                rows = []
                for e in batch:
                    serial += 1
                    name, description = e["name"], e.get("description", "")
                    rows.append(
                        {
                            "id": f"n{serial}",
                            "type": e["type"],
                            "name": name,
                            "description": description,
                            **text_props(name, description),  # the same tokens our store indexes
                        }
                    )
                session.execute_write(
                    lambda tx, r=rows, t=tick: tx.run(_RAW_CREATE, rows=r, tick=t).consume()
                )
                elapsed += time.perf_counter() - started
            timings: list[float] = []
            for query in queries:
                started = time.perf_counter()
                text = " ".join(lucene_term(t) for t in query_terms(query))
                session.execute_read(lambda tx, q=text: tx.run(_RAW_SEARCH, q=q).values())
                timings.append((time.perf_counter() - started) * 1000)
        return elapsed, timings
    finally:
        with driver.session() as session:  # auto-commit: the delete runs in batches
            for statement in _RAW_TEARDOWN:
                session.run(statement).consume()
        driver.close()


def run_size(uri: str, nodes: int, searches: int) -> dict[str, Any]:
    synth = generate(nodes, seed=nodes)
    queries = (synth.queries * (searches // len(synth.queries) + 1))[:searches]
    store = open_emptied(uri)
    try:
        memory = Memory(store)
        create_s, created = creation_time(memory, synth)
        ours_search: list[float] = []
        for query in queries:
            started = time.perf_counter()
            memory.search(query, limit=10)
            ours_search.append((time.perf_counter() - started) * 1000)
    finally:
        store.close()
    open_emptied(uri).close()  # empty again: the raw run starts from nothing too
    batches = [s.payload for s in synth.steps if s.kind == "entities"]
    raw_create_s, raw_search = _raw_run(uri, batches, queries)
    ours_rate = created / create_s
    raw_rate = created / raw_create_s
    return {
        "nodes": nodes,
        "batches": len(batches),
        "create_entities_per_s": round(ours_rate),
        "raw_driver_per_s": round(raw_rate),
        "create_overhead_ratio": round(raw_rate / ours_rate, 2),
        **search_versus_raw(ours_search, raw_search),
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
    run_size(target, 200, 20)  # warm the server's query caches and JIT for both sides
    return {
        "uri": target,
        "rows": [run_size(target, n, searches) for n in sizes],
    }


if __name__ == "__main__":
    import json
    import sys

    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    print(json.dumps(run(quick="--quick" in sys.argv, uri=args[0] if args else None), indent=2))
