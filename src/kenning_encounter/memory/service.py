"""The memory service: the one object the server's tools call.

It owns no state beyond its store and its listeners; listeners hear about
nodes after their transaction committed (the meaning sidecar uses this to
stay current off the write path).
"""

from __future__ import annotations

import contextlib
import copy
import logging
import threading
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from kenning_encounter import abandon, heap, vocabulary
from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import activation as standing
from kenning_encounter.memory import gates, history, identity, reads, spine, writes
from kenning_encounter.memory.activation import Activation, WorkTime
from kenning_encounter.memory.directors import DirectorPolicy, director_in, local_director
from kenning_encounter.memory.models import (
    Closed,
    Created,
    Deleted,
    EntityIn,
    NameLookup,
    Provenance,
    ReEntry,
    Related,
    RelationIn,
    SearchResult,
)
from kenning_encounter.store.port import CypherResult, GraphStore
from kenning_encounter.store.records import NodeRecord

log = logging.getLogger(__name__)


class NodeListener(Protocol):
    def nodes_created(self, nodes: Sequence[NodeRecord]) -> None: ...

    def nodes_deleted(self, node_ids: Sequence[str]) -> None: ...


class Memory:
    def __init__(
        self,
        store: GraphStore,
        *,
        hidden_loci: frozenset[str] = frozenset(),
        granted: Iterable[str] = (),
        cypher_row_cap: int = 500,
        cypher_char_cap: int = 100_000,
        cypher_timeout_s: float = 10.0,
        directors: DirectorPolicy | None = None,
        activation: Activation | None = None,
        consults: bool = True,
    ) -> None:
        # Decided once: the configured director, else the operating-system user.
        self.directors = directors or DirectorPolicy(local_director())
        # Every read of this memory passes the classification gate (memory/gates.py);
        # ``backend`` is the store under it, for the server's own bookkeeping.
        self.backend = store
        self.store = gates.gated(store, granted, hidden_loci)
        self.hidden_loci = hidden_loci
        self._listeners: list[NodeListener] = []
        self._cypher_caps = (cypher_row_cap, cypher_char_cap, cypher_timeout_s)
        # Relevance over time (memory/activation.py). ``consults``: deliberate reads
        # record a CONSULTED edge; never on a reader face, which writes nothing.
        self.activation = activation or Activation()
        self.work_time = WorkTime()  # the memory's working time, read from its spine
        self.consults = consults
        # One whole-memory reading (orient's panel, the inspector's) at a time, the others
        # waiting their turn: each holds the authored graph and its analytics (1.4 GiB at a
        # million nodes), and three at once held 3.2 GiB and ended together, each three
        # times as late as alone.
        self._whole_reading = threading.Lock()

    @contextlib.contextmanager
    def whole_reading(self) -> Generator[None]:
        """Hold the memory's one whole-memory reading for the block; waits for the reading
        under way, as long as the caller is there (kenning_encounter.abandon). What the
        reading freed is given back to the operating system after it (heap.py)."""
        try:
            with abandon.turn(self._whole_reading):
                yield
        finally:
            heap.give_back()

    def as_operator(self) -> Memory:
        """This memory with every class granted, for an operator's own writes: a KNDL import
        writes facts with the classes they carry, and links them to one another."""
        granted = copy.copy(self)
        granted.store = gates.gated(self.backend, vocabulary.CLASSIFICATIONS)
        return granted

    def add_listener(self, listener: NodeListener) -> None:
        self._listeners.append(listener)

    def _notify(self, fn: Callable[[NodeListener], None]) -> None:
        for listener in self._listeners:
            try:
                fn(listener)
            except Exception:  # a listener never fails a write that has committed
                log.exception("a node listener failed")

    # --- session ------------------------------------------------------------
    def sweep_idle(self, horizon_s: float) -> list[str]:
        """Dissolve the open encounters whose sessions showed no activity for ``horizon_s``.

        A restart ends no encounter: session state is in the store, and an agent
        that reconnects with its session_id keeps writing into its open encounter.
        """
        dissolved = spine.dissolve_idle(self.store, horizon_s)
        if dissolved:
            log.info("dissolved %d idle encounters", len(dissolved))
        return dissolved

    def advance_encounter(
        self,
        session_id: str,
        purpose: str,
        *,
        close_summary: str | None = None,
        director: str | None = None,
        director_key: str | None = None,
    ) -> ReEntry:
        return spine.advance(
            self.store,
            session_id,
            purpose,
            close_summary=close_summary,
            hidden_loci=self.hidden_loci,
            director=director_in(director, director_key),
            policy=self.directors,
        )

    def close_encounter(
        self, session_id: str, summary: str, encounter: str | None = None
    ) -> Closed:
        return spine.close(self.store, session_id, summary, encounter)

    def session_end(self, session_id: str) -> str | None:
        return spine.session_end(self.store, session_id)

    # --- writes -------------------------------------------------------------
    def create_entities(
        self, session_id: str, entities: Sequence[EntityIn | Mapping[str, Any]]
    ) -> Created:
        created, records = writes.create_entities(self.store, session_id, entities)
        self._notify(lambda listener: listener.nodes_created(records))
        return created

    def create_relations(
        self, session_id: str, relations: Sequence[RelationIn | Mapping[str, Any]]
    ) -> Related:
        return writes.create_relations(self.store, session_id, relations)

    def delete_entities(self, session_id: str, refs: Sequence[str]) -> Deleted:
        deleted = writes.delete_entities(self.store, session_id, refs)
        self._notify(lambda listener: listener.nodes_deleted(deleted.deleted))
        return deleted

    def delete_relations(
        self, session_id: str, relations: Sequence[RelationIn | Mapping[str, Any]]
    ) -> Deleted:
        return writes.delete_relations(self.store, session_id, relations)

    def confirm_entities(
        self, session_id: str, refs: Sequence[str], why: str | None = None
    ) -> identity.Confirmed:
        return identity.confirm_entities(self.store, session_id, refs, why)

    def pin_entities(
        self,
        session_id: str,
        refs: Sequence[str],
        *,
        pinned: bool = True,
        why: str | None = None,
    ) -> standing.Pinned:
        return standing.pin_entities(self.store, session_id, refs, pinned=pinned, why=why)

    def _consult(self, session_id: str | None, node_ids: Sequence[str]) -> None:
        if self.consults:
            standing.consult(self.store, session_id, node_ids)

    def claim_referents(
        self, session_id: str, claims: Sequence[identity.ClaimIn | Mapping[str, Any]]
    ) -> identity.Claimed:
        return identity.claim_referents(self.store, session_id, claims)

    # --- reads ----------------------------------------------------------------
    def search(
        self,
        query: str,
        *,
        types: Sequence[str] | None = None,
        limit: int = 10,
        include_superseded: bool = False,
        when: str | None = None,
        now: datetime | None = None,
        same_as: bool = False,
        as_of: int | str | None = None,
        include_cold: bool = False,
    ) -> SearchResult:
        return reads.search(
            self.store,
            query,
            types=types,
            limit=limit,
            include_superseded=include_superseded,
            when=when,
            now=now,
            hidden_loci=self.hidden_loci,
            same_as=same_as,
            as_of=as_of,
            include_cold=include_cold,
            activation=self.activation,
            work_time=self.work_time,
        )

    def find_by_name(
        self,
        name: str,
        *,
        as_of: int | str | None = None,
        session_id: str | None = None,
        now: datetime | None = None,
    ) -> NameLookup:
        """``session_id``: the caller's session; with an encounter open in it, this read is
        recorded as a consultation of the node found (memory/activation.py)."""
        found = reads.find_by_name(
            self.store,
            name,
            hidden_loci=self.hidden_loci,
            as_of=as_of,
            activation=self.activation,
            work_time=self.work_time,
            now=now,
        )
        if as_of is None:
            self._consult(session_id, [found.node.id])
        return found

    def trace_provenance(
        self,
        ref: str,
        *,
        depth: int = 5,
        same_as: bool = False,
        as_of: int | str | None = None,
        session_id: str | None = None,
        now: datetime | None = None,
    ) -> Provenance:
        traced = reads.trace_provenance(
            self.store,
            ref,
            depth=depth,
            hidden_loci=self.hidden_loci,
            same_as=same_as,
            as_of=as_of,
            activation=self.activation,
            work_time=self.work_time,
            now=now,
        )
        if as_of is None:
            self._consult(session_id, [traced.node.id])
        return traced

    def chain_history(
        self, ref: str, *, direction: str = "around", session_id: str | None = None
    ) -> history.ChainHistory:
        found = history.chain_history(
            self.store, ref, direction=direction, hidden_loci=self.hidden_loci
        )
        self._consult(session_id, [found.head] if found.head else [])
        return found

    def read_cypher(self, query: str, params: dict[str, Any] | None = None) -> CypherResult:
        if self.hidden_loci:
            raise InvalidInput(
                "query",
                "read_cypher is not served while loci are hidden: a free query could read them; "
                "use search, find_by_name or trace_provenance",
            )
        rows, chars, timeout = self._cypher_caps
        return self.store.read_cypher(
            query, params, row_cap=rows, char_cap=chars, timeout_s=timeout
        )

    def get_schema(self) -> dict[str, Any]:
        schema = vocabulary.describe()
        schema["store"] = self.store.info()
        return schema

    @staticmethod
    def list_node_types() -> list[dict[str, Any]]:
        return list(vocabulary.describe()["node_types"])  # type: ignore[call-overload]

    @staticmethod
    def list_relation_types() -> list[dict[str, Any]]:
        return list(vocabulary.describe()["relation_types"])  # type: ignore[call-overload]
