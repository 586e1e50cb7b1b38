"""Classification on Neo4j: the indexes retention and the read gate seek, and the gate's
one question to the store (memory/gates.py).

read_cypher text reaches the database as written, and a caller's projection of a property
carries no id a filter could test afterwards. Rather than promise what a rewrite could
miss (a variable-length path's inner nodes, a pattern comprehension), read_cypher on
Neo4j is refused while the memory holds a node of a class the caller is not granted.
"""

from __future__ import annotations

from typing import Final, LiteralString, cast

from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES

# One statement per question; the engine makes it the memory's (namespace.py).
ANY_WITHHELD: Final = (
    "MATCH (n:KenningMemory) WHERE n.classification IS NOT NULL "
    "AND any(c IN split(n.classification, ',') WHERE c IN $withheld) "
    "RETURN n.id LIMIT 1"
)


def schema() -> list[tuple[str, LiteralString]]:
    """Range indexes on (_memory, retain_until), which purge --due seeks, and on
    (_memory, classification), which the gate's question seeks, per authored type."""
    out: list[tuple[str, LiteralString]] = []
    for label in AUTHORED_NODE_TYPES:
        for prop in ("retain_until", "classification"):
            name = f"kenning_{label.lower()}_memory_{prop}"
            statement = (
                f"CREATE INDEX {name} IF NOT EXISTS FOR (n:{label}) ON (n._memory, n.{prop})"
            )
            out.append((name, cast(LiteralString, statement)))
    return out
