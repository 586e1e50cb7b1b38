"""read_cypher on the embedded store runs in a separate process, over a snapshot.

The engine offers no per-query memory limit, and some expressions (a list
doubled by ``WITH a + a AS a`` a few dozen times) neither check its query
timeout nor answer an interrupt: in the server's own process such a query takes
memory until the machine runs out, and a reader thread forever. So the text
the gate let through runs in a sandbox process:

- over a *snapshot*: a copy of the store's file taken after a checkpoint,
  opened read-only. The live store is never open in the sandbox, so nothing run
  there can change it; a new snapshot is taken when the clock has moved since
  the last one, so a query sees every write acknowledged before it began;
- with its memory capped (``MEMORY_BYTES`` above what opening the engine
  takes): a query that needs more fails there, as layer "memory";
- killed at the deadline when its own timeout and interrupt did not end it
  (layer "timeout"); a crash ends only the sandbox (layer "engine").

A killed or crashed sandbox is replaced at the next call. Where processes
cannot be limited this way (not Linux), the query runs in process as before.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import kenning_encounter
from kenning_encounter import abandon
from kenning_encounter.errors import ReadOnlyViolation, StoreError
from kenning_encounter.store.port import CypherResult
from kenning_encounter.vocabulary import CLASSIFICATIONS

log = logging.getLogger(__name__)

MEMORY_BYTES: Final = 512 << 20
# Past the query's own timeout: what the sandbox may take to open a new snapshot and answer.
GRACE_S: Final = 3.0
SNAPSHOT_DIR: Final = "cypher-snapshot"
MAX_ANSWER_BYTES: Final = 64 << 20

# (destination) -> the clock of the copy written there, taken under the store's write lock.
TakeSnapshot = Callable[[Path], int]
ReadClock = Callable[[], int]


def supported() -> bool:
    return sys.platform.startswith("linux")


class _Process:
    def __init__(self, memory_bytes: int) -> None:
        root = str(Path(kenning_encounter.__file__).resolve().parents[1])
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH", "")]))
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kenning_encounter.store.embedded.sandbox_worker",
                str(memory_bytes),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,  # a Ctrl-C to the server's group is the server's to handle
        )
        self._buffer = b""

    def ask(self, request: dict[str, Any], deadline: float) -> dict[str, Any] | None:
        """The answer, or None when the process did not answer by ``deadline``."""
        stdin, stdout = self.proc.stdin, self.proc.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
        except OSError as exc:
            raise _Died(f"the sandbox process would not take the query ({exc})") from exc
        fd = stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                code = self.proc.wait(timeout=5)
                raise _Died(f"the sandbox process ended (exit {code})")
            self._buffer += chunk
            if len(self._buffer) > MAX_ANSWER_BYTES:
                raise _Died("the sandbox process sent an answer past every cap")
        line, _, self._buffer = self._buffer.partition(b"\n")
        return json.loads(line)

    def stop(self) -> None:
        """End the process, from any thread; its reader then finds it gone and cleans up."""
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)

    def kill(self) -> None:
        self.stop()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()


class _Died(Exception):
    pass


def _clear(path: Path) -> None:
    """Remove our snapshot folder, or whatever took its name (a file, a link: the link
    itself, never what it points at). Best effort: making it again says what is wrong."""
    with contextlib.suppress(OSError):
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path)


class CypherSandbox:
    """Sandbox processes (at most one per concurrent query) and the snapshot they read."""

    def __init__(
        self,
        data_dir: Path,
        take_snapshot: TakeSnapshot,
        read_clock: ReadClock,
        *,
        memory_bytes: int = MEMORY_BYTES,
    ) -> None:
        self._dir = data_dir / SNAPSHOT_DIR
        _clear(self._dir)  # a crashed server's leftovers
        self._take = take_snapshot
        self._clock = read_clock
        self._memory = memory_bytes
        self._grace_s = GRACE_S
        self._lock = threading.Lock()
        self._snapshot: tuple[int, frozenset[str], Path] | None = None
        self._taken = 0
        self._idle: list[_Process] = []
        self._busy: set[_Process] = set()  # answering; a read given up on may still run here
        self._closed = False

    def _current_snapshot(self, withheld: frozenset[str]) -> Path:
        clock = self._clock()
        with self._lock:
            if self._snapshot is not None and self._snapshot[:2] == (clock, withheld):
                return self._snapshot[2]
            try:
                self._dir.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(
                    f"read_cypher reads a copy of the store in {self._dir}, which cannot be "
                    f"made ({exc.strerror or exc}); remove what is in its place (it holds "
                    "only copies this server makes), or make the folder writable"
                ) from exc
            self._taken += 1
            path = self._dir / f"snapshot-{self._taken}.lbdb"
            taken_at = self._take(path)
            _project(path, withheld)
            old, self._snapshot = self._snapshot, (taken_at, withheld, path)
        if old is not None:
            # A sandbox still reading it keeps its open file; the next query reopens.
            with contextlib.suppress(OSError):
                old[2].unlink()
        return path

    def run(
        self,
        query: str,
        params: dict[str, Any] | None,
        *,
        row_cap: int,
        char_cap: int,
        timeout_s: float,
        withheld: frozenset[str] = frozenset(),
    ) -> CypherResult:
        if self._closed:
            raise StoreError("the store is closed")
        snapshot = self._current_snapshot(withheld)
        request = {
            "snapshot": str(snapshot),
            "query": query,
            "params": params,
            "row_cap": row_cap,
            "char_cap": char_cap,
            "timeout_s": timeout_s,
        }
        with self._lock:
            process = self._idle.pop() if self._idle else None
        process = process or _Process(self._memory)
        with self._lock:
            closing = self._closed
            if not closing:
                self._busy.add(process)
        if closing:
            process.kill()
            raise StoreError("the store is closed")
        keep = False
        # A read its caller gave up on ends with its process (kenning_encounter.abandon).
        call = abandon.current()
        try:
            try:
                with (
                    call.interrupting(process.stop)
                    if call is not None
                    else contextlib.nullcontext()
                ):
                    answer = process.ask(request, time.monotonic() + timeout_s + self._grace_s)
            except _Died as died:
                if call is not None and call.abandoned:
                    raise abandon.Abandoned(str(died)) from None
                raise ReadOnlyViolation(
                    f"the query ended the process it ran in ({died}); nothing was changed",
                    layer="engine",
                ) from None
            if answer is None:
                raise ReadOnlyViolation(
                    f"the query ran past the {timeout_s:g}s limit "
                    "(KENNING_ENCOUNTER_CYPHER_TIMEOUT) and its process was stopped; "
                    "narrow it with LIMIT or a WHERE",
                    layer="timeout",
                )
            result = _decode(answer, self._memory)
            keep = True
            return result
        except ReadOnlyViolation as refusal:
            keep = refusal.layer not in ("memory", "timeout", "engine")
            raise
        finally:
            with self._lock:
                self._busy.discard(process)
                keep = keep and not self._closed
                if keep:
                    self._idle.append(process)
            if not keep:
                process.kill()

    def close(self) -> None:
        """Stops every sandbox, those still answering too: a read the server gave up on
        (cancelled, or past its deadline) would run on after the server left."""
        with self._lock:
            self._closed = True
            stopping, self._idle = [*self._idle, *self._busy], []
        for process in stopping:
            process.kill()
        shutil.rmtree(self._dir, ignore_errors=True)


# The store's own bookkeeping: tables no query should see (DESIGN §4: read_cypher reads the
# graph; the infusion ledger is no part of it), and columns that mirror edges (RECORDED,
# SUPERSEDES) for the store's lookups.
INTERNAL_TABLES: Final = (
    "Meta",
    "NameKey",
    "SourceKey",
    "LedgerSession",
    "InfusionLogEntry",
    "Past",
)
MIRROR_COLUMNS: Final = ("encounter", "locus", "superseded_by", "used_marks")


def withheld_where(withheld: frozenset[str]) -> str:
    """A predicate on ``n``: its classification (comma-joined, memory/classification.py)
    names a withheld class. The classes are literals from the closed vocabulary: the
    engine takes no parameter in a statement of this shape."""
    unknown = withheld - set(CLASSIFICATIONS)
    if unknown:
        raise StoreError(f"internal: {sorted(unknown)} are not classifications")
    padded = "concat(',', n.classification, ',')"
    return " OR ".join(f"{padded} CONTAINS ',{c},'" for c in sorted(withheld))


PROJECT_POOL_BYTES: Final = 64 << 20


def _drop_marked(conn: Any, table: str, column: str, withheld: frozenset[str]) -> None:
    """Delete from the copy the rows of ``table`` whose marks (``column``, store/uses.py)
    name a class in ``withheld``."""
    from kenning_encounter.store import uses
    from kenning_encounter.store.embedded.engine import rows

    marked = rows(conn, f"MATCH (n:{table}) WHERE n.{column} IS NOT NULL RETURN n.id, n.{column}")
    ids = [i for i, m in marked if uses.classes_of(m) & withheld]
    if ids:
        rows(conn, f"MATCH (n:{table}) WHERE n.id IN $ids DETACH DELETE n", {"ids": ids})


def _project(path: Path, withheld: frozenset[str] = frozenset()) -> None:
    """Make the snapshot the graph read_cypher shows: the same shape on both backends.

    Done to the private copy only, before any sandbox opens it; the live store
    keeps its tables. ``NameKey`` carried every live name a second time, so a
    query on ``n.name`` across all tables found each node twice.
    """
    import ladybug

    from kenning_encounter.store.embedded.engine import rows
    from kenning_encounter.vocabulary import NODE_TYPES, RELATION_TYPES, STATUS_EFFECTS

    db = ladybug.Database(str(path), buffer_pool_size=PROJECT_POOL_BYTES)
    try:
        conn = ladybug.Connection(db)
        try:
            for table in INTERNAL_TABLES:
                rows(conn, f"DROP TABLE {table}")
            # A classified node the caller is not granted is not in the copy at all, so
            # no projection, path or aggregate can reach it (memory/gates.py).
            if withheld:
                where = withheld_where(withheld)
                # Nor is a node one of them resolves, supports or challenges: its stored
                # status is the one that node may have moved (store/neo4j/classified.py
                # says the same of Neo4j, and why).
                for rel in sorted(STATUS_EFFECTS):
                    spec = RELATION_TYPES[rel]
                    for source in spec.sources:
                        for target in STATUS_EFFECTS[rel]:
                            if spec.allows(source, target):
                                rows(
                                    conn,
                                    f"MATCH (n:{source})-[:{rel}]->(t:{target}) WHERE {where} "
                                    "DETACH DELETE t",
                                )
                for name, spec in NODE_TYPES.items():
                    if spec.authored:
                        rows(conn, f"MATCH (n:{name}) WHERE {where} DETACH DELETE n")
                        # Nor one a withheld node used: its used_at may be that use, and
                        # read_cypher reads it as stored (store/uses.py).
                        _drop_marked(conn, name, "used_marks", withheld)
                # Nor an encounter whose tombstones count a withheld node's erasure.
                _drop_marked(conn, "Encounter", "tombstones_marked", withheld)
            for name, spec in NODE_TYPES.items():
                if spec.authored:
                    for column in MIRROR_COLUMNS:
                        rows(conn, f"ALTER TABLE {name} DROP {column}")
            rows(conn, "ALTER TABLE Encounter DROP tombstones_marked")
            rows(conn, "CHECKPOINT")
        finally:
            conn.close()
    finally:
        db.close()


def _decode(answer: dict[str, Any], memory_bytes: int) -> CypherResult:
    if "ok" in answer:
        return CypherResult(**answer["ok"])
    refused = answer.get("refused")
    if isinstance(refused, dict):
        if refused.get("layer") == "memory":
            raise ReadOnlyViolation(
                f"the query needed more than the {memory_bytes >> 20} MB a read_cypher query "
                "may use; narrow it (smaller lists, LIMIT, fewer rows)",
                layer="memory",
            )
        raise ReadOnlyViolation(
            str(refused.get("reason")),
            layer=str(refused.get("layer")),
            field=str(refused.get("field") or "query"),
        )
    raise ReadOnlyViolation(f"the sandbox failed: {answer.get('error')}", layer="engine")
