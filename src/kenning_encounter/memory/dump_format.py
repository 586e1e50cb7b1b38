"""The dump's lines: what each record holds, written and read back field by field.

A dump is JSON Lines. The first line is the header (the format and its version, the
version of kenning-encounter that wrote it, the backend it came from, the clock and
the counts), then one record per line grouped by kind in the order they depend on
each other (``KINDS``), then the trailer: the counts written and the SHA-256 of
every line before it, header included. Derived data (the text index, meanings,
baselines, name and source registries) is not in a dump: an import derives it again.

Reading a line checks it alone: its kind, its exact set of fields, each field's
type. What lines must agree on (ids, endpoints, ticks, chains) is ``load.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, Final

from kenning_encounter.errors import InvalidInput
from kenning_encounter.store.port import DumpedEdge, DumpedNode, LocusRecord, SpineEdge
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

FORMAT: Final = "kenning-encounter-dump"
VERSION: Final = 1
# Records by kind, in the order a dump holds them (each kind names only earlier ones).
KINDS: Final = ("locus", "encounter", "spine", "node", "relation")

Record = LocusRecord | EncounterRecord | SpineEdge | DumpedNode | DumpedEdge


def encode(line: Mapping[str, Any]) -> bytes:
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode()


def header(
    *, app_version: str, backend: str, clock: int, counts: dict[str, int], at: str
) -> dict[str, Any]:
    return {
        "kind": "header",
        "format": FORMAT,
        "version": VERSION,
        "kenning_encounter": app_version,
        "backend": backend,
        "clock": clock,
        "exported_at": at,
        "counts": counts,
    }


def trailer(counts: dict[str, int], digest: str) -> dict[str, Any]:
    return {"kind": "end", "counts": counts, "sha256": digest}


def to_line(record: Record) -> dict[str, Any]:
    if isinstance(record, LocusRecord):
        return {
            "kind": "locus",
            "id": record.id,
            "tick": record.tick,
            "created_at": record.created_at,
        }
    if isinstance(record, EncounterRecord):
        return {
            "kind": "encounter",
            "name": record.name,
            "locus": record.locus,
            "purpose": record.purpose,
            "opened_tick": record.opened_tick,
            "opened_at": record.opened_at,
            "sealed_tick": record.sealed_tick,
            "sealed_at": record.sealed_at,
            "summary": record.summary,
            "dissolved_at": record.dissolved_at,
            "last_activity_at": record.last_activity_at,
            "tombstones": record.tombstones,
        }
    if isinstance(record, SpineEdge):
        return {
            "kind": "spine",
            "type": record.type,
            "source": record.source,
            "target": record.target,
            "tick": record.tick,
        }
    if isinstance(record, DumpedNode):
        n = record.node
        return {
            "kind": "node",
            "type": n.type,
            "id": n.id,
            "name": n.name,
            "description": n.description,
            "status": n.status,
            "tick": n.tick,
            "ord": n.ord,
            "created_at": n.created_at,
            "encounter": n.encounter,
            "recorded_tick": record.recorded_tick,
            "props": dict(sorted(n.props.items())),
        }
    e = record.edge
    return {
        "kind": "relation",
        "type": e.type,
        "source": e.source,
        "target": e.target,
        "tick": e.tick,
        "encounter": e.encounter,
        "created_at": record.created_at,
        "revision_why": e.revision_why,
    }


class Fields:
    """One line's fields, each read once with its type checked; the field named in a
    refusal is ``line N: kind.field``."""

    def __init__(self, data: Mapping[str, Any], where: str, expected: frozenset[str]) -> None:
        self._data = data
        self.where = where
        unknown = sorted(set(data) - expected)
        missing = sorted(expected - set(data))
        if unknown or missing:
            parts = [f"unknown field(s) {', '.join(unknown)}"] if unknown else []
            parts += [f"missing field(s) {', '.join(missing)}"] if missing else []
            raise InvalidInput(where, f"{'; '.join(parts)}; {FIX}")

    def refuse(self, name: str, message: str) -> InvalidInput:
        return InvalidInput(f"{self.where}.{name}", f"{message}; {FIX}")

    def text(self, name: str, *, optional: bool = False, empty: bool = True) -> Any:
        value = self._data[name]
        if value is None and optional:
            return None
        if not isinstance(value, str) or (not empty and not value):
            kind = "a non-empty string" if not empty else "a string"
            raise self.refuse(
                name, f"must be {kind}{' or null' if optional else ''}, not {value!r}"
            )
        return value

    def int(self, name: str, *, optional: bool = False, low: int = 0) -> Any:
        value = self._data[name]
        if value is None and optional:
            return None
        if not isinstance(value, int) or isinstance(value, bool) or value < low:
            raise self.refuse(name, f"must be an integer of at least {low}, not {value!r}")
        return value

    def mapping(self, name: str) -> dict[str, Any]:
        value = self._data[name]
        if not isinstance(value, dict):
            raise self.refuse(name, f"must be an object, not {value!r}")
        return dict(value)  # pyright: ignore[reportUnknownArgumentType]


FIX: Final = "the dump is damaged or was edited; export it again from the source memory"


def _locus(f: Fields) -> LocusRecord:
    return LocusRecord(f.text("id", empty=False), f.int("tick", low=1), f.text("created_at"))


def _encounter(f: Fields) -> EncounterRecord:
    return EncounterRecord(
        name=f.text("name", empty=False),
        locus=f.text("locus", empty=False),
        purpose=f.text("purpose"),
        opened_tick=f.int("opened_tick", low=1),
        opened_at=f.text("opened_at"),
        sealed_tick=f.int("sealed_tick", optional=True, low=1),
        sealed_at=f.text("sealed_at", optional=True),
        summary=f.text("summary", optional=True),
        dissolved_at=f.text("dissolved_at", optional=True),
        last_activity_at=f.text("last_activity_at", optional=True),
        tombstones=f.int("tombstones"),
    )


def _spine(f: Fields) -> SpineEdge:
    return SpineEdge(
        f.text("source", empty=False),
        f.text("type", empty=False),
        f.text("target", empty=False),
        f.int("tick", low=1),
    )


def _node(f: Fields) -> DumpedNode:
    props = f.mapping("props")
    for key, value in props.items():
        if not isinstance(value, str):
            raise f.refuse(f"props.{key}", f"must be a string, not {value!r}")
    node = NodeRecord(
        id=f.text("id", empty=False),
        type=f.text("type", empty=False),
        name=f.text("name", empty=False),
        description=f.text("description"),
        tick=f.int("tick", low=1),
        created_at=f.text("created_at"),
        status=f.text("status", optional=True),
        props=props,
        encounter=f.text("encounter", empty=False),
        ord=f.int("ord"),
    )
    return DumpedNode(node, f.int("recorded_tick", low=1))


def _relation(f: Fields) -> DumpedEdge:
    edge = EdgeRecord(
        source=f.text("source", empty=False),
        target=f.text("target", empty=False),
        type=f.text("type", empty=False),
        tick=f.int("tick", low=1),
        encounter=f.text("encounter", empty=False),
        revision_why=f.text("revision_why", optional=True),
    )
    return DumpedEdge(edge, f.text("created_at", optional=True))


_READERS: Final[dict[str, tuple[frozenset[str], Callable[[Fields], Record]]]] = {
    "locus": (frozenset({"kind", "id", "tick", "created_at"}), _locus),
    "encounter": (
        frozenset(
            {"kind", "name", "locus", "purpose", "opened_tick", "opened_at", "sealed_tick"}
            | {"sealed_at", "summary", "dissolved_at", "last_activity_at", "tombstones"}
        ),
        _encounter,
    ),
    "spine": (frozenset({"kind", "type", "source", "target", "tick"}), _spine),
    "node": (
        frozenset(
            {"kind", "type", "id", "name", "description", "status", "tick", "ord"}
            | {"created_at", "encounter", "recorded_tick", "props"}
        ),
        _node,
    ),
    "relation": (
        frozenset(
            {"kind", "type", "source", "target", "tick", "encounter", "created_at"}
            | {"revision_why"}
        ),
        _relation,
    ),
}
HEADER_FIELDS: Final = frozenset(
    {"kind", "format", "version", "kenning_encounter", "backend", "clock", "exported_at", "counts"}
)
TRAILER_FIELDS: Final = frozenset({"kind", "counts", "sha256"})


def parse(raw: bytes, number: int) -> dict[str, Any]:
    """One line as an object, or the refusal naming the line."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"line {number}", f"is not JSON ({exc}); {FIX}") from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):  # pyright: ignore[reportUnknownMemberType]
        raise InvalidInput(f"line {number}", f"is not a record with a kind; {FIX}")
    return dict(data)  # pyright: ignore[reportUnknownArgumentType]


def read_record(data: dict[str, Any], number: int) -> tuple[str, Record]:
    kind = str(data["kind"])
    reader = _READERS.get(kind)
    if reader is None:
        raise InvalidInput(
            f"line {number}.kind", f"unknown kind {kind!r}; use one of: {', '.join(KINDS)}; {FIX}"
        )
    expected, read = reader
    return kind, read(Fields(data, f"line {number}: {kind}", expected))


def counts_of(f: Fields, name: str) -> dict[str, int]:
    counts = f.mapping(name)
    if set(counts) != set(KINDS) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()
    ):
        raise f.refuse(name, f"must count each of {', '.join(KINDS)} with an integer")
    return {k: int(counts[k]) for k in KINDS}
