"""The Neo4j backend (optional extra: pip install 'kenning-encounter[neo4j]')."""

from kenning_encounter.store.neo4j.backend import Neo4jStore

__all__ = ["Neo4jStore"]
