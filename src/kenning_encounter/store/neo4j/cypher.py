"""read_cypher on Neo4j: what may run, how the plan is judged, how values come back.

Three layers, each enough on its own for the cases it knows:

1. the shared token gate (``cypher_guard``) in Neo4j's dialect (a lone CR ends a
   line comment, ``\\u`` escapes are decoded before lexing) with Neo4j's lists:
   namespaced functions must be on the list (``gds.graph.project`` is an
   aggregation *function* that changes the graph catalog without any CALL);
2. "plan": ``EXPLAIN``: the planner's query type must be ``r``, and no operator
   may write, load files, administer, call a procedure off the list, or evaluate
   a namespaced function off the list;
3. "engine-readonly" / "timeout": the query runs in a READ transaction with a
   server-side timeout, and is rolled back.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.cypher_guard import Rules, check_read_only, deeper
from kenning_encounter.store.cypher_lexer import NEO4J
from kenning_encounter.store.neo4j import queries as q
from kenning_encounter.store.neo4j.classified import CLASS_LABELS, MOVED_LABELS, USED_LABELS
from kenning_encounter.store.neo4j.namespace import MEMORY_PROPERTY, is_memory_label

# Procedures that only describe the database's schema (lowercase): read-only, though the
# scope refuses them (scope.py: they describe every memory's labels).
SCHEMA_PROCEDURES: Final = frozenset(
    {
        "db.labels",
        "db.relationshiptypes",
        "db.propertykeys",
        "db.schema.visualization",
        "db.schema.nodetypeproperties",
        "db.schema.reltypeproperties",
    }
)
# Procedures that only describe the schema or read the fulltext index (lowercase).
READ_PROCEDURES: Final = SCHEMA_PROCEDURES | {"db.index.fulltext.querynodes"}

# Namespaced functions that compute values and touch nothing (lowercase).
_READ_FUNCTION_NAMESPACES: Final = (
    "date.",
    "datetime.",
    "localdatetime.",
    "localtime.",
    "time.",
    "duration.",
    "point.",
    "vector.similarity.",
    "gds.similarity.",
)
_READ_FUNCTIONS: Final = frozenset(
    {"db.namefromelementid", "gds.version", "gds.util.asnode", "gds.util.asnodes"}
)

# Plan operators (name before '@') that change data or schema, touch files or
# administer the server. Query type 'r' already excludes most; this is the
# second opinion, and the only one for LOAD CSV, which plans as a read.
_REFUSED_OPERATOR_PREFIXES: Final = (
    "Create",
    "Merge",
    "Set",
    "Delete",
    "DetachDelete",
    "Remove",
    "Foreach",
    "LoadCSV",
    "Show",
    "Terminate",
    "Transaction",
    "Alter",
    "Drop",
    "Grant",
    "Deny",
    "Revoke",
    "Start",
    "Stop",
    "Enable",
    "Disable",
)

NEO4J_RULES: Final = Rules(
    dialect=NEO4J,
    procedures=READ_PROCEDURES,
    functions=_READ_FUNCTIONS,
    function_namespaces=_READ_FUNCTION_NAMESPACES,
    plain_functions_are_builtin=True,
)

# A dotted name in a plan's text (each part taken whole, never given back), then whether
# "(" follows it. One pattern asking for the "(" as well was tried from every letter of a
# long name, each time to its end: a 20,000-character name held the interpreter for
# seconds, every thread of the server with it.
_PLAN_NAME: Final = re.compile(r"[A-Za-z_]\w*+(?:\s*+\.\s*+[A-Za-z_]\w*+)*+")
_CALL_OPENS: Final = re.compile(r"\s*+\(")
_PROCEDURE_DETAIL = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*\(")


def check_neo4j_text(query: str) -> None:
    """The token gate in Neo4j's dialect, with Neo4j's procedure and function lists."""
    check_read_only(query, NEO4J_RULES)


def _plan(reason: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(reason, layer="plan")


def _function_allowed(name: str) -> bool:
    return name in _READ_FUNCTIONS or name.startswith(_READ_FUNCTION_NAMESPACES)


def _operators(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    # Walked with a stack: a query of a thousand chained clauses plans a thousand deep.
    found: list[Mapping[str, Any]] = []
    stack: list[Mapping[str, Any]] = [plan]
    while stack:
        op = stack.pop()
        found.append(op)
        stack += reversed(op.get("children") or [])
    return found


def plan_calls(text: str) -> list[str]:
    """The dotted names a plan's text calls ("apoc.create.node (" -> "apoc.create.node"),
    lower-cased, spaces dropped; read in one pass."""
    calls: list[str] = []
    for name in _PLAN_NAME.finditer(text):
        if "." in name.group(0) and _CALL_OPENS.match(text, name.end()):
            calls.append(re.sub(r"\s+", "", name.group(0)).lower())
    return calls


def check_plan(query_type: str | None, plan: Mapping[str, Any] | None) -> None:
    """Refuse a query unless its EXPLAIN plan is provably a read."""
    if query_type != "r":
        raise _plan(
            f"the planner classifies this query as {query_type or 'unknown'!r}, not read-only ('r')"
        )
    if plan is None:
        raise _plan("the server returned no plan to check")
    for op in _operators(plan):
        name = str(op.get("operatorType", "")).split("@", 1)[0]
        if name.startswith(_REFUSED_OPERATOR_PREFIXES):
            raise _plan(f"the plan contains a {name} operator")
        if name == "ProcedureCall":
            args: Mapping[str, Any] = op.get("args") or {}
            detail = _PROCEDURE_DETAIL.match(str(args.get("Details", "")))
            procedure = detail.group(1).lower() if detail else "?"
            if procedure not in READ_PROCEDURES:
                raise _plan(f"the plan calls procedure {procedure!r}")
        for value in (op.get("args") or {}).values():
            for function in plan_calls(str(value)):
                if function in READ_PROCEDURES or _function_allowed(function):
                    continue
                raise _plan(f"the plan evaluates function {function!r}, which is not read-only")


# The text index's fields, and the uses the gate restates standing by (store/uses.py).
INDEX_FIELDS: Final = frozenset(
    {q.TEXT_PROPERTY, q.TEXT_LENGTH, q.TOUCHED, MEMORY_PROPERTY, "used_marks", "tombstones_marked"}
)


def to_json(value: Any, depth: int = 0) -> Any:
    """A driver value as plain JSON-safe data (nodes and relations as property maps).

    A value nested deeper than ``MAX_VALUE_DEPTH`` is refused (``deeper``), not
    walked: the server's own limit on it depends on how its JVM compiled its code."""
    from neo4j.graph import Node, Path, Relationship
    from neo4j.spatial import Point

    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, Node):
        # The memory's label and the class labels are scope, not type (classified.py).
        labels = sorted(
            n
            for n in value.labels
            if not is_memory_label(n)
            and n not in CLASS_LABELS
            and n not in MOVED_LABELS
            and n not in USED_LABELS
        )
        # The text index's fields are bookkeeping: a node reads as on the embedded store.
        shown = {k: v for k, v in value.items() if k not in INDEX_FIELDS}
        return {"_LABEL": labels[0] if labels else None, **to_json(shown, deeper(depth))}
    if isinstance(value, Relationship):
        return {"_LABEL": value.type, **to_json(dict(value.items()), deeper(depth))}
    if isinstance(value, Path):
        held = deeper(depth)
        return {
            "_nodes": [to_json(n, held) for n in value.nodes],
            "_rels": [to_json(r, held) for r in value.relationships],
        }
    if isinstance(value, Point):  # also a tuple: keep its reference system
        return {"srid": value.srid, "coordinates": [float(c) for c in value]}
    iso = getattr(value, "iso_format", None)
    if callable(iso):  # temporal values (a Duration is also a tuple: test this first)
        return str(iso())
    if isinstance(value, dict):
        held = deeper(depth)
        return {str(k): to_json(v, held) for k, v in value.items()}
    if isinstance(value, list | tuple):
        held = deeper(depth)
        return [to_json(v, held) for v in value]
    if isinstance(value, bytes | bytearray):
        return value.hex()
    return str(value)
