"""Every Cypher statement the GDS engine runs, in one place.

They reach the server only through the store's analytics executor; whether the
server has GDS at all is the store's question (``store.neo4j.gds``).

Procedure names and relationship-type names are fixed text; graph names,
node ids and algorithm settings are always parameters (``$graph``,
``$config``, the id lists).

A loaded projection is one GDS graph holding three relationship types over the
same nodes, because the engine port asks for three readings of one graph (the
first is projected, the other two derived from it inside GDS):

- ``AUTHORED``: every relation, directed (ArticleRank, directed PageRank);
- ``AUTHORED_BOTH_WAYS``: every relation again, undirected, parallel relations
  kept (undirected PageRank walks each relation both ways, as the in-process
  engine does);
- ``AUTHORED_SIMPLE``: one undirected relationship per related pair
  (betweenness, Leiden, WCC, articulation points, bridges, clustering: the
  in-process engine's simple undirected view).

Node ids are the projection's positions, given to GDS as plain integers: the
graph is built from parameters alone and reads nothing stored in the database.
"""

from __future__ import annotations

from typing import Final

DIRECTED: Final = "AUTHORED"
BOTH_WAYS: Final = "AUTHORED_BOTH_WAYS"
SIMPLE: Final = "AUTHORED_SIMPLE"

# Cypher aggregation: one row per relation, and one per isolated node (every
# other node arrives with its relations). ``range`` over indexes keeps the two
# id lists as parameters without pairing them up (faster than a list of pairs).
PROJECT: Final = """
CALL () {
  UNWIND $isolated AS source
  RETURN source, null AS target
  UNION ALL
  UNWIND range(0, size($sources) - 1) AS j
  RETURN $sources[j] AS source, $targets[j] AS target
}
WITH gds.graph.project($graph, source, target, {relationshipType: 'AUTHORED'}) AS g
RETURN g.nodeCount AS nodes, g.relationshipCount AS relationships
"""

# The two undirected readings are derived inside GDS, which is several times
# faster than sending every relation three times through Cypher. $config names
# the new type and, for the simple view, aggregation 'SINGLE'.
TO_UNDIRECTED: Final = (
    "CALL gds.graph.relationships.toUndirected($graph, $config) "
    "YIELD relationshipsWritten RETURN relationshipsWritten"
)

# ``false``: a graph already gone (another server's sweep dropped it) is no error.
DROP: Final = "CALL gds.graph.drop($graph, false) YIELD graphName RETURN graphName"
EXISTS: Final = "CALL gds.graph.exists($graph) YIELD exists RETURN exists"

LIST_GRAPHS: Final = "CALL gds.graph.list() YIELD graphName RETURN collect(graphName) AS graphs"

# The leases by which an engine says its graphs are in use (analytics.gds_owners).
# A bookkeeping node of the memory: ``_memory`` and no memory label, so read_cypher
# never sees it. Expiry is read and written on the database's clock alone, so the
# clocks of the servers' hosts never have to agree.
LEASE_RENEW: Final = (
    "MERGE (l:KenningGdsLease {_memory: $memory, owner: $owner}) "
    "SET l.expires = timestamp() + $lease_ms, l.host = $host, l.pid = $pid"
)
LEASE_RELEASE: Final = "MATCH (l:KenningGdsLease {_memory: $memory, owner: $owner}) DELETE l"
LIVE_OWNERS: Final = (
    "OPTIONAL MATCH (l:KenningGdsLease {_memory: $memory}) WHERE l.expires > timestamp() "
    "RETURN collect(l.owner) AS owners"
)
FORGET_EXPIRED: Final = (
    "MATCH (l:KenningGdsLease {_memory: $memory}) WHERE l.expires <= timestamp() DELETE l"
)

# Each stream is collected into lists: one record with two lists decodes far
# faster than one record per node.
ARTICLE_RANK: Final = (
    "CALL gds.articleRank.stream($graph, $config) YIELD nodeId, score "
    "RETURN collect(nodeId) AS ids, collect(score) AS values"
)
PAGE_RANK: Final = (
    "CALL gds.pageRank.stream($graph, $config) YIELD nodeId, score "
    "RETURN collect(nodeId) AS ids, collect(score) AS values"
)
BETWEENNESS: Final = (
    "CALL gds.betweenness.stream($graph, $config) YIELD nodeId, score "
    "RETURN collect(nodeId) AS ids, collect(score) AS values"
)
LEIDEN: Final = (
    "CALL gds.leiden.stream($graph, $config) YIELD nodeId, communityId "
    "RETURN collect(nodeId) AS ids, collect(communityId) AS values"
)
WCC: Final = (
    "CALL gds.wcc.stream($graph, $config) YIELD nodeId, componentId "
    "RETURN collect(nodeId) AS ids, collect(componentId) AS values"
)
LOCAL_CLUSTERING: Final = (
    "CALL gds.localClusteringCoefficient.stream($graph, $config) "
    "YIELD nodeId, localClusteringCoefficient "
    "RETURN collect(nodeId) AS ids, collect(localClusteringCoefficient) AS values"
)
ARTICULATION_POINTS: Final = (
    "CALL gds.articulationPoints.stream($graph, $config) YIELD nodeId RETURN collect(nodeId) AS ids"
)
BRIDGES: Final = (
    "CALL gds.bridges.stream($graph, $config) YIELD from, to "
    "RETURN collect(from) AS sources, collect(to) AS targets"
)
