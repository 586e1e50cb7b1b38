"""The Neo4j backend: the official driver against a Neo4j 5 server.

Every write runs as a managed transaction (transient failures are retried, so
a unit of work may run more than once, as the port allows; a server that stops
answering is answered in seconds, and used again once it answers: outage.py) that
first writes the clock node: its exclusive lock, held to commit, serializes
writers from any number of processes, so the global tick is exact and gapless.
Inside one process a plain lock keeps writers from queueing on the server.

Sessions share one bookmark manager, so a read always sees the writes this
process committed before it, on a single server or a cluster alike.
"""

from __future__ import annotations

import contextlib
import json
import logging
import re
import secrets
import threading
import time
from collections.abc import Callable, Generator, Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final, LiteralString, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

from kenning_encounter.errors import (
    ConfigError,
    ReadOnlyViolation,
    SchemaVersionError,
    StoreError,
)
from kenning_encounter.store.cypher_guard import check_params
from kenning_encounter.store.neo4j import engine, past, standing
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j import text as lexical
from kenning_encounter.store.neo4j.baselines import Neo4jBaselines
from kenning_encounter.store.neo4j.classified import MIGRATE as MIGRATE_CLASS_LABELS
from kenning_encounter.store.neo4j.classified import MIGRATE_MOVED as MIGRATE_MOVED_LABELS
from kenning_encounter.store.neo4j.cypher import check_neo4j_text, check_plan, to_json
from kenning_encounter.store.neo4j.gds import GdsExecutor, open_gds
from kenning_encounter.store.neo4j.infusion_log import Neo4jInfusionLog
from kenning_encounter.store.neo4j.ledger import Neo4jLedgers
from kenning_encounter.store.neo4j.meanings import Neo4jMeanings
from kenning_encounter.store.neo4j.namespace import DEFAULT_MEMORY, Namespace, name_problem
from kenning_encounter.store.neo4j.nodecache import DEFAULT_CAPACITY, NodeCache
from kenning_encounter.store.neo4j.outage import Overdue, Watch
from kenning_encounter.store.neo4j.scope import check_scope, scope_nodes
from kenning_encounter.store.neo4j.translate import translated
from kenning_encounter.store.neo4j.tx import Neo4jTx, newer_shape
from kenning_encounter.store.persons import BEFORE_DIRECTORS
from kenning_encounter.store.port import (
    AnalyticsExecutor,
    CypherResult,
    GraphStore,
    ReadTx,
    SearchHit,
    TermStatsSnapshot,
    WriteTx,
)
from kenning_encounter.store.tracing import DEFAULT_SLOW_QUERY_MS, QueryLog, Tracer
from kenning_encounter.textproc_bm25 import query_terms
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, CLASSIFICATIONS

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction, Result, Session, Transaction

    from kenning_encounter.config import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

_SCHEMES = ("bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc")
_TIMEOUT_CODES = ("TransactionTimedOut", "Terminated")
# How long past its own timeout a read_cypher waits for an answer before cutting it.
ANSWER_GRACE_S: Final = 5.0
_READ_ONLY_CODES = ("AccessMode", "WriteOnReadOnlyAccessDbException", "Forbidden")
_MEMORY_CODES = ("MemoryPoolOutOfMemoryError", "MemoryLimitExceeded")
# Nodes the cache's warming reads per transaction, and how long a closing store waits for it.
WARM_PAGE = 1_000
WARM_JOIN_S = 10.0
# How long one connection (and so one login) serves, in seconds.
CONNECTION_LIFETIME_S = 300.0
# The oldest Neo4j our statements run on (scoped CALL subqueries, dynamic labels); the
# suite runs 5.26. Calendar versions (2025.01 and on) are newer.
MIN_SERVER_VERSION: Final = (5, 26)
_VERSION_PARTS = re.compile(r"([0-9]+)\.([0-9]+)")


def server_too_old(version: str) -> str | None:
    """Why a Neo4j reporting ``version`` cannot hold a memory, or None when it can (a
    version in a form this does not know is let through: the statements will say)."""
    found = _VERSION_PARTS.match(version.strip())
    if found is None:
        return None
    major, minor = int(found.group(1)), int(found.group(2))
    if (major, minor) >= MIN_SERVER_VERSION:
        return None
    floor = ".".join(map(str, MIN_SERVER_VERSION))
    return (
        f"Neo4j {version} is older than {floor}, the oldest this kenning-encounter runs on "
        f"(its statements use Cypher that {floor} brought); nothing was written. Upgrade "
        f"the server to {floor} or later, or serve from the embedded store (--store embedded)"
    )


# Fewer than the driver's pool: slow read_cypher queries never take every connection.
CYPHER_CONCURRENCY = 3
INSTALL_HINT = (
    "the neo4j driver is required for the Neo4j store: pip install 'kenning-encounter[neo4j]'"
)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _redacted(uri: str) -> str:
    parts = urlsplit(uri)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Neo4jStore:
    """GraphStore on Neo4j. Open it with ``Neo4jStore.open(uri, username, password)``."""

    backend = "neo4j"

    def __init__(
        self,
        driver: Driver,
        *,
        uri: str,
        database: str,
        memory: str = DEFAULT_MEMORY,
        clock: Callable[[], str] = _utc_now,
        tracer: Tracer | None = None,
        cache_nodes: int = DEFAULT_CAPACITY,
    ) -> None:
        import neo4j

        self._driver = driver
        self.uri = _redacted(uri)
        parts = urlsplit(uri)
        self._watch = Watch(
            self.uri,
            (parts.hostname or "localhost", parts.port or 7687),
            tls=parts.scheme.endswith(("+s", "+ssc")),
        )
        self.database = database
        self.ns = Namespace(memory)
        self.memory = memory
        self._clock = clock
        self._tracer: Tracer = tracer or QueryLog(backend=self.backend)
        self._bookmarks = neo4j.GraphDatabase.bookmark_manager()
        self._write_lock = threading.Lock()
        self._cypher_slots = threading.BoundedSemaphore(CYPHER_CONCURRENCY)
        self._closed = False
        self.server_version = ""
        self._gds: GdsExecutor | None = None
        self._doc_freqs: dict[tuple[frozenset[str], frozenset[str]], lexical.DocFreqs] = {}
        # Nodes read before, kept while other writers are heard (nodecache.py).
        self._node_cache = NodeCache(capacity=cache_nodes)
        self._made: int | None = None  # the memory's identity, read when it opens
        self._warming: threading.Thread | None = None
        self._stop_warming = threading.Event()
        self._freqs_lock = threading.Lock()
        self._ledgers = Neo4jLedgers(self._ledger_unit, self._tracer, self.ns)
        self._meanings = Neo4jMeanings(self._ledger_unit, self._tracer, self.ns)
        self._baselines = Neo4jBaselines(self._ledger_unit, self._tracer, self.ns)
        self._infusion_log = Neo4jInfusionLog(self._ledger_unit, self._tracer, self.ns)

    # --- lifecycle ------------------------------------------------------------
    @classmethod
    def open(
        cls,
        uri: str,
        username: str = "neo4j",
        password: str | None = None,
        database: str = "neo4j",
        *,
        memory: str = DEFAULT_MEMORY,
        clock: Callable[[], str] = _utc_now,
        tracer: Tracer | None = None,
        slow_query_ms: float = DEFAULT_SLOW_QUERY_MS,
        connection_timeout_s: float = 5.0,
        cache_nodes: int = DEFAULT_CAPACITY,
        connection_lifetime_s: float = CONNECTION_LIFETIME_S,
    ) -> Neo4jStore:
        """Connect, check the server answers, and create the schema if it is missing.

        ``memory`` names the memory within the database: several may share one
        (namespace.py). Statements go to ``tracer``; without one, to the query log,
        which calls one slower than ``slow_query_ms`` slow (0: never). The node cache
        keeps up to ``cache_nodes`` nodes (0: none). A connection, and the login it
        made, serves ``connection_lifetime_s`` at most: a password changed or a user
        dropped on the server is heard within that."""
        problem = name_problem(memory)
        if problem is not None:
            raise ConfigError(problem + " (set KENNING_ENCOUNTER_MEMORY or --memory)")
        tracer = tracer or QueryLog(slow_query_ms, backend=cls.backend)
        store = cls._connect(
            uri, username, password, database, memory, clock, tracer, connection_timeout_s,
            cache_nodes, connection_lifetime_s,
        )  # fmt: skip
        return store._prepared()

    @classmethod
    def open_from_settings(cls, settings: Settings) -> Neo4jStore:
        if not settings.neo4j_uri:
            raise ConfigError(
                "store=neo4j needs NEO4J_URI (or --neo4j-uri), e.g. bolt://127.0.0.1:7687"
            )
        password = settings.neo4j_password.get_secret_value() if settings.neo4j_password else None
        return cls.open(
            settings.neo4j_uri,
            settings.neo4j_username,
            password,
            settings.neo4j_database,
            memory=settings.memory,
            slow_query_ms=settings.slow_query_ms,
            cache_nodes=settings.neo4j_cache_nodes,
        )

    @classmethod
    def _connect(
        cls,
        uri: str,
        username: str,
        password: str | None,
        database: str,
        memory: str,
        clock: Callable[[], str],
        tracer: Tracer | None,
        connection_timeout_s: float,
        cache_nodes: int = DEFAULT_CAPACITY,
        connection_lifetime_s: float = CONNECTION_LIFETIME_S,
    ) -> Neo4jStore:
        try:
            import neo4j
        except ImportError as exc:
            raise ConfigError(INSTALL_HINT) from exc
        scheme = urlsplit(uri).scheme
        if scheme not in _SCHEMES:
            raise ConfigError(
                f"NEO4J_URI {_redacted(uri)!r} has scheme {scheme!r}; use one of "
                f"{', '.join(s + '://' for s in _SCHEMES)} (e.g. bolt://127.0.0.1:7687)"
            )
        auth = (username, password) if password is not None else None
        try:
            driver = neo4j.GraphDatabase.driver(
                uri,
                auth=auth,
                connection_timeout=connection_timeout_s,
                # Bounds the Bolt handshake and login too (connection_timeout is TCP's
                # alone): a hung server answers a new connection after this, not 60 s.
                connection_acquisition_timeout=connection_timeout_s + 1.0,
                # A login lasts as long as its connection (a changed password or a dropped
                # user is not heard on one already open): minutes, not the default hour.
                max_connection_lifetime=connection_lifetime_s,
                notifications_min_severity="OFF",
                user_agent="kenning-encounter",
            )
        except (neo4j.exceptions.ConfigurationError, ValueError):
            # The driver's message repeats the URI, secrets and all: say it without them.
            raise ConfigError(
                f"NEO4J_URI {_redacted(uri)!r} is not usable by the Neo4j driver; give "
                "host and port only (bolt://HOST:7687) and the credentials in "
                "NEO4J_USERNAME / NEO4J_PASSWORD"
            ) from None
        return cls(
            driver,
            uri=uri,
            database=database,
            memory=memory,
            clock=clock,
            tracer=tracer,
            cache_nodes=cache_nodes,
        )

    def _prepared(self) -> Neo4jStore:
        try:
            with self._translate_errors("connecting", serving=False):
                self._driver.verify_connectivity()
            self._prepare()
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._stop_warming.set()
        if self._warming is not None:
            self._warming.join(WARM_JOIN_S)  # it stops after the page it is reading
        self._watch.close()
        with self._write_lock:
            self._driver.close()

    # --- the node cache, read in while the server starts serving --------------------
    def start_warming(self) -> None:
        """Read the newest nodes into the node cache on a thread of its own (once)."""
        if self._warming is not None or self._node_cache.capacity <= 0 or self._closed:
            return
        self._warming = threading.Thread(
            target=self._warm_quietly, name="kenning-node-cache", daemon=True
        )
        self._warming.start()

    def _warm_quietly(self) -> None:
        started = time.perf_counter()
        try:
            read = self.warm_cache(self._stop_warming)
        except Exception as exc:  # the cache fills as prompts read instead
            if not self._closed:
                log.warning("reading nodes into the node cache stopped (%s)", type(exc).__name__)
            return
        log.info("node cache: %d nodes read in %.1f s", read, time.perf_counter() - started)

    def warm_cache(self, stop: threading.Event | None = None) -> int:
        """Read the memory's newest nodes into the node cache, as many as it keeps, in
        pages of their own read transactions (oldest page first: the newest are the last
        it would let go); the number read. Each page goes through the read path a prompt
        takes (nodecache.py): synchronised first, offered under the cache's generation,
        so a write committed meanwhile is heard as it is by any read."""
        limit = self._node_cache.capacity
        if limit <= 0:
            return 0

        def newest(tx: ManagedTransaction) -> list[str]:
            rows = self._tx(tx, write=False).rows(q.NODES_NEWEST, {"limit": limit})
            return [str(r[0]) for r in rows]

        ids = self._unit(newest, False, "reading")
        read = 0
        for end in range(len(ids), 0, -WARM_PAGE):
            if stop is not None and stop.is_set():
                break
            page = ids[max(0, end - WARM_PAGE) : end]
            read += len(self.read(lambda tx, page=page: tx.get_nodes(page)))
        return read

    # --- schema -----------------------------------------------------------------
    def _prepare(self) -> None:
        tracer, ns = self._tracer, self.ns
        with (
            self._translate_errors("preparing the schema", serving=False),
            self._session(write=True) as s,
        ):

            def run(statement: LiteralString, *, mine: bool = False) -> None:
                engine.execute(
                    s, statement, None, read=_consume, tracer=tracer, ns=ns if mine else None
                )

            # Before anything is made: an older server would take some statements and
            # refuse others, leaving half a schema.
            row = engine.execute(s, q.SERVER_VERSION, None, read=_single, tracer=tracer)
            if row is not None:
                self.server_version = f"{row['name']} {row['version']} ({row['edition']})"
                too_old = server_too_old(str(row["version"]))
                if too_old is not None:
                    raise ConfigError(f"the Neo4j at {self.uri}: {too_old}")
            existing = {
                str(r[0])
                for show in (q.SHOW_CONSTRAINT_NAMES, q.SHOW_INDEX_NAMES)
                for r in engine.rows(s, show, tracer=tracer)
            }
            self._migrate_unnamed(s, existing)
            if q.FULLTEXT_INDEX in existing and not lexical.index_matches(s, tracer):
                # made by an older version (other labels, property or analyzer): make it anew
                run(q.FULLTEXT_DROP)
                existing.discard(q.FULLTEXT_INDEX)
            created = 0
            for name, statement in q.schema_statements():
                if name not in existing:
                    run(statement)
                    created += 1
            if created:
                run(q.AWAIT_INDEXES)
                log.info("created %d Neo4j constraints and indexes", created)
            # The memory's identity, made with its clock: a memory emptied and made again
            # under this server (an import, another server's start) is another memory.
            meta = {
                "version": q.SCHEMA_VERSION,
                "made": secrets.randbits(62),
                "shape": list(q.SHAPE),
            }
            version, text_format, made, shape = s.execute_write(
                lambda tx: engine.execute(
                    tx,
                    q.META_INIT,
                    meta,
                    read=lambda r: r.single(strict=True),
                    tracer=tracer,
                    ns=ns,
                )
            )
            self._made = int(made)
            if int(version) > q.SCHEMA_VERSION:
                raise SchemaVersionError(int(version), q.SCHEMA_VERSION)
            newer = newer_shape(shape, opening=True)
            if newer is not None:  # e.g. a newer server's words, which this one would unmake
                raise StoreError(newer)
            if int(version) < 4:
                # The class labels read_cypher's gate is held by (classified.py).
                for statement in MIGRATE_CLASS_LABELS:

                    def label(tx: ManagedTransaction, st: LiteralString = statement) -> None:
                        engine.execute(tx, st, None, read=_consume, tracer=tracer, ns=ns)

                    s.execute_write(label)
            if int(version) < 5:
                self._backfill_used_at(s)
            if int(version) < 7:
                # The moved labels read_cypher's gate is held by too (classified.py).
                for statement in MIGRATE_MOVED_LABELS:

                    def moved(tx: ManagedTransaction, st: LiteralString = statement) -> None:
                        engine.execute(tx, st, None, read=_consume, tracer=tracer, ns=ns)

                    s.execute_write(moved)
            if int(version) < 8:
                # The classes the read gate asks of the clock (memory/gates.py).
                known = {"all": list(CLASSIFICATIONS)}
                s.execute_write(
                    lambda tx: engine.execute(
                        tx, q.CLASSES_MIGRATE, known, read=_consume, tracer=tracer, ns=ns
                    )
                )
            if int(version) < q.SCHEMA_VERSION:
                s.execute_write(
                    lambda tx: engine.execute(
                        tx, q.SCHEMA_VERSION_SET, meta, read=_consume, tracer=tracer, ns=ns
                    )
                )
            before = BEFORE_DIRECTORS  # loci made before directors (store/persons.py)
            directing = {
                "id": before.id,
                "name": before.name,
                "key": before.key,
                "at": self._clock(),
            }
            s.execute_write(
                lambda tx: engine.execute(
                    tx, q.DIRECT_UNDIRECTED, directing, read=_consume, tracer=tracer, ns=ns
                )
            )
            # The record of the past as_of reads stand on, for a memory made before it.
            s.execute_write(
                lambda tx: past.backfill(
                    lambda st: engine.execute(
                        tx, st, None, read=engine.all_rows, tracer=tracer, ns=ns
                    )
                )
            )
            if int(text_format) != q.TEXT_FORMAT:
                docs, _ = s.execute_write(lambda tx: lexical.rederive(self._tx(tx, write=True)))
                log.info("derived lexical tokens for %d nodes", docs)
        try:
            self._gds = open_gds(
                self._driver,
                database=self.database,
                uri=self.uri,
                memory=self.memory,
                tracer=self._tracer,
                watch=self._watch,
            )
        except StoreError as exc:  # analytics then runs in process: never a reason not to start
            log.warning(
                "could not tell whether this Neo4j runs GDS (%s); analytics runs in process", exc
            )

    def _backfill_used_at(self, s: Session) -> None:
        """Schema 5: the used_at of a memory made before relevance over time (standing.py),
        one page per write transaction."""
        tracer, ns = self._tracer, self.ns

        def run_page(statement: LiteralString, params: dict[str, Any]) -> list[Any]:
            def page(tx: ManagedTransaction) -> list[Any]:
                row = engine.execute(
                    tx,
                    statement,
                    params,
                    read=lambda r: r.single(strict=True),
                    tracer=tracer,
                    ns=ns,
                )
                return list(row.values())

            return s.execute_write(page)

        filled = standing.backfill_used_at(run_page, standing.PAGE)
        log.info("schema 5: %d nodes took their latest use from their dated edges", filled)

    def _migrate_unnamed(self, s: Session, existing: set[str]) -> None:
        """A store made before memories had names (schema < 3) becomes the memory named
        "default", whichever memory this server serves; then the keys that were unique
        database-wide give way to the per-memory ones. Idempotent, so servers opening at
        once may both run it."""
        tracer = self._tracer
        # Such a store is known by the constraint its clock had, which no other
        # application makes; a version node without it may be anyone's.
        if "kenning_meta_key" not in existing:
            legacy = None
        else:
            legacy = engine.execute(s, q.LEGACY_VERSION, None, read=_single, tracer=tracer)
        if legacy is not None:
            if int(legacy[0]) < 2:
                engine.execute(s, q.MIGRATE_MEMORY_LABEL, None, read=_consume, tracer=tracer)
            for statement in q.MIGRATE_MEMORY_NAME:
                engine.execute(s, statement, None, read=_consume, tracer=tracer)
            log.info("schema 3: the memory made before names is now the memory 'default'")
        for name in (*q.LEGACY_CONSTRAINTS, *q.LEGACY_INDEXES):
            if name in existing:
                engine.execute(s, q.drop_legacy(name), None, read=_consume, tracer=tracer)
                existing.discard(name)

    def schema_version(self) -> int:
        return self.read(lambda tx: cast(Neo4jTx, tx).meta("schema_version"))

    # --- plumbing ------------------------------------------------------------------
    def _session(self, *, write: bool, driver_retries: bool = True) -> Session:
        """A session on the memory's database; without ``driver_retries`` its managed
        transactions are not retried by the driver (the watch retries, outage.py)."""
        import neo4j

        if self._closed:
            raise StoreError("the store is closed")
        extra: dict[str, Any] = {} if driver_retries else {"max_transaction_retry_time": 0.0}
        return self._driver.session(
            database=self.database,
            bookmark_manager=self._bookmarks,
            default_access_mode=neo4j.WRITE_ACCESS if write else neo4j.READ_ACCESS,
            **extra,
        )

    def _translate_errors(
        self, doing: str, *, write: bool = False, serving: bool = True
    ) -> contextlib.AbstractContextManager[None]:
        return translated(self.uri, doing, write=write, serving=serving)

    def _unit(self, work: Callable[[ManagedTransaction], T], write: bool, doing: str) -> T:
        """One unit of work as a managed transaction, retried and bounded by the watch
        (outage.py): a server that stops answering is answered in seconds."""

        def session() -> Session:
            return self._session(write=write, driver_retries=False)

        with self._translate_errors(doing, write=write):
            return self._watch.unit(session, work, write=write, doing=doing)

    # --- units of work ---------------------------------------------------------------
    def _tx(self, tx: ManagedTransaction, *, write: bool) -> Neo4jTx:
        return Neo4jTx(
            tx,
            clock=self._clock,
            writable=write,
            tracer=self._tracer,
            ns=self.ns,
            cache=self._node_cache,
            made=self._made,
        )

    def write(self, work: Callable[[WriteTx], T]) -> T:
        def attempt(tx: ManagedTransaction) -> T:
            ntx = self._tx(tx, write=True)
            ntx.begin_write()
            result = work(ntx)
            ntx.end_write()
            return result

        with self._write_lock:
            return self._unit(attempt, True, "writing")

    def read(self, work: Callable[[ReadTx], T]) -> T:
        def attempt(tx: ManagedTransaction) -> T:
            return work(self._tx(tx, write=False))

        return self._unit(attempt, False, "reading")

    # --- the infusion ledger (store/neo4j/ledger.py): never the clock, never a tick ------
    @property
    def ledgers(self) -> Neo4jLedgers:
        return self._ledgers

    @property
    def infusion_log(self) -> Neo4jInfusionLog:
        return self._infusion_log

    # Meanings and baselines (store/meanings.py) ride the ledger's units: no tick either.
    @property
    def meanings(self) -> Neo4jMeanings:
        return self._meanings

    @property
    def baselines(self) -> Neo4jBaselines:
        return self._baselines

    def _ledger_unit(
        self, work: Callable[[ManagedTransaction], Any], write: bool, doing: str
    ) -> Any:
        return self._unit(work, write, doing)

    # --- lexical search -----------------------------------------------------------------
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
        def work(tx: ManagedTransaction) -> list[SearchHit]:
            ntx = self._tx(tx, write=False)
            return lexical.search(
                ntx,
                text,
                types=types,
                heads_only=heads_only,
                limit=limit,
                withheld=withheld,
                hidden_loci=hidden_loci,
            )

        return self._unit(work, False, "searching")

    def _held_freqs(
        self, withheld: frozenset[str], hidden_loci: frozenset[str]
    ) -> lexical.DocFreqs:
        """The frequencies counted for one gate (a gate counts without its withheld
        classes, at most sixteen sets of them, and a reader face's hidden loci)."""
        key = (withheld, hidden_loci)
        with self._freqs_lock:
            held = self._doc_freqs.get(key)
            if held is None:
                held = self._doc_freqs[key] = lexical.DocFreqs()
            return held

    def fulltext_stats(
        self,
        terms: Iterable[str],
        *,
        withheld: frozenset[str] = frozenset(),
        hidden_loci: frozenset[str] = frozenset(),
    ) -> TermStatsSnapshot:
        wanted = list(terms)
        held = self._held_freqs(withheld, hidden_loci)

        def work(tx: ManagedTransaction) -> TermStatsSnapshot:
            ntx = self._tx(tx, write=False)
            return lexical.stats(ntx, wanted, held, withheld, hidden_loci)

        return self._unit(work, False, "reading corpus statistics")

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
        wanted = query_terms(text)
        held = self._held_freqs(withheld, hidden_loci)

        def attempt(tx: ManagedTransaction) -> T:
            ntx = self._tx(tx, write=False)
            if heads_only:  # a head's node comes with its hit (a successor is another read)
                hits = lexical.search_remembered(
                    ntx,
                    text,
                    limit=limit,
                    types=types,
                    withheld=withheld,
                    freqs=held,
                    hidden_loci=hidden_loci,
                )
            else:
                hits = lexical.search(
                    ntx,
                    text,
                    types=types,
                    heads_only=False,
                    limit=limit,
                    withheld=withheld,
                    hidden_loci=hidden_loci,
                )
            return work(ntx, hits, lambda: lexical.stats(ntx, wanted, held, withheld, hidden_loci))

        return self._unit(attempt, False, "searching")

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
        wanted = list(terms)
        held = self._held_freqs(withheld, hidden_loci)

        def attempt(tx: ManagedTransaction) -> T:
            ntx = self._tx(tx, write=False)
            # A withheld node's or a hidden locus's hits take no candidate's place.
            hits = lexical.search_remembered(
                ntx, text, limit=limit, withheld=withheld, hidden_loci=hidden_loci
            )
            return work(ntx, hits, lambda: lexical.stats(ntx, wanted, held, withheld, hidden_loci))

        return self._unit(attempt, False, "searching")

    # --- read_cypher ------------------------------------------------------------------------
    def _explain(
        self,
        tx: Transaction,
        query: str,
        params: dict[str, Any],
        *,
        scope: bool,
        held: bool = False,
    ) -> None:
        from neo4j.exceptions import Neo4jError

        text = cast(LiteralString, q.EXPLAIN_PREFIX + query)
        try:
            summary = engine.execute(tx, text, params, read=_consume, tracer=self._tracer)
        except Neo4jError as exc:
            raise ReadOnlyViolation(
                f"the engine refused the query: {exc.message}", layer="engine"
            ) from exc
        check_plan(summary.query_type, summary.plan)
        if scope and summary.plan is not None:
            check_scope(summary.plan, self.ns.label, held=held)

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
        check_params(params, homogeneous_lists=False)
        check_neo4j_text(query)
        # A text check too (refused before waiting for a slot); with classes withheld, every
        # node pattern is held to the nodes the caller may see (scope.py).
        scoped = scope_nodes(query, self.ns.label, withheld)
        if not self._cypher_slots.acquire(timeout=timeout_s):
            raise ReadOnlyViolation(
                f"{CYPHER_CONCURRENCY} read_cypher queries are already running; try again "
                "in a moment or narrow the query",
                layer="busy",
            )
        try:
            return self._run_cypher(
                scoped, dict(params or {}), row_cap, char_cap, timeout_s, held=bool(withheld)
            )
        finally:
            self._cypher_slots.release()

    def _run_cypher(
        self,
        query: str,
        args: dict[str, Any],
        row_cap: int,
        char_cap: int,
        timeout_s: float,
        *,
        scope: bool = True,
        held: bool = False,
    ) -> CypherResult:
        """The plan, scope and engine layers alone (the token gate and the scoping
        rewrite are the caller's); ``scope=False`` leaves the plan's scope unchecked,
        for the test that proves each layer alone."""
        from neo4j.exceptions import DriverError, Neo4jError

        rows: list[list[Any]] = []
        columns: list[str] = []
        truncated = False

        def read_capped(result: Result) -> bool:
            """Rows into ``rows`` up to the caps; True when the caps cut the result."""
            columns.extend(result.keys())
            size = 0
            for record in result:
                row = [to_json(v) for v in record.values()]
                size += len(json.dumps(row, default=str))
                if len(rows) >= row_cap or size > char_cap:
                    return True
                rows.append(row)
            return False

        self._watch.check_answering("running read_cypher", write=False)
        within = timeout_s + ANSWER_GRACE_S
        with (
            self._translate_errors("running read_cypher"),
            self._unanswered(timeout_s),
            self._session(write=False) as s,
            # BEGIN waits for its answer too.
            self._watch.watching(s, "running read_cypher", answer_within=within),
        ):
            # The server reads a timeout of 0 as "none": never let one through.
            tx = s.begin_transaction(timeout=max(timeout_s, 0.001))
            try:
                self._explain(tx, query, args, scope=scope, held=held)
                # The text is the caller's, admitted by the three checks above.
                text = cast(LiteralString, query)
                truncated = engine.execute(tx, text, args, read=read_capped, tracer=self._tracer)
            except Neo4jError as exc:
                code = exc.code or ""
                if any(c in code for c in _TIMEOUT_CODES):
                    raise ReadOnlyViolation(
                        f"the query ran past its {timeout_s:g} s timeout and was stopped; "
                        "narrow it (a tighter MATCH, a LIMIT)",
                        layer="timeout",
                    ) from exc
                if any(c in code for c in _MEMORY_CODES):
                    raise ReadOnlyViolation(
                        "the query needed more memory than the server lets one transaction "
                        f"use ({exc.message}); narrow it (smaller lists, LIMIT, fewer rows). "
                        "Server operators cap it with db.memory.transaction.max",
                        layer="memory",
                    ) from exc
                layer = "engine-readonly" if any(c in code for c in _READ_ONLY_CODES) else "engine"
                raise ReadOnlyViolation(
                    f"the engine refused the query: {exc.message}", layer=layer
                ) from exc
            finally:
                with contextlib.suppress(DriverError, Neo4jError):
                    tx.close()  # always a rollback: nothing a read did survives it
        note = (
            f"result cut at {len(rows)} rows (caps: {row_cap} rows, {char_cap} characters)"
            if truncated
            else ""
        )
        return CypherResult(columns, rows, truncated, row_cap, char_cap, note)

    @staticmethod
    @contextlib.contextmanager
    def _unanswered(timeout_s: float) -> Generator[None]:
        try:
            yield
        except Overdue as exc:
            raise ReadOnlyViolation(
                f"no answer came within the query's {timeout_s:g} s timeout and "
                f"{ANSWER_GRACE_S:g} s more, so it was stopped: the server failed to send "
                "its result (a value nested thousands deep, built by reduce, is one it "
                "cannot encode) or is overloaded; narrow the query",
                layer="timeout",
            ) from exc

    def analytics_executor(self) -> AnalyticsExecutor | None:
        """GDS on this server, as found when the store opened; None without the plugin."""
        return self._gds

    def info(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "uri": self.uri,
            "database": self.database,
            "memory": self.memory,
            "engine": self.server_version,
            "gds": self._gds.version if self._gds is not None else None,
            "schema_version": q.SCHEMA_VERSION,
            "authored_types": list(AUTHORED_NODE_TYPES),
        }


def _consume(result: Result) -> Any:
    return result.consume()


def _single(result: Result) -> Any:
    return result.single()


if TYPE_CHECKING:
    _CONFORMS_TO_THE_PORT: type[GraphStore] = Neo4jStore  # the type checker holds us to it
