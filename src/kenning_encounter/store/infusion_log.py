"""The infusion log as a store keeps it: what each prompt's infusion actually delivered.

Like the ledger (store/ledger.py) it is bookkeeping beside the memory, never part of
it: no tick, no tool reads it, read_cypher cannot see it. The ledger keeps only the
newest state per node, for renewal; the log keeps one entry per prompt, for a person
to read in the inspector: when, which channel and why, what went out as bodies and
as STANDING handles, what the budget cut, and whether the answer was silence.

The prompt itself is not kept: its SHA-256 and length are, unless the operator
turns ``infusion_log_prompts`` on. A session is named in the log by ``tag``, a short
hash of its id, so a page can link to a session without showing its id (DESIGN §3,
invariant 9: other sessions' ids are never shown whole).

Bounded twice: a session keeps its newest ``keep`` entries (in the same write), and
``prune`` drops entries older than the retention.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable


def session_tag(session: str) -> str:
    """The name a session goes by in the log's pages: stable, short, not the id."""
    return hashlib.sha256(session.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class LogEntry:
    """One prompt's infusion, as it went out."""

    key: str  # unique: the entry's identity in the store
    session: str
    at: float  # wall-clock UTC seconds
    turn: int
    channel: str  # meaning | lexical | none
    degraded: bool
    reason: str | None  # why the channel was what it was (a fallback's reason)
    bodies: tuple[str, ...]  # node ids delivered whole
    standing: tuple[str, ...]  # node ids re-pinned as STANDING handles
    cut: tuple[str, ...]  # node ids the budget dropped
    silent: bool
    prompt_sha256: str
    prompt_chars: int
    prompt: str | None = None  # only with infusion_log_prompts on

    @property
    def tag(self) -> str:
        return session_tag(self.session)


@dataclass(frozen=True, slots=True)
class LogSession:
    """A session as the log lists it: newest entry first."""

    session: str
    entries: int
    last_at: float

    @property
    def tag(self) -> str:
        return session_tag(self.session)


class InfusionLogs(Protocol):
    """A backend's infusion log. Each call is one short transaction of its own."""

    def append(self, entry: LogEntry, *, keep: int) -> None:
        """Add the entry, then keep only the session's newest ``keep``."""
        ...

    def sessions(self, *, offset: int, limit: int) -> list[LogSession]:
        """Sessions with entries, the most recently infused first."""
        ...

    def entries(self, tag: str, *, offset: int, limit: int) -> list[LogEntry]:
        """The entries of the session with this tag, newest first."""
        ...

    def prune(self, before: float, *, limit: int) -> int:
        """Drop up to ``limit`` entries made before ``before``; how many went."""
        ...

    def forget_nodes(self, node_ids: Sequence[str]) -> int:
        """After an operator's erasure: take the ids out of every entry that delivered,
        pinned or cut one, and drop such an entry's kept prompt (it drew the erased node,
        so it may speak of the same subject). How many entries changed."""
        ...


@runtime_checkable
class KeepsInfusionLog(Protocol):
    """A store that keeps an infusion log (both backends do)."""

    @property
    def infusion_log(self) -> InfusionLogs: ...


def ids(values: Sequence[object] | None) -> tuple[str, ...]:
    return tuple(str(v) for v in values or ())


def entry_params(entry: LogEntry) -> dict[str, Any]:
    """An entry as statement parameters (lists for the id tuples, and its session's tag)."""
    return {
        "key": entry.key,
        "session": entry.session,
        "tag": entry.tag,
        "at": entry.at,
        "turn": entry.turn,
        "channel": entry.channel,
        "degraded": entry.degraded,
        "reason": entry.reason,
        "bodies": list(entry.bodies),
        "standing": list(entry.standing),
        "cut": list(entry.cut),
        "silent": entry.silent,
        "prompt_sha256": entry.prompt_sha256,
        "prompt_chars": entry.prompt_chars,
        "prompt": entry.prompt,
    }


def entry_from_row(row: Sequence[Any]) -> LogEntry:
    """An entry read back: its values in the order entry_params names them."""
    key, session, at, turn, channel, degraded, reason, bodies, standing, cut, silent = row[:11]
    sha, chars, prompt = row[11:]
    return LogEntry(
        key=str(key),
        session=str(session),
        at=float(at),
        turn=int(turn),
        channel=str(channel),
        degraded=bool(degraded),
        reason=None if reason is None else str(reason),
        bodies=ids(bodies),
        standing=ids(standing),
        cut=ids(cut),
        silent=bool(silent),
        prompt_sha256=str(sha),
        prompt_chars=int(chars),
        prompt=None if prompt is None else str(prompt),
    )
