"""The GraphStore port and its backends; see ``port`` for the operations."""

from kenning_encounter.store.port import (
    CypherResult,
    GraphStore,
    ReadTx,
    SearchHit,
    Subgraph,
    WriteTx,
)
from kenning_encounter.store.records import EdgeRecord, EncounterRecord, NodeRecord

__all__ = [
    "CypherResult",
    "EdgeRecord",
    "EncounterRecord",
    "GraphStore",
    "NodeRecord",
    "ReadTx",
    "SearchHit",
    "Subgraph",
    "WriteTx",
]
