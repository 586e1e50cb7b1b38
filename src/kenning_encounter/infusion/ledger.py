"""The renewal economy: what each session was already told, and when.

A node's full body goes out at first sight, when its fact-state changed since
it was delivered (superseded, challenged, resolved...), or once a staleness
horizon passed (prompts or time); otherwise it re-pins as a one-line handle.
The ledger is stamped only from what a payload actually carried.

An infusion reads its session's ledger once (``load``), decides every verdict
in process (``Renewal``), and writes once at the end (``save``: the new turn
and the stamps). Where the ledger lives is a ``LedgerStore``: ``ProcessLedger``
keeps it in this process (the reader face, which never writes the store, and
tests that need no store); ``infusion.ledger_store.StoreLedger`` keeps it in
the memory's store, shared by every server on it and kept across restarts.
Times are wall-clock seconds: a delivery stamped by one process is aged by another.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Protocol

MAX_SESSIONS: Final = 1_000
# A session's newest deliveries kept. Bodies older than the horizon are due again
# anyway, so dropping the oldest only renames "past the horizon" to "first sight".
MAX_DELIVERIES: Final = 512


@dataclass(frozen=True, slots=True)
class Delivery:
    turn: int
    at: float
    state: str  # the fact-state fingerprint delivered


@dataclass
class SessionLedger:
    turn: int = 0
    delivered: dict[str, Delivery] = field(default_factory=dict[str, Delivery])


class Verdict:
    BODY_FIRST = "first sight"
    BODY_CHANGED = "fact-state changed"
    BODY_STALE = "past the horizon"
    HANDLE = "delivered earlier"


class LedgerStore(Protocol):
    """Where sessions' ledgers live. ``load`` hands back a copy the caller may change."""

    def load(self, session: str) -> SessionLedger: ...

    def save(self, session: str, turn: int, stamps: Mapping[str, Delivery], *, at: float) -> None:
        """Record that prompt ``turn`` happened and which bodies it carried."""
        ...

    def forget(self, session: str, *, at: float) -> None:
        """Nothing delivered to the session is in its context any more (compaction, clear)."""
        ...


@dataclass(frozen=True, slots=True)
class Renewal:
    """The verdict on one node for one prompt, from the ledger as loaded at its start."""

    horizon_turns: int
    horizon_seconds: float

    def verdict(
        self, ledger: SessionLedger, turn: int, node_id: str, state: str, now: float
    ) -> str:
        past = ledger.delivered.get(node_id)
        if past is None:
            return Verdict.BODY_FIRST
        if past.state != state:
            return Verdict.BODY_CHANGED
        if turn - past.turn >= self.horizon_turns or now - past.at >= self.horizon_seconds:
            return Verdict.BODY_STALE
        return Verdict.HANDLE


def newest(delivered: Mapping[str, Delivery], keep: int) -> dict[str, Delivery]:
    """The ``keep`` most recent deliveries."""
    if len(delivered) <= keep:
        return dict(delivered)
    ranked = sorted(delivered.items(), key=lambda kv: (kv[1].turn, kv[1].at), reverse=True)
    return dict(ranked[:keep])


class ProcessLedger:
    """Ledgers in this process: least recently used sessions dropped past ``max_sessions``."""

    def __init__(
        self, *, max_sessions: int = MAX_SESSIONS, max_deliveries: int = MAX_DELIVERIES
    ) -> None:
        self._sessions: OrderedDict[str, SessionLedger] = OrderedDict()
        self._lock = threading.Lock()
        self._max_sessions = max_sessions
        self._max_deliveries = max_deliveries

    def load(self, session: str) -> SessionLedger:
        with self._lock:
            ledger = self._sessions.get(session)
            if ledger is None:
                return SessionLedger()
            self._sessions.move_to_end(session)
            return SessionLedger(ledger.turn, dict(ledger.delivered))

    def save(self, session: str, turn: int, stamps: Mapping[str, Delivery], *, at: float) -> None:
        with self._lock:
            ledger = self._sessions.pop(session, None) or SessionLedger()
            self._sessions[session] = ledger
            while len(self._sessions) > self._max_sessions:
                self._sessions.popitem(last=False)
            ledger.turn = max(ledger.turn, turn)
            ledger.delivered.update(stamps)
            ledger.delivered = newest(ledger.delivered, self._max_deliveries)

    def forget(self, session: str, *, at: float) -> None:
        with self._lock:
            ledger = self._sessions.get(session)
            if ledger is not None:
                ledger.delivered.clear()
