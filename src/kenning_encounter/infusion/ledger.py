"""The renewal economy: what each session was already told, and when.

A node's full body goes out at first sight, when its fact-state changed since
it was delivered (superseded, challenged, resolved...), or once a staleness
horizon passed (prompts or time); otherwise it re-pins as a one-line handle.
The ledger is stamped only from what a payload actually carried.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Final

MAX_SESSIONS: Final = 1_000


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


class Ledger:
    """Per-session ledgers, least recently used dropped past ``MAX_SESSIONS``."""

    def __init__(self, *, horizon_turns: int, horizon_seconds: float) -> None:
        self._sessions: OrderedDict[str, SessionLedger] = OrderedDict()
        self._lock = threading.Lock()
        self._horizon_turns = horizon_turns
        self._horizon_seconds = horizon_seconds

    def next_turn(self, session: str) -> int:
        with self._lock:
            ledger = self._sessions.pop(session, None) or SessionLedger()
            self._sessions[session] = ledger
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)
            ledger.turn += 1
            return ledger.turn

    def verdict(self, session: str, node_id: str, state: str, *, now: float | None = None) -> str:
        with self._lock:
            ledger = self._sessions.get(session)
            past = ledger.delivered.get(node_id) if ledger else None
            if ledger is None or past is None:
                return Verdict.BODY_FIRST
            if past.state != state:
                return Verdict.BODY_CHANGED
            clock = time.monotonic() if now is None else now
            if (
                ledger.turn - past.turn >= self._horizon_turns
                or clock - past.at >= self._horizon_seconds
            ):
                return Verdict.BODY_STALE
            return Verdict.HANDLE

    def forget_deliveries(self, session: str) -> None:
        """Nothing delivered to the session is in its context any more (compaction, clear)."""
        with self._lock:
            ledger = self._sessions.get(session)
            if ledger is not None:
                ledger.delivered.clear()

    def last_turn(self, session: str, node_id: str) -> int | None:
        with self._lock:
            ledger = self._sessions.get(session)
            past = ledger.delivered.get(node_id) if ledger else None
            return past.turn if past else None

    def stamp(self, session: str, bodies: dict[str, str], *, now: float | None = None) -> None:
        """Record the bodies a payload carried (node id -> fact-state)."""
        clock = time.monotonic() if now is None else now
        with self._lock:
            ledger = self._sessions.setdefault(session, SessionLedger())
            for node_id, state in bodies.items():
                ledger.delivered[node_id] = Delivery(ledger.turn, clock, state)
