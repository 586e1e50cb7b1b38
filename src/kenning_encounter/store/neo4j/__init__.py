"""The Neo4j backend (optional extra: pip install 'kenning-encounter[neo4j]')."""

from __future__ import annotations

from typing import TYPE_CHECKING

from kenning_encounter.store.neo4j.backend import Neo4jStore

if TYPE_CHECKING:
    from kenning_encounter.config import Settings

__all__ = ["Neo4jStore", "open_from_settings"]


def open_from_settings(settings: Settings) -> Neo4jStore:
    """The store the settings name (NEO4J_URI, NEO4J_USERNAME, NEO4J_PASSWORD, NEO4J_DATABASE)."""
    return Neo4jStore.open_from_settings(settings)
