"""Relevance over time (#16 items 5-6): what the agent's own work keeps using stays near,
what nobody used for months fades from default recall and infusion, nothing is deleted
by fading, and a faded node is near again the moment it is used.

Standing is carried by edges and time, never by a number anyone typed. A node is used
when it is created, when a write links it (an authored relation at either end), when
an encounter confirms it (CONFIRMED) or pins it (PINNED), and when an encounter reads it
deliberately: find_by_name, trace_provenance and chain_history on the full face record
a CONSULTED edge from the caller's open encounter. A search hit is not a use, and an
infusion delivery never is: what the payload makes salient must not gain weight by
being shown, or ranking would feed on itself. The reader face never writes, so its
reads consult nothing.

Each node mirrors its latest use (``used_at``) in the statement that writes the edge,
so activation is read with the node: ``0.5 ** (age / half_life)``, 1.0 just after a use.
Tiers are thresholds on the age in half-lives, computed at read time:

    hot     under 1 half-life     default recall
    warm    under 3               default recall
    cold    under 8               only when asked (include_cold)
    frozen  8 and over            only in the operator's review queue (`kenning-encounter
                                  review`); deleted only when the operator confirms

A pinned node is hot whatever its age. Reads of the past (``as_of``) show the memory as
it stood and neither filter by tier nor report activation: standing is a present fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from pydantic import BaseModel, Field

from kenning_encounter.memory import validate
from kenning_encounter.memory.spine import require_open
from kenning_encounter.memory.writes import resolve
from kenning_encounter.store.port import GraphStore, WriteTx
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.vocabulary import ACTIVATION_HALF_LIFE_DAYS

TIERS: Final = ("hot", "warm", "cold", "frozen")
RECALLED: Final = frozenset({"hot", "warm"})  # what search and infusion show by default
WITH_COLD: Final = frozenset({"hot", "warm", "cold"})
DAY_S: Final = 86_400.0


def _instant(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def last_use(node: NodeRecord) -> str:
    """The latest use the node's edges show (its creation when none is later)."""
    used = node.used_at
    return used if used is not None and used > node.created_at else node.created_at


@dataclass(frozen=True, slots=True)
class Activation:
    """The half-life and tier thresholds (in half-lives), and how much activation moves a
    ranking: a score is multiplied by ``1 - weight + weight * activation``."""

    half_life_days: float = ACTIVATION_HALF_LIFE_DAYS
    warm_after: float = 1.0
    cold_after: float = 3.0
    frozen_after: float = 8.0
    weight: float = 0.5

    def age_in_half_lives(self, node: NodeRecord, now: datetime) -> float:
        age_s = (now - _instant(last_use(node))).total_seconds()
        return max(age_s, 0.0) / (self.half_life_days * DAY_S)

    def level(self, node: NodeRecord, now: datetime) -> float:
        """1.0 just after a use, halved each half-life since; a pinned node stays 1.0."""
        if node.pinned:
            return 1.0
        return round(0.5 ** self.age_in_half_lives(node, now), 3)

    def tier(self, node: NodeRecord, now: datetime) -> str:
        if node.pinned:
            return "hot"
        age = self.age_in_half_lives(node, now)
        if age < self.warm_after:
            return "hot"
        if age < self.cold_after:
            return "warm"
        return "cold" if age < self.frozen_after else "frozen"

    def factor(self, node: NodeRecord, now: datetime) -> float:
        """What activation multiplies a ranking score by (1.0 for a node in use now)."""
        return 1.0 - self.weight + self.weight * self.level(node, now)

    def thresholds(self) -> dict[str, float]:
        """Each tier's start, in days since the last use."""
        h = self.half_life_days
        return {
            "hot": 0.0,
            "warm": self.warm_after * h,
            "cold": self.cold_after * h,
            "frozen": self.frozen_after * h,
        }


def tiers_shown(include_cold: bool) -> frozenset[str]:
    return WITH_COLD if include_cold else RECALLED


def utc_now() -> datetime:
    return datetime.now(UTC)


def frozen(store: GraphStore, policy: Activation, now: datetime) -> list[NodeRecord]:
    """The review queue: live heads in the frozen tier, oldest use first. Reads every
    node: an operator's command, run now and then, not a hot path. Pass the gated store
    (memory/gates.py): a withheld node is never listed."""
    nodes = store.read(lambda tx: tx.authored_graph().nodes)
    found = [n for n in nodes if n.is_head and policy.tier(n, now) == "frozen"]
    return sorted(found, key=lambda n: (last_use(n), n.tick, n.ord))


# --- uses that write: consultation and pins ------------------------------------------
def consult(store: GraphStore, session_id: str | None, node_ids: Sequence[str]) -> bool:
    """Record that the caller's open encounter read these nodes deliberately (one
    statement per type, one CONSULTED edge per encounter and node). Without a session,
    or with no encounter open in it, nothing is recorded and the read stands as it is.
    Returns whether it was recorded."""
    if not session_id or not node_ids:
        return False
    session = validate.session_id(session_id)
    ids = list(dict.fromkeys(node_ids))

    def work(tx: WriteTx) -> bool:
        encounter = tx.open_encounter_of(session)
        if encounter is None:
            return False
        tx.consult_nodes(encounter.name, ids)
        return True

    return store.write(work)


class Pinned(BaseModel):
    encounter: str
    tick: int
    pinned: bool = Field(description="true: these nodes now never fade; false: they fade again")
    nodes: list[dict[str, str]] = Field(description="id and name of each node")


def pin_entities(
    store: GraphStore,
    session_id: str,
    refs: Sequence[str],
    *,
    pinned: bool = True,
    why: str | None = None,
) -> Pinned:
    session = validate.session_id(session_id)
    items = validate.batch(list(refs), "refs")
    reason = validate.text(why, "why", required=False, limit=2_000)

    def work(tx: WriteTx) -> Pinned:
        encounter = require_open(tx, session)
        nodes = [resolve(tx, str(ref), f"refs[{i}]") for i, ref in enumerate(items)]
        ids = list(dict.fromkeys(n.id for n in nodes))
        tx.touch_encounter(encounter.name)
        tx.pin_nodes(encounter.name, ids, pinned=pinned, why=reason)
        named = {n.id: n.name for n in nodes}
        return Pinned(
            encounter=encounter.name,
            tick=tx.tick,
            pinned=pinned,
            nodes=[{"id": i, "name": named[i]} for i in ids],
        )

    return store.write(work)
