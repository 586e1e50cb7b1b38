"""Whether a node of the memory is still there, asked by what is written beside it.

What is kept beside the memory takes no tick and no clock lock (the infusion log), so an
operator's erasure may come between the read it was made from and its write; the write
asks this as it writes, so it keeps nothing of a node gone.
"""

from __future__ import annotations

from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES


def still_held(var: str) -> str:
    """A predicate: the memory still holds the node whose id is ``var`` (a Cypher
    expression from our own statements only); one seek of each type's id index."""
    return " OR ".join(
        f"EXISTS {{ MATCH (n:{label}:KenningMemory {{id: {var}}}) }}"
        for label in AUTHORED_NODE_TYPES
    )
