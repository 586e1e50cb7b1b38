"""read_cypher under attack, on every backend (invariant 8).

Each attempt tries to write, to call a procedure that writes, administers or
reads files, to load or export files, to smuggle a second statement or a
hidden clause, or to exhaust the server. Every one must come back as a clear
ReadOnlyViolation refused by the token gate (layer "gate" or "size": the first
line), and the store must be exactly as it was after each attempt. The layers
behind the gate are proved alone in test_cypher_layers.py.

Attempts written in one engine's dialect run on the other too: there they must
be refused all the same (often as a syntax error, which is still a refusal).
The positive controls at the end prove the checks are not refusing everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.cypher_guard import LADYBUG_RULES, MAX_VALUE_DEPTH, check_read_only
from kenning_encounter.store.port import CypherResult, GraphStore, ReadTx
from tests.support.snapshot import snapshot

S = "attacker"
ROW_CAP = 50
CHAR_CAP = 5_000
TIMEOUT_S = 1.0


@dataclass(frozen=True)
class Attempt:
    name: str
    query: str
    params: dict[str, Any] | None = None
    # Which layer must refuse it: the token gate, unless the text is not even Cypher.
    layers: tuple[str, ...] = ("gate", "size")


def _a(
    name: str,
    query: str,
    params: dict[str, Any] | None = None,
    layers: tuple[str, ...] = ("gate", "size"),
) -> Attempt:
    return Attempt(name, query, params, layers)


NEW = "{id: 'not_0000000000aa', name: 'planted', tick: 1, created_at: 'x'}"

WRITES = [
    _a("create", f"CREATE (n:Note {NEW})"),
    _a("create lowercase", f"create (n:Note {NEW}) return n"),
    _a("create mixed case", f"CrEaTe (:Note {NEW})"),
    _a("merge", "MERGE (n:Note {id: 'not_0000000000aa'}) RETURN n"),
    _a("set property", "MATCH (n:Concept) SET n.name = 'pwned' RETURN n.name"),
    _a("set map merge", "MATCH (n:Concept) SET n += {name: 'pwned'}"),
    _a("set label", "MATCH (n:Concept) SET n:Hacked"),
    _a("set backticked property", "MATCH (n:Concept) SET n.`name` = 'pwned'"),
    _a("delete node", "MATCH (n:Concept) DELETE n"),
    _a("detach delete all", "MATCH (n) DETACH DELETE n"),
    _a("delete edges", "MATCH ()-[r]->() DELETE r"),
    _a("remove property", "MATCH (n:Concept) REMOVE n.description"),
    _a("remove label", "MATCH (n:Concept) REMOVE n:Concept"),
    _a(
        "foreach create",
        "FOREACH (x IN [1, 2] | CREATE (:Note {id: 'not_00000000000' + toString(x), name: 'f'}))",
    ),
    _a("foreach set", "MATCH (n:Concept) FOREACH (x IN [1] | SET n.name = 'pwned')"),
    _a("set after with", "MATCH (n:Concept) WITH n, 1 AS one SET n.name = 'pwned' RETURN n.name"),
    _a("delete after two withs", "MATCH (n) WITH n LIMIT 1 MATCH (m:Concept) WITH m DELETE m"),
    _a("set in subquery", "MATCH (n:Concept) CALL { WITH n SET n.name = 'pwned' } RETURN n.name"),
    _a("create in subquery", f"CALL {{ CREATE (:Note {NEW}) }} RETURN 1"),
    _a("set in scoped subquery", "MATCH (n:Concept) CALL (n) { SET n.name = 'pwned' } RETURN 1"),
    _a(
        "write in union branch",
        f"MATCH (n:Concept) RETURN n.name AS x UNION CREATE (m:Note {NEW}) RETURN m.name AS x",
    ),
    _a(
        "write in union all branch",
        "MATCH (n:Concept) RETURN n.name AS x "
        "UNION ALL MATCH (m:Concept) SET m.name = 'pwned' RETURN m.name AS x",
    ),
    _a("write after block comment", "MATCH (n:Concept) /* only a comment */ DETACH DELETE n"),
    _a("write after line comment", "// read the concepts\nMATCH (n:Concept) SET n.name = 'pwned'"),
    _a("keyword split by a comment", f"CRE/**/ATE (:Note {NEW})", layers=("gate", "engine")),
    _a(
        "comment opener inside a string",
        f'WITH "/*" AS a CREATE (:Note {NEW}) WITH "*/" AS b RETURN b',
    ),
    _a("line comment inside a string", "WITH '//' AS a MATCH (n:Concept) SET n.name = a RETURN a"),
    _a("escaped quote then write", "WITH 'it\\'s' AS a MATCH (n:Concept) SET n.name = a"),
    # A quoted name is never a keyword: to the engine this is a syntax error.
    _a("backticked keyword", "MATCH (n:Concept) `SET` n.name = 'pwned'", layers=("engine",)),
    _a("fullwidth keyword", f"ＣＲＥＡＴＥ (:Note {NEW})"),
    _a("no-break space after keyword", f"CREATE\u00a0(:Note {NEW})"),
    _a("zero-width space inside keyword", "MATCH (n:Concept) SE\u200bT n.name = 'pwned'"),
    _a("explain prefix", "EXPLAIN MATCH (n) DETACH DELETE n"),
    _a("profile prefix", "PROFILE MATCH (n:Concept) SET n.name = 'pwned'"),
    _a("cypher options prefix", "CYPHER runtime=slotted MATCH (n:Concept) SET n.name = 'pwned'"),
    _a("ladybug ddl create table", "CREATE NODE TABLE Evil(id STRING, PRIMARY KEY(id))"),
    _a("ladybug ddl drop table", "DROP TABLE Note"),
    _a("ladybug ddl alter table", "ALTER TABLE Note ADD evil STRING"),
    _a("transaction control begin", "BEGIN TRANSACTION"),
    _a("transaction control commit", "COMMIT"),
    _a("checkpoint", "CHECKPOINT"),
]

PROCEDURES = [
    _a("db.createLabel", "CALL db.createLabel('Hacked')"),
    _a("db.createProperty", "CALL db.createProperty('hacked')"),
    _a("db.createRelationshipType", "CALL db.createRelationshipType('HACKED')"),
    _a(
        "fulltext createNodeIndex",
        "CALL db.index.fulltext.createNodeIndex('evil', ['Concept'], ['name'])",
    ),
    _a("db.clearQueryCaches", "CALL db.clearQueryCaches()"),
    _a("backticked procedure name", "CALL `db`.`createLabel`('Hacked')"),
    _a("spaced procedure name", "CALL db . createLabel('Hacked')"),
    _a("optional call", "OPTIONAL CALL db.createLabel('Hacked')"),
    _a("allowed call then write", "CALL db.labels() YIELD label MATCH (n:Concept) SET n.l = label"),
    _a("dbms create user", "CALL dbms.security.createUser('eve', 'secret-pw', false)"),
    _a("dbms set config", "CALL dbms.setConfigValue('db.logs.query.enabled', 'OFF')"),
    _a("dbms list config", "CALL dbms.listConfig()"),
    _a("terminate transactions", "TERMINATE TRANSACTIONS 'neo4j-transaction-1'"),
    _a("show transactions", "SHOW TRANSACTIONS"),
    _a("show settings", "SHOW SETTINGS YIELD name, value RETURN name, value"),
    _a("use system database", "USE system SHOW USERS"),
    _a("apoc run write", "CALL apoc.cypher.runWrite('CREATE (:Note)', {})"),
    _a("apoc periodic", "CALL apoc.periodic.iterate('MATCH (n) RETURN n', 'DELETE n', {})"),
    _a("gds project", "CALL gds.graph.project('leak', '*', '*')"),
    _a("gds project function", "MATCH (s)-->(t) RETURN gds.graph.project('leak', s, t)"),
    _a("gds write mode", "CALL gds.pageRank.write('leak', {writeProperty: 'pr'})"),
    _a("gds drop", "CALL gds.graph.drop('leak', false)"),
    _a("gds node properties write", "CALL gds.graph.nodeProperties.write('leak', ['pr'])"),
    _a("ladybug config timeout", "CALL timeout=0"),
    _a("ladybug config threads", "CALL threads=64"),
    _a("ladybug create fts index", "CALL create_fts_index('Concept', 'evil', ['name'])"),
]

FILES = [
    _a("load csv", "LOAD CSV FROM 'file:///etc/passwd' AS line RETURN line"),
    _a(
        "load csv lowercase with headers",
        "load csv with headers from 'https://example.com/x.csv' as row return row",
    ),
    _a("apoc load json", "CALL apoc.load.json('file:///etc/passwd')"),
    _a("apoc export", "CALL apoc.export.csv.all('/tmp/kenning-leak.csv', {})"),
    _a("ladybug load from", "LOAD FROM '/etc/passwd' RETURN *"),
    _a("ladybug copy to", "COPY (MATCH (n) RETURN n.name) TO '/tmp/kenning-leak.csv'"),
    _a("ladybug copy from", "COPY Note FROM '/tmp/kenning-evil.csv'"),
    _a("ladybug export database", "EXPORT DATABASE '/tmp/kenning-export'"),
    _a("ladybug import database", "IMPORT DATABASE '/tmp/kenning-export'"),
    _a("ladybug attach", "ATTACH '/tmp/kenning-other.lbdb' AS other (dbtype lbug)"),
    _a("ladybug install", "INSTALL json"),
    _a("ladybug load extension", "LOAD EXTENSION json"),
]

# LadybugDB functions: refused by name there; Neo4j does not know them at all.
ENGINE_FUNCTION = ("gate", "engine")

# Found by an attacker: each ran, or crashed the server, before the token gate.
SMUGGLED = [
    _a(
        "commit then a payload hidden by a starred comment",
        "COMMIT; /* **/ '*/ MATCH (n:Concept) SET n.name = 'pwned' //'\nRETURN 1",
    ),
    _a("starred comment hides a write", "MATCH (n) /* **/ '*/ DETACH DELETE n //'\nRETURN 1"),
    _a("lone commit", "COMMIT"),
    _a("rollback", "ROLLBACK"),
    _a(
        "neo4j line comment ended by a carriage return",
        "// note\rMATCH (s)-[r]->(t) WITH gds.graph.project('x', s, t) AS g RETURN g.graphName",
    ),
    _a("line comment ended by a line separator", "// note\u2028MATCH (n) DETACH DELETE n"),
    _a("unicode escape ends a comment", "RETURN 1 // x\\u000a MATCH (n) DETACH DELETE n"),
    _a(
        "copy to a double-quoted path", 'COPY (MATCH (n) RETURN n.name) TO "/tmp/kenning-leak2.csv"'
    ),
    _a("load from a double-quoted path", 'LOAD FROM "/etc/passwd" RETURN *'),
    _a("file reading function", "RETURN read_csv_serial('/etc/passwd')", layers=ENGINE_FUNCTION),
    _a("sequence function", "RETURN nextval('s')", layers=ENGINE_FUNCTION),
    _a("macro", "CREATE MACRO evil(x) AS x + 1"),
    _a("setting by call", "CALL spill_to_disk=false RETURN 1"),
    _a("nested lists", "RETURN " + "[" * 1_000 + "1" + "]" * 1_000),
    _a("nested maps", "RETURN " + "{a: " * 200 + "1" + "}" * 200),
    _a("nested case", "RETURN " + "CASE WHEN true THEN " * 30 + "1" + " END" * 30),
    _a("huge range", "UNWIND range(1, 2000000000) AS i RETURN count(i)"),
    _a("huge range returned", "RETURN range(1, 20000000)"),
    _a("huge range by parameter", "UNWIND range(1, $n) AS i RETURN count(i)", {"n": 2_000_000_000}),
    _a("computed range bound", "UNWIND range(1, 2000 * 1000000) AS i RETURN count(i)"),
    _a("nested ranges", "RETURN [a IN range(1, 10000) | range(1, 10000)]"),
    # A digit to str.isdigit that int() cannot read: the gate's own bound reader raised.
    _a("range bound in superscript digits", "UNWIND range(1, 1\u00b2) AS i RETURN count(i)"),
    _a("range bound in full-width digits", "UNWIND range(1, 1\uff10) AS i RETURN count(i)"),
    _a(
        "repeat builds a huge string",
        "RETURN size(repeat('x', 2000000000))",
        layers=ENGINE_FUNCTION,
    ),
]

SHAPE = [
    _a("two statements", "MATCH (n) RETURN n; MATCH (n) DETACH DELETE n"),
    _a("statement after a comment", "MATCH (n) RETURN n // x\n; MATCH (n) DETACH DELETE n"),
    _a("read then create", f"MATCH (n) RETURN count(n); CREATE (:Note {NEW})"),
    _a("empty", ""),
    _a("blank", "  \n\t "),
    _a("unterminated string", "MATCH (n) RETURN 'no end"),
    _a("unterminated comment", "MATCH (n) /* RETURN n"),
    _a("oversized", "MATCH (n) RETURN n" + " " * 25_000),
]

ALL_REFUSALS = WRITES + PROCEDURES + FILES + SMUGGLED + SHAPE

EXHAUSTION = [
    _a(
        "cartesian count",
        "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b RETURN count(*)",
    ),
    _a("cartesian rows", "UNWIND range(1, 100000) AS a UNWIND range(1, 100000) AS b RETURN a, b"),
    _a("wide rows", "UNWIND range(1, 100000) AS i RETURN i, '" + "x" * 1_000 + "' AS pad"),
    _a("node cross product", "MATCH (a), (b), (c), (d), (e), (f), (g) RETURN count(*)"),
    _a("long paths", "MATCH p = (a)-[*1..10]-(b) RETURN count(p)"),
]
# 10^9 rows from one small range, so the gate's range budget admits it: only the
# deadline can end it, and the refusal must say so (a bare count(*) the embedded
# engine answers from the list sizes alone).
ONLY_THE_TIMEOUT_STOPS = (
    "UNWIND range(1, 1000) AS i WITH collect(i) AS xs "
    "UNWIND xs AS a UNWIND xs AS b UNWIND xs AS c RETURN sum(a * b + c)"
)

INJECTION = [
    _a(
        "quote-breaking value",
        "MATCH (n:Concept) WHERE n.name = $name RETURN n.name",
        {"name": "x' OR 1=1 WITH n DETACH DELETE n //"},
    ),
    _a("statement as value", "RETURN $q AS q", {"q": "MATCH (n) DETACH DELETE n"}),
    _a(
        "list of hostile values",
        "MATCH (n) WHERE n.id IN $ids RETURN count(n) AS c",
        {"ids": ["') DETACH DELETE n //", "*/ CREATE (:Note) /*"]},
    ),
]


def _seed(memory: Memory) -> None:
    memory.advance_encounter(S, "seed")
    memory.create_entities(
        S,
        [
            {"type": "Observation", "name": "storm", "description": "a retry storm at nine"},
            {"type": "Concept", "name": "backoff", "description": "retries set off in lockstep"},
            {"type": "Question", "name": "why", "description": "why nine?"},
            {"type": "Hypothesis", "name": "cron", "description": "a cron job overlaps"},
            {"type": "Note", "name": "plan", "description": "look at the cron table"},
        ],
    )
    memory.create_relations(
        S,
        [
            {"source": "storm", "type": "GROUNDS", "target": "backoff"},
            {"source": "storm", "type": "SUPPORTS", "target": "cron"},
            {"source": "storm", "type": "RAISES", "target": "why"},
        ],
    )


def _fingerprint(store: GraphStore) -> dict[str, Any]:
    """The shared snapshot, plus what it cannot see: raw counts and the name registry."""

    def names(tx: ReadTx) -> dict[str, str]:
        return tx.head_ids_by_names(["storm", "backoff", "why", "cron", "plan", "planted"])

    every = snapshot(store)
    every["names"] = store.read(names)
    for key, query in (
        ("all_nodes", "MATCH (n) RETURN count(n)"),
        ("all_edges", "MATCH ()-[r]->() RETURN count(r)"),
    ):
        every[key] = _read(store, query).rows
    return every


def _read(store: GraphStore, query: str, params: dict[str, Any] | None = None) -> CypherResult:
    return store.read_cypher(query, params, row_cap=ROW_CAP, char_cap=CHAR_CAP, timeout_s=TIMEOUT_S)


@pytest.fixture
def seeded(memory: Memory, store: GraphStore) -> GraphStore:
    _seed(memory)
    return store


def _run_refusals(store: GraphStore, attempts: list[Attempt]) -> None:
    before = _fingerprint(store)
    problems: list[str] = []
    for attempt in attempts:
        try:
            result = _read(store, attempt.query, attempt.params)
        except ReadOnlyViolation as exc:
            if "read_cypher refused" not in str(exc) or exc.field != "query":
                problems.append(f"{attempt.name}: unclear refusal {exc}")
            if exc.layer not in attempt.layers:
                problems.append(f"{attempt.name}: refused by {exc.layer!r}, not the gate: {exc}")
        except Exception as exc:  # any other error type is not a clear refusal
            problems.append(f"{attempt.name}: {type(exc).__name__} instead of a refusal: {exc}")
        else:
            problems.append(f"{attempt.name}: ran and returned {result.rows[:3]!r}")
        if _fingerprint(store) != before:
            problems.append(f"{attempt.name}: CHANGED THE STORE ({attempt.query!r})")
            before = _fingerprint(store)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    "query",
    [
        'WITH "/*" AS a CREATE (:Note) WITH "*/" AS b RETURN b',
        "WITH '//' AS a CREATE (:Note) RETURN a",
        "WITH '\\'' AS a /* ' */ CREATE (:Note) RETURN a",
        "MATCH (`a``b`) CREATE (:Note) RETURN 1",
    ],
)
def test_the_shared_gate_reads_literals_as_the_engines_do(query: str) -> None:
    """A comment opener inside a string (and the like) hides nothing from the gate."""
    with pytest.raises(ReadOnlyViolation, match="CREATE"):
        check_read_only(query, LADYBUG_RULES)


def test_writes_of_every_kind_are_refused(seeded: GraphStore) -> None:
    _run_refusals(seeded, WRITES)


def test_procedures_that_write_or_administer_are_refused(seeded: GraphStore) -> None:
    _run_refusals(seeded, PROCEDURES)


def test_file_access_is_refused(seeded: GraphStore) -> None:
    _run_refusals(seeded, FILES)


def test_several_statements_and_malformed_text_are_refused(seeded: GraphStore) -> None:
    _run_refusals(seeded, SHAPE)


def test_what_an_attacker_smuggled_past_the_old_gate_is_refused(seeded: GraphStore) -> None:
    _run_refusals(seeded, SMUGGLED)
    assert not Path("/tmp/kenning-leak2.csv").exists()
    # The server is still up and reading.
    assert _read(seeded, "MATCH (n:Concept) RETURN n.name").rows == [["backoff"]]


def test_a_mixed_list_parameter_is_refused_naming_params(seeded: GraphStore) -> None:
    query, mixed = "MATCH (n) WHERE n.name IN $xs RETURN n.name", {"xs": ["a", 0]}
    if seeded.backend != "embedded":  # Neo4j takes mixed lists as they are
        assert _read(seeded, query, mixed).rows == []
        return
    with pytest.raises(ReadOnlyViolation, match=r"^params: .*xs mixes number, string") as info:
        _read(seeded, query, mixed)
    assert info.value.field == "params" and info.value.layer == "params"


def test_exhaustion_is_stopped_within_a_bound(seeded: GraphStore) -> None:
    before = _fingerprint(seeded)
    problems: list[str] = []
    for attempt in EXHAUSTION:
        try:
            result = _read(seeded, attempt.query)
        except ReadOnlyViolation:
            pass
        else:
            if len(result.rows) > ROW_CAP:
                problems.append(f"{attempt.name}: {len(result.rows)} rows past the cap")
            if result.truncated and str(ROW_CAP) not in result.note:
                problems.append(f"{attempt.name}: the cap is not stated ({result.note!r})")
    assert not problems, "\n".join(problems)
    # The deadline shown by its effect: the endless read is stopped, naming the limit.
    with pytest.raises(ReadOnlyViolation, match=rf"{TIMEOUT_S:g} ?s (timeout|limit)") as info:
        _read(seeded, ONLY_THE_TIMEOUT_STOPS)
    assert info.value.layer == "timeout"
    assert _fingerprint(seeded) == before


def test_the_row_and_size_caps_hold(seeded: GraphStore) -> None:
    many = _read(seeded, "UNWIND range(1, 1000) AS i RETURN i")
    assert many.truncated and len(many.rows) == ROW_CAP
    assert many.rows[:3] == [[1], [2], [3]]
    assert f"{ROW_CAP} rows" in many.note and f"{CHAR_CAP} characters" in many.note
    wide = _read(seeded, "UNWIND range(1, 40) AS i RETURN i, '" + "y" * 500 + "' AS pad")
    assert wide.truncated and 0 < len(wide.rows) < 40
    assert sum(len(str(r)) for r in wide.rows) <= CHAR_CAP


def test_parameters_are_inert_values(seeded: GraphStore) -> None:
    before = _fingerprint(seeded)
    assert _read(seeded, INJECTION[0].query, INJECTION[0].params).rows == []
    hostile = str((INJECTION[1].params or {})["q"])
    assert _read(seeded, INJECTION[1].query, INJECTION[1].params).rows == [[hostile]]
    assert _read(seeded, INJECTION[2].query, INJECTION[2].params).rows == [[0]]
    assert _fingerprint(seeded) == before


def test_reads_still_work(seeded: GraphStore) -> None:
    """Controls: the checks refuse attacks, not reading."""
    names = _read(seeded, "MATCH (n:Concept) RETURN n.name AS name")
    assert names.columns == ["name"] and names.rows == [["backoff"]]
    # Forbidden words inside strings, comments, property names and map keys are fine.
    worded = _read(
        seeded,
        "MATCH (n:Concept) /* CREATE */ WHERE n.description CONTAINS 'set' "
        "RETURN n.name AS name, {delete: 1} AS m // DETACH DELETE",
    )
    assert worded.rows == [["backoff", {"delete": 1}]]
    edges = _read(
        seeded,
        "MATCH (a:Observation)-[r:GROUNDS]->(b:Concept) RETURN a.name, b.name, r.tick",
    )
    assert [row[:2] for row in edges.rows] == [["storm", "backoff"]]


@pytest.mark.timeout(60)
def test_a_long_name_and_a_deep_plan_are_read_not_choked_on(seeded: GraphStore) -> None:
    # As long and as deep as the size layer lets through. The Neo4j plan check read a
    # name from each of its letters to its end (9,000 letters: seconds, holding the
    # interpreter and every thread of the server), and walked the plan by recursion
    # (a thousand chained clauses plan a thousand deep).
    name = "a" * 9_000
    long = _read(seeded, f"WITH 1 AS {name} RETURN {name} AS n")
    assert long.rows == [[1]]
    deep = "WITH 1 AS a " + "WITH a + 1 AS a " * 900 + "RETURN a"
    try:
        result = _read(seeded, deep)
    except ReadOnlyViolation as exc:  # an engine may refuse so deep a query: clearly
        assert "read_cypher refused" in str(exc) and exc.field == "query"
    else:
        assert result.rows == [[901]]


DEEP_VALUES = (
    "RETURN reduce(acc = [], i IN range(1, 5000) | [acc]) AS deep",
    "RETURN reduce(acc = {}, i IN range(1, 5000) | {a: acc}) AS deep",
    "RETURN list_reduce(range(1, 5000), (acc, i) -> [acc]) AS deep",
)


def test_a_value_nested_past_any_bracket_count_is_refused_clearly(seeded: GraphStore) -> None:
    # The size layer caps brackets in the text, but a query can nest a value at run time.
    for query in DEEP_VALUES:
        try:
            result = _read(seeded, query)
        except ReadOnlyViolation as exc:
            assert "read_cypher refused" in str(exc) and exc.field == "query", exc
        else:
            assert len(str(result.rows)) <= CHAR_CAP + 100, query


def test_a_value_nested_past_the_depth_cap_is_refused_before_it_is_walked(
    seeded: GraphStore,
) -> None:
    # Deep enough to pass our cap, shallow enough for any engine to build and send: the
    # refusal is ours, not the server's stack (which depends on how its JVM compiled).
    query = f"RETURN reduce(acc = [], i IN range(1, {MAX_VALUE_DEPTH + 50}) | [acc]) AS deep"
    with pytest.raises(ReadOnlyViolation) as info:
        _read(seeded, query)
    assert info.value.field == "query"
    if seeded.backend == "neo4j":  # the embedded gate refuses reduce() before it runs
        assert info.value.layer == "size", info.value
        assert f"deeper than {MAX_VALUE_DEPTH} levels" in str(info.value)
        # A value at the cap is returned whole.
        at_cap: Any = []
        for _ in range(MAX_VALUE_DEPTH - 1):
            at_cap = [at_cap]
        shallow = f"RETURN reduce(acc = [], i IN range(1, {MAX_VALUE_DEPTH - 1}) | [acc]) AS d"
        assert _read(seeded, shallow).rows == [[at_cap]]
