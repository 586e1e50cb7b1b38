"""read_cypher on Neo4j sees the memory's graph and nothing else in the database.

On the embedded store a query runs over a snapshot that holds the graph alone. A
Neo4j database also holds our bookkeeping nodes (``Meta``, ``NameKey``,
``SourceKey``) and may hold other applications' data, and a query cannot be given a
smaller database. So the query is scoped in two layers, each enough on its own:

1. "scope" (rewrite): every node pattern in a MATCH that names no label is given the
   label every node of the memory carries (``(n)`` reads as ``(n:KenningMemory)``),
   so ``MATCH (n)`` means the same on both stores;
2. "scope" (plan): in the EXPLAIN plan no operator may start from nodes outside those
   labels: no scan of every node, no lookup by internal id, no label scan, index seek
   or count of another label.

A node pattern the rewrite does not recognise is not widened by it: the plan check
then refuses the query unless that node was already bound, naming the fix.

When the caller is not granted some classes (memory/gates.py), the same rewrite holds
every node pattern to the nodes it may see: ``(n)`` reads as
``(n:KenningMemory&!KenningClass_phi...)``, one ``&!`` per class withheld (the labels
are classified.py's), in MATCH, OPTIONAL MATCH, subqueries, pattern predicates and
pattern comprehensions alike. The inner nodes of a variable-length relationship have no
pattern of their own, so ``-[r:T*1..3]->`` is written as the quantified path pattern
``((:…)-[r:T]->(:…)){1,3}``, whose every node is held the same way; ``nodes(p)``,
``relationships(p)``, ``startNode``/``endNode`` then see only what the patterns matched.
What no pattern reaches is refused while classes are withheld: ``shortestPath`` and
``allShortestPaths`` (their search cannot take the rewrite; ``SHORTEST 1`` can).
``gds.util.asNode(s)`` (a node by internal id: any node of the database) and
``db.index.fulltext.queryNodes`` (the index holds every memory's nodes) are refused
always: no label holds what they return to the memory. So are the procedures that
describe the database's schema (``db.labels``, ``db.relationshipTypes``,
``db.propertyKeys``, ``db.schema.*``): they list other memories' labels, which carry
their names, and other applications' schema.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.cypher_lexer import NEO4J, Token, tokenize
from kenning_encounter.store.neo4j.classified import class_label, moved_label, used_label
from kenning_encounter.store.neo4j.cypher import SCHEMA_PROCEDURES, plan_calls
from kenning_encounter.store.neo4j.namespace import BASE_LABEL
from kenning_encounter.vocabulary import NODE_TYPES


def memory_labels(label: str) -> frozenset[str]:
    """The memory's node labels: every authored type, the spine's (Locus, Encounter),
    and the label all of them carry (``label``: this memory's, namespace.py). One label
    (not a disjunction of nine) keeps planning cheap: the planner's search over a cross
    product of unions does not end in time. Another memory's label is not among them."""
    return frozenset(NODE_TYPES) | {label}


# Words that end a MATCH's pattern list when they stand at its bracket depth.
_CLAUSE_WORDS: Final = frozenset(
    {
        "WHERE",
        "RETURN",
        "WITH",
        "MATCH",
        "OPTIONAL",
        "UNWIND",
        "CALL",
        "ORDER",
        "SKIP",
        "OFFSET",
        "LIMIT",
        "UNION",
        "USING",
        "YIELD",
        "FINISH",
        "FILTER",
        "LET",
    }
)
_PATH_FUNCTIONS: Final = frozenset({"SHORTESTPATH", "ALLSHORTESTPATHS"})
_SUBQUERY_WORDS: Final = frozenset({"EXISTS", "COUNT", "COLLECT"})
_OPEN: Final = frozenset({"(", "[", "{"})
_CLOSE: Final = frozenset({")", "]", "}"})


def _is(token: Token | None, *texts: str) -> bool:
    return token is not None and token.kind in ("punct", "word") and token.text in texts


def _closing(tokens: list[Token]) -> dict[int, int]:
    """Each bracket's index -> the index of the one that closes it."""
    found: dict[int, int] = {}
    stack: list[int] = []
    for i, tok in enumerate(tokens):
        if tok.kind != "punct":
            continue
        if tok.text in _OPEN:
            stack.append(i)
        elif tok.text in _CLOSE and stack:
            found[stack.pop()] = i
    return found


def _opens_relationship(tokens: list[Token], i: int) -> bool:
    """Whether a relationship pattern starts at token ``i`` (``-[``, ``--``, ``-->``, ``<-``)."""
    nxt = tokens[i + 1] if i + 1 < len(tokens) else None
    return (_is(tokens[i], "-") and _is(nxt, "[", "-", "->")) or (
        _is(tokens[i], "<-") and _is(nxt, "[", "-")
    )


def _pattern_starts(tokens: list[Token]) -> set[int]:
    """Indexes of the ``(`` tokens that open a node pattern: every element of a MATCH,
    and, anywhere, a node a relationship pattern follows (a pattern predicate's or a
    pattern comprehension's first node)."""
    closing = _closing(tokens)
    starts = {
        i
        for i, close in closing.items()
        if _is(tokens[i], "(")
        and close + 1 < len(tokens)
        and _opens_relationship(tokens, close + 1)
    }
    depth = 0
    match_depth: int | None = None  # bracket depth of the MATCH whose patterns we are in
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else None
        before = tokens[i - 2] if i > 1 else None
        at_list_depth = match_depth is not None and depth == match_depth
        if tok.kind == "word" and at_list_depth and tok.text in _CLAUSE_WORDS:
            match_depth = None
        if tok.kind == "word" and tok.text == "MATCH":
            match_depth = depth
        if _is(tok, "("):
            in_list = match_depth is not None and depth == match_depth
            if (
                _is(prev, "MATCH")
                or (_is(prev, "{") and _is(before, *_SUBQUERY_WORDS))
                or (in_list and _is(prev, ",", "="))
                or _is(prev, "->")
                or (_is(prev, "-") and _is(before, "]", "-", "<-"))
                or (_is(prev, "(") and (i - 1 in starts or _is(before, *_PATH_FUNCTIONS)))
            ):
                starts.add(i)
        if tok.kind == "punct" and tok.text in _OPEN:
            depth += 1
        elif tok.kind == "punct" and tok.text in _CLOSE:
            depth -= 1
            if match_depth is not None and depth < match_depth:
                match_depth = None
    return starts


_WORD_AT: Final = re.compile(r"\w+")
_EXPRESSION_SYMBOLS: Final = frozenset({"|", "&", "!", "%"})


def _label_name(query: str, tok: Token) -> str:
    """A label as written (a word token's text is upper-cased)."""
    if tok.kind == "name":
        return tok.text
    found = _WORD_AT.match(query, tok.pos)
    return found.group(0) if found else tok.text


Edit = tuple[int, int, str]  # replace query[start:end] with the text (an insert: start == end)


def _node_edits(
    query: str, tokens: list[Token], start: int, label: str, hidden: str = ""
) -> list[Edit]:
    """What the node pattern opened at ``start`` needs to read the memory alone (and,
    with ``hidden`` (``&!KenningClass_phi``...), none of the withheld nodes): the edits,
    by position. None when the ``(`` opens no node pattern (a group)."""
    i = start + 1
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    variable = i < len(tokens) and tokens[i].kind in ("word", "name")
    # ``(n IS Concept)`` names labels with IS; ``(is)`` is a variable called is.
    if variable and (not _is(tokens[i], "WHERE", "IS") or _is(after, ")", "{", "WHERE", ":")):
        i += 1  # the variable
    if i >= len(tokens):
        return []
    nxt = tokens[i]
    if _is(nxt, ")", "{", "WHERE"):
        # colon syntax mixes with either kind; a negation needs the expression kind
        return [(nxt.pos, nxt.pos, f":{label}{hidden} ")]
    if not _is(nxt, ":", "IS"):
        return []  # not a node pattern
    depth, end = 0, len(tokens)
    for k in range(i + 1, len(tokens)):
        tok = tokens[k]
        if _is(tok, "("):
            depth += 1
        elif _is(tok, ")") and depth > 0:
            depth -= 1
        elif depth == 0 and (_is(tok, ")", "{", "WHERE") or tok.kind == "param"):
            end = k
            break
    expression = tokens[i + 1 : end]
    if end >= len(tokens) or not expression:
        return []
    for tok in expression:
        if tok.kind in ("word", "name") and _label_name(query, tok) not in memory_labels(label):
            raise _scope(f"{_label_name(query, tok)} is not a label of the memory")
    close = tokens[end].pos
    if _is(nxt, "IS") or any(
        t.kind == "punct" and t.text in _EXPRESSION_SYMBOLS for t in expression
    ):
        first = expression[0].pos
        return [(first, first, "("), (close, close, f")&{label}{hidden} ")]
    if not hidden:
        return [(close, close, f":{label} ")]  # colon conjunction: one more colon label
    # A query may not mix colon conjunction with expression symbols: A:B reads as A&B.
    ands = [(t.pos, t.pos + 1, "&") for t in expression if _is(t, ":")]
    return [*ands, (close, close, f"&{label}{hidden} ")]


def _var_length_edits(
    query: str, tokens: list[Token], closing: dict[int, int], label: str, hidden: str
) -> list[Edit]:
    """Every variable-length relationship as a quantified path pattern whose nodes are
    held as every node pattern is: ``-[r:T*1..3]->`` reads as
    ``((:M&!C)-[r:T]->(:M&!C)){1,3}``, so no inner node is one the caller may not see."""
    edits: list[Edit] = []
    node = f"(:{label}{hidden})"
    for i, tok in enumerate(tokens):
        if not (_is(tok, "[") and i > 0 and _is(tokens[i - 1], "-", "<-")):
            continue
        close = closing.get(i)
        if close is None or close + 1 >= len(tokens) or not _is(tokens[close + 1], "-", "->"):
            continue
        depth, star = 0, None
        for k in range(i + 1, close):
            if _is(tokens[k], *_OPEN):
                depth += 1
            elif _is(tokens[k], *_CLOSE):
                depth -= 1
            elif depth == 0 and _is(tokens[k], "*"):
                star = k
                break
        if star is None:
            continue
        k = star + 1
        while k < close and (tokens[k].kind == "number" or _is(tokens[k], "..")):
            k += 1
        bounds = query[tokens[star].pos + 1 : tokens[k].pos].replace(" ", "")
        low, dots, high = bounds.partition("..")
        if not dots:
            low = high = low  # *3 is exactly three; * alone, one or more
        quantifier = "{" + (low or "1") + "," + high + "}"
        inner = (
            query[tokens[i].pos + 1 : tokens[star].pos] + query[tokens[k].pos : tokens[close].pos]
        )
        left, right = tokens[i - 1], tokens[close + 1]
        text = f" ({node}{left.text}[{inner.strip()}]{right.text}{node}){quantifier} "
        edits.append((left.pos, right.pos + len(right.text), text))
    return edits


def _unheld(tokens: list[Token]) -> None:
    """Refuse what no pattern rewrite reaches into while classes are withheld."""
    for tok in tokens:
        if _is(tok, "SHORTESTPATH", "ALLSHORTESTPATHS"):
            raise ReadOnlyViolation(
                "shortestPath() and allShortestPaths() are not served while this server "
                "withholds classified nodes: their search cannot be held to the nodes the "
                "caller may see. Write MATCH p = SHORTEST 1 (a)-[*]-(b) (or ALL SHORTEST) "
                "instead, or grant the classes",
                layer="gate",
            )


# The planner's work grows with the product of the label and type alternatives of a
# query's patterns, and a plan is made before the transaction's timeout starts: nine
# labels on each of six nodes took it 28 s here, whatever the timeout. 4,096 plans in
# well under a second.
MAX_ALTERNATIVES: Final = 4_096


def _widths(tokens: list[Token], starts: set[int]) -> list[int]:
    """How many alternatives each node and relationship pattern's labels or types offer."""
    widths: list[int] = []
    for i, tok in enumerate(tokens):
        prev = tokens[i - 1] if i > 0 else None
        is_node = i in starts
        is_relationship = _is(tok, "[") and _is(prev, "-", "<-")
        if not (is_node or is_relationship):
            continue
        width, depth = 1, 0
        for inner in tokens[i + 1 :]:
            if _is(inner, *_OPEN):
                depth += 1
            elif _is(inner, *_CLOSE):
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and _is(inner, "WHERE", "*"):
                break
            elif depth == 0 and _is(inner, "|"):
                width += 1
        widths.append(width)
    return widths


def _check_alternatives(tokens: list[Token], starts: set[int]) -> None:
    product = 1
    for width in _widths(tokens, starts):
        product *= width
        if product > MAX_ALTERNATIVES:
            raise ReadOnlyViolation(
                f"the patterns' label and type alternatives multiply past {MAX_ALTERNATIVES:,} "
                "ways to plan the query; name fewer alternatives (A|B|C) per node or "
                "relationship, or split the query",
                layer="size",
            )


def hidden_labels(withheld: frozenset[str]) -> str:
    """The negations a node pattern takes for the withheld classes (``&!KenningClass_phi``),
    and for the nodes whose stored status a node of one may have moved
    (``&!KenningMoved_phi``: classified.py says why)."""
    return "".join(
        f"&!{class_label(c)}&!{moved_label(c)}&!{used_label(c)}" for c in sorted(withheld)
    )


def scope_nodes(query: str, label: str = BASE_LABEL, withheld: frozenset[str] = frozenset()) -> str:
    """The query with every node pattern held to the memory's nodes: the memory's label
    added to what the pattern names (or given to a pattern that names none), and a label
    that is not the memory's refused; with ``withheld`` classes, held to the nodes that
    carry none of them too (the module's docstring says how).

    Refused (layer "size") when its patterns' alternatives would take the planner
    longer than any timeout can stop."""
    tokens = tokenize(query, NEO4J)
    starts = _pattern_starts(tokens)
    _check_alternatives(tokens, starts)
    hidden = hidden_labels(withheld)
    edits = [e for start in starts for e in _node_edits(query, tokens, start, label, hidden)]
    if hidden:
        _unheld(tokens)
        edits += _var_length_edits(query, tokens, _closing(tokens), label, hidden)
    out: list[str] = []
    last = 0
    for start, end, text in sorted(edits):
        out += [query[last:start], text]
        last = end
    out.append(query[last:])
    return "".join(out)


def _scope(reason: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(
        f"{reason}; read_cypher reads the memory's nodes only: start each pattern at a "
        "node of the memory (a label such as :Concept, or none at all in a MATCH)",
        layer="scope",
    )


_LABELS_IN_DETAIL: Final = re.compile(r":\s*([A-Za-z_`][\w`|&!%()]*)")
_NAME: Final = re.compile(r"[A-Za-z_]\w*")
_NEGATED: Final = re.compile(r"!\s*[A-Za-z_]\w*")
_EVERY_NODE: Final = ("AllNodesScan", "PartitionedAllNodesScan")
_BY_INTERNAL_ID: Final = ("NodeByIdSeek", "NodeByElementIdSeek")


def _labels_named(detail: str) -> set[str] | None:
    """The labels a leaf operator's detail names (``n:Concept|Note(id) WHERE …``)."""
    found = _LABELS_IN_DETAIL.search(detail)
    if found is None:
        return None
    expression = found.group(1).split("(", 1)[0].replace("`", "")
    # A negated label (the gate's &!KenningClass_phi) narrows a scan; it never starts one.
    return set(_NAME.findall(_NEGATED.sub("", expression))) or None


# What reaches a node by no pattern (scope.py's docstring): an internal id names any node
# of the database, and the text index holds every memory's nodes, so no label holds what
# they return to the memory. Refused always; while classes are withheld, as the gate.
_UNHELD_CALLS: Final = frozenset(
    {"gds.util.asnode", "gds.util.asnodes", "db.index.fulltext.querynodes"}
)
# What describes the whole database's schema (cypher.SCHEMA_PROCEDURES): every label,
# relationship type and property key in it, other memories' (whose labels carry their
# names) and other applications'. Read-only, yet no label holds what they list to the
# memory: refused always.
_MEMORY_SCHEMA: Final = (
    "The memory's node types and relations are its vocabulary (the manual lists them); "
    "to see what its nodes carry, ask them: MATCH (n) UNWIND labels(n) AS label RETURN "
    "DISTINCT label, or MATCH ()-[r]->() RETURN DISTINCT type(r), or MATCH (n) UNWIND "
    "keys(n) AS key RETURN DISTINCT key"
)


def check_scope(plan: Mapping[str, Any], label: str = BASE_LABEL, *, held: bool = False) -> None:
    """Refuse a plan that could start from a node outside the memory's labels, or that
    reaches a node by no pattern at all (``held``: classes are withheld, said as such)."""
    allowed = memory_labels(label)
    stack: list[Mapping[str, Any]] = [plan]
    while stack:
        op = stack.pop()
        stack += list(op.get("children") or [])
        name = str(op.get("operatorType", "")).split("@", 1)[0]
        detail = str((op.get("args") or {}).get("Details", ""))
        for value in (op.get("args") or {}).values():
            for called in plan_calls(str(value)):
                if called in SCHEMA_PROCEDURES:
                    raise _scope(
                        f"{called} describes the whole database (other memories' labels "
                        f"and other applications' schema), not the memory. {_MEMORY_SCHEMA}"
                    )
                if called not in _UNHELD_CALLS:
                    continue
                if held:
                    raise ReadOnlyViolation(
                        f"{called} is not served while this server withholds "
                        "classified nodes: it reaches nodes no pattern holds back. "
                        "Use the search tool, MATCH by id property, or grant the classes",
                        layer="gate",
                    )
                raise _scope(
                    f"{called} reaches nodes of the whole database (other memories', "
                    "bookkeeping, other applications'), which no label holds to the "
                    "memory. Use the search tool for text, MATCH by id property for a node"
                )
        if name in _EVERY_NODE:
            raise _scope("the plan reads every node in the database")
        if name in _BY_INTERNAL_ID:
            raise _scope(
                "the plan looks a node up by its internal id; look nodes up by their "
                "id property instead ({id: 'c_…'})"
            )
        leaf = name.startswith(("Node", "PartitionedNode")) or "NodeByLabels" in name
        if leaf and ("Label" in name or "Index" in name or "CountStore" in name):
            labels = _labels_named(detail)
            if labels is None:
                raise _scope(f"the plan's {name} names no label of the memory")
            foreign = sorted(labels - allowed)
            if foreign:
                raise _scope(f"{', '.join(foreign)} is not a label of the memory")
