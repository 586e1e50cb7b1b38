"""Every Neo4j statement that changes a stored authored node is heard by the node caches
of every process (store/neo4j/nodecache.py): it marks the nodes with its tick itself, or
its write method reports them (Neo4jTx's hooks mark them when the write ends), or it
moves the deletion count. A new statement that changes nodes must do one of these, and
be added here with how."""

from __future__ import annotations

import re

from kenning_encounter.store.neo4j import classified, past, queries, standing

# an assignment to a node's property (the index's own fields aside), a label or map set
# on it, or its deletion
CHANGING = re.compile(
    r"\b[abn]\.(?!_terms\b|_len\b|_memory\b|_touched\b)\w+\s*=[^=]"
    r"|SET [abn] \+=|SET [abn]:|DELETE n\b|DETACH DELETE"
)


def _changing() -> dict[str, bool]:
    found: dict[str, bool] = {}
    for module in (queries, standing, classified, past):
        for name, value in vars(module).items():
            if isinstance(value, str) and CHANGING.search(value):
                found[name] = "_touched = $tick" in value
    return found


def test_every_statement_that_changes_a_node_is_heard_by_the_caches() -> None:
    assert _changing() == {
        # marks the nodes it changes with the write's tick
        "CONFIRM": True,
        "CONSULT": True,
        "PIN": True,
        "MARK_USES": True,  # the uses a link to a classified node made (store/uses.py)
        "EDGES_CREATE": True,  # and EDGE_CREATE_SUPERSEDES (its SET is of _touched alone)
        # reported: ops set_statuses calls _on_changed, and the write's end marks the node
        "NODES_SET_STATUS": False,
        "NODES_SET_STATUS_KEPT": False,  # Neo4jTx._put_statuses calls _on_changed too
        # new nodes: no cache holds them yet; the nodes they revise are marked (below)
        "NODES_CREATE_ALL": True,
        # deletions: ops delete_nodes calls _on_deleted, which moves the deletion count
        "NODES_DELETE": False,
        # an import's statements: _on_cleared / _on_load_changed move the deletion count
        "CLEAR_NODES": False,
        "LOAD_NODES": False,  # new nodes
        "LOAD_EDGES": False,  # its SET is of a label (classified.MOVED_BY_SOURCE)
        # a part of EDGES_CREATE and LOAD_EDGES: a label, which no cached record holds
        "MOVED_BY_SOURCE": False,
        "MOVED_RELABEL": False,  # labels only, after a relation or node went
        # schema migrations, run while a store opens, before it serves
        "MIGRATE_MEMORY_LABEL": False,
        "BACKFILL_USED_AT": False,
    }


def test_a_revision_marks_the_node_it_revises() -> None:
    # one revision, and a batch's revisions made with its nodes
    assert "SET b._touched = $tick" in queries.EDGE_CREATE_SUPERSEDES
    assert "revision_why: r.why}]->(b) SET b._touched = $tick RETURN" in queries.NODES_CREATE_ALL
