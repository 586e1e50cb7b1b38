"""The infusion log on the embedded store: one ``InfusionLogEntry`` row per prompt.

Its writes ride the ledger's units (store/embedded/ledger.py): each is its own
transaction on the store's one writer and takes no tick, so the text index, the node
cache and the read_cypher snapshot (whose table list drops this table) never hear of
it. The engine indexes only the primary key, so a session's entries are found by a
scan; the log is bounded by size per session and by age, which keeps that cheap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from kenning_encounter.store.embedded.ledger import LedgerUnits, Rows
from kenning_encounter.store.infusion_log import (
    LogEntry,
    LogSession,
    entry_from_row,
    entry_params,
)

TABLE: Final = "InfusionLogEntry"
CREATE_TABLE: Final = (
    "CREATE NODE TABLE InfusionLogEntry(key STRING, session STRING, tag STRING, at DOUBLE, "
    "turn INT64, channel STRING, degraded BOOLEAN, reason STRING, bodies STRING[], "
    "standing STRING[], cut STRING[], silent BOOLEAN, prompt_sha256 STRING, "
    "prompt_chars INT64, prompt STRING, PRIMARY KEY(key))"
)
LOG_PUT: Final = (
    "CREATE (:InfusionLogEntry {key: $key, session: $session, tag: $tag, at: $at, turn: $turn, "
    "channel: $channel, degraded: $degraded, reason: $reason, bodies: $bodies, "
    "standing: $standing, cut: $cut, silent: $silent, prompt_sha256: $prompt_sha256, "
    "prompt_chars: $prompt_chars, prompt: $prompt})"
)
LOG_TRIM: Final = (
    "MATCH (e:InfusionLogEntry) WHERE e.tag = $tag "
    "WITH e ORDER BY e.at DESC, e.key DESC SKIP $keep DELETE e"
)
LOG_SESSIONS: Final = (
    "MATCH (e:InfusionLogEntry) WITH e.session AS session, count(*) AS n, max(e.at) AS last "
    "RETURN session, n, last ORDER BY last DESC, session SKIP $offset LIMIT $limit"
)
LOG_ENTRIES: Final = (
    "MATCH (e:InfusionLogEntry) WHERE e.tag = $tag "
    "RETURN e.key, e.session, e.at, e.turn, e.channel, e.degraded, e.reason, e.bodies, "
    "e.standing, e.cut, e.silent, e.prompt_sha256, e.prompt_chars, e.prompt "
    "ORDER BY e.at DESC, e.key DESC SKIP $offset LIMIT $limit"
)
LOG_PRUNE: Final = (
    "MATCH (e:InfusionLogEntry) WHERE e.at < $before WITH e LIMIT $limit DELETE e RETURN count(*)"
)

LOG_IDS: Final = "MATCH (e:InfusionLogEntry) RETURN e.key, e.bodies, e.standing, e.cut"
LOG_FORGET: Final = (
    "MATCH (e:InfusionLogEntry {key: $key}) SET e.bodies = CAST($bodies AS STRING[]), "
    "e.standing = CAST($standing AS STRING[]), e.cut = CAST($cut AS STRING[]), e.prompt = NULL"
)


class EmbeddedInfusionLog:
    def __init__(self, units: LedgerUnits) -> None:
        self._units = units

    def append(self, entry: LogEntry, *, keep: int) -> None:
        params = entry_params(entry)

        def work(rows: Rows) -> None:
            rows(LOG_PUT, params)
            rows(LOG_TRIM, {"tag": entry.tag, "keep": max(keep, 0)})

        self._units.ledger_write(work)

    def sessions(self, *, offset: int, limit: int) -> list[LogSession]:
        found = self._units.ledger_read(
            lambda rows: rows(LOG_SESSIONS, {"offset": offset, "limit": limit})
        )
        return [LogSession(str(s), int(n), float(last)) for s, n, last in found]

    def entries(self, tag: str, *, offset: int, limit: int) -> list[LogEntry]:
        found = self._units.ledger_read(
            lambda rows: rows(LOG_ENTRIES, {"tag": tag, "offset": offset, "limit": limit})
        )
        return [entry_from_row(r) for r in found]

    def prune(self, before: float, *, limit: int) -> int:
        found = self._units.ledger_write(
            lambda rows: rows(LOG_PRUNE, {"before": before, "limit": limit})
        )
        return int(found[0][0]) if found else 0

    def forget_nodes(self, node_ids: Sequence[str]) -> int:
        gone = set(node_ids)

        def work(rows: Rows) -> int:
            changed = 0
            for key, *lists in rows(LOG_IDS, {}):
                held = [list(v or []) for v in lists]
                if not any(gone.intersection(ids) for ids in held):
                    continue
                bodies, standing, cut = ([i for i in ids if i not in gone] for ids in held)
                params = {"key": key, "bodies": bodies, "standing": standing, "cut": cut}
                rows(LOG_FORGET, params)
                changed += 1
            return changed

        return self._units.ledger_write(work)
