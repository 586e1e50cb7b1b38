"""The read_cypher sandbox process: one query at a time, over a snapshot, in bounded memory.

Started by ``sandbox.CypherSandbox`` as ``python -m ...sandbox_worker MEMORY_BYTES``.
It reads one JSON request per line on stdin and answers one JSON line on
stdout. It opens only snapshot copies of the store, read-only, so nothing it
runs can reach the live store; its memory is capped (RLIMIT_DATA) above what
the engine takes to open, so a query that would need more fails inside it; and
the parent kills it at the deadline, so a query the engine cannot interrupt
ends with its process. A crash ends only this process.
"""

from __future__ import annotations

import json
import resource
import sys
from dataclasses import asdict
from typing import Any

import ladybug

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.embedded.cypher import run_read_cypher

SNAPSHOT_POOL_BYTES = 128 << 20
ENGINE_THREADS = 2


def _data_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmData:"):
                return int(line.split()[1]) * 1024
    return 0


class Worker:
    def __init__(self, memory_bytes: int) -> None:
        self._memory = memory_bytes
        self._path: str | None = None
        self._db: ladybug.Database | None = None
        self._conn: ladybug.Connection | None = None

    def _open(self, path: str) -> ladybug.Connection:
        if self._path == path and self._conn is not None:
            return self._conn
        self._close()
        # The limit is lifted while the engine opens (it reserves address space up front),
        # then set this much above what the open took: the query's budget.
        resource.setrlimit(resource.RLIMIT_DATA, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        self._db = ladybug.Database(
            path,
            read_only=True,
            buffer_pool_size=SNAPSHOT_POOL_BYTES,
            max_num_threads=ENGINE_THREADS,
        )
        self._conn = ladybug.Connection(self._db)
        self._path = path
        limit = _data_bytes() + self._memory
        resource.setrlimit(resource.RLIMIT_DATA, (limit, resource.RLIM_INFINITY))
        return self._conn

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._db is not None:
            self._db.close()
        self._conn = self._db = None
        self._path = None

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            conn = self._open(str(request["snapshot"]))
            result = run_read_cypher(
                conn,
                str(request["query"]),
                request.get("params"),
                row_cap=int(request["row_cap"]),
                char_cap=int(request["char_cap"]),
                timeout_s=float(request["timeout_s"]),
            )
        except ReadOnlyViolation as refusal:
            layer = "memory" if "bad_alloc" in refusal.reason else refusal.layer
            return {"refused": {"reason": refusal.reason, "layer": layer, "field": refusal.field}}
        except MemoryError:
            return {"refused": {"reason": "out of memory", "layer": "memory", "field": "query"}}
        return {"ok": asdict(result)}


def main() -> int:
    worker = Worker(int(sys.argv[1]))
    for line in sys.stdin:
        try:
            answer = worker.answer(json.loads(line))
        except Exception as exc:  # the parent reports it; the next request starts clean
            answer = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        sys.stdout.write(json.dumps(answer, default=str) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
