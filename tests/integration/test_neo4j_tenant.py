"""Our memory in a Neo4j database other applications use too (issue #15, "Prove it").

The mcp-neo4j-memory peer's workload, and nodes that borrow our own type and bookkeeping
names, are written first (tests/support/foreign_tenant.py). Then a store of ours opens on
that database and a representative workload runs through the memory's API and a real
server (every kind of write, each read tool, re-entry, an infusion, a seal). Afterwards
the foreign data hash the same, nothing any read of ours returned was foreign, and the
invariants of DESIGN §3 hold for what is ours.

Why not the contract suite itself: its Neo4j fixture empties the whole database before
every test (tests/support/neo4j_store.py), which is what a test server is for, and would
take the foreign data with it at the first test. This workload touches what the contract
suite proves one piece at a time, with the neighbours in place the whole time.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import httpx
import pytest

from kenning_encounter.memory.service import Memory
from tests.e2e.conftest import run_server
from tests.integration.conftest import credentials
from tests.support import foreign_tenant
from tests.support.backends import neo4j_target, neo4j_uri
from tests.support.balancer import Balancer
from tests.support.invariants import assert_store_invariants

pytestmark = pytest.mark.neo4j

SESSION: Final = "tenant-ours"  # the session the foreign Locus and ledger name too
WORD: Final = foreign_tenant.FOREIGN_WORD


def _strings(found: Any) -> set[str]:
    """Every string in a read's result, however deep (ids, names, cells of a row)."""
    if isinstance(found, str):
        return {found}
    if isinstance(found, dict):
        found = [*found.keys(), *found.values()]  # pyright: ignore[reportUnknownMemberType]
    if isinstance(found, list | tuple):
        return set().union(*(_strings(item) for item in found))  # pyright: ignore[reportUnknownVariableType]
    return set()


def _wire(found: Any) -> Any:
    """A read's result as plain data, so that nothing in it escapes the checks."""
    if hasattr(found, "model_dump"):
        return found.model_dump(mode="json")
    if dataclasses.is_dataclass(found) and not isinstance(found, type):
        return dataclasses.asdict(found)
    assert isinstance(found, dict | list), f"a read returned a {type(found).__name__}"
    return found  # pyright: ignore[reportUnknownVariableType]


def _our_workload(memory: Memory) -> tuple[set[str], list[Any]]:
    """Every kind of write and read; the ids written, and what the reads returned."""
    reads: list[Any] = []
    reads.append(memory.advance_encounter(SESSION, "retry storms beside another app"))
    made = memory.create_entities(
        SESSION,
        [
            {"type": "Observation", "name": "retry storm", "description": "Deploys retry."},
            {"type": "Question", "name": "why storms", "description": "Why at 09:00?"},
            {"type": "Concept", "name": "backoff", "description": "Jittered backoff."},
            {"type": "Note", "name": "scratch", "description": "To be deleted."},
            {
                "type": "Component",
                "name": "retry module",
                "description": "Where retries live.",
                "source_kind": "file",
                "source_label": "repo",
                "source_key": "src/retry.py",
            },
        ],
    )
    ours = {n.id for n in made.created}
    memory.create_relations(
        SESSION,
        [
            {"source": "retry storm", "type": "RAISES", "target": "why storms"},
            {"source": "retry storm", "type": "ABOUT", "target": "retry module"},
            {"source": "backoff", "type": "INFORMS", "target": "why storms"},
        ],
    )
    revised = memory.create_entities(
        SESSION,
        [
            {
                "type": "Observation",
                "name": "retry storm",
                "description": "Deploys retry in a storm at 09:00.",
                "supersedes": "retry storm",
                "revision_why": "the time is known now",
            }
        ],
    )
    ours |= {n.id for n in revised.created}
    memory.delete_entities(SESSION, ["scratch"])
    reads.append(memory.search("retry storm"))
    reads.append(memory.search(WORD))
    reads.append(memory.find_by_name("retry storm"))
    reads.append(memory.trace_provenance("why storms"))
    reads.append(memory.read_cypher("MATCH (n) RETURN n.id AS id, n.name AS name, labels(n) AS l"))
    reads.append(memory.read_cypher("MATCH (a)-[r]->(b) RETURN a.id AS id, b.id AS node_id"))
    reads.append(memory.close_encounter(SESSION, "storms traced beside a neighbour"))
    reads.append(memory.advance_encounter(SESSION, "the second encounter"))
    return ours, reads


def _through_a_server(tmp_path: Path) -> list[Any]:
    """An infusion and the read tools through a real server on the same database."""
    user, password = credentials()
    args = ["--store", "neo4j", "--neo4j-uri", neo4j_uri(), "--http-sessions", "stateless"]
    env = {"NEO4J_USERNAME": user, "NEO4J_PASSWORD": password}
    with contextlib.ExitStack() as stack:
        server = stack.enter_context(run_server(tmp_path / "server", *args, env=env))
        lb = Balancer([server.base], urlsplit(server.url).path)
        client = stack.enter_context(httpx.Client())
        answers = [
            lb.infuse(client, SESSION, "the retry storm is back"),
            lb.tool(client, "search", {"query": "retry storm"}),
            lb.tool(client, "find_by_name", {"name": "retry storm"}),
            lb.tool(client, "read_cypher", {"query": "MATCH (n) RETURN n.id AS id, n.name AS n"}),
            lb.tool(client, "orient", {}),
            lb.tool(client, "close_encounter", {"session_id": SESSION, "summary": "done"}),
        ]
    for answer in answers:
        assert answer.ok, answer.text
    infused = answers[0].body
    assert infused["meta"]["turn"] == 1, "the foreign ledger of this session was read as ours"
    return [a.body for a in answers]


def test_our_memory_beside_the_peer_and_lookalikes_leaves_them_untouched(
    neo4j_store: Any, raw_driver: Any, tmp_path: Path
) -> None:
    from kenning_encounter.store.neo4j import Neo4jStore

    t = neo4j_target()
    neo4j_store.close()  # it emptied the database; ours opens again once the neighbours are in
    foreign = foreign_tenant.write(raw_driver, t.database, SESSION)
    before = foreign_tenant.fingerprint(raw_driver, t.database, foreign)
    assert before.count == len(foreign) > foreign_tenant.PEER_ENTITIES

    store = Neo4jStore.open(t.uri, t.username, t.password, t.database)
    try:
        memory = Memory(store)
        ours, reads = _our_workload(memory)
        reads += _through_a_server(tmp_path)
        view = assert_store_invariants(store)
    finally:
        store.close()

    after = foreign_tenant.fingerprint(raw_driver, t.database, foreign)
    assert (after.count, after.digest) == (before.count, before.digest), "\n".join(
        ["foreign data changed:", *before.changed(after)[:10]]
    )
    held = {n.id for n in view.graph.nodes}
    assert held <= ours, f"our graph holds nodes we never wrote: {sorted(held - ours)}"
    assert all(e.purpose != WORD for e in view.encounters), "a foreign encounter is ours"
    mine = [e for e in view.encounters if e.locus == SESSION]
    assert len(mine) == 2 and all(e.sealed_at for e in mine), [e.name for e in mine]
    foreign_ids = {"obs_x", "note_x", "cmp_x"}
    leaks = [(i, sorted(_strings(_wire(r)) & foreign_ids)) for i, r in enumerate(reads)]
    leaks = [(i, found) for i, found in leaks if found]
    assert not leaks, f"reads of ours returned foreign nodes (read number, ids): {leaks}"
    texts = [i for i, r in enumerate(reads) if WORD in repr(_wire(r))]
    assert not texts, f"reads of ours returned foreign text (read numbers): {texts}"
