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

Age is counted in the memory's working time, not on the wall clock: a memory nobody
works in does not fade. Work is what its encounters span, from opening to their last
write (the spine holds both); a pause between spans ages the memory by at most
``pause_ages_days`` (a day by default), and so does the time since the last span, so a
user back after three months finds the memory as they left it, while a node their
daily work has passed by for months fades. Nothing is stored for this: the spans are
the encounters themselves, so replicas, exports and imports agree on it exactly.

A reader face that hides sessions (``--hide-loci``) reads standing from the sessions it
shows: a node's ``used_at`` and ``pinned`` from their uses alone, and the work spans from
their encounters alone (memory/gates.py ``HidingReads``), so a hidden session's use of a
node it sees, or its work, moves nothing there.
"""

from __future__ import annotations

import itertools
import threading
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Final

from pydantic import Field

from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.memory import validate
from kenning_encounter.memory.spine import require_open
from kenning_encounter.memory.writes import resolve_shown
from kenning_encounter.store.port import GraphStore, ReadTx, SpineReads, WriteTx
from kenning_encounter.store.records import NodeRecord
from kenning_encounter.store.uses import merged_spans
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
class Pauses:
    """The idle stretches between the memory's work spans, the part of each pause beyond
    what a pause may age it: they change only when the spans do, so a reader keeps them,
    and each read adds only the stretch since the last span."""

    pause_ages_s: float
    last_end: float | None = None  # the end of the latest span; None: no work known
    starts: tuple[float, ...] = ()
    lengths: tuple[float, ...] = ()
    before: tuple[float, ...] = ()
    total: float = 0.0

    @classmethod
    def of(cls, spans: Sequence[tuple[float, float]], pause_ages_s: float) -> Pauses:
        """From merged work spans (sorted, disjoint, epoch seconds)."""
        starts: list[float] = []
        lengths: list[float] = []
        before: list[float] = []
        total = 0.0
        for (_, end), (resumed, _) in itertools.pairwise(spans):
            idle_from = end + pause_ages_s
            if resumed > idle_from:
                starts.append(idle_from)
                lengths.append(resumed - idle_from)
                before.append(total)
                total += resumed - idle_from
        last = spans[-1][1] if spans else None
        return cls(pause_ages_s, last, tuple(starts), tuple(lengths), tuple(before), total)

    def present(self, at: datetime) -> Present:
        """The moment ``at``, with the time since the last span as a pause too."""
        if self.last_end is None:
            return Present(at)
        starts, lengths, before = self.starts, self.lengths, self.before
        idle_from = self.last_end + self.pause_ages_s
        if at.timestamp() > idle_from:
            starts, lengths = (*starts, idle_from), (*lengths, at.timestamp() - idle_from)
            before = (*before, self.total)
        return Present(at, starts, lengths, before)


@dataclass(frozen=True, slots=True)
class Present:
    """The moment standing is read at, with the stretches the memory stood idle: the part
    of each pause in its work beyond what a pause may age it. Ages are the time between a
    use and ``at`` less the idle time between them."""

    at: datetime
    idle_starts: tuple[float, ...] = ()  # epoch seconds, sorted, disjoint spans
    idle_lengths: tuple[float, ...] = ()
    idle_before: tuple[float, ...] = ()  # idle time before each span starts

    @classmethod
    def wall(cls, at: datetime) -> Present:
        """Every second counts: for a memory whose work is not known."""
        return cls(at)

    @classmethod
    def of(cls, spans: Sequence[tuple[float, float]], at: datetime, pause_ages_s: float) -> Present:
        """From the memory's merged work spans (sorted, disjoint, epoch seconds)."""
        return Pauses.of(spans, pause_ages_s).present(at)

    def _idle_upto(self, t: float) -> float:
        j = bisect_right(self.idle_starts, t) - 1
        if j < 0:
            return 0.0
        return self.idle_before[j] + min(t - self.idle_starts[j], self.idle_lengths[j])

    def age_s(self, since: datetime) -> float:
        """Working seconds from ``since`` to this moment (0 for a moment after it)."""
        a, b = since.timestamp(), self.at.timestamp()
        if b <= a:
            return 0.0
        return max((b - a) - (self._idle_upto(b) - self._idle_upto(a)), 0.0)


@dataclass(frozen=True, slots=True)
class Activation:
    """The half-life and tier thresholds (in half-lives), how much one pause in the
    memory's work ages it, and how much activation moves a ranking: a score is multiplied
    by ``1 - weight + weight * activation``."""

    half_life_days: float = ACTIVATION_HALF_LIFE_DAYS
    warm_after: float = 1.0
    cold_after: float = 3.0
    frozen_after: float = 8.0
    weight: float = 0.5
    pause_ages_days: float = 1.0

    def age_in_half_lives(self, node: NodeRecord, now: Present) -> float:
        return now.age_s(_instant(last_use(node))) / (self.half_life_days * DAY_S)

    def level(self, node: NodeRecord, now: Present) -> float:
        """1.0 just after a use, halved each half-life since; a pinned node stays 1.0."""
        if node.pinned:
            return 1.0
        return round(0.5 ** self.age_in_half_lives(node, now), 3)

    def tier(self, node: NodeRecord, now: Present) -> str:
        if node.pinned:
            return "hot"
        age = self.age_in_half_lives(node, now)
        if age < self.warm_after:
            return "hot"
        if age < self.cold_after:
            return "warm"
        return "cold" if age < self.frozen_after else "frozen"

    def tiers(self, nodes: Iterable[NodeRecord], now: Present) -> list[str]:
        """``tier`` of each node, worked out once for each moment of last use: many nodes
        share one (a batch is written at one instant), and a million ages cost seconds."""
        by_use: dict[tuple[bool, str], str] = {}
        found: list[str] = []
        for node in nodes:
            use = (bool(node.pinned), last_use(node))
            tier = by_use.get(use)
            if tier is None:
                tier = by_use[use] = self.tier(node, now)
            found.append(tier)
        return found

    def factor(self, node: NodeRecord, now: Present) -> float:
        """What activation multiplies a ranking score by (1.0 for a node in use now)."""
        return 1.0 - self.weight + self.weight * self.level(node, now)

    def thresholds(self) -> dict[str, float]:
        """Each tier's start, in working days since the last use."""
        h = self.half_life_days
        return {
            "hot": 0.0,
            "warm": self.warm_after * h,
            "cold": self.cold_after * h,
            "frozen": self.frozen_after * h,
        }


class WorkTime:
    """The memory's work spans, read from its encounters and kept between reads: the
    cache is keyed by the memory's clock and erasure count, so a write anywhere (another
    replica's too) makes the next read fetch the spans that moved, and only those."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._key: tuple[int, int] | None = None
        self._spans: list[tuple[float, float]] = []
        self._last: str = ""  # the latest activity read so far (ISO, as stored)
        self._pauses: Pauses | None = None  # from _spans, for the last policy asked

    def present(self, tx: SpineReads, policy: Activation, at: datetime) -> Present:
        key = tx.clock_and_erasures()
        with self._lock:
            if key != self._key:
                # Spans only grow at their end, so only those active since the last read
                # are fetched; an erasure or a reloaded memory (its clock went back)
                # reads them all again.
                fresh = self._key is None or key[0] < self._key[0] or key[1] != self._key[1]
                last = "" if fresh else self._last
                found = tx.work_spans(last)
                kept = [] if fresh else self._spans
                self._spans = merged_spans([*kept, *((_seconds(a), _seconds(b)) for a, b in found)])
                self._last = max([last, *(b for _, b in found)])
                self._key = key
                self._pauses = None
            allowance = policy.pause_ages_days * DAY_S
            if self._pauses is None or self._pauses.pause_ages_s != allowance:
                self._pauses = Pauses.of(self._spans, allowance)
            pauses = self._pauses
        return pauses.present(at)


def _seconds(stamp: str) -> float:
    return _instant(stamp).timestamp()


def tiers_shown(include_cold: bool) -> frozenset[str]:
    return WITH_COLD if include_cold else RECALLED


def utc_now() -> datetime:
    return datetime.now(UTC)


def frozen(store: GraphStore, policy: Activation, now: datetime) -> list[tuple[NodeRecord, float]]:
    """The review queue: live heads in the frozen tier, oldest use first, each with the
    working days since its last use. Reads every node: an operator's command, run now and
    then, not a hot path. Pass the gated store (memory/gates.py): a withheld node is never
    listed."""

    def read(tx: ReadTx) -> tuple[list[NodeRecord], Present]:
        # The outline holds all a standing needs (no words): a million descriptions unread.
        return tx.authored_outline().nodes, WorkTime().present(tx, policy, now)

    nodes, present = store.read(read)
    heads = [n for n in nodes if n.is_head]
    found = [
        n for n, tier in zip(heads, policy.tiers(heads, present), strict=True) if tier == "frozen"
    ]
    found.sort(key=lambda n: (last_use(n), n.tick, n.ord))
    days = policy.half_life_days
    return [(n, round(policy.age_in_half_lives(n, present) * days, 1)) for n in found]


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
        tx.touch_encounter(encounter.name)  # a deliberate read is work: the span reaches it
        tx.consult_nodes(encounter.name, ids)
        return True

    return store.write(work)


class Pinned(LazyModel):
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
    reason = validate.written(why, "why", required=False, limit=2_000)

    def work(tx: WriteTx) -> Pinned:
        encounter = require_open(tx, session)
        nodes = [resolve_shown(store, tx, str(ref), f"refs[{i}]") for i, ref in enumerate(items)]
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
