"""The dump's lines: what each record holds, written and read back field by field.

A dump is JSON Lines. The first line is the header (the format and its version, the
version of kenning-encounter that wrote it, the backend it came from, the clock and
the counts), then one record per line grouped by kind in the order they depend on
each other (``KINDS``), then the trailer: the counts written and the SHA-256 of
every line before it, header included.

Version 4 is version 3 whose lines also keep the marks the classification gate reads
standing and tombstones by (store/uses.py): each node and deleted node line's
``used_marks`` (``class=time;...``, its latest uses by links to classified nodes and,
under the empty key, its latest other use then) and each encounter line's
``tombstones_marked`` (``class=count;...``, how many of its erased nodes carried each
classification), null where there are none. Without them an import handed a reader not
granted a class the uses and erasures of that class's nodes: a node gone hot, a
tombstone more. An export not granted some classes (memory/dump.py) carries the marks of
the classes it may see and none of the others. A dump of an earlier version imports
with no marks, as its memory's were never carried.

Version 3 is version 2 whose encounter lines also keep ``dissolved_tick``, the tick of
the write that dissolved the encounter (null when it was not, or was dissolved before
dissolutions kept their tick), so that a read of the past sees it open until then.

Version 2 carries everything authored and every process record: the directors
(``person``, and each locus's director), the spine, the nodes and relations, referent
claims, confirmations, and the record of the past (``deleted_node``,
``deleted_relation``, ``status_move``) that ``as_of`` reads stand on, and standing
(memory/activation.py): each node line's ``used_at`` and ``pinned``, and the
``consultation`` and ``pin`` records of its CONSULTED and PINNED edges. A version 2 dump
written before standing travelled (its header counts neither kind, its node lines carry
neither field) is still read: its nodes then stand from their creation. Derived data
(the text index, meanings, baselines, name and source registries, the infusion ledger
and log) is not in a dump: an import derives it again or starts it empty. Version 2 and
version 1 dumps (loci, encounters, spine, nodes, relations) are still read
(memory/load.py).

Reading a line checks it alone: its kind, its exact set of fields, each field's
type. What lines must agree on (ids, endpoints, ticks, chains) is ``dump_checks.py``'s.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Final

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory import dump_lines
from kenning_encounter.memory.dump_fields import FIX, Fields
from kenning_encounter.store.persons import ClaimRecord, PersonRecord
from kenning_encounter.store.port import (
    ConfirmationRecord,
    ConsultationRecord,
    DumpedEdge,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    DumpedNode,
    LocusRecord,
    PinRecord,
    SpineEdge,
)
from kenning_encounter.store.records import EdgeRecord, EncounterRecord

__all__ = ["FIX", "Fields"]

FORMAT: Final = "kenning-encounter-dump"
VERSION: Final = 4
# Records by kind, in the order a dump holds them (each kind names only earlier ones).
KINDS: Final = (
    "person",
    "locus",
    "encounter",
    "spine",
    "node",
    "relation",
    "claim",
    "confirmation",
    "consultation",
    "pin",
    "deleted_node",
    "deleted_relation",
    "status_move",
)
KINDS_BY_VERSION: Final[dict[int, tuple[str, ...]]] = {
    1: ("locus", "encounter", "spine", "node", "relation"),
    2: KINDS,
    3: KINDS,  # its encounter lines also keep the tick of their dissolution
    4: KINDS,  # its node, deleted node and encounter lines also keep the gate's marks
}
# What a version 2 dump carries only once standing travelled (node and deleted node lines
# also gain ``used_at`` and ``pinned``); a header that counts none of them predates that.
STANDING_KINDS: Final = ("consultation", "pin")
STANDING_FIELDS: Final = dump_lines.STANDING_FIELDS
# What version 4 added to node and deleted node lines (encounter lines: tombstones_marked).
USES_FIELDS: Final = dump_lines.USES_FIELDS


def kinds_of(version: int, standing: bool = True) -> tuple[str, ...]:
    """The kinds a dump of ``version`` holds, with or without standing."""
    kinds = KINDS_BY_VERSION[version]
    return kinds if standing else tuple(k for k in kinds if k not in STANDING_KINDS)


def carries_standing(version: int, counts: Mapping[str, Any]) -> bool:
    """Whether a dump carries standing, told by the kinds its header counts."""
    return version >= 2 and any(k in counts for k in STANDING_KINDS)


Record = (
    PersonRecord
    | LocusRecord
    | EncounterRecord
    | SpineEdge
    | DumpedNode
    | DumpedEdge
    | ClaimRecord
    | ConfirmationRecord
    | ConsultationRecord
    | PinRecord
    | DumpedEndedNode
    | DumpedEndedEdge
    | DumpedMove
)


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
    added = dump_lines.to_line(record)
    if added is not None:
        return added
    if isinstance(record, LocusRecord):
        return {
            "kind": "locus",
            "id": record.id,
            "tick": record.tick,
            "created_at": record.created_at,
            "director": record.director,
            "directed_tick": record.directed_tick,
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
            "dissolved_tick": record.dissolved_tick,
            "last_activity_at": record.last_activity_at,
            "tombstones": record.tombstones,
            "tombstones_marked": record.tombstones_marked,
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
        return {
            "kind": "node",
            **dump_lines.node_fields(record.node),
            "recorded_tick": record.recorded_tick,
            "used_at": record.node.used_at,
            "pinned": record.node.pinned,
            "used_marks": record.node.used_marks,
        }
    assert isinstance(record, DumpedEdge)
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


def _locus(f: Fields) -> LocusRecord:
    return LocusRecord(
        f.text("id", empty=False),
        f.int("tick", low=1),
        f.time("created_at"),
        f.text("director", empty=False),
        f.int("directed_tick"),
    )


def _locus_v1(f: Fields) -> LocusRecord:
    return LocusRecord(f.text("id", empty=False), f.int("tick", low=1), f.time("created_at"))


def _encounter(f: Fields) -> EncounterRecord:
    marks = f.text("tombstones_marked", optional=True, empty=False)
    return replace(_encounter_v3(f), tombstones_marked=marks)


def _encounter_v3(f: Fields) -> EncounterRecord:
    return replace(_encounter_v2(f), dissolved_tick=f.int("dissolved_tick", optional=True, low=1))


def _encounter_v2(f: Fields) -> EncounterRecord:
    return EncounterRecord(
        name=f.text("name", empty=False),
        locus=f.text("locus", empty=False),
        purpose=f.text("purpose"),
        opened_tick=f.int("opened_tick", low=1),
        opened_at=f.time("opened_at"),
        sealed_tick=f.int("sealed_tick", optional=True, low=1),
        sealed_at=f.time("sealed_at", optional=True),
        summary=f.text("summary", optional=True),
        dissolved_at=f.time("dissolved_at", optional=True),
        last_activity_at=f.time("last_activity_at", optional=True),
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
    marks = f.text("used_marks", optional=True, empty=False)
    node = dump_lines.read_node(f, **dump_lines.standing(f), used_marks=marks)
    return DumpedNode(node, f.int("recorded_tick", low=1))


def _node_v3(f: Fields) -> DumpedNode:
    node = dump_lines.read_node(f, **dump_lines.standing(f))
    return DumpedNode(node, f.int("recorded_tick", low=1))


def _node_unstanding(f: Fields) -> DumpedNode:
    return DumpedNode(dump_lines.read_node(f), f.int("recorded_tick", low=1))


def _relation(f: Fields) -> DumpedEdge:
    edge = EdgeRecord(
        source=f.text("source", empty=False),
        target=f.text("target", empty=False),
        type=f.text("type", empty=False),
        tick=f.int("tick", low=1),
        encounter=f.text("encounter", empty=False),
        revision_why=f.text("revision_why", optional=True),
    )
    return DumpedEdge(edge, f.time("created_at", optional=True))


_Readers = dict[str, tuple[frozenset[str], Callable[[Fields], Any]]]
_LOCUS_V1: Final = frozenset({"kind", "id", "tick", "created_at"})
_ENCOUNTER_V2: Final = frozenset(
    {"kind", "name", "locus", "purpose", "opened_tick", "opened_at", "sealed_tick"}
    | {"sealed_at", "summary", "dissolved_at", "last_activity_at", "tombstones"}
)
_ENCOUNTER_V3: Final = _ENCOUNTER_V2 | {"dissolved_tick"}
_NODE_V3: Final = dump_lines.NODE_FIELDS | {"kind", "recorded_tick"} | STANDING_FIELDS
_READERS: Final[_Readers] = {
    "locus": (_LOCUS_V1 | {"director", "directed_tick"}, _locus),
    "encounter": (_ENCOUNTER_V3 | {"tombstones_marked"}, _encounter),
    "spine": (frozenset({"kind", "type", "source", "target", "tick"}), _spine),
    "node": (_NODE_V3 | USES_FIELDS, _node),
    "relation": (
        frozenset(
            {"kind", "type", "source", "target", "tick", "encounter", "created_at"}
            | {"revision_why"}
        ),
        _relation,
    ),
    **dump_lines.READERS,
}
# What version 3 wrote differently: no marks of the gate's (store/uses.py).
_V3_READERS: Final[_Readers] = {
    **_READERS,
    **dump_lines.V3,
    "encounter": (_ENCOUNTER_V3, _encounter_v3),
    "node": (_NODE_V3, _node_v3),
}
# What version 2 wrote differently: that, and its encounters kept no tick of their
# dissolution.
_V2_READERS: Final[_Readers] = {**_V3_READERS, "encounter": (_ENCOUNTER_V2, _encounter_v2)}
# What a dump without standing (version 2 only) wrote differently: its node lines held none.
_UNSTANDING_READERS: Final[_Readers] = {
    **_V2_READERS,
    **dump_lines.UNSTANDING,
    "node": (dump_lines.NODE_FIELDS | {"kind", "recorded_tick"}, _node_unstanding),
}
# What version 1 wrote differently: that, and its loci named no director.
_V1_READERS: Final[_Readers] = {**_UNSTANDING_READERS, "locus": (_LOCUS_V1, _locus_v1)}
HEADER_FIELDS: Final = frozenset(
    {"kind", "format", "version", "kenning_encounter", "backend", "clock", "exported_at", "counts"}
)
TRAILER_FIELDS: Final = frozenset({"kind", "counts", "sha256"})


def parse(raw: bytes, number: int) -> dict[str, Any]:
    """One line as an object, or the refusal naming the line."""
    try:
        data = json.loads(raw)
    except ValueError as exc:  # an integer past 4,300 digits among them
        raise InvalidInput(f"line {number}", f"is not JSON ({exc}); {FIX}") from None
    except RecursionError:
        raise InvalidInput(
            f"line {number}", f"nests its values deeper than any record does; {FIX}"
        ) from None
    if not isinstance(data, dict) or not isinstance(data.get("kind"), str):  # pyright: ignore[reportUnknownMemberType]
        raise InvalidInput(f"line {number}", f"is not a record with a kind; {FIX}")
    return dict(data)  # pyright: ignore[reportUnknownArgumentType]


def read_record(
    data: dict[str, Any], number: int, version: int = VERSION, standing: bool = True
) -> tuple[str, Record]:
    """One line of a dump of format ``version`` (carrying standing or not) as its record."""
    kind = str(data["kind"])
    kinds = kinds_of(version, standing)
    readers = _READERS if standing else _UNSTANDING_READERS
    if version == 3 and standing:
        readers = _V3_READERS
    if version == 2 and standing:
        readers = _V2_READERS
    if version == 1:
        readers = _V1_READERS
    if kind not in kinds:
        which = "" if standing or version == 1 else " whose header counts no standing"
        raise InvalidInput(
            f"line {number}.kind",
            f"unknown kind {kind!r} for a version {version} dump{which}; use one of: "
            f"{', '.join(kinds)}; {FIX}",
        )
    expected, read = readers[kind]
    return kind, read(Fields(data, f"line {number}: {kind}", expected))


def counts_of(
    f: Fields, name: str, version: int = VERSION, standing: bool = True
) -> dict[str, int]:
    kinds = kinds_of(version, standing)
    counts = f.mapping(name)
    if set(counts) != set(kinds) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in counts.values()
    ):
        raise f.refuse(name, f"must count each of {', '.join(kinds)} with an integer")
    return {k: int(counts[k]) for k in kinds}
