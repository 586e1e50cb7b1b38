"""The infusion log on Neo4j (store/infusion_log.py): a ``:KenningInfusion`` node per prompt.

The label is not the memory's, so read_cypher's scope never reads it and no memory
statement matches it; like every node of ours it carries ``_memory``, and its key is
unique per memory. Writes ride the ledger's units: a managed transaction of their
own that never touches the clock node, so an entry takes no tick.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final, LiteralString, cast

from kenning_encounter.store.infusion_log import (
    LogEntry,
    LogSession,
    entry_from_row,
    entry_params,
)
from kenning_encounter.store.neo4j.beside import Beside
from kenning_encounter.store.neo4j.held import still_held

if TYPE_CHECKING:
    pass

SCHEMA: Final[list[tuple[str, LiteralString]]] = [
    (
        "kenning_infusion_memory_key",
        "CREATE CONSTRAINT kenning_infusion_memory_key IF NOT EXISTS "
        "FOR (i:KenningInfusion) REQUIRE (i._memory, i.key) IS UNIQUE",
    ),
    (
        "kenning_infusion_memory_tag",
        "CREATE INDEX kenning_infusion_memory_tag IF NOT EXISTS "
        "FOR (i:KenningInfusion) ON (i._memory, i.tag)",
    ),
    (
        "kenning_infusion_memory_at",
        "CREATE INDEX kenning_infusion_memory_at IF NOT EXISTS "
        "FOR (i:KenningInfusion) ON (i._memory, i.at)",
    ),
    (
        "kenning_infusionlog_memory",
        "CREATE CONSTRAINT kenning_infusionlog_memory IF NOT EXISTS "
        "FOR (l:KenningInfusionLog) REQUIRE l._memory IS UNIQUE",
    ),
]
LABELS: Final = ("KenningInfusion", "KenningInfusionLog")

# An entry and the scrub of erased ids (LOG_FORGET) take turns on the memory's one
# ``:KenningInfusionLog`` node, each statement's first write. An entry is appended after
# its prompt's read, so an erasure may have come between: the ids of nodes gone by the
# time the entry holds the turn are left out, and then the prompt that drew them, as
# LOG_FORGET leaves them out. Without the turn, an entry that looked before the erasure
# committed and committed after the scrub had looked would keep the erased ids.
_TURN: Final = (
    "MERGE (turn:KenningInfusionLog {_memory: $memory}) "
    "SET turn.writes = coalesce(turn.writes, 0) + 1 "
)

# The entry and the session's trim in one statement: the newest ``keep`` stay.
LOG_PUT: Final = cast(
    LiteralString,
    _TURN + f"WITH [x IN $bodies + $standing + $cut WHERE NOT ({still_held('x')})] AS gone "
    "CREATE (i:KenningInfusion {_memory: $memory, key: $key}) "
    "SET i.session = $session, i.tag = $tag, i.at = $at, i.turn = $turn, "
    "i.channel = $channel, i.degraded = $degraded, i.reason = $reason, "
    "i.bodies = [x IN $bodies WHERE NOT x IN gone], "
    "i.standing = [x IN $standing WHERE NOT x IN gone], "
    "i.cut = [x IN $cut WHERE NOT x IN gone], i.silent = $silent, "
    "i.prompt_sha256 = $prompt_sha256, i.prompt_chars = $prompt_chars, "
    "i.prompt = CASE WHEN size(gone) = 0 THEN $prompt END "
    "WITH i "
    "CALL (i) { MATCH (o:KenningInfusion {_memory: $memory, tag: i.tag}) "
    "  WITH o ORDER BY o.at DESC, o.key DESC SKIP $keep DELETE o }",
)
LOG_SESSIONS: Final = (
    "MATCH (i:KenningInfusion {_memory: $memory}) "
    "WITH i.session AS session, count(*) AS n, max(i.at) AS last "
    "RETURN session, n, last ORDER BY last DESC, session SKIP $offset LIMIT $limit"
)
LOG_ENTRIES: Final = (
    "MATCH (i:KenningInfusion {_memory: $memory, tag: $tag}) "
    "RETURN i.key, i.session, i.at, i.turn, i.channel, i.degraded, i.reason, i.bodies, "
    "i.standing, i.cut, i.silent, i.prompt_sha256, i.prompt_chars, i.prompt "
    "ORDER BY i.at DESC, i.key DESC SKIP $offset LIMIT $limit"
)
LOG_PRUNE: Final = (
    "MATCH (i:KenningInfusion {_memory: $memory}) WHERE i.at < $before "
    "WITH i LIMIT $limit DELETE i RETURN count(*)"
)

LOG_FORGET: Final = (
    _TURN + "WITH turn MATCH (i:KenningInfusion {_memory: $memory}) "
    "WHERE any(x IN i.bodies + i.standing + i.cut WHERE x IN $ids) "
    "SET i.bodies = [x IN i.bodies WHERE NOT x IN $ids], "
    "i.standing = [x IN i.standing WHERE NOT x IN $ids], "
    "i.cut = [x IN i.cut WHERE NOT x IN $ids], i.prompt = null "
    "RETURN count(i)"
)


class Neo4jInfusionLog(Beside):
    def append(self, entry: LogEntry, *, keep: int) -> None:
        params: dict[str, Any] = {**entry_params(entry), "keep": max(keep, 0)}
        self._rows(LOG_PUT, params, write=True, doing="writing the infusion log")

    def sessions(self, *, offset: int, limit: int) -> list[LogSession]:
        rows = self._rows(
            LOG_SESSIONS,
            {"offset": offset, "limit": limit},
            write=False,
            doing="reading the infusion log",
        )
        return [LogSession(str(s), int(n), float(last)) for s, n, last in rows]

    def entries(self, tag: str, *, offset: int, limit: int) -> list[LogEntry]:
        rows = self._rows(
            LOG_ENTRIES,
            {"tag": tag, "offset": offset, "limit": limit},
            write=False,
            doing="reading the infusion log",
        )
        return [entry_from_row(r) for r in rows]

    def prune(self, before: float, *, limit: int) -> int:
        rows = self._rows(
            LOG_PRUNE,
            {"before": before, "limit": limit},
            write=True,
            doing="pruning the infusion log",
        )
        return int(rows[0][0]) if rows else 0

    def forget_nodes(self, node_ids: Sequence[str]) -> int:
        rows = self._rows(
            LOG_FORGET, {"ids": list(node_ids)}, write=True, doing="scrubbing the infusion log"
        )
        return int(rows[0][0]) if rows else 0
