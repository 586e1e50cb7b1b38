"""The Neo4j store's door to Graph Data Science: finding it, and the executor it offers.

Whether the server runs GDS is decided here and only here (``open_gds``, called
once when the store opens). The engine that runs the algorithms lives in
``analytics.gds`` and reaches the server only through ``GdsExecutor.run``, so
the store knows nothing of projections or algorithms.

Every call is a managed write transaction in a session of its own, as the
driver's ``execute_query`` would run it (transient failures retried, its
bookmarks kept, routed to the database's writer, so on a cluster all calls on
one graph reach the server that holds it), sent through the store's one
execute path.

The executor belongs to one memory (``memory``, the store's): GDS statements are
not the memory's own text and go out without the namespace rewrite, so the
executor itself supplies ``$memory`` to those that ask for it (the engine's
leases, store/neo4j/gds_queries).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, LiteralString

from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.outage import Watch
from kenning_encounter.store.neo4j.translate import translated
from kenning_encounter.store.tracing import Tracer

if TYPE_CHECKING:
    from neo4j import Driver, ManagedTransaction, Result, Session

    from kenning_encounter.store.port import AnalyticsExecutor

# The server's answer to an unknown function such as ``gds.version``: no plugin.
UNKNOWN_FUNCTION = "Neo.ClientError.Statement.SyntaxError"


class GdsExecutor:
    """Runs analytics statements on one database of a server that has GDS."""

    def __init__(
        self,
        driver: Driver,
        version: str,
        *,
        database: str,
        uri: str,
        memory: str = "default",
        tracer: Tracer = engine.DEFAULT_TRACER,
        watch: Watch | None = None,
    ) -> None:
        self._driver = driver
        self._watch = watch
        self._database = database
        self._uri = uri
        self._tracer = tracer
        self.version = version
        self._memory = memory

    @property
    def name(self) -> str:
        return f"gds {self.version}"

    @property
    def memory(self) -> str:
        return self._memory

    def run(
        self, statement: LiteralString, params: Mapping[str, Any] | None = None, *, doing: str
    ) -> list[dict[str, Any]]:
        sent = dict(params or {})
        if "$memory" in statement:
            sent["memory"] = self._memory
        with translated(self._uri, doing):
            return _write(
                self._driver, self._database, statement, sent, self._tracer, self._watch, doing
            )


def _dicts(result: Result) -> list[dict[str, Any]]:
    return [dict(record.items()) for record in result]


def _write(
    driver: Driver,
    database: str,
    statement: LiteralString,
    params: dict[str, Any],
    tracer: Tracer,
    watch: Watch | None = None,
    doing: str = "running GDS",
) -> list[dict[str, Any]]:
    """One statement as a managed write; with the store's ``watch``, retried and bounded
    as the store's units are (outage.py)."""

    def work(tx: ManagedTransaction) -> list[dict[str, Any]]:
        return engine.execute(tx, statement, params, read=_dicts, tracer=tracer)

    bookmarks = driver.execute_query_bookmark_manager
    if watch is None:
        with driver.session(database=database, bookmark_manager=bookmarks) as session:
            return session.execute_write(work)

    def open_session() -> Session:
        return driver.session(
            database=database, bookmark_manager=bookmarks, max_transaction_retry_time=0.0
        )

    return watch.unit(open_session, work, write=True, doing=doing, tell_write=False)


def open_gds(
    driver: Driver,
    *,
    database: str = "neo4j",
    uri: str = "",
    memory: str = "default",
    tracer: Tracer = engine.DEFAULT_TRACER,
    watch: Watch | None = None,
) -> GdsExecutor | None:
    """An executor on the server's GDS for ``memory``, or None when the plugin is absent.

    Any refusal other than "unknown function" (wrong credentials, no such database)
    is not an answer about GDS and is raised as our error. ``uri`` (redacted) names
    the server in those messages.
    """
    from neo4j.exceptions import ClientError

    with translated(uri or "the server", "reading the GDS version"):
        try:
            records = _write(
                driver, database, q.GDS_VERSION, {}, tracer, watch, "reading the GDS version"
            )
        except ClientError as exc:
            if exc.code == UNKNOWN_FUNCTION:
                return None
            raise
    if not records:
        return None
    version = str(records[0]["version"])
    return GdsExecutor(
        driver, version, database=database, uri=uri, memory=memory, tracer=tracer, watch=watch
    )


if TYPE_CHECKING:
    _CONFORMS_TO_THE_PORT: type[AnalyticsExecutor] = GdsExecutor
