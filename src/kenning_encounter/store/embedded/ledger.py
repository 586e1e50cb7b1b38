"""The infusion ledger on the embedded store: one ``LedgerSession`` row per session.

The engine has no index but the primary key, so a session's deliveries live in
its own row as parallel lists (node, turn, time, fact-state): a load is one
key lookup, a save one write of that row. Every write here is a transaction on
the store's one writer; none takes a tick, so the text index, the node cache and
the read_cypher snapshot (whose table list drops ``LedgerSession``) never hear of
it.

One process owns an embedded store, so the ledgers it has read or saved are held
here as they stand, and a save is written behind the answer: the prompt that made
it does not wait for a commit. A thread of its own writes what is due (several
sessions' saves in one transaction), and ``flush`` (which ``prune`` and the store's
close call) writes it at once. What a SIGKILL takes is at most the last few saves:
a body shown again, never a memory changed.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

from kenning_encounter.store.ledger import Stamp, StoredLedger, newest

T = TypeVar("T")
log = logging.getLogger(__name__)

TABLE: Final = "LedgerSession"
CREATE_TABLE: Final = (
    "CREATE NODE TABLE LedgerSession(session STRING, turn INT64, at DOUBLE, "
    "nodes STRING[], turns INT64[], ats DOUBLE[], states STRING[], PRIMARY KEY(session))"
)
LEDGER_GET: Final = (
    "MATCH (s:LedgerSession {session: $session}) "
    "RETURN s.turn, s.at, s.nodes, s.turns, s.ats, s.states"
)
LEDGER_PUT: Final = (
    "MERGE (s:LedgerSession {session: $session}) SET s.turn = $turn, s.at = $at, "
    "s.nodes = $nodes, s.turns = $turns, s.ats = $ats, s.states = $states"
)
LEDGER_PRUNE: Final = (
    "MATCH (s:LedgerSession) WHERE s.at < $before WITH s LIMIT $limit DELETE s RETURN count(*)"
)

Rows = Callable[[str, dict[str, Any]], list[list[Any]]]


class LedgerUnits(Protocol):
    """What the backend lends: a statement runner inside one transaction."""

    def ledger_read(self, work: Callable[[Rows], T]) -> T: ...

    def ledger_write(self, work: Callable[[Rows], T]) -> T:
        """On the store's writer, serialized with every other write, committed at the end."""
        ...


def _decode(row: list[Any]) -> StoredLedger:
    turn, at, nodes, turns, ats, states = row
    stamps = {
        str(n): Stamp(str(n), int(t), float(a), str(s))
        for n, t, a, s in zip(nodes or [], turns or [], ats or [], states or [], strict=True)
    }
    return StoredLedger(int(turn or 0), float(at or 0.0), stamps)


def _get(rows: Rows, session: str) -> StoredLedger | None:
    found = rows(LEDGER_GET, {"session": session})
    return _decode(found[0]) if found else None


def _put(rows: Rows, session: str, turn: int, at: float, stamps: Sequence[Stamp]) -> None:
    rows(
        LEDGER_PUT,
        {
            "session": session,
            "turn": turn,
            "at": at,
            "nodes": [s.node for s in stamps],
            "turns": [s.turn for s in stamps],
            "ats": [s.at for s in stamps],
            "states": [s.state for s in stamps],
        },
    )


class EmbeddedLedgers:
    def __init__(self, units: LedgerUnits) -> None:
        self._units = units
        self._lock = threading.Condition()
        # Each session's ledger as it stands here (None: it has none), and the ones
        # saved here and not yet written.
        self._held: dict[str, StoredLedger | None] = {}
        self._due: dict[str, StoredLedger] = {}
        self._writing = 0  # batches taken from _due and not yet committed
        self._writer: threading.Thread | None = None
        self._closed = False

    def load(self, session: str) -> StoredLedger | None:
        with self._lock:
            if session in self._held:
                return self._held[session]
        found = self._units.ledger_read(lambda rows: _get(rows, session))
        with self._lock:
            return self._held.setdefault(session, found)

    def save(
        self, session: str, turn: int, stamps: Sequence[Stamp], *, at: float, keep: int
    ) -> None:
        before = self.load(session)  # a save made since this session's load is kept
        with self._lock:
            before = self._held.get(session, before)
            merged = dict(before.stamps) if before is not None else {}
            merged.update({s.node: s for s in stamps})
            latest = max(turn, before.turn) if before is not None else turn
            kept = newest(list(merged.values()), keep)
            now = self._put_due(session, StoredLedger(latest, at, {s.node: s for s in kept}))
        self._write(now)

    def forget(self, session: str, *, at: float) -> None:
        before = self.load(session)
        with self._lock:
            before = self._held.get(session, before)
            if before is None:
                return
            now = self._put_due(session, StoredLedger(before.turn, at))
        self._write(now)

    def prune(self, before: float, *, limit: int) -> int:
        self.flush()
        found = self._units.ledger_write(
            lambda rows: rows(LEDGER_PRUNE, {"before": before, "limit": limit})
        )
        with self._lock:
            # Forget what is held of any session so old: the store has the truth again.
            for session, held in list(self._held.items()):
                if held is None or held.at < before:
                    del self._held[session]
        return int(found[0][0]) if found else 0

    def flush(self) -> None:
        """Write every save made here that the store does not hold yet, and return
        when it is written (a batch the writer thread has taken included)."""
        with self._lock:
            taken = self._take()
        self._write(taken)
        with self._lock:
            while self._writing:
                self._lock.wait()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            writer = self._writer
        if writer is not None:
            writer.join()
        self.flush()

    # --- behind the answer -----------------------------------------------------------
    def _put_due(self, session: str, ledger: StoredLedger) -> dict[str, StoredLedger]:
        """Hold it and mark it due (the lock held); what the caller must write itself
        (once closed), else nothing."""
        self._held[session] = ledger
        self._due[session] = ledger
        if self._closed:
            return self._take()
        if self._writer is None:
            self._writer = threading.Thread(target=self._run, name="ledger-writer", daemon=True)
            self._writer.start()
        self._lock.notify_all()
        return {}

    def _take(self) -> dict[str, StoredLedger]:
        taken, self._due = self._due, {}
        if taken:
            self._writing += 1
        return taken

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._due and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                taken = self._take()
            self._write(taken)

    def _write(self, taken: dict[str, StoredLedger]) -> None:
        if not taken:
            return

        def work(rows: Rows) -> None:
            for session, ledger in taken.items():
                _put(rows, session, ledger.turn, ledger.at, list(ledger.stamps.values()))

        try:
            self._units.ledger_write(work)
        except Exception as exc:  # a ledger not written costs a renewal, never an answer
            log.warning("could not write the infusion ledger (%s)", type(exc).__name__)
            with self._lock:
                for session, ledger in taken.items():
                    if self._held.get(session) is ledger:
                        del self._held[session]  # read it again from the store
        finally:
            with self._lock:
                self._writing -= 1
                self._lock.notify_all()
