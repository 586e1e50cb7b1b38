"""The Neo4j store's door to Graph Data Science: finding it, and the executor it offers.

Whether the server runs GDS is decided here and only here (``open_gds``, called
once when the store opens). The engine that runs the algorithms lives in
``analytics.gds`` and reaches the server only through ``GdsExecutor.run``, so
the store knows nothing of projections or algorithms.

Every call goes through the driver's ``execute_query``: a session of its own,
closed when the rows are read, transient failures retried, and routed to the
database's writer, so on a cluster all calls on one graph reach the server that
holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, LiteralString

from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.translate import translated

if TYPE_CHECKING:
    from neo4j import Driver

    from kenning_encounter.store.port import AnalyticsExecutor

# The server's answer to an unknown function such as ``gds.version``: no plugin.
UNKNOWN_FUNCTION = "Neo.ClientError.Statement.SyntaxError"


class GdsExecutor:
    """Runs analytics statements on one database of a server that has GDS."""

    def __init__(self, driver: Driver, version: str, *, database: str, uri: str) -> None:
        self._driver = driver
        self._database = database
        self._uri = uri
        self.version = version

    @property
    def name(self) -> str:
        return f"gds {self.version}"

    def run(
        self, statement: LiteralString, params: Mapping[str, Any] | None = None, *, doing: str
    ) -> list[dict[str, Any]]:
        with translated(self._uri, doing):
            records, _, _ = self._driver.execute_query(
                statement, dict(params or {}), database_=self._database
            )
        return [dict(record.items()) for record in records]


def open_gds(driver: Driver, *, database: str = "neo4j", uri: str = "") -> GdsExecutor | None:
    """An executor on the server's GDS, or None when the plugin is absent.

    Any refusal other than "unknown function" (wrong credentials, no such database)
    is not an answer about GDS and is raised as our error. ``uri`` (redacted) names
    the server in those messages.
    """
    from neo4j.exceptions import ClientError

    with translated(uri or "the server", "reading the GDS version"):
        try:
            records, _, _ = driver.execute_query(q.GDS_VERSION, database_=database)
        except ClientError as exc:
            if exc.code == UNKNOWN_FUNCTION:
                return None
            raise
    if not records:
        return None
    return GdsExecutor(driver, str(records[0]["version"]), database=database, uri=uri)


if TYPE_CHECKING:
    _CONFORMS_TO_THE_PORT: type[AnalyticsExecutor] = GdsExecutor
