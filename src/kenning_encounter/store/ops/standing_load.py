"""Standing in bulk (memory/activation.py): the CONSULTED and PINNED edges an export
pages out and an import writes back, each with its own tick and time. The nodes'
mirrors (``used_at``, ``pinned``) travel on the node rows (load_nodes), so an import
that writes these edges leaves them as they were rather than as of the import."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.ids import type_of_id
from kenning_encounter.store.ops.base import Statements
from kenning_encounter.store.ops.text import LoadText
from kenning_encounter.store.port import ConsultationRecord, PinRecord


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


class StandingLoadOps(Statements):
    _load: LoadText

    def standing_counts(self) -> dict[str, int]:
        counts: dict[str, LiteralString] = {
            "consultation": self._load.count_consultations,
            "pin": self._load.count_pins,
        }
        found: dict[str, int] = {}
        for kind, query in counts.items():
            rows = self.rows(query)
            found[kind] = int(rows[0][0]) if rows else 0
        return found

    def dump_consultations(self, label: str, nodes: Sequence[str]) -> list[ConsultationRecord]:
        query = self.render(self._load.dump_consultations, label=label)
        found = [
            ConsultationRecord(str(r[0]), str(r[1]), int(r[2]), _optional(r[3]))
            for r in self.rows(query, {"ids": list(nodes)})
        ]
        return sorted(found, key=lambda c: (c.tick, c.node, c.encounter))

    def dump_pins(self, label: str, nodes: Sequence[str]) -> list[PinRecord]:
        query = self.render(self._load.dump_pins, label=label)
        found = [
            PinRecord(str(r[0]), str(r[1]), int(r[2]), _optional(r[3]), _optional(r[4]), str(r[5]))
            for r in self.rows(query, {"ids": list(nodes)})
        ]
        return sorted(found, key=lambda p: (p.tick, p.node, p.encounter, p.state))

    def load_consultations(self, consultations: Sequence[ConsultationRecord]) -> None:
        self._require_writable()
        groups: dict[str, list[dict[str, Any]]] = {}
        for c in consultations:
            row = {"node": c.node, "encounter": c.encounter, "tick": c.tick, "at": c.created_at}
            groups.setdefault(_label(c.node), []).append(row)
        for label, rows in groups.items():
            self.rows(self.render(self._load.load_consultations, label=label), {"rows": rows})

    def load_pins(self, pins: Sequence[PinRecord]) -> None:
        self._require_writable()
        groups: dict[str, list[dict[str, Any]]] = {}
        for p in pins:
            row = {
                "node": p.node,
                "encounter": p.encounter,
                "tick": p.tick,
                "at": p.created_at,
                "why": p.why,
                "state": p.state,
            }
            groups.setdefault(_label(p.node), []).append(row)
        for label, rows in groups.items():
            self.rows(self.render(self._load.load_pins, label=label), {"rows": rows})


def _label(node_id: str) -> str:
    label = type_of_id(node_id)
    if label is None:
        raise StoreError(f"internal: {node_id!r} carries no type prefix")
    return label
