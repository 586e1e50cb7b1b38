"""Whether a node of the memory is still there, asked by what is written beside it.

What is kept beside the memory takes no tick and no clock lock (the infusion log, the
meanings), so an operator's erasure may come between the read it was made from and its
write; the write asks this as it writes, so it keeps nothing of a node gone.
"""

from __future__ import annotations

from kenning_encounter.store.ids import PREFIX_TO_TYPE


def still_held(var: str) -> str:
    """A predicate: the memory still holds the node whose id is ``var`` (a Cypher
    expression from our own statements only). The id's prefix names its type (ids.py),
    so it is one seek of that type's id index; an id of no authored type is not held."""
    arms = " ".join(
        f"WHEN '{prefix}' THEN EXISTS {{ MATCH (n:{label}:KenningMemory {{id: {var}}}) }}"
        for prefix, label in PREFIX_TO_TYPE.items()
    )
    return f"coalesce(CASE split({var}, '_')[0] {arms} END, false)"
