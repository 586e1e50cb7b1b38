"""Which backends the contract suite runs on, and how to reach Neo4j."""

from __future__ import annotations

import importlib.util
import os
from typing import Any

HAVE_NEO4J_BACKEND = importlib.util.find_spec("kenning_encounter.store.neo4j") is not None
BACKENDS = ["embedded", "neo4j"] if HAVE_NEO4J_BACKEND else ["embedded"]


def neo4j_uri() -> str:
    return os.environ.get("NEO4J_URI") or os.environ.get("NEO4J_URL") or "bolt://127.0.0.1:7687"


def open_neo4j_store() -> Any:
    """A fresh, emptied Neo4j store, or a string saying why none could be had."""
    uri = neo4j_uri()
    try:
        from tests.support.neo4j_store import open_emptied
    except ImportError as exc:
        return f"the neo4j extra is not installed ({exc}); tried {uri}"
    try:
        return open_emptied(uri)
    except Exception as exc:  # any failure to reach the server is a skip reason
        return f"no Neo4j answered at {uri}: {exc}"
