"""read_cypher's scoping rewrite on Neo4j, as text: which node patterns take the
memory's label and which are left as written (neo4j/scope.py)."""

from __future__ import annotations

import pytest

from kenning_encounter.store.neo4j.scope import check_scope, scope_nodes

M = ":KenningMemory "


@pytest.mark.parametrize(
    ("query", "scoped"),
    [
        ("MATCH (n) RETURN n", f"MATCH (n{M}) RETURN n"),
        ("MATCH () RETURN 1", f"MATCH ({M}) RETURN 1"),
        ("MATCH (n {id: $x}) RETURN n", f"MATCH (n {M}{{id: $x}}) RETURN n"),
        ("MATCH (n WHERE n.x = 1) RETURN n", f"MATCH (n {M}WHERE n.x = 1) RETURN n"),
        ("MATCH (a), (b) RETURN a", f"MATCH (a{M}), (b{M}) RETURN a"),
        ("MATCH p = (a)--(b) RETURN p", f"MATCH p = (a{M})--(b{M}) RETURN p"),
        ("MATCH (a)-->(b)<--(c) RETURN a", f"MATCH (a{M})-->(b{M})<--(c{M}) RETURN a"),
        ("MATCH (a)-[r]-(b)<-[s]-(c) RETURN a", f"MATCH (a{M})-[r]-(b{M})<-[s]-(c{M}) RETURN a"),
        ("OPTIONAL MATCH (a) RETURN a", f"OPTIONAL MATCH (a{M}) RETURN a"),
        ("MATCH ((a)-->(b)){1,3} RETURN a", f"MATCH ((a{M})-->(b{M})){{1,3}} RETURN a"),
        (
            "MATCH p = shortestPath((a)-[*]-(b)) RETURN p",
            f"MATCH p = shortestPath((a{M})-[*]-(b{M})) RETURN p",
        ),
        (
            "MATCH (n:Concept) WHERE EXISTS { MATCH (n)<--(m) } RETURN n",
            f"MATCH (n:Concept{M}) WHERE EXISTS {{ MATCH (n{M})<--(m{M}) }} RETURN n",
        ),
        ("match (`odd name`) return 1", f"match (`odd name`{M}) return 1"),
    ],
)
def test_unlabelled_node_patterns_take_the_memory_label(query: str, scoped: str) -> None:
    assert scope_nodes(query) == scoped


@pytest.mark.parametrize(
    ("query", "scoped"),
    [
        ("MATCH (n:Concept) RETURN n", f"MATCH (n:Concept{M}) RETURN n"),
        ("MATCH (n:Concept:Note) RETURN n", f"MATCH (n:Concept:Note{M}) RETURN n"),
        ("MATCH (:`Concept` {id: 1}) RETURN 1", f"MATCH (:`Concept` {M}{{id: 1}}) RETURN 1"),
        (
            "MATCH (n:Concept|Note) RETURN n",
            "MATCH (n:(Concept|Note)&KenningMemory ) RETURN n",
        ),
        ("MATCH (n:!Concept) RETURN n", "MATCH (n:(!Concept)&KenningMemory ) RETURN n"),
        ("MATCH (n IS Concept) RETURN n", "MATCH (n IS (Concept)&KenningMemory ) RETURN n"),
        ("MATCH (is) RETURN is", f"MATCH (is{M}) RETURN is"),
        (
            "MATCH (n:Concept WHERE n.x = 1)-->(m) RETURN n",
            f"MATCH (n:Concept {M}WHERE n.x = 1)-->(m{M}) RETURN n",
        ),
    ],
)
def test_named_labels_keep_their_meaning_within_the_memory(query: str, scoped: str) -> None:
    assert scope_nodes(query) == scoped


@pytest.mark.parametrize(
    "query",
    [
        "RETURN 1 - (2)",
        "RETURN (1 + 2) * 3",
        "MATCH (n:Concept) WHERE n.x = (1) RETURN (n)",
        "MATCH (n:Concept) WITH n, (n.a) AS a RETURN a",
        "RETURN '(n)' AS text, 'MATCH (n)' AS more",
        "UNWIND [1, 2] AS x RETURN x",
    ],
)
def test_expressions_and_strings_are_left_as_written(query: str) -> None:
    scoped = scope_nodes(query)
    assert scoped.replace(f"(n:Concept{M})", "(n:Concept)") == query


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("MATCH (m:Meta) RETURN m.key", "Meta is not a label"),
        ("MATCH (n:Concept|NameKey) RETURN n", "NameKey is not a label"),
        ("MATCH (n:concept) RETURN n", "concept is not a label"),
        ("MATCH (a:Concept)-->(t:Thing) RETURN t", "Thing is not a label"),
        ("MATCH (n IS SourceKey) RETURN n", "SourceKey is not a label"),
    ],
)
def test_a_label_that_is_not_the_memorys_is_refused(query: str, said: str) -> None:
    from kenning_encounter.errors import ReadOnlyViolation

    with pytest.raises(ReadOnlyViolation, match=said) as info:
        scope_nodes(query)
    assert info.value.layer == "scope"


def _leaf(operator: str, details: str) -> dict[str, object]:
    return {
        "operatorType": "ProduceResults@neo4j",
        "args": {"Details": "n"},
        "children": [{"operatorType": f"{operator}@neo4j", "args": {"Details": details}}],
    }


@pytest.mark.parametrize(
    ("operator", "details"),
    [
        ("NodeByLabelScan", "n:KenningMemory"),
        ("NodeByLabelScan", "n:Concept"),
        ("UnionNodeByLabelsScan", "n:Concept|Observation"),
        ("NodeUniqueIndexSeek", "UNIQUE n:Concept(id) WHERE id = $autostring_0, cache[n.id]"),
        ("NodeIndexSeek", "RANGE INDEX `anon_0`:Encounter(locus) WHERE locus = $x"),
        ("NodeCountFromCountStore", "count( (:KenningMemory) ) AS `count(n)`"),
        ("DirectedRelationshipTypeScan", "(a)-[r:ABOUT]->(b)"),
    ],
)
def test_the_plan_may_start_from_the_memory_nodes(operator: str, details: str) -> None:
    check_scope(_leaf(operator, details))


@pytest.mark.parametrize(
    ("operator", "details", "said"),
    [
        ("AllNodesScan", "n", "every node"),
        ("PartitionedAllNodesScan", "n", "every node"),
        ("NodeByIdSeek", "n WHERE id(n) = $autoint_0", "internal id"),
        ("NodeByElementIdSeek", "n WHERE elementId(n) = $x", "internal id"),
        ("NodeByLabelScan", "m:Meta", "Meta is not a label"),
        ("UnionNodeByLabelsScan", "n:Concept|NameKey", "NameKey is not a label"),
        ("NodeUniqueIndexSeek", "UNIQUE k:SourceKey(key) WHERE key = $x", "SourceKey"),
        ("NodeCountFromCountStore", "count( (:) ) AS `count(n)`", "names no label"),
        ("NodeCountFromCountStore", "count( (:Thing) ) AS c", "Thing is not a label"),
    ],
)
def test_the_plan_may_not_start_anywhere_else(operator: str, details: str, said: str) -> None:
    from kenning_encounter.errors import ReadOnlyViolation

    with pytest.raises(ReadOnlyViolation, match=said) as info:
        check_scope(_leaf(operator, details))
    assert info.value.layer == "scope"


@pytest.mark.parametrize(
    "details",
    [
        "db.labels() :: (label :: STRING)",
        "db.relationshipTypes() :: (relationshipType :: STRING)",
        "db.propertyKeys() :: (propertyKey :: STRING)",
        "db.schema.visualization() :: (nodes :: LIST<NODE>, relationships :: LIST<REL>)",
        "db.schema.nodeTypeProperties() :: (nodeType :: STRING)",
        "db . schema . relTypeProperties () :: (relType :: STRING)",
    ],
)
def test_the_plan_may_not_list_the_database_schema(details: str) -> None:
    """A schema procedure lists every memory's labels: the scope refuses it on its own,
    though the read-only layers admit it."""
    from kenning_encounter.errors import ReadOnlyViolation

    with pytest.raises(ReadOnlyViolation, match="whole database") as info:
        check_scope(_leaf("ProcedureCall", details))
    assert info.value.layer == "scope"


NINE = "Citation|Component|Concept|Encounter|Hypothesis|Locus|Note|Observation|Question"


def test_label_alternatives_that_would_stall_the_planner_are_refused_before_it() -> None:
    from kenning_encounter.errors import ReadOnlyViolation

    three = "MATCH " + ", ".join(f"(x{i}:{NINE})" for i in range(3)) + " RETURN 1"
    assert scope_nodes(three).count("&KenningMemory") == 3  # 729 ways: planned in a moment
    four = "MATCH " + ", ".join(f"(x{i}:{NINE})" for i in range(4)) + " RETURN 1"
    with pytest.raises(ReadOnlyViolation, match="multiply past 4,096") as info:
        scope_nodes(four)
    assert info.value.layer == "size"
    # Relationship types count too, and so do patterns inside a subquery.
    two, four = "Concept|Note", "Concept|Note|Question|Locus"
    chain = f"MATCH (a:{two})-[:P|Q|R|S]->(b:{four})-[:T|U|V|W]->(c:{four})-[:X|Y]-(d) RETURN 1"
    with pytest.raises(ReadOnlyViolation, match="multiply past"):
        scope_nodes(chain.replace("(d)", f"(d:{four}|Encounter)"))  # 1,024 x 5
    assert scope_nodes(chain).endswith("(d:KenningMemory ) RETURN 1")
    inner = f"MATCH (n:Concept) WHERE EXISTS {{ (n)-->(a:{NINE})-->(b:{NINE})-->(c:{NINE}) }}"
    with pytest.raises(ReadOnlyViolation, match="multiply past"):
        scope_nodes(inner + f"-->(d:{NINE}) RETURN n")
    # A list comprehension's bar is not an alternative.
    listed = "MATCH (n:Concept) RETURN " + ", ".join("[x IN [1] | x]" for _ in range(20))
    assert scope_nodes(listed) == listed.replace("(n:Concept)", f"(n:Concept{M})")


# Each withheld class: its nodes, the nodes they moved a status of, and those whose latest
# use was a link to one of them (classified.py).
H = (
    "&!KenningClass_phi&!KenningMoved_phi&!KenningUsed_phi"
    "&!KenningClass_secret&!KenningMoved_secret&!KenningUsed_secret"
)
HELD = frozenset({"phi", "secret"})


@pytest.mark.parametrize(
    ("query", "scoped"),
    [
        ("MATCH (n) RETURN n", f"MATCH (n:KenningMemory{H} ) RETURN n"),
        ("MATCH (n:Concept) RETURN n", f"MATCH (n:Concept&KenningMemory{H} ) RETURN n"),
        (
            "MATCH (n:Concept:Note) RETURN n",
            f"MATCH (n:Concept&Note&KenningMemory{H} ) RETURN n",
        ),
        ("MATCH (n:Concept|Note) RETURN n", f"MATCH (n:(Concept|Note)&KenningMemory{H} ) RETURN n"),
        (
            "MATCH (a)-[r:GROUNDS*1..3]->(b) RETURN b",
            f"MATCH (a:KenningMemory{H} ) ((:KenningMemory{H})-[r:GROUNDS]->"
            f"(:KenningMemory{H})){{1,3}} (b:KenningMemory{H} ) RETURN b",
        ),
        (
            "MATCH (a)<-[*]-(b) RETURN b",
            f"MATCH (a:KenningMemory{H} ) ((:KenningMemory{H})<-[]-"
            f"(:KenningMemory{H})){{1,}} (b:KenningMemory{H} ) RETURN b",
        ),
        (
            "MATCH (a:Note) RETURN [(a)-->(b) | b.name]",
            f"MATCH (a:Note&KenningMemory{H} ) RETURN [(a:KenningMemory{H} )-->"
            f"(b:KenningMemory{H} ) | b.name]",
        ),
        (
            "MATCH (a:Note) WHERE (a)<--(:Concept) RETURN a",
            f"MATCH (a:Note&KenningMemory{H} ) WHERE (a:KenningMemory{H} )<--"
            f"(:Concept&KenningMemory{H} ) RETURN a",
        ),
    ],
)
def test_withheld_classes_hold_every_node_pattern_to_what_may_be_seen(
    query: str, scoped: str
) -> None:
    assert scope_nodes(query, withheld=HELD) == scoped


def test_a_shortest_path_function_is_refused_while_classes_are_withheld() -> None:
    from kenning_encounter.errors import ReadOnlyViolation

    query = "MATCH p = shortestPath((a:Note)-[*]-(b:Concept)) RETURN p"
    with pytest.raises(ReadOnlyViolation, match="SHORTEST 1"):
        scope_nodes(query, withheld=HELD)
    assert scope_nodes(query)  # nothing withheld: served as before


def test_a_class_label_named_in_a_query_is_refused() -> None:
    from kenning_encounter.errors import ReadOnlyViolation

    with pytest.raises(ReadOnlyViolation, match="KenningClass_phi is not a label"):
        scope_nodes("MATCH (n:KenningClass_phi) RETURN n", withheld=HELD)
