"""The spine: loci, their encounters, what each encounter recorded, the clock."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any, LiteralString

from kenning_encounter.store.ids import group_by_type
from kenning_encounter.store.ops.base import Statements, encounter_from
from kenning_encounter.store.ops.text import SpineText
from kenning_encounter.store.records import EncounterRecord
from kenning_encounter.store.uses import used_labels


class SpineOps(Statements):
    _spine: SpineText

    # --- reads ---------------------------------------------------------------------
    def meta(self, key: str) -> int:
        rows = self.rows(self._spine.meta_get, {"key": key})
        return int(rows[0][0]) if rows and rows[0][0] is not None else 0

    def metas(self, keys: Sequence[str]) -> dict[str, int]:
        """Several counters in one read; a key never set reads 0, as with ``meta``."""
        rows = self.rows(self._spine.meta_get_many, {"keys": list(keys)})
        held = {str(r[0]): int(r[1]) for r in rows if r[1] is not None}
        return {key: held.get(key, 0) for key in keys}

    def clock(self) -> int:
        return self.meta("clock")

    def clock_and_erasures(self) -> tuple[int, int]:
        found = self.metas(("clock", "erasures"))
        return found["clock"], found["erasures"]

    def _encounter(self, query: LiteralString, params: dict[str, Any]) -> EncounterRecord | None:
        rows = self.rows(query, params)
        return encounter_from(rows[0][0]) if rows else None

    def get_encounter(self, name: str) -> EncounterRecord | None:
        return self._encounter(self._spine.enc_get, {"name": name})

    def get_encounters(self, names: Sequence[str]) -> dict[str, EncounterRecord]:
        rows = self.rows(self._spine.enc_get_many, {"names": list(names)})
        found = [encounter_from(r[0]) for r in rows]
        return {e.name: e for e in found}

    def open_encounter_of(self, locus: str) -> EncounterRecord | None:
        # The newest is chosen here: a locus has one open encounter, rarely two, and on
        # the embedded engine sorting them took half of every write's check.
        rows = self.rows(self._spine.enc_open_of, {"locus": locus})
        found = [encounter_from(r[0]) for r in rows]
        return max(found, key=lambda e: e.opened_tick, default=None)

    def last_encounter_of(self, locus: str) -> EncounterRecord | None:
        return self._encounter(self._spine.enc_last_of, {"locus": locus})

    def latest_encounter(self) -> EncounterRecord | None:
        return self._encounter(self._spine.enc_latest, {})

    def encounters(
        self,
        *,
        unsealed_only: bool = False,
        limit: int = 20,
        exclude_locus: str | None = None,
        offset: int = 0,
    ) -> list[EncounterRecord]:
        params = {
            "unsealed": unsealed_only,
            "exclude": exclude_locus or "",
            "offset": offset,
            "limit": limit,
        }
        return [encounter_from(r[0]) for r in self.rows(self._spine.enc_list, params)]

    def reentry_encounters(
        self, *, recent: int, unsealed: int, exclude_locus: str
    ) -> tuple[list[EncounterRecord], list[EncounterRecord]]:
        return (
            self.encounters(limit=recent),
            self.encounters(unsealed_only=True, limit=unsealed, exclude_locus=exclude_locus),
        )

    def work_spans(
        self, since: str, hidden_loci: frozenset[str] = frozenset()
    ) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if hidden_loci:
            found = self.rows(
                self._spine.enc_spans_hiding, {"since": since, "loci": sorted(hidden_loci)}
            )
        else:
            found = self.rows(self._spine.enc_spans, {"since": since})
        for opened, last, sealed in found:
            out.append((str(opened), str(last)))
            if sealed is not None:
                out.append((str(sealed), str(sealed)))
        return out

    def loci(self) -> list[str]:
        return [str(r[0]) for r in self.rows(self._spine.loci)]

    def spine(self) -> list[tuple[str, str, str]]:
        return [(str(a), str(r), str(b)) for a, r, b in self.rows(self._spine.spine)]

    def recorded_ids(self, encounter: str) -> list[str]:
        return [str(r[0]) for r in self.rows(self._spine.enc_recorded, {"name": encounter})]

    def encounter_members(self, encounters: Sequence[str]) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {}
        for row in self.rows(self._spine.enc_members, {"names": list(encounters)}):
            out.setdefault(str(row[0]), []).append(str(row[1]))
        return out

    def encounter_nodes(self, encounters: Sequence[str], limit: int) -> list[str]:
        rows = self.rows(self._spine.enc_nodes, {"names": list(encounters), "limit": limit})
        return [str(r[0]) for r in rows]

    # --- writes --------------------------------------------------------------------
    def ensure_locus(self, locus: str) -> bool:
        self._require_writable()
        if self.rows(self._spine.locus_get, {"id": locus}):
            return False
        self.rows(self._spine.locus_create, {"id": locus, "at": self.now, "tick": self.tick})
        return True

    def create_encounter(
        self, record: EncounterRecord, *, previous: str | None, anchor: str | None
    ) -> EncounterRecord:
        self._require_writable()
        params = self._encounter_params(record)
        for statement in self._spine.enc_create_steps:
            self.rows(statement, params)
        link = {"name": record.name, "tick": self.tick}
        if previous is not None:
            self.rows(self._spine.enc_next, {**link, "previous": previous})
        elif anchor is not None:
            self.rows(self._spine.enc_anchor, {**link, "anchor": anchor})
        return self._opened(record)

    def _encounter_params(self, record: EncounterRecord) -> dict[str, Any]:
        """ENC_CREATE's parameters: ``record`` opened at this write's tick and time."""
        return {
            "name": record.name,
            "locus": record.locus,
            "purpose": record.purpose,
            "tick": self.tick,
            "at": self.now,
        }

    def _opened(self, record: EncounterRecord) -> EncounterRecord:
        """``record`` as its creation writes it (ENC_CREATE): opened at this write's tick
        and time, active since then, nothing sealed or tombstoned."""
        return EncounterRecord(
            name=record.name,
            locus=record.locus,
            purpose=record.purpose,
            opened_tick=self.tick,
            opened_at=self.now,
            last_activity_at=self.now,
        )

    def seal_encounter(self, encounter: EncounterRecord, summary: str) -> EncounterRecord:
        self._require_writable()
        params = {"name": encounter.name, "tick": self.tick, "at": self.now, "summary": summary}
        self.rows(self._spine.enc_seal, params)
        return replace(encounter, sealed_tick=self.tick, sealed_at=self.now, summary=summary)

    def dissolve_encounter(self, name: str) -> None:
        self._require_writable()
        # A dissolution is a write of its own: it takes a tick, kept so that a read of
        # the past sees the encounter open until then.
        self.rows(self._spine.enc_dissolve, {"name": name, "tick": self.tick, "at": self.now})

    def touch_encounter(self, name: str) -> None:
        self._require_writable()
        self.rows(self._spine.enc_touch, {"name": name, "at": self.now})

    def add_tombstones(self, encounter: str, count: int, marked: str | None = None) -> None:
        self._require_writable()
        self.rows(self._spine.enc_tombstones, {"name": encounter, "count": count})
        if marked is not None:
            params = {"name": encounter, "marks": marked, "labels": used_labels(marked)}
            self.rows(self._spine.enc_tombstones_marked, params)

    def encounters_drawing_on(self, node_ids: Sequence[str]) -> list[str]:
        names: set[str] = set()
        for label, ids in group_by_type(node_ids).items():
            query = self.render(self._spine.enc_touching, label=label)
            names.update(str(r[0]) for r in self.rows(query, {"ids": ids}))
        return sorted(names)

    def withdraw_encounter_text(self, names: Sequence[str], text: str) -> None:
        self._require_writable()
        if names:
            self.rows(self._spine.enc_withdraw, {"names": list(names), "text": text})

    def erasures(self) -> int:
        return self.meta("erasures")

    def count_erasure(self) -> None:
        self._require_writable()
        self.rows(self._spine.erasures_count)
