"""What every operation stands on: a transaction's executor and its write context."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

# Stored beside a type's own properties; never part of ``NodeRecord.props``.
_COMMON = frozenset(
    {"id", "tick", "ord", "created_at", "name", "description", "status"}
    | {"encounter", "locus", "superseded_by", "used_at", "pinned", "used_marks"}
)


class Statements(ABC):
    """One transaction: the backend's executor and its write context."""

    _writable: bool

    @abstractmethod
    def rows(self, query: LiteralString, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run one statement through the backend's one execute path."""

    @abstractmethod
    def render(self, template: str, **names: str) -> LiteralString:
        """Fill a template's label and type slots with vocabulary names only."""

    @property
    @abstractmethod
    def tick(self) -> int:
        """The write's one tick, taken the first time it is asked for."""

    @property
    @abstractmethod
    def now(self) -> str:
        """The write's one timestamp."""

    def _on_changed(self, node_id: str) -> None:  # noqa: B027 - a hook, a no-op by default
        """A stored node's status, successor or use is about to change (a backend that
        keeps nodes beside the graph hears it)."""

    def _on_edges(self, node_ids: Sequence[str] | None) -> None:  # noqa: B027 - a hook
        """Authored relations of these nodes were made or removed (None: of any node, as
        a deletion's or an import's); a backend that keeps them beside the graph hears it."""

    def _on_linked(self, edges: Sequence[EdgeRecord]) -> None:
        """These relations were made, and nothing else about their ends' relations (a
        backend that keeps relation lists may add them instead of dropping the lists)."""
        self._on_edges([end for edge in edges for end in (edge.source, edge.target)])

    def _touched_on_the_way(self, encounter: str | None) -> dict[str, Any]:
        """Parameters for a write statement of ``encounter``'s that can touch it as it goes
        (a backend that defers touches to a statement it sends anyway hands the touch over
        here); none by default."""
        del encounter
        return {}

    def _require_writable(self) -> None:
        if not self._writable:
            raise StoreError("internal: write attempted in a read transaction")


def node_record(
    props: dict[str, Any],
    *,
    label: str,
    encounter: str | None,
    locus: str | None,
    superseded_by: str | None,
) -> NodeRecord:
    """A stored node's properties as a record; ``_``-prefixed ones are the engine's or
    derived (tokens), and never reach the services."""
    extra = {k: v for k, v in props.items() if v is not None and k not in _COMMON and k[:1] != "_"}
    return NodeRecord(
        id=str(props["id"]),
        type=label,
        name=str(props.get("name") or ""),
        description=str(props.get("description") or ""),
        tick=int(props["tick"]),
        created_at=str(props["created_at"]),
        status=props.get("status"),
        props=extra,
        encounter=encounter,
        locus=locus,
        superseded_by=superseded_by,
        ord=int(props.get("ord") or 0),
        used_at=props.get("used_at"),
        pinned=props.get("pinned") or None,
        used_marks=props.get("used_marks") or None,
        terms=terms if isinstance(terms := props.get("_terms"), str) else None,
    )


def edge_from_row(row: list[Any]) -> EdgeRecord:
    """An edge row: source id, target id, type, tick, encounter, revision_why."""
    return EdgeRecord(
        source=str(row[0]),
        target=str(row[1]),
        type=str(row[2]),
        tick=int(row[3]),
        encounter=row[4],
        revision_why=row[5],
    )


def encounter_from(props: dict[str, Any]) -> EncounterRecord:
    return EncounterRecord(
        name=str(props["id"]),
        locus=str(props["locus"]),
        purpose=str(props.get("purpose") or ""),
        opened_tick=int(props["opened_tick"]),
        opened_at=str(props["opened_at"]),
        sealed_tick=props.get("sealed_tick"),
        sealed_at=props.get("sealed_at"),
        summary=props.get("summary"),
        dissolved_at=props.get("dissolved_at"),
        last_activity_at=props.get("last_activity_at"),
        tombstones=int(props.get("tombstones") or 0),
        tombstones_marked=props.get("tombstones_marked") or None,
        dissolved_tick=props.get("dissolved_tick"),
    )
