"""Writes and searches on the embedded store, next to the raw engine doing the same work.

- create: batched create_entities through the memory service (validation, name
  registry, RECORDED anchoring, text index) against LadybugDB alone running the
  same UNWIND CREATE per batch, the two taking turns batch by batch;
- search: Memory.search (validation, fulltext, head filter, node hydration)
  against a bare tantivy index holding the same documents;
- undo: an agent's delete_entities of a batch its encounter just wrote (up to 2,000
  nodes, linked in pairs), in nodes per second.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import ladybug
import tantivy

from bench.stats import search_versus_raw
from bench.synth import generate, replay
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore


class _RawEngine:
    """LadybugDB alone, doing a batch's creation the plain way: one table, one UNWIND
    CREATE, one UNWIND for the RECORDED edges, one commit."""

    def __init__(self, path: Path) -> None:
        self._db = ladybug.Database(str(path))
        self._conn = ladybug.Connection(self._db)
        self._conn.execute("CREATE NODE TABLE Encounter(id STRING, PRIMARY KEY(id))")
        self._conn.execute(
            "CREATE NODE TABLE Node(id STRING, type STRING, name STRING, description STRING, "
            "tick INT64, PRIMARY KEY(id))"
        )
        self._conn.execute("CREATE REL TABLE RECORDED(FROM Encounter TO Node, tick INT64)")
        self._conn.execute("CREATE (:Encounter {id: 'E1'})")
        self._serial = 0
        self._tick = 0

    def create(self, batch: list[dict[str, Any]]) -> float:
        """The seconds the batch took."""
        rows: list[dict[str, Any]] = []
        for e in batch:
            self._serial += 1
            rows.append(
                {
                    "id": f"n{self._serial}",
                    "type": e["type"],
                    "name": e["name"],
                    "description": e.get("description", ""),
                }
            )
        self._tick += 1
        conn = self._conn
        started = time.perf_counter()
        conn.execute("BEGIN TRANSACTION")
        conn.execute(
            "UNWIND $rows AS r CREATE (:Node {id: r.id, type: r.type, name: r.name, "
            "description: r.description, tick: $tick})",
            {"rows": rows, "tick": self._tick},
        )
        conn.execute(
            "UNWIND $ids AS i MATCH (e:Encounter {id: 'E1'}), (n:Node {id: i}) "
            "CREATE (e)-[:RECORDED {tick: $tick}]->(n)",
            {"ids": [r["id"] for r in rows], "tick": self._tick},
        )
        conn.execute("COMMIT")
        return time.perf_counter() - started

    def close(self) -> None:
        self._conn.close()
        self._db.close()


def _raw_index(docs: list[tuple[str, str]]) -> tuple[tantivy.Index, tantivy.Searcher]:
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("id", stored=True, tokenizer_name="raw")
    sb.add_text_field("body", stored=False, tokenizer_name="en_stem")
    index = tantivy.Index(sb.build())
    writer = index.writer(heap_size=64_000_000, num_threads=1)
    for node_id, body in docs:
        writer.add_document(tantivy.Document(id=node_id, body=body))
    writer.commit()
    index.reload()
    return index, index.searcher()


UNDO_BATCH = 2_000


def _undo(memory: Memory, n: int) -> float:
    """An agent's undo (delete_entities) of ``n`` nodes its encounter just wrote, linked
    in pairs, beside a memory already holding the run's nodes: the seconds it took."""
    session = "undo-bench"
    memory.advance_encounter(session, "written to be undone")
    made = memory.create_entities(
        session,
        [{"type": "Concept" if i % 2 else "Observation", "name": f"undo {i}"} for i in range(n)],
    )
    pairs = [
        {"source": f"undo {i}", "type": "ABOUT", "target": f"undo {i + 1}"}
        for i in range(0, n - 1, 2)
    ]
    memory.create_relations(session, pairs)
    started = time.perf_counter()
    memory.delete_entities(session, [c.id for c in made.created])
    return time.perf_counter() - started


def run_size(nodes: int, searches: int) -> dict[str, Any]:
    synth = generate(nodes, seed=nodes)
    work = Path(tempfile.mkdtemp(prefix="kenning-bench-"))
    try:
        store = EmbeddedStore.open(work / "memory")
        memory = Memory(store)
        # Each batch goes to the raw engine right after ours: on a shared machine the
        # load moves by the minute, and taking turns gives both the same load.
        raw = _RawEngine(work / "raw.lbdb")
        create_s = raw_create_s = 0.0
        created = 0
        for step, took in replay(memory, synth):
            if step.kind == "entities":
                create_s += took
                created += len(step.payload)
                raw_create_s += raw.create(step.payload)
        raw.close()
        ours_search: list[float] = []
        for query in (synth.queries * (searches // len(synth.queries) + 1))[:searches]:
            started = time.perf_counter()
            memory.search(query, limit=10)
            ours_search.append((time.perf_counter() - started) * 1000)
        docs = [
            (n.id, f"{n.name}\n{n.description}")
            for n in store.read(lambda tx: tx.authored_graph().nodes)
        ]
        undone = min(UNDO_BATCH, nodes)
        undo_s = _undo(memory, undone)
        store.close()

        index, searcher = _raw_index(docs)
        raw_search: list[float] = []
        for query in (synth.queries * (searches // len(synth.queries) + 1))[:searches]:
            started = time.perf_counter()
            q = index.parse_query(query.lower(), ["body"])
            searcher.search(q, 10)
            raw_search.append((time.perf_counter() - started) * 1000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    ours_rate = created / create_s
    raw_rate = created / raw_create_s
    return {
        "nodes": nodes,
        "create_entities_per_s": round(ours_rate),
        "raw_engine_per_s": round(raw_rate),
        "create_overhead_ratio": round(raw_rate / ours_rate, 2),
        **search_versus_raw(ours_search, raw_search),
        "undo_batch": undone,
        "undo_nodes_per_s": round(undone / undo_s),
    }


def run(quick: bool = False) -> dict[str, Any]:
    sizes = [1_000] if quick else [1_000, 10_000, 100_000]
    searches = 100 if quick else 500
    return {
        "goals": "create >= 2000 entities/s; search p95 < 10 ms at 10k, < 50 ms at 100k",
        "rows": [run_size(n, searches) for n in sizes],
    }


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
