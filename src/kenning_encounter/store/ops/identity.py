"""Directors, confirmations and referent claims (#17): the process edges that say who
directed a session, which encounter found a node still true, and which claims join or
part two referents. Written once for both backends over their own text."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, LiteralString

from kenning_encounter.errors import StoreError
from kenning_encounter.store.ids import group_by_type, type_of_id
from kenning_encounter.store.ops.graph import RelationOps
from kenning_encounter.store.persons import ClaimRecord, Confirmation, PersonRecord
from kenning_encounter.store.port import Subgraph
from kenning_encounter.vocabulary import RELATION_TYPES


@dataclass(frozen=True, slots=True)
class IdentityText:
    # The person made if new, the locus tied to it: $id $name $key $tick $at $locus
    direct_steps: tuple[LiteralString, ...]
    # $loci -> locus id, person id, name, key, tick, created_at
    directors_of: LiteralString
    confirm: LiteralString  # {label}; $encounter $ids $tick $at $why
    confirmations_of: LiteralString  # {label}; $ids -> node id, encounter, tick, at
    claim_create: LiteralString  # {label}; $s $t $resolution $why $tick $encounter $at
    # {label}; $ids -> source, target, resolution, why, tick, encounter, created_at
    claims_out: LiteralString
    claims_in: LiteralString
    direct_undirected: LiteralString  # $id $name $key $at: loci without one get this Person


def _person(row: list[Any]) -> PersonRecord:
    return PersonRecord(
        id=str(row[0]),
        name=str(row[1] or ""),
        key=row[2],
        tick=int(row[3] or 0),
        created_at=str(row[4] or ""),
    )


def _claim(row: list[Any]) -> ClaimRecord:
    return ClaimRecord(
        source=str(row[0]),
        target=str(row[1]),
        resolution=str(row[2]),
        why=str(row[3] or ""),
        tick=int(row[4]),
        encounter=str(row[5] or ""),
        created_at=str(row[6] or ""),
    )


def keep_latest(latest: dict[str, Confirmation], rows: Iterable[Sequence[Any]]) -> None:
    """Confirmation rows (node, encounter, tick, at) into ``latest``: the newest a node."""
    for r in rows:
        found = Confirmation(str(r[0]), str(r[1]), int(r[2]), str(r[3] or ""))
        held = latest.get(found.node)
        if held is None or found.tick > held.tick:
            latest[found.node] = found


class IdentityOps(RelationOps):
    _identity: IdentityText

    # --- reads ---------------------------------------------------------------------
    def directors_of(self, loci: Sequence[str]) -> dict[str, PersonRecord]:
        if not loci:
            return {}
        rows = self.rows(self._identity.directors_of, {"loci": list(dict.fromkeys(loci))})
        return {str(r[0]): _person(r[1:]) for r in rows}

    def director_of(self, locus: str) -> PersonRecord | None:
        return self.directors_of([locus]).get(locus)

    def confirmations_of(self, node_ids: Sequence[str]) -> dict[str, Confirmation]:
        """The latest confirmation of each node that has one."""
        latest: dict[str, Confirmation] = {}
        for label, ids in group_by_type(node_ids).items():
            query = self.render(self._identity.confirmations_of, label=label)
            keep_latest(latest, self.rows(query, {"ids": ids}))
        return latest

    def tension_of(self, node_ids: Sequence[str]) -> tuple[Subgraph, dict[str, Confirmation]]:
        challenges = self.neighbourhood(node_ids, ["CHALLENGES"])
        return challenges, self.confirmations_of(node_ids) if node_ids else {}

    def claims_of(self, node_ids: Sequence[str]) -> list[ClaimRecord]:
        """Every referent claim touching the nodes, either end, oldest first."""
        found: dict[tuple[str, str, int], ClaimRecord] = {}
        text = self._identity
        for label, ids in group_by_type(node_ids).items():
            if label not in RELATION_TYPES["REFERENT_CLAIM"].sources:
                continue
            for template in (text.claims_out, text.claims_in):
                for r in self.rows(self.render(template, label=label), {"ids": ids}):
                    claim = _claim(r)
                    found[(claim.source, claim.target, claim.tick)] = claim
        return sorted(found.values(), key=lambda c: (c.tick, c.source, c.target))

    # --- writes --------------------------------------------------------------------
    def direct_locus(self, locus: str, person: PersonRecord) -> None:
        """Make the person (if new) and tie the locus to it: once, at its first advance."""
        self._require_writable()
        params = {
            "id": person.id,
            "name": person.name,
            "key": person.key,
            "tick": self.tick,
            "at": self.now,
            "locus": locus,
        }
        for statement in self._identity.direct_steps:
            self.rows(statement, params)

    def direct_undirected(self, person: PersonRecord) -> None:
        """Every locus without a director gets ``person`` (an import's, a migration's)."""
        self._require_writable()
        params = {"id": person.id, "name": person.name, "key": person.key, "at": self.now}
        self.rows(self._identity.direct_undirected, params)

    def confirm_nodes(self, encounter: str, node_ids: Sequence[str], why: str = "") -> None:
        self._require_writable()
        for label, ids in group_by_type(node_ids).items():
            for i in ids:
                self._on_changed(i)  # a confirmation renews the node's used_at
            query = self.render(self._identity.confirm, label=label)
            params = {
                "encounter": encounter,
                "ids": ids,
                "tick": self.tick,
                "at": self.now,
                "why": why,
            }
            self.rows(query, params)

    def create_claim(self, claim: ClaimRecord) -> None:
        self._require_writable()
        label = type_of_id(claim.source)
        if label is None or label != type_of_id(claim.target):
            raise StoreError("internal: a referent claim joins two nodes of one type")
        if label not in RELATION_TYPES["REFERENT_CLAIM"].sources:
            raise StoreError(f"internal: a {label} is not a referent")
        params = {
            "s": claim.source,
            "t": claim.target,
            "resolution": claim.resolution,
            "why": claim.why,
            "tick": self.tick,
            "encounter": claim.encounter,
            "at": self.now,
        }
        self.rows(self.render(self._identity.claim_create, label=label), params)
