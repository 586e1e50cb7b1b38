"""Schema < 5 -> 5 on Neo4j: each node's ``used_at`` (memory/activation.py) for a memory
made before relevance over time, as the embedded schema 11 gives it: the latest
``created_at`` of the node's dated edges (authored relations, confirmations, claims),
none when it has none, so creation alone counts.

A memory may be large: the nodes are taken one type and one page of ids at a time, each
page its own write transaction. A node that has ``used_at`` already is skipped, so an
interrupted pass (or two servers opening at once) simply does again what is left.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, LiteralString

from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

PAGE: Final = 5_000
# {label}; $after $limit -> nodes in the page, nodes given a used_at, the page's last id.
BACKFILL_USED_AT: Final = (
    "MATCH (n:{label}:KenningMemory) WHERE n.id > $after AND n.used_at IS NULL "
    "WITH n ORDER BY n.id LIMIT $limit "
    "OPTIONAL MATCH (n)-[r]-() WHERE r.created_at IS NOT NULL "
    "WITH n, max(r.created_at) AS at SET n.used_at = at "
    "RETURN count(n), count(at), max(n.id)"
)

# One page in its own write transaction: (statement, params) -> the page's one row.
PageRunner = Callable[[LiteralString, dict[str, Any]], list[Any]]


def backfill_used_at(run_page: PageRunner, page: int = PAGE) -> int:
    """Every page of every authored type through ``run_page``; how many nodes were given
    a used_at."""
    filled = 0
    for label in AUTHORED_NODE_TYPES:
        statement = q.render(BACKFILL_USED_AT, label=label)
        after = ""
        while True:
            seen, given, last = run_page(statement, {"after": after, "limit": page})
            filled += int(given)
            if int(seen) < page or last is None:
                break
            after = str(last)
    return filled
