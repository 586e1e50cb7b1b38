"""Meanings on Neo4j (store/meanings.py): a ``:KenningMeaning`` node per node meant,
one ``:KenningMeanings`` node per memory holding the version, the next seq and the
highest order, and a ``:KenningMeaningClaim`` node per meaning being made.

None of these labels is the memory's, so read_cypher never reads them and no memory
statement matches them; each carries ``_memory`` and is unique within its memory
(namespace.py). No statement here touches the clock node: meanings take no tick.

A meaning is made from a node's text, so it is kept only while the memory holds the
node: a put records nothing for a node gone by the time it holds the lock (an operator's
erasure may take the node while its meaning is being made), and a drop looks for the
meaning only once it holds the lock, so a put that came first is there to drop.

Writers serialize on the memory's ``:KenningMeanings`` node (the first write of a put
or drop raises its version, which holds the node's lock to commit), so versions are
handed out in commit order. Neo4j applies a committed transaction record by record
and its index entries last, and a reader takes no lock: it can see version V while
V's meanings are not yet in the index it reads them through (a whole batch went
missing that way, for good). So a reader asks for the version without a lock, and
when it has moved, reads the changes holding the node's lock (STATE_LOCKED), which
a writer gives up only once its transaction is applied whole: every change up to
the version read is then there to read. Readers bound what they read by that version.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, LiteralString, cast

from kenning_encounter.store.meanings import (
    Claim,
    MeaningChanges,
    MeaningEntry,
    MeaningItem,
    checked_items,
)
from kenning_encounter.store.neo4j.beside import Beside, Unit
from kenning_encounter.store.neo4j.held import still_held
from kenning_encounter.store.neo4j.namespace import Namespace
from kenning_encounter.store.tracing import Tracer

if TYPE_CHECKING:
    from neo4j import ManagedTransaction

# A reader more than this many versions behind reloads every meaning: tombstones of
# drops older than that are purged (a few at each drop).
TOMBSTONE_VERSIONS: Final = 1024
PURGE_BATCH: Final = 1000
# A claim nobody released (its holder died) is swept this long after it expired.
CLAIM_SWEEP_MS: Final = 3_600_000

SCHEMA: Final[list[tuple[str, LiteralString]]] = [
    (
        "kenning_meaning_memory_id",
        "CREATE CONSTRAINT kenning_meaning_memory_id IF NOT EXISTS "
        "FOR (m:KenningMeaning) REQUIRE (m._memory, m.id) IS UNIQUE",
    ),
    (
        "kenning_meaning_memory_v",
        "CREATE INDEX kenning_meaning_memory_v IF NOT EXISTS "
        "FOR (m:KenningMeaning) ON (m._memory, m.v)",
    ),
    (
        "kenning_meanings_memory",
        "CREATE CONSTRAINT kenning_meanings_memory IF NOT EXISTS "
        "FOR (s:KenningMeanings) REQUIRE s._memory IS UNIQUE",
    ),
    (
        "kenning_meaning_claim_memory_id",
        "CREATE CONSTRAINT kenning_meaning_claim_memory_id IF NOT EXISTS "
        "FOR (c:KenningMeaningClaim) REQUIRE (c._memory, c.id) IS UNIQUE",
    ),
]
LABELS: Final = ("KenningMeaning", "KenningMeanings", "KenningMeaningClaim")

STATE: Final = (
    "OPTIONAL MATCH (s:KenningMeanings {_memory: $memory}) "
    "RETURN coalesce(s.version, 0), coalesce(s.floor, 0)"
)
# The same, holding the node's write lock (a write that changes nothing): the writers
# before this one have finished applying their changes. No node: nothing was written.
STATE_LOCKED: Final = (
    "OPTIONAL MATCH (s:KenningMeanings {_memory: $memory}) SET s.version = s.version "
    "RETURN coalesce(s.version, 0), coalesce(s.floor, 0)"
)
CHANGED: Final = (
    "MATCH (m:KenningMeaning {_memory: $memory}) WHERE m.v > $since AND m.v <= $upto "
    "RETURN m.id, m.meaning, m.source_hash, m.order, m.seq"
)
LIVE: Final = (
    "MATCH (m:KenningMeaning {_memory: $memory}) WHERE m.v <= $upto AND m.meaning IS NOT NULL "
    "RETURN m.id, m.meaning, m.source_hash, m.order, m.seq"
)
HELD: Final = (
    "UNWIND $ids AS id MATCH (m:KenningMeaning {_memory: $memory, id: id}) "
    "WHERE m.meaning IS NOT NULL "
    "RETURN m.id, m.meaning, m.source_hash, m.order, m.seq"
)
# Which of the ids the memory still holds as nodes, each with its meaning if one is held
# (null columns when none). Asked holding the lock: see ``put_many``.
HELD_LIVE: Final = cast(
    LiteralString,
    f"UNWIND $ids AS id WITH id WHERE {still_held('id')} "
    "OPTIONAL MATCH (m:KenningMeaning {_memory: $memory, id: id}) WHERE m.meaning IS NOT NULL "
    "RETURN id, m.meaning, m.source_hash, m.order, m.seq",
)
# Raising the version takes the node's write lock until commit: writers queue here.
LOCK: Final = (
    "MERGE (s:KenningMeanings {_memory: $memory}) "
    "ON CREATE SET s.version = 0, s.floor = 0, s.next_seq = 1, s.max_order = 0 "
    "SET s.version = s.version + 1 "
    "RETURN s.version, s.next_seq, s.max_order, s.floor"
)
PUT: Final = (
    "UNWIND $rows AS r "
    "MERGE (m:KenningMeaning {_memory: $memory, id: r.id}) "
    "SET m.meaning = r.meaning, m.source_hash = r.hash, m.order = r.order, m.seq = r.seq, "
    "    m.v = $version "
    "WITH count(*) AS written "
    "MATCH (s:KenningMeanings {_memory: $memory}) "
    "SET s.next_seq = $next_seq, s.max_order = $max_order"
)
# A dropped meaning becomes a tombstone at this version, so readers hear of the drop.
DROP: Final = (
    "MATCH (m:KenningMeaning {_memory: $memory, id: $id}) WHERE m.meaning IS NOT NULL "
    "REMOVE m.meaning, m.source_hash SET m.v = $version RETURN count(m)"
)
PURGE: Final = (
    "MATCH (s:KenningMeanings {_memory: $memory}) SET s.floor = $floor "
    "WITH s "
    "CALL (s) { MATCH (m:KenningMeaning {_memory: $memory}) "
    "  WHERE m.v <= $floor AND m.meaning IS NULL "
    "  WITH m LIMIT $batch DELETE m } "
    "CALL (s) { MATCH (c:KenningMeaningClaim {_memory: $memory}) "
    "  WHERE c.until < timestamp() - $sweep_ms "
    "  WITH c LIMIT $batch DELETE c }"
)
# The claim node's lock (the SET) makes claims on one node take turns.
CLAIM_OPEN: Final = (
    "MERGE (c:KenningMeaningClaim {_memory: $memory, id: $id}) ON CREATE SET c.until = 0 "
    "SET c.asked = timestamp() "
    "WITH c OPTIONAL MATCH (m:KenningMeaning {_memory: $memory, id: $id}) "
    "RETURN c.holder, c.until, timestamp(), m.source_hash"
)
CLAIM_TAKE: Final = (
    "MATCH (c:KenningMeaningClaim {_memory: $memory, id: $id}) "
    "SET c.holder = $holder, c.until = timestamp() + $ttl_ms"
)
CLAIM_FORGET: Final = (
    "MATCH (c:KenningMeaningClaim {_memory: $memory, id: $id}) "
    "WHERE c.holder IS NULL OR c.until <= timestamp() DELETE c"
)
RELEASE: Final = (
    "MATCH (c:KenningMeaningClaim {_memory: $memory, id: $id, holder: $holder}) DELETE c"
)


def _entry(row: list[Any]) -> MeaningEntry:
    node_id, meaning, digest, order, seq = row
    return MeaningEntry(str(node_id), str(meaning), str(digest), int(order), int(seq))


class Neo4jMeanings(Beside):
    """The meanings of one memory on Neo4j. Thread-safe: every call is its own transaction."""

    def __init__(
        self,
        unit: Unit,
        tracer: Tracer,
        ns: Namespace,
        *,
        keep_tombstones: int = TOMBSTONE_VERSIONS,
    ) -> None:
        super().__init__(unit, tracer, ns)
        self._keep_tombstones = keep_tombstones

    # -- reading -----------------------------------------------------------------

    def changes(self, since: int) -> MeaningChanges:
        def unchanged(tx: ManagedTransaction) -> bool:
            return int(self._run(tx, STATE, {})[0][0]) == since

        if self._unit(unchanged, False, "reading the meanings"):
            return MeaningChanges(since, False, (), ())

        def work(tx: ManagedTransaction) -> MeaningChanges:
            version, floor = (int(v) for v in self._run(tx, STATE_LOCKED, {})[0])
            if version == since:
                return MeaningChanges(version, False, (), ())
            # A reader ahead of the store holds another database's meanings: start over.
            full = since == 0 or since < floor or since > version
            if full:
                rows = self._run(tx, LIVE, {"upto": version})
                return MeaningChanges(version, True, tuple(_entry(r) for r in rows), ())
            rows = self._run(tx, CHANGED, {"since": since, "upto": version})
            put = tuple(_entry(r) for r in rows if r[1] is not None)
            dropped = tuple(str(r[0]) for r in rows if r[1] is None)
            return MeaningChanges(version, False, put, dropped)

        found: MeaningChanges = self._unit(work, True, "reading the meanings")
        return found

    # -- writing -----------------------------------------------------------------

    def _held(self, tx: ManagedTransaction, ids: list[str]) -> dict[str, MeaningEntry]:
        return {str(r[0]): _entry(r) for r in self._run(tx, HELD, {"ids": ids})}

    def put_many(self, items: Sequence[MeaningItem]) -> list[MeaningEntry]:
        listed = list(items)
        checked_items(listed)
        ids = list(dict.fromkeys(item[0] for item in listed))

        def work(tx: ManagedTransaction) -> list[MeaningEntry]:
            before = self._held(tx, ids)
            if all(_unchanged(before.get(i), m, h, o) for i, m, h, o in listed):
                return [before[i] for i, *_ in listed]
            version, next_seq, max_order, _floor = (int(v) for v in self._run(tx, LOCK, {})[0])
            # Again, now that no other writer can change them, and only of nodes still held:
            # the meaning was made from a node's text, and an erasure may have taken the node
            # since. Its scrub drops meanings holding this lock (``drop``), so a put after the
            # scrub finds the node gone here, and a put before it is there to be dropped.
            live = self._run(tx, HELD_LIVE, {"ids": ids})
            alive = {str(r[0]) for r in live}
            held = {str(r[0]): _entry(r) for r in live if r[1] is not None}
            out: list[MeaningEntry] = []
            staged: dict[str, MeaningEntry] = {}
            for node_id, meaning, digest, order in listed:
                if node_id not in alive:
                    continue
                old = staged.get(node_id) or held.get(node_id)
                if old is None:
                    seq, next_seq = next_seq, next_seq + 1
                    chosen = order if order is not None else max_order + 1
                else:
                    seq = old.seq
                    chosen = order if order is not None else old.order
                entry = MeaningEntry(node_id, meaning, digest, chosen, seq)
                max_order = max(max_order, chosen)
                out.append(entry)
                if entry != old:
                    staged[node_id] = entry
            rows = [
                {"id": e.id, "meaning": e.meaning, "hash": e.source_hash}
                | {"order": e.order, "seq": e.seq}
                for e in staged.values()
            ]
            params = {"rows": rows, "version": version}
            self._run(tx, PUT, params | {"next_seq": next_seq, "max_order": max_order})
            return out

        made: list[MeaningEntry] = self._unit(work, True, "writing meanings")
        return made

    def drop(self, node_id: str) -> bool:
        def work(tx: ManagedTransaction) -> bool:
            # The lock first: a put holding it may be writing this meaning (it found the
            # node before an erasure took it), and is read here once it is applied whole.
            self._run(tx, STATE_LOCKED, {})
            if not self._held(tx, [node_id]):
                return False
            version, _seq, _order, floor = (int(v) for v in self._run(tx, LOCK, {})[0])
            dropped = int(self._run(tx, DROP, {"id": node_id, "version": version})[0][0])
            floor = max(floor, version - self._keep_tombstones)
            purge = {"floor": floor, "batch": PURGE_BATCH, "sweep_ms": CLAIM_SWEEP_MS}
            self._run(tx, PURGE, purge)
            return dropped > 0

        done: bool = self._unit(work, True, "dropping a meaning")
        return done

    # -- claims ------------------------------------------------------------------

    def claim(self, node_id: str, source_hash: str, holder: str, ttl_s: float) -> Claim:
        def work(tx: ManagedTransaction) -> Claim:
            owner, until, now, made = self._run(tx, CLAIM_OPEN, {"id": node_id})[0]
            if made == source_hash:
                self._run(tx, CLAIM_FORGET, {"id": node_id})
                return Claim("done")
            if owner is not None and owner != holder and int(until) > int(now):
                return Claim("held", (int(until) - int(now)) / 1000)
            ttl_ms = max(int(ttl_s * 1000), 1)
            self._run(tx, CLAIM_TAKE, {"id": node_id, "holder": holder, "ttl_ms": ttl_ms})
            return Claim("granted")

        answer: Claim = self._unit(work, True, "claiming a meaning")
        return answer

    def release(self, node_id: str, holder: str) -> None:
        def work(tx: ManagedTransaction) -> None:
            self._run(tx, RELEASE, {"id": node_id, "holder": holder})

        self._unit(work, True, "releasing a meaning claim")


def _unchanged(old: MeaningEntry | None, meaning: str, digest: str, order: int | None) -> bool:
    return (
        old is not None
        and old.meaning == meaning
        and old.source_hash == digest
        and (order is None or order == old.order)
    )
