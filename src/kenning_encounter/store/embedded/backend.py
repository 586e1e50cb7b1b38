"""The embedded backend: LadybugDB in process, plus a derived tantivy index.

One process owns a store (the engine locks its file; ``owner.json`` beside it
names the owner so a second process can say whom to ask instead). All writes go
through one connection behind one lock; reads use a small pool of their own
connections, each inside ``BEGIN TRANSACTION READ ONLY``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import queue
import re
import shutil
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final, TypeVar

import ladybug

from kenning_encounter import abandon
from kenning_encounter.errors import (
    EngineError,
    ReadOnlyViolation,
    SchemaVersionError,
    StoreError,
    StoreLocked,
)
from kenning_encounter.store.cypher_guard import LADYBUG_RULES, check_params, check_read_only
from kenning_encounter.store.embedded import engine, sandbox
from kenning_encounter.store.embedded import queries as q
from kenning_encounter.store.embedded.checkpoints import QuietCheckpoints
from kenning_encounter.store.embedded.cypher import CYPHER_CONCURRENCY, run_read_cypher
from kenning_encounter.store.embedded.infusion_log import EmbeddedInfusionLog
from kenning_encounter.store.embedded.ledger import EmbeddedLedgers, Rows
from kenning_encounter.store.embedded.nodecache import (
    WARM_LIMIT,
    LazySnapshot,
    NodeCache,
    SnapshotMoved,
)
from kenning_encounter.store.embedded.schema import MIGRATIONS, SCHEMA_VERSION
from kenning_encounter.store.embedded.textindex import (
    IndexDamaged,
    IndexDoc,
    TextIndex,
    recorded_tick,
)
from kenning_encounter.store.embedded.tx import (
    IO_FAULT,
    POOL_FULL,
    ClassesUsed,
    EmbeddedTx,
    engine_error,
    node_to_index_doc,
    pool_full_message,
    pool_is_full,
)
from kenning_encounter.store.port import (
    AnalyticsExecutor,
    CypherResult,
    ReadTx,
    SearchHit,
    TermStatsSnapshot,
    WriteTx,
)
from kenning_encounter.store.tracing import DEFAULT_SLOW_QUERY_MS, QueryLog, Tracer
from kenning_encounter.textproc_bm25 import query_terms
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

log = logging.getLogger(__name__)
T = TypeVar("T")

_LOCK_PID = re.compile(r"Lock is held by PID (\d+)")
# How long a close waits for reads still running (each interrupted) before it leaves the
# database to the process's exit: the engine crashes the process when a database is
# closed under a statement running on another thread.
READS_GRACE_S = 10.0


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


# The engine would otherwise reserve most of the machine's memory for its buffer pool.
# A million-node memory reads its whole graph within it (orient); past a few million,
# raise it (the buffer_pool_mib setting).
BUFFER_POOL_MIB: Final = 1024


class EmbeddedStore:
    """GraphStore on LadybugDB. Open it with ``EmbeddedStore.open(data_dir)``."""

    backend = "embedded"

    def __init__(
        self,
        data_dir: Path,
        db: ladybug.Database,
        *,
        read_pool: int = 4,
        clock: Callable[[], str] = _utc_now,
        tracer: Tracer | None = None,
        warm_limit: int = WARM_LIMIT,
        log_cut: bool = False,
        buffer_pool_mib: int = BUFFER_POOL_MIB,
    ) -> None:
        """``log_cut``: the write-ahead log was replayed only up to damage in it
        (``_open_database``), so the graph may lack writes the text index saw."""
        self.data_dir = data_dir
        self.buffer_pool_mib = buffer_pool_mib  # what ``open`` gave the engine
        self._db = db
        self._log_cut = log_cut
        self._clock = clock
        self._tracer: Tracer = tracer or QueryLog(backend=self.backend)
        self._write_lock = threading.Lock()
        # Counts each commit and checkpoint as it begins and as it ends (odd: one is under
        # way), so a read that failed can tell whether the files changed beside it (_read).
        self._changes = 0
        self._changed = threading.Condition()
        self._writer = ladybug.Connection(db)
        self._readers: queue.SimpleQueue[ladybug.Connection] = queue.SimpleQueue()
        for _ in range(read_pool):
            self._readers.put(ladybug.Connection(db))
        # Readers taken from the pool and not yet back; a close waits for them.
        self._out: set[ladybug.Connection] = set()
        self._returned = threading.Condition()
        self._cypher_slots = threading.BoundedSemaphore(CYPHER_CONCURRENCY)
        self._closed = False
        self._write_fault: EngineError | None = None  # see _bracket
        self._nodes = NodeCache(warm_limit=warm_limit)
        # Each locus's open encounter as writes last found it (EmbeddedTx.open_encounter_of).
        self._open_names: dict[str, str] = {}
        self._ledgers = EmbeddedLedgers(self)
        self._infusion_log = EmbeddedInfusionLog(self)
        self._index_repairs = 0  # see _repair_index
        self._migrate()
        # The classes the memory's nodes have carried, which the read gate asks first.
        self._classes = ClassesUsed.scan(lambda st: self._rows(self._writer, st))
        self._index = TextIndex(data_dir / "textindex")
        try:
            self._sync_index()
        except BaseException:
            self._index.close()
            self._writer.close()
            while not self._readers.empty():
                self._readers.get().close()
            self._db.close()
            raise
        self._sandbox = (
            sandbox.CypherSandbox(data_dir, self._snapshot_to, self._clock_value)
            if sandbox.supported()
            else None
        )
        self.checkpoints = QuietCheckpoints(self._quiet_checkpoint)

    # --- lifecycle ----------------------------------------------------------
    @staticmethod
    def holds_memory(data_dir: Path) -> bool:
        """Whether ``data_dir`` holds an embedded memory (its graph file, or a text index
        that saved writes: a memory whose graph was lost, which opening refuses to
        replace); a path that cannot be looked at (too long, a loop of links) holds none."""
        try:
            return (data_dir / "graph.lbdb").exists() or bool(recorded_tick(data_dir / "textindex"))
        except OSError:
            return False

    @classmethod
    def open(
        cls,
        data_dir: Path,
        *,
        clock: Callable[[], str] = _utc_now,
        tracer: Tracer | None = None,
        slow_query_ms: float = DEFAULT_SLOW_QUERY_MS,
        warm_limit: int = WARM_LIMIT,
        buffer_pool_mib: int = BUFFER_POOL_MIB,
    ) -> EmbeddedStore:
        """Open (or create) the store in ``data_dir``. Statements go to ``tracer``;
        without one, to the query log, which calls one slower than ``slow_query_ms``
        slow (0: never). A memory of at most ``warm_limit`` authored nodes is read whole
        into the node cache by the first read that misses it (0: never). The engine keeps
        pages in at most ``buffer_pool_mib`` MiB."""
        data_dir.mkdir(parents=True, exist_ok=True)
        path = data_dir / "graph.lbdb"
        _refuse_lost_graph(data_dir, path)
        try:
            db, cut = _open_database(path, buffer_pool_mib)
        except RuntimeError as exc:
            match = _LOCK_PID.search(str(exc))
            if match or "lock" in str(exc).lower():
                owner = read_owner(data_dir)
                pid = int(match.group(1)) if match else owner.get("pid")
                raise StoreLocked(str(data_dir), pid, owner.get("url")) from exc
            raise StoreError(
                f"cannot open the store at {path}: the engine says {str(exc).strip()!r}. "
                "The file is damaged or not a store's; nothing was changed. "
                + _RESTORE.format(d=data_dir)
            ) from exc
        tracer = tracer or QueryLog(slow_query_ms, backend=cls.backend)
        store = cls(
            data_dir,
            db,
            clock=clock,
            tracer=tracer,
            warm_limit=warm_limit,
            log_cut=cut,
            buffer_pool_mib=buffer_pool_mib,
        )
        write_owner(data_dir, os.getpid(), None)
        return store

    def set_owner_url(self, url: str) -> None:
        write_owner(self.data_dir, os.getpid(), url)

    def close(self) -> None:
        if self._closed:
            return
        self._ledgers.close()  # the saves written behind their answers, first
        with self._returned:
            self._closed = True
        self.checkpoints.close()
        if self._sandbox is not None:
            self._sandbox.close()
        with self._write_lock:
            try:
                self._index.close()
            except Exception as exc:  # derived: the next opening derives what it lacks
                log.warning("the text index did not close cleanly (%s)", exc)
            self._writer.close()
            recalled = self._recall_readers(READS_GRACE_S)
            while not self._readers.empty():
                self._readers.get().close()
            if recalled:
                self._db.close()
            else:
                log.warning(
                    "a read still ran %gs after the store began to close; the database is "
                    "left open for the process's exit to close",
                    READS_GRACE_S,
                )
        with contextlib.suppress(OSError):
            (self.data_dir / "owner.json").unlink()

    # --- schema -------------------------------------------------------------
    def _migrate(self) -> None:
        conn = self._writer
        tables = {str(row[0]) for row in self._rows(conn, q.SHOW_TABLES)}
        found = 0
        if "Meta" in tables:
            rows = self._rows(conn, q.META_GET, {"key": "schema_version"})
            found = int(rows[0][0]) if rows else 0
        if found > SCHEMA_VERSION:
            raise SchemaVersionError(found, SCHEMA_VERSION)
        for version in range(found + 1, SCHEMA_VERSION + 1):
            self._rows(conn, "BEGIN TRANSACTION")
            try:
                for stmt in MIGRATIONS[version]():
                    self._rows(conn, stmt)
                self._rows(conn, q.META_SET, {"key": "schema_version", "value": version})
                self._rows(conn, "COMMIT")
            except Exception:
                self._rows(conn, "ROLLBACK")
                raise
        if found < SCHEMA_VERSION:
            # Schema changes go to the main file now, not only to the write-ahead log.
            self._rows(conn, "CHECKPOINT")
            if found:
                log.info("migrated the store from schema version %d to %d", found, SCHEMA_VERSION)

    def schema_version(self) -> int:
        return self._read(lambda tx: tx.meta("schema_version"))

    # --- statements outside a transaction object --------------------------------
    def _rows(
        self, conn: ladybug.Connection, statement: str, params: dict[str, Any] | None = None
    ) -> list[list[Any]]:
        return engine.rows(conn, statement, params, tracer=self._tracer)

    def _bracket(self, conn: ladybug.Connection, statement: str) -> None:
        """Open or commit the write transaction, the engine's refusal in our tree.

        When the engine cannot write its files (a full disk), it is left unable to
        commit again in this process: the next COMMIT waits forever, even once there is
        room. So the first such failure is kept, and every later write is refused with
        it at once; reads go on, and opening the store again replays every committed
        write."""
        try:
            if statement in _CHANGING:
                with self._changing():
                    self._rows(conn, statement)
            else:
                self._rows(conn, statement)
        except RuntimeError as exc:
            doing = "committing a write" if statement == "COMMIT" else "starting a write"
            refused = engine_error(exc, doing)
            if refused.code == IO_FAULT:
                self._write_fault = refused
            raise refused from exc

    # --- units of work --------------------------------------------------------
    @contextlib.contextmanager
    def _changing(self) -> Generator[None]:
        """Marks a commit or a checkpoint under way, for the reads beside it (``_read``)."""
        with self._changed:
            self._changes += 1
        try:
            yield
        finally:
            with self._changed:
                self._changes += 1
                self._changed.notify_all()

    def _own_writer(self) -> ladybug.Connection:
        """The writer's connection, for a caller holding the write lock; refused once the
        store is closed, or since a write failed to reach the disk (``_bracket``)."""
        if self._closed:
            raise StoreError("the store is closed")
        if self._write_fault is not None:
            raise StoreError(f"this store takes no writes since one failed: {self._write_fault}")
        return self._writer

    @contextlib.contextmanager
    def _writing(self) -> Generator[ladybug.Connection]:
        """The write lock and one engine transaction on the writer; the body commits,
        and anything it raises rolls the transaction back."""
        with self._write_lock:
            conn = self._own_writer()
            self._bracket(conn, "BEGIN TRANSACTION")
            try:
                yield conn
            except BaseException as exc:
                with contextlib.suppress(RuntimeError):
                    self._rows(conn, "ROLLBACK")
                if isinstance(exc, EngineError) and exc.code == POOL_FULL:
                    raise self._sized(exc, "writing") from exc
                raise

    def _sized(self, exc: EngineError, doing: str) -> EngineError:
        """A full buffer pool's refusal, naming the size this store was given."""
        message = pool_full_message(doing, self.buffer_pool_mib)
        return EngineError(message, code=POOL_FULL, detail=exc.detail)

    def write(self, work: Callable[[WriteTx], T]) -> T:
        with self._writing() as conn:
            tx = EmbeddedTx(
                conn,
                clock=self._clock,
                writable=True,
                tracer=self._tracer,
                open_names=self._open_names,
                committed=self._nodes,
                classes=self._classes,
            )
            result = work(tx)
            self._nodes.begin_commit()
            try:
                self._bracket(conn, "COMMIT")
            except BaseException:
                self._nodes.end_commit(None)
                raise
            self.checkpoints.wrote()
            # Created nodes go in as written: a node changed after its creation
            # in the same write is dropped instead.
            created = [n for n in tx.created_nodes if n.id not in tx.changed_nodes]
            self._nodes.end_commit(
                tx.changed_nodes,
                created,
                tx.changed_edges,
                tx.created_marks,
                sought=tx.sought_edges,
                linked=tx.linked_edges,
            )
            # Under the write lock, so the index takes ticks in commit order.
            if tx.index_upserts or tx.index_deletes:
                fresh = {n.id for n in tx.created_nodes}
                self._index.apply(tx.index_upserts, tx.index_deletes, tx.tick, fresh=fresh)
            elif tx.ticked:
                self._index.apply([], [], tx.tick)
            return result

    @contextlib.contextmanager
    def _reader(self) -> Generator[ladybug.Connection]:
        if self._closed:
            raise StoreError("the store is closed")
        call = abandon.current()
        if call is not None:
            call.check()  # given up while it waited its turn: take no reader
        conn = self._readers.get()
        with self._returned:
            if self._closed:  # closed while this waited for a reader
                self._readers.put(conn)
                raise StoreError("the store is closed")
            self._out.add(conn)
        try:
            # A read given up is interrupted where it stands (kenning_encounter.abandon).
            with call.interrupting(conn.interrupt) if call else contextlib.nullcontext():
                yield conn
        except EngineError as exc:
            if self._closed:  # interrupted by the close (``_recall_readers``)
                raise StoreError(
                    "the store was closed while this read ran (the server is stopping); "
                    "nothing was read: ask again once it is back"
                ) from exc
            if call is not None and call.abandoned:  # interrupted: its caller is gone
                raise abandon.Abandoned(str(exc)) from exc
            if exc.code == POOL_FULL:
                raise self._sized(exc, "reading") from exc
            raise
        finally:
            with self._returned:
                self._out.discard(conn)
                self._readers.put(conn)
                self._returned.notify_all()

    def _recall_readers(self, grace_s: float) -> bool:
        """Interrupt the reads still running and wait until their readers are back; False
        when some read outlasts ``grace_s``."""
        deadline = time.monotonic() + grace_s
        with self._returned:
            while self._out:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                # Again each round: a read between two statements takes no interrupt.
                for conn in list(self._out):
                    with contextlib.suppress(RuntimeError):
                        conn.interrupt()
                self._returned.wait(min(0.05, left))
        return True

    def read(self, work: Callable[[ReadTx], T]) -> T:
        return self._read(work)

    def warm(self) -> bool:
        """Read a small memory whole into the node cache now, not at the first read that
        needs it; True when this call did (see ``EmbeddedTx.warm``)."""
        return self._read(lambda tx: tx.warm())

    def _read(self, work: Callable[[EmbeddedTx], T]) -> T:
        """``work`` in one read transaction. The engine folds its log into the main file
        while reads go on (a checkpoint, its own or ours), and a read may fail in its
        engine beside one: a read the engine failed while a commit or a checkpoint ran is
        read once more, after it. A refusal the statement earns by its shape is not."""
        before = self._changes
        try:
            return self._read_once(work)
        except EngineError as exc:
            if exc.code in _STATEMENT_FAULTS or not self._changed_since(before):
                raise
            # The engine's kind alone: its message may quote what was read.
            log.warning(
                "a read failed while the store's files changed (%s); reading again",
                exc.code or "engine",
            )
        with self._changed:
            self._changed.wait_for(lambda: self._changes % 2 == 0, timeout=_CHANGE_WAIT_S)
        return self._read_once(work)

    def _changed_since(self, before: int) -> bool:
        """Whether a commit or a checkpoint ran at some time since ``self._changes`` was
        ``before``."""
        return before % 2 == 1 or self._changes != before

    def _read_once(self, work: Callable[[EmbeddedTx], T]) -> T:
        with self._reader() as conn:
            try:
                return self._read_on(conn, work, self._nodes)
            except SnapshotMoved:
                # A commit landed between the cached nodes and the snapshot: again, uncached.
                return self._read_on(conn, work, None)

    def _read_on(
        self, conn: ladybug.Connection, work: Callable[[EmbeddedTx], T], cache: NodeCache | None
    ) -> T:
        snapshot = LazySnapshot(conn, cache, self._tracer)
        try:
            result = work(
                EmbeddedTx(
                    conn,
                    clock=self._clock,
                    writable=False,
                    tracer=self._tracer,
                    snapshot=snapshot,
                    classes=self._classes,
                )
            )
        except BaseException:
            # A statement that failed may have ended the transaction already: the
            # ROLLBACK's own refusal must not hide the failure that ended the read.
            with contextlib.suppress(RuntimeError):
                snapshot.close()
            raise
        snapshot.close()
        return result

    # --- the infusion ledger (store/embedded/ledger.py): no tick, no cache, no index ---
    @property
    def ledgers(self) -> EmbeddedLedgers:
        return self._ledgers

    @property
    def infusion_log(self) -> EmbeddedInfusionLog:
        return self._infusion_log

    def _ledger_rows(self, conn: ladybug.Connection, doing: str) -> Rows:
        def run(statement: str, params: dict[str, Any]) -> list[list[Any]]:
            try:
                return self._rows(conn, statement, params)
            except RuntimeError as exc:
                raise engine_error(exc, doing) from exc

        return run

    def ledger_read(self, work: Callable[[Rows], T]) -> T:
        with self._reader() as conn:
            return work(self._ledger_rows(conn, "reading the infusion ledger"))

    def ledger_write(self, work: Callable[[Rows], T]) -> T:
        with self._writing() as conn:
            result = work(self._ledger_rows(conn, "writing the infusion ledger"))
            self._bracket(conn, "COMMIT")
            return result

    # --- lexical search -------------------------------------------------------
    def fulltext(
        self,
        text: str,
        *,
        types: Iterable[str] | None = None,
        heads_only: bool = True,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> list[SearchHit]:
        repairs = self._index_repairs

        def search() -> list[SearchHit]:
            return self._index.search(
                text,
                types=types,
                heads_only=heads_only,
                limit=limit,
                withheld=withheld,
                hidden_loci=hidden_loci,
            )

        try:
            return search()
        except IndexDamaged as exc:
            self._repair_index(exc, repairs)
        return search()

    def _repair_index(self, found: IndexDamaged, repairs: int) -> None:
        """Derive a text index found damaged while serving again from the graph, now.
        Under the write lock, so no write lands between the graph read and the index;
        a search holds no reader here, so the rebuild's read cannot wait on it. Statistics,
        asked for inside a read, only refuse: the next search repairs."""
        with self._write_lock:
            if self._closed:
                raise StoreError("the store is closed")
            if self._index_repairs != repairs:  # another search repaired it meanwhile
                return
            log.warning("%s: rebuilding it now", found)
            self._index.reset()
            self._rebuild_index()
            self._index_repairs += 1

    def fulltext_stats(
        self,
        terms: Iterable[str],
        *,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> TermStatsSnapshot:
        return self._index.stats(terms, withheld, hidden_loci)

    def search_read(
        self,
        text: str,
        work: Callable[[ReadTx, list[SearchHit], Callable[[], TermStatsSnapshot]], T],
        *,
        types: Iterable[str] | None = None,
        heads_only: bool = True,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> T:
        # The index lives in this process: only the graph read is a round of the engine.
        hits = self.fulltext(
            text,
            types=types,
            heads_only=heads_only,
            limit=limit,
            withheld=withheld,
            hidden_loci=hidden_loci,
        )
        wanted = query_terms(text)
        return self.read(
            lambda tx: work(
                tx,
                hits,
                lambda: self.fulltext_stats(wanted, withheld=withheld, hidden_loci=hidden_loci),
            )
        )

    def read_text(
        self,
        text: str,
        terms: Iterable[str],
        work: Callable[[ReadTx, list[SearchHit], Callable[[], TermStatsSnapshot]], T],
        *,
        limit: int = 10,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> T:
        # The index lives in this process: only the graph read is a round of the engine.
        # A withheld node's or a hidden locus's hits take no candidate's place.
        hits = self.fulltext(text, limit=limit, withheld=withheld, hidden_loci=hidden_loci)
        wanted = list(terms)
        return self.read(
            lambda tx: work(
                tx,
                hits,
                lambda: self.fulltext_stats(wanted, withheld=withheld, hidden_loci=hidden_loci),
            )
        )

    def _all_index_docs(self, tx: EmbeddedTx) -> Iterator[IndexDoc]:
        for node in tx.all_nodes():
            yield node_to_index_doc(node)

    def _sync_index(self) -> None:
        clock = self.read(lambda tx: tx.clock())
        seen = self._index.seen_tick
        if seen is not None and seen > clock:
            self._graph_behind(seen, clock)
        if self._index.current(clock):
            return
        self._rebuild_index()

    def _rebuild_index(self) -> None:
        started = time.perf_counter()

        def work(tx: EmbeddedTx) -> tuple[int, int]:
            clock = tx.clock()
            return self._index.rebuild(self._all_index_docs(tx), clock), clock

        n, clock = self._read(work)
        log.info(
            "rebuilt the text index: %d documents at tick %d in %.2fs",
            n,
            clock,
            time.perf_counter() - started,
        )

    def _graph_behind(self, seen: int, clock: int) -> None:
        """The text index saved tick ``seen``, after the graph had committed it, and the
        graph now stops at ``clock``: committed writes are missing from the graph."""
        if self._log_cut:  # said already (``_open_database``): the loss is the damage's
            log.warning(
                "the graph stops at tick %d, and ticks %d to %d were in the damaged part of "
                "its write-ahead log",
                clock,
                clock + 1,
                seen,
            )
            return
        raise StoreError(
            f"the graph in {self.data_dir} stops at tick {clock}, but its text index saved "
            f"tick {seen}: writes the store acknowledged are missing from graph.lbdb (its "
            "write-ahead log graph.lbdb.wal lost, or the file put back from an older copy). "
            "Nothing was changed. Put the missing file back if you can. "
            f"{_RESTORE.format(d=self.data_dir)} To serve the graph as it is, remove "
            f"{self.data_dir / 'textindex'} (it is rebuilt from the graph)."
        )

    def flush_index(self) -> None:
        """Commit staged index changes now (the flusher would do it within a moment)."""
        self._index.flush()

    # --- read_cypher ----------------------------------------------------------
    def read_cypher(
        self,
        query: str,
        params: dict[str, Any] | None = None,
        *,
        row_cap: int,
        char_cap: int,
        timeout_s: float,
        withheld: frozenset[str] = frozenset(),
    ) -> CypherResult:
        # Fewer slots than reader connections: slow queries never take every reader.
        if not self._cypher_slots.acquire(timeout=timeout_s):
            raise ReadOnlyViolation(
                f"{CYPHER_CONCURRENCY} read_cypher queries are already running; try again "
                "in a moment or narrow the query",
                layer="busy",
            )
        try:
            if self._sandbox is None:
                if self.holds_withheld(withheld):
                    # Only a private snapshot can be pruned of withheld nodes.
                    raise ReadOnlyViolation(
                        "read_cypher is not served on this platform (no sandbox to prune) "
                        "while the memory holds classified nodes this server does not grant; "
                        "use search, find_by_name or trace_provenance, or grant the classes "
                        "(KENNING_ENCOUNTER_GRANT)",
                        layer="gate",
                    )
                with self._reader() as conn:
                    return run_read_cypher(
                        conn,
                        query,
                        params,
                        row_cap=row_cap,
                        char_cap=char_cap,
                        timeout_s=timeout_s,
                        tracer=self._tracer,
                    )
            # The gate first, here: a refused text costs no snapshot and no process.
            check_params(params, homogeneous_lists=True)
            check_read_only(query, LADYBUG_RULES, params)
            started = time.perf_counter()
            try:
                return self._sandbox.run(
                    query,
                    params,
                    row_cap=row_cap,
                    char_cap=char_cap,
                    timeout_s=timeout_s,
                    withheld=withheld,
                )
            finally:
                # The worker's own log goes nowhere: the statement is traced here, whole
                # round trip included, like any other.
                self._tracer(query, params, time.perf_counter() - started)
        finally:
            self._cypher_slots.release()

    def holds_withheld(self, withheld: frozenset[str]) -> bool:
        """Whether any node carries one of the ``withheld`` classes (memory/gates.py)."""
        if not withheld:
            return False
        where = sandbox.withheld_where(withheld)
        with self._reader() as conn:
            return any(
                self._rows(conn, f"MATCH (n:{name}) WHERE {where} RETURN n.id LIMIT 1")
                for name in AUTHORED_NODE_TYPES
            )

    def _clock_value(self) -> int:
        return self._read(lambda tx: tx.clock())

    def _quiet_checkpoint(self) -> bool:
        """Fold the write-ahead log into the main file (checkpoints.py); whether it ran. A
        write waits for it, as for any other; a store closed or unable to write skips it."""
        with self._write_lock:
            if self._closed or self._write_fault is not None:
                return False
            started = time.perf_counter()
            self._bracket(self._own_writer(), "CHECKPOINT")
            log.debug("quiet checkpoint in %.0f ms", (time.perf_counter() - started) * 1000)
            return True

    def _snapshot_to(self, dest: Path) -> int:
        """Copy the store's file to ``dest`` as of now; the clock of the copy."""
        with self._write_lock:
            if self._write_fault is not None:  # a copy needs a checkpoint: a write
                raise StoreError(
                    "read_cypher reads a copy of the store, which cannot be made since a "
                    f"write failed to reach the disk ({self._write_fault}); the other read "
                    "tools still answer"
                )
            conn = self._own_writer()
            # Everything committed goes into the main file, so the copy alone is whole.
            self._bracket(conn, "CHECKPOINT")
            rows = self._rows(conn, q.META_GET, {"key": "clock"})
            partial = dest.with_name(dest.name + ".partial")
            shutil.copyfile(self.data_dir / "graph.lbdb", partial)
            partial.replace(dest)
            return int(rows[0][0]) if rows else 0

    def analytics_executor(self) -> AnalyticsExecutor | None:
        """None: the engine has no analytics of its own; igraph reads the projection."""
        return None

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "data_dir": str(self.data_dir),
            "engine": f"ladybug {ladybug.Database.get_version()}",
            "schema_version": SCHEMA_VERSION,
            "authored_types": list(AUTHORED_NODE_TYPES),
        }


# The statements during which the store's files change under the reads beside them.
_CHANGING: Final = frozenset({"COMMIT", "CHECKPOINT"})
# Engine refusals a read earns by its own statement or by the machine, which reading again
# would only repeat: a statement the engine cannot parse or bind, a value it cannot
# convert, a full disk, too little page memory.
_STATEMENT_FAULTS: Final = frozenset(
    {"Parser", "Binder", "Catalog", "Conversion", IO_FAULT, POOL_FULL}
)
# How long a read that failed waits for the commit or checkpoint beside it to end.
_CHANGE_WAIT_S: Final = 30.0


# What to do with a memory whose graph cannot be read (said after what is wrong).
_RESTORE = (
    "Restore the folder {d} from a backup, or load your last export into a new folder: "
    "kenning-encounter import FILE --data-dir NEW."
)


def _refuse_lost_graph(data_dir: Path, path: Path) -> None:
    """A graph file this user may not read or write (the engine would only say it cannot
    open it), or one missing or empty where the text index saved writes: the engine would
    make a new empty memory there and the index would follow it, silently."""
    for name in (path, path.with_name(path.name + ".wal")):
        try:
            with name.open("r+b"):
                pass
        except PermissionError as exc:
            raise StoreError(
                f"the store's file {name} may not be read and written by this user "
                f"({exc.strerror}); nothing was changed: give it back (chmod u+rw {name}), "
                "or run as the user who owns it"
            ) from exc
        except OSError:  # missing, or not a file: said below, or by the engine
            pass
    seen = recorded_tick(data_dir / "textindex")
    if not seen:
        return
    try:
        if path.stat().st_size > 0:
            return
        state = "is empty"
    except FileNotFoundError:
        state = "is missing"
    except OSError:
        return  # the engine's open says what is wrong with it
    raise StoreError(
        f"the store's file {path} {state}, but the text index beside it saved the memory "
        f"at tick {seen}: the graph was lost, and serving would start an empty memory in "
        f"its place. Nothing was changed. {_RESTORE.format(d=data_dir)} To start afresh "
        f"here instead, remove {data_dir / 'textindex'}."
    )


def _open_database(path: Path, pool_mib: int) -> tuple[ladybug.Database, bool]:
    """Open the graph; a write-ahead log torn by a crash mid-transaction is cut back.
    With it, whether the log was cut.

    Replay is strict first. If it fails (the tail of the log holds a transaction that
    never committed, cut short by a kill), the log is kept aside for the operator and
    the store reopens replaying up to the damage: every committed transaction lies
    before it.
    """
    wal = path.with_name(path.name + ".wal")
    pool = pool_mib << 20
    try:
        return ladybug.Database(str(path), buffer_pool_size=pool), False
    except (RuntimeError, ValueError) as exc:
        if pool_is_full(str(exc)):  # too little page memory is not a damaged log
            raise StoreError(pool_full_message(f"opening {path}", pool_mib)) from exc
        # Another owner's lock is not damage; and with no log there is nothing to cut.
        if "lock" in str(exc).lower() or not (wal.exists() or wal.is_symlink()):
            raise
        if wal.is_symlink() or not wal.is_file():
            raise StoreError(
                f"{wal} is not the write-ahead log the engine writes (a folder, a link or "
                f"a device), and the store cannot open beside it ({exc}); nothing was "
                "changed: move it out of the folder (the engine's own log is a plain "
                "file), then start again"
            ) from exc
        kept = wal.with_name(f"{wal.name}.damaged-{int(time.time())}")
        try:
            shutil.copy2(wal, kept)
        except OSError as copy_failed:
            raise StoreError(
                f"the write-ahead log {wal} is damaged ({exc}), and a copy of it could not "
                f"be kept at {kept} ({copy_failed.strerror or copy_failed}); nothing was "
                "changed: make room (or make the folder writable), then start again"
            ) from exc
        log.warning(
            "write-ahead log unreadable (%s); replaying up to the damage, copy kept at %s",
            exc,
            kept,
        )
        db = ladybug.Database(str(path), buffer_pool_size=pool, throw_on_wal_replay_failure=False)
        return db, True


def read_owner(data_dir: Path) -> dict[str, Any]:
    try:
        data = json.loads((data_dir / "owner.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_owner(data_dir: Path, pid: int, url: str | None) -> None:
    """Name this process as the store's owner, for a second one to say whom to ask. Only
    a courtesy: a name that cannot be written (a folder where the file belongs) is said,
    and the store serves on (it raised a traceback out of every command)."""
    tmp = data_dir / "owner.json.tmp"
    try:
        tmp.write_text(json.dumps({"pid": pid, "url": url}))
        os.replace(tmp, data_dir / "owner.json")
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        log.warning(
            "cannot name this process as the store's owner in %s (%s); a second process "
            "will not be told whom to ask: remove what is there",
            exc.filename2 or exc.filename or tmp,
            exc.strerror or exc,
        )
