"""What the Neo4j store keeps beside the memory (the infusion ledger and log, meanings,
mass baselines): bookkeeping nodes that carry ``_memory`` but not the memory's label,
written in managed transactions of their own that never take the clock (no tick).

Each keeper runs its statements through the store's unit and the engine's one execute
path, with the store's tracer and namespace: that much is the same for all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, LiteralString

from kenning_encounter.store.neo4j import engine
from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.tracing import Tracer

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

# (work on a managed transaction, write?, what is being done) -> the work's result.
Unit = Callable[[Callable[["ManagedTransaction"], Any], bool, str], Any]


class Beside:
    def __init__(self, unit: Unit, tracer: Tracer, ns: Namespace) -> None:
        self._unit = unit
        self._tracer = tracer
        self._ns = ns

    def _run(
        self, tx: ManagedTransaction, statement: LiteralString, params: dict[str, Any]
    ) -> list[list[Any]]:
        """One statement inside a unit the caller runs."""
        return engine.rows(tx, statement, params, tracer=self._tracer, ns=self._ns)

    def _rows(
        self, statement: LiteralString, params: dict[str, Any], *, write: bool, doing: str
    ) -> list[list[Any]]:
        """One statement as a unit of its own."""

        def work(tx: ManagedTransaction) -> list[list[Any]]:
            return self._run(tx, statement, params)

        rows: list[list[Any]] = self._unit(work, write, doing)
        return rows
