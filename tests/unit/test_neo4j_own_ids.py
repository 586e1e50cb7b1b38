"""The Neo4j reads of ids across types hand every union branch the one list, and each
branch seeks only its own type's ids (by prefix): a branch seeking every id cost a third
of a node read at 100k nodes. The planner keeps the one plan whatever the mix of types."""

from __future__ import annotations

import re

import pytest

from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.vocabulary import AUTHORED_NODE_TYPES, NODE_TYPES

_BRANCH_LABEL = re.compile(r"MATCH \(n:(\w+):KenningMemory\)")


@pytest.mark.parametrize(
    "name",
    ["NODES_GET_ALL", "CONFIRMATIONS_OF_ALL", "EDGES_OUT_EACH", "EDGES_IN_EACH", "EDGES_BOTH_EACH"],
)
def test_each_branch_seeks_its_own_type_s_ids(name: str) -> None:
    statement: str = getattr(q, name)
    branches = [
        (found.group(1), branch)
        for branch in statement.split("UNION ALL")
        if (found := _BRANCH_LABEL.search(branch)) is not None
    ]
    assert {label for label, _ in branches} == set(AUTHORED_NODE_TYPES)
    for label, branch in branches:
        own = f"n.id IN [i IN $ids WHERE i STARTS WITH '{NODE_TYPES[label].id_prefix}_']"
        assert own in branch, branch
        assert "n.id IN $ids" not in branch, branch
