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

A node pattern the rewrite does not recognise (the first node of a pattern
predicate, say) is not widened by it: the plan check then refuses the query unless
that node was already bound, naming the fix.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.cypher_lexer import NEO4J, Token, tokenize
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


def _pattern_starts(tokens: list[Token]) -> set[int]:
    """Indexes of the ``(`` tokens that open a pattern element of a MATCH."""
    starts: set[int] = set()
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


def _node_edits(query: str, tokens: list[Token], start: int, label: str) -> list[tuple[int, str]]:
    """What the node pattern opened at ``start`` needs to read the memory alone: text to
    insert, by position. None when the ``(`` opens no node pattern (a group)."""
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
        return [(nxt.pos, f":{label} ")]  # colon syntax mixes with either kind
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
        return [(expression[0].pos, "("), (close, f")&{label} ")]
    return [(close, f":{label} ")]  # colon conjunction: one more colon label


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


def scope_nodes(query: str, label: str = BASE_LABEL) -> str:
    """The query with every MATCH node pattern held to the memory's nodes: the memory's
    label added to what the pattern names (or given to a pattern that names none), and
    a label that is not the memory's refused.

    Refused (layer "size") when its patterns' alternatives would take the planner
    longer than any timeout can stop."""
    tokens = tokenize(query, NEO4J)
    starts = _pattern_starts(tokens)
    _check_alternatives(tokens, starts)
    edits = sorted(edit for start in starts for edit in _node_edits(query, tokens, start, label))
    out: list[str] = []
    last = 0
    for pos, text in edits:
        out += [query[last:pos], text]
        last = pos
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
_EVERY_NODE: Final = ("AllNodesScan", "PartitionedAllNodesScan")
_BY_INTERNAL_ID: Final = ("NodeByIdSeek", "NodeByElementIdSeek")


def _labels_named(detail: str) -> set[str] | None:
    """The labels a leaf operator's detail names (``n:Concept|Note(id) WHERE …``)."""
    found = _LABELS_IN_DETAIL.search(detail)
    if found is None:
        return None
    expression = found.group(1).split("(", 1)[0]
    return set(_NAME.findall(expression.replace("`", ""))) or None


def check_scope(plan: Mapping[str, Any], label: str = BASE_LABEL) -> None:
    """Refuse a plan that could start from a node outside the memory's labels."""
    allowed = memory_labels(label)
    stack: list[Mapping[str, Any]] = [plan]
    while stack:
        op = stack.pop()
        stack += list(op.get("children") or [])
        name = str(op.get("operatorType", "")).split("@", 1)[0]
        detail = str((op.get("args") or {}).get("Details", ""))
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
