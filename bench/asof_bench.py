"""as_of reads next to the present's, in one run on one memory (issue #16 item 2).

A synthetic memory is recorded on the embedded store, with relations that move statuses
and, at the end, a share of them deleted (so the record of the past has rows to read).
Then, interleaved query by query so a load swing hits both alike:

- search: the plain search, and the same search as of the middle tick and the last one,
  and as of a time within the history (the moment read first);
- find_by_name: the plain lookup, and as of the middle tick.

The plain reads run no statement the record of the past added, so their figures are the
present's cost; the as_of figures are what reconstructing a past adds.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.stats import pct
from bench.synth import generate, record, replay
from kenning_encounter.errors import KenningError
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore

_UNDONE = 200  # relations deleted after the history, each leaving a row of the past


def _ms(fn: Callable[[], object]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _figures(name: str, values: list[float]) -> dict[str, float]:
    return {
        f"{name}_p50_ms": round(pct(values, 0.5), 3),
        f"{name}_p95_ms": round(pct(values, 0.95), 3),
    }


def _undo_some(memory: Memory, rng: random.Random) -> int:
    """Up to ``_UNDONE`` times: a session links an observation to a hypothesis, moving its
    status, and deletes that link again (an agent undoing its own fresh mistake), so the
    record of the past holds status moves and ended edges."""
    sub = memory.store.read(lambda tx: tx.authored_graph())
    seen = [n.id for n in sub.nodes if n.type == "Observation" and n.is_head]
    hypotheses = [n.id for n in sub.nodes if n.type == "Hypothesis" and n.is_head]
    undone = 0
    if not seen or not hypotheses:
        return 0
    memory.advance_encounter("bench-undo", "undo")
    for _ in range(_UNDONE):
        link = {"source": rng.choice(seen), "type": "SUPPORTS", "target": rng.choice(hypotheses)}
        try:
            memory.create_relations("bench-undo", [link])
        except KenningError:  # linked already: another pair next time
            continue
        memory.delete_relations("bench-undo", [link])
        undone += 1
    return undone


def _measure(memory: Memory, store: GraphStore, nodes: int, reads: int) -> dict[str, Any]:
    synth_queries = generate(nodes, seed=nodes).queries
    undone = _undo_some(memory, random.Random(nodes))
    clock = store.read(lambda tx: tx.clock())
    middle = clock // 2
    concepts = store.read(lambda tx: tx.nodes_upto("Concept", middle))
    names = [n.name for n in concepts][:50]
    # A time within the history: as_of by time first finds the tick it stood at.
    at = max((n.created_at for n in concepts), default=None)
    queries = (synth_queries * (reads // len(synth_queries) + 1))[:reads]
    plain: list[float] = []
    then: list[float] = []
    latest: list[float] = []
    by_time: list[float] = []
    for query in queries:
        plain.append(_ms(lambda q=query: memory.search(q, limit=10)))
        then.append(_ms(lambda q=query: memory.search(q, limit=10, as_of=middle)))
        latest.append(_ms(lambda q=query: memory.search(q, limit=10, as_of=clock)))
        if at is not None:
            by_time.append(_ms(lambda q=query: memory.search(q, limit=10, as_of=at)))
    name_plain: list[float] = []
    name_then: list[float] = []
    for name in (names * (reads // max(1, len(names)) + 1))[: reads // 5] if names else []:
        name_plain.append(_ms(lambda n=name: memory.find_by_name(n)))
        name_then.append(_ms(lambda n=name: memory.find_by_name(n, as_of=middle)))
    return {
        "backend": store.backend,
        "nodes": nodes,
        "ticks": clock,
        "relations_undone": undone,
        **_figures("search", plain),
        **_figures("search_as_of_middle", then),
        **_figures("search_as_of_last", latest),
        **(_figures("search_as_of_time", by_time) if by_time else {}),
        **_figures("find_by_name", name_plain),
        **_figures("find_by_name_as_of_middle", name_then),
    }


def run_size(nodes: int, reads: int) -> dict[str, Any]:
    synth = generate(nodes, seed=nodes)
    work = Path(tempfile.mkdtemp(prefix="kenning-asof-bench-"))
    try:
        store = EmbeddedStore.open(work / "memory")
        memory = record(store, synth)
        store.flush_index()
        row = _measure(memory, store, nodes, reads)
        store.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return row


def run_neo4j(nodes: int, reads: int) -> dict[str, Any] | None:
    """The same on the test Neo4j (emptied first), when one is named."""
    from tests.support.neo4j_target import configured, empty_marked

    from kenning_encounter.store.neo4j import Neo4jStore

    target = configured()
    if target is None:
        return None
    empty_marked(target)
    store = Neo4jStore.open(target.uri, target.username, target.password, target.database)
    try:
        memory = Memory(store)
        for _ in replay(memory, generate(nodes, seed=nodes)):
            pass
        return _measure(memory, store, nodes, reads)
    finally:
        store.close()


def run(quick: bool = False) -> dict[str, Any]:
    sizes = [1_000] if quick else [10_000]
    reads = 100 if quick else 300
    rows = [run_size(n, reads) for n in sizes]
    rows += [r for r in (run_neo4j(n, reads) for n in sizes) if r is not None]
    return {"note": "plain and as_of reads interleaved query by query", "rows": rows}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(quick="--quick" in sys.argv), indent=2))
