"""Other applications' data in our Neo4j database, and a fingerprint to prove it untouched.

Two kinds of neighbour are written with the raw driver, before any store of ours opens:

- the mcp-neo4j-memory peer's workload, in its own node shapes (bench/peers drives the
  real server; here its statements' effect is written directly, so the test needs no
  peer installed): ``:Memory`` nodes with ``name``, ``type`` and ``observations``, the
  entity type as a second label (``:Memory:Observation``, ``:Memory:Concept``), relations
  of any type between them, and its fulltext index ``search``;
- nodes that use our own type and bookkeeping names, shaped like ours but not ours
  (no memory of ours wrote them): an encounter E1 of the very session the test then
  opens, a clock at 7, a name key and a source key for names the test then takes, a
  ledger for that session, and a node carrying our memory label itself.

Foreign text carries the word ``zebulon``, so a read of ours that shows one is plain.
``fingerprint`` hashes these nodes (labels, properties) and every relationship that
touches them (type, properties, both ends), found again by element id.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from neo4j import Driver

FOREIGN_WORD: Final = "zebulon"
PEER_TYPES: Final = ("Observation", "Concept", "Person", "Question", "Note")
PEER_RELATIONS: Final = ("SUPPORTS", "ABOUT", "RELATES_TO", "RECORDED")
PEER_ENTITIES: Final = 25

# The peer's own statements (mcp_neo4j_memory 0.4.5), with the label it interpolates
# taken from the closed list above.
PEER_INDEX: Final = (
    "CREATE FULLTEXT INDEX search IF NOT EXISTS FOR (m:Memory) "
    "ON EACH [m.name, m.type, m.observations]"
)
PEER_ENTITY: Final = (
    "WITH $entity AS entity MERGE (e:Memory {{name: entity.name}}) "
    "SET e += entity {{.type, .observations}} SET e:`{label}`"
)
PEER_RELATION: Final = (
    "WITH $relation AS relation MATCH (from:Memory), (to:Memory) "
    "WHERE from.name = relation.source AND to.name = relation.target "
    "MERGE (from)-[r:`{type}`]->(to)"
)


# Nodes named like ours for the session ``$session``, with the edges ours would draw.
# Not among them: a node with a memory label (``KenningMemory``, ``KenningMemory_<name>``).
# Those labels are reserved to us (README, "Several memories in one Neo4j database"): a
# node carrying one is that memory's, and read_cypher shows it.
LOOKALIKES: Final = (
    "CREATE (l:Locus {id: $session, created_at: 'zebulon'}) "
    "CREATE (e:Encounter {id: 'E1', name: 'E1', locus: $session, purpose: 'zebulon', "
    "  opened_tick: 1, opened_at: '2020-01-01T00:00:00Z'}) "
    "CREATE (o:Observation {id: 'obs_x', name: 'retry storm', description: 'zebulon', "
    "  tick: 1, ord: 0}) "
    "CREATE (:Meta {key: 'clock', ival: 7}) "
    "CREATE (:Meta {key: 'schema_version', ival: 99}) "
    "CREATE (:NameKey {name: 'retry storm', id: 'obs_x'}) "
    "CREATE (:SourceKey {key: 'file' + $sep + 'repo' + $sep + 'src/retry.py', id: 'cmp_x'}) "
    "CREATE (:KenningLedger {session: $session, turn: 40, at: 1.0}) "
    "CREATE (:KenningDelivery {key: $session + $sep + 'obs_x', session: $session, "
    "  node: 'obs_x', turn: 40, at: 1.0, state: 'zebulon'}) "
    "CREATE (l)-[:OPENED {tick: 1}]->(e) "
    "CREATE (e)-[:RECORDED {tick: 1}]->(o)"
)


@dataclass(frozen=True)
class Foreign:
    nodes: list[str]  # element ids
    count: int
    digest: str
    records: dict[str, str]  # element id -> the node and its relationships, as hashed

    def changed(self, other: Foreign) -> list[str]:
        """What differs from ``other``, node by node, for a failure to name."""
        ids = sorted(set(self.records) | set(other.records))
        return [
            f"{i}: {self.records.get(i)} -> {other.records.get(i)}"
            for i in ids
            if self.records.get(i) != other.records.get(i)
        ]


def write(driver: Driver, database: str, session: str) -> list[str]:
    """The peer's workload and the look-alikes; the element ids of every node written."""
    everything = "MATCH (n) RETURN elementId(n) AS id"
    with driver.session(database=database) as s:
        there = {str(r["id"]) for r in s.run(everything)}
        s.run(PEER_INDEX).consume()
        names: list[str] = []
        for i in range(PEER_ENTITIES):
            label = PEER_TYPES[i % len(PEER_TYPES)]
            name = "retry storm" if i == 0 else f"{FOREIGN_WORD} {label.lower()} {i}"
            names.append(name)
            entity = {
                "name": name,
                "type": label,
                "observations": [f"{FOREIGN_WORD} saw the retry storm, take {i}"],
            }
            s.run(PEER_ENTITY.format(label=label), entity=entity).consume()  # pyright: ignore[reportArgumentType]
        for i in range(1, PEER_ENTITIES):
            kind = PEER_RELATIONS[i % len(PEER_RELATIONS)]
            relation = {"source": names[i - 1], "target": names[i]}
            s.run(PEER_RELATION.format(type=kind), relation=relation).consume()  # pyright: ignore[reportArgumentType]
        s.run(LOOKALIKES, session=session, sep="\x1f").consume()
        return sorted({str(r["id"]) for r in s.run(everything)} - there)


FINGERPRINT: Final = (
    "UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id "
    "OPTIONAL MATCH (n)-[r]-(m) "
    "WITH n, id, r, m ORDER BY type(r), elementId(m) "
    "RETURN id, labels(n) AS labels, properties(n) AS props, "
    "collect(CASE WHEN r IS NULL THEN null ELSE "
    "  [type(r), properties(r), elementId(startNode(r)) = id, elementId(m)] END) AS rels "
    "ORDER BY id"
)


def fingerprint(driver: Driver, database: str, ids: list[str]) -> Foreign:
    """How many of ``ids`` are still there, and a hash of them with their relationships."""
    digest = hashlib.sha256()
    count = 0
    records: dict[str, str] = {}
    with driver.session(database=database) as s:
        for row in s.run(FINGERPRINT, ids=ids):
            count += 1
            record: dict[str, Any] = {
                "id": row["id"],
                "labels": sorted(row["labels"]),
                "props": row["props"],
                "rels": row["rels"],
            }
            line = json.dumps(record, sort_keys=True, default=str)
            records[str(row["id"])] = line
            digest.update(line.encode())
    return Foreign(ids, count, digest.hexdigest(), records)
