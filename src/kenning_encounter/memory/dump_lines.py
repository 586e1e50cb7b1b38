"""The lines dump format version 2 added: directors, referent claims, confirmations,
standing (consultations and pins: memory/activation.py) and the record of the past
``as_of`` reads stand on (store/ops/past.py); a deleted node's line also keeps, from
version 4, the uses classified nodes made of it (``used_marks``: store/uses.py).

Each kind is written and read back field by field, as dump_format.py does the others;
what the lines must agree on is dump_checks.py's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from kenning_encounter.memory.dump_fields import Fields
from kenning_encounter.store.past import StatusMove
from kenning_encounter.store.persons import ClaimRecord, PersonRecord
from kenning_encounter.store.port import (
    ConfirmationRecord,
    ConsultationRecord,
    DumpedEndedEdge,
    DumpedEndedNode,
    DumpedMove,
    PinRecord,
)
from kenning_encounter.store.records import EdgeRecord, NodeRecord

# A node's own fields, as a node line and a deleted node's line both hold them.
NODE_FIELDS: Final = frozenset(
    {"type", "id", "name", "description", "status", "tick", "ord", "created_at", "encounter"}
    | {"props"}
)
# A node's standing (memory/activation.py), on a node line and a deleted node's line of
# a dump that carries standing (dump_format.py).
STANDING_FIELDS: Final = frozenset({"used_at", "pinned"})
# What version 4 added beside them: the uses classified nodes made (store/uses.py).
USES_FIELDS: Final = frozenset({"used_marks"})


def node_fields(n: NodeRecord) -> dict[str, Any]:
    return {
        "type": n.type,
        "id": n.id,
        "name": n.name,
        "description": n.description,
        "status": n.status,
        "tick": n.tick,
        "ord": n.ord,
        "created_at": n.created_at,
        "encounter": n.encounter,
        "props": dict(sorted(n.props.items())),
    }


def read_node(f: Fields, **more: Any) -> NodeRecord:
    return NodeRecord(
        id=f.text("id", empty=False),
        type=f.text("type", empty=False),
        name=f.text("name", empty=False),
        description=f.text("description"),
        tick=f.int("tick", low=1),
        created_at=f.time("created_at"),
        status=f.text("status", optional=True),
        props=f.strings("props"),
        encounter=f.text("encounter", empty=False),
        ord=f.int("ord"),
        **more,
    )


def to_line(record: object) -> dict[str, Any] | None:
    """The line of a record of a kind version 2 added; None for any other record."""
    if isinstance(record, PersonRecord):
        return {
            "kind": "person",
            "id": record.id,
            "name": record.name,
            "key": record.key,
            "tick": record.tick,
            "created_at": record.created_at,
        }
    if isinstance(record, ClaimRecord):
        return {
            "kind": "claim",
            "source": record.source,
            "target": record.target,
            "resolution": record.resolution,
            "why": record.why,
            "tick": record.tick,
            "encounter": record.encounter,
            "created_at": record.created_at,
        }
    if isinstance(record, ConfirmationRecord):
        return {
            "kind": "confirmation",
            "node": record.node,
            "encounter": record.encounter,
            "tick": record.tick,
            "created_at": record.created_at,
            "why": record.why,
        }
    if isinstance(record, ConsultationRecord):
        return {
            "kind": "consultation",
            "node": record.node,
            "encounter": record.encounter,
            "tick": record.tick,
            "created_at": record.created_at,
        }
    if isinstance(record, PinRecord):
        return {
            "kind": "pin",
            "node": record.node,
            "encounter": record.encounter,
            "tick": record.tick,
            "created_at": record.created_at,
            "why": record.why,
            "state": record.state,
        }
    if isinstance(record, DumpedEndedNode):
        n = record.node
        return {
            "kind": "deleted_node",
            **node_fields(n),
            "locus": n.locus,
            "superseded_by": n.superseded_by,
            "used_at": n.used_at,
            "pinned": n.pinned,
            "used_marks": n.used_marks,
            "ended": record.ended,
            "at": record.at,
        }
    if isinstance(record, DumpedEndedEdge):
        e = record.edge
        return {
            "kind": "deleted_relation",
            "type": e.type,
            "source": e.source,
            "target": e.target,
            "tick": e.tick,
            "encounter": e.encounter,
            "revision_why": e.revision_why,
            "ended": record.ended,
            "at": record.at,
        }
    if isinstance(record, DumpedMove):
        m = record.move
        return {
            "kind": "status_move",
            "node": m.node,
            "tick": m.tick,
            "seq": m.seq,
            "before": m.before,
            "after": m.after,
            "at": record.at,
        }
    return None


def _person(f: Fields) -> PersonRecord:
    return PersonRecord(
        id=f.text("id", empty=False),
        name=f.text("name"),
        key=f.text("key", optional=True),
        tick=f.int("tick"),
        created_at=f.time("created_at"),
    )


def _claim(f: Fields) -> ClaimRecord:
    return ClaimRecord(
        source=f.text("source", empty=False),
        target=f.text("target", empty=False),
        resolution=f.text("resolution", empty=False),
        why=f.text("why"),
        tick=f.int("tick", low=1),
        encounter=f.text("encounter", empty=False),
        created_at=f.time("created_at"),
    )


def _confirmation(f: Fields) -> ConfirmationRecord:
    return ConfirmationRecord(
        node=f.text("node", empty=False),
        encounter=f.text("encounter", empty=False),
        tick=f.int("tick", low=1),
        created_at=f.time("created_at", optional=True),
        why=f.text("why", optional=True),
    )


def _consultation(f: Fields) -> ConsultationRecord:
    return ConsultationRecord(
        node=f.text("node", empty=False),
        encounter=f.text("encounter", empty=False),
        tick=f.int("tick", low=1),
        created_at=f.time("created_at", optional=True),
    )


def _pin(f: Fields) -> PinRecord:
    return PinRecord(
        node=f.text("node", empty=False),
        encounter=f.text("encounter", empty=False),
        tick=f.int("tick", low=1),
        created_at=f.time("created_at", optional=True),
        why=f.text("why", optional=True),
        state=f.text("state", empty=False),
    )


def _deleted_node(f: Fields) -> DumpedEndedNode:
    return _deleted(f, **standing(f), used_marks=f.text("used_marks", optional=True, empty=False))


def _deleted_node_v3(f: Fields) -> DumpedEndedNode:
    return _deleted(f, **standing(f))


def standing(f: Fields) -> dict[str, Any]:
    """A node line's standing (``STANDING_FIELDS``)."""
    return {"used_at": f.time("used_at", optional=True), "pinned": f.text("pinned", optional=True)}


def _deleted_node_unstanding(f: Fields) -> DumpedEndedNode:
    return _deleted(f)


def _deleted(f: Fields, **standing: Any) -> DumpedEndedNode:
    node = read_node(
        f,
        locus=f.text("locus", optional=True),
        superseded_by=f.text("superseded_by", optional=True),
        **standing,
    )
    return DumpedEndedNode(node, f.int("ended", low=1), f.text("at", optional=True))


def _deleted_relation(f: Fields) -> DumpedEndedEdge:
    edge = EdgeRecord(
        source=f.text("source", empty=False),
        target=f.text("target", empty=False),
        type=f.text("type", empty=False),
        tick=f.int("tick", low=1),
        encounter=f.text("encounter", optional=True),
        revision_why=f.text("revision_why", optional=True),
    )
    return DumpedEndedEdge(edge, f.int("ended", low=1), f.text("at", optional=True))


def _status_move(f: Fields) -> DumpedMove:
    move = StatusMove(
        node=f.text("node", empty=False),
        tick=f.int("tick", low=1),
        seq=f.int("seq"),
        before=f.text("before", optional=True),
        after=f.text("after", optional=True),
    )
    return DumpedMove(move, f.text("at", optional=True))


_DELETED_NODE_FIELDS: Final = NODE_FIELDS | {"kind", "locus", "superseded_by", "ended", "at"}
_Readers = dict[str, tuple[frozenset[str], Callable[[Fields], Any]]]
READERS: Final[_Readers] = {
    "person": (frozenset({"kind", "id", "name", "key", "tick", "created_at"}), _person),
    "claim": (
        frozenset({"kind", "source", "target", "resolution", "why", "tick", "encounter"})
        | {"created_at"},
        _claim,
    ),
    "confirmation": (
        frozenset({"kind", "node", "encounter", "tick", "created_at", "why"}),
        _confirmation,
    ),
    "consultation": (
        frozenset({"kind", "node", "encounter", "tick", "created_at"}),
        _consultation,
    ),
    "pin": (
        frozenset({"kind", "node", "encounter", "tick", "created_at", "why", "state"}),
        _pin,
    ),
    "deleted_node": (
        _DELETED_NODE_FIELDS | STANDING_FIELDS | USES_FIELDS,
        _deleted_node,
    ),
    "deleted_relation": (
        frozenset({"kind", "type", "source", "target", "tick", "encounter", "revision_why"})
        | {"ended", "at"},
        _deleted_relation,
    ),
    "status_move": (
        frozenset({"kind", "node", "tick", "seq", "before", "after", "at"}),
        _status_move,
    ),
}
# How version 3 wrote the lines above differently: no marks (dump_format.py).
V3: Final[_Readers] = {"deleted_node": (_DELETED_NODE_FIELDS | STANDING_FIELDS, _deleted_node_v3)}
# How a dump without standing (dump_format.py) wrote the lines above differently.
UNSTANDING: Final[_Readers] = {"deleted_node": (_DELETED_NODE_FIELDS, _deleted_node_unstanding)}
