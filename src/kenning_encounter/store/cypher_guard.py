"""The token gate in front of read_cypher, shared by every backend with per-dialect rules.

The query is tokenized as its engine reads it (``cypher_lexer``) and judged by
token, never by substring. Two layers live here, each refusing with its name on
the error (``ReadOnlyViolation.layer``):

- "size": length, nesting depth (brackets and CASE) and token count, checked
  before any engine parses the text. LadybugDB segfaults on about 1,000 nested
  brackets and its parser grows exponentially with nested CASE, both beyond
  the reach of a query timeout, so these bounds are what keeps it up;
- "gate": one statement, no write, transaction, file or admin clause, no CALL
  off the allow-list, no function off the dialect's list, and range() bounded.

Parameters are checked here too ("params"). Each backend adds its own engine
layers behind these (read-only transaction, EXPLAIN, timeouts).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast

from kenning_encounter.errors import ReadOnlyViolation
from kenning_encounter.store.cypher_lexer import LADYBUG, Dialect, Token, tokenize

MAX_QUERY_CHARS: Final = 20_000
MAX_DEPTH: Final = 24  # brackets, parentheses, braces and CASE, together
MAX_CASE_DEPTH: Final = 6  # LadybugDB's parse time roughly doubles with each level
MAX_TOKENS: Final = 4_000
MAX_RANGE_VALUES: Final = 1_000_000  # the product of every range() span in a query
MAX_PARAM_DEPTH: Final = 8
MAX_PARAM_CHARS: Final = 200_000
# A value the query builds as it runs (reduce over a range) may nest past any bracket
# count in its text; each level is a step of recursion for whoever walks it.
MAX_VALUE_DEPTH: Final = 100

# Clauses that write, administer, control transactions or touch files, in either dialect.
FORBIDDEN_KEYWORDS: Final = frozenset(
    {
        "CREATE", "MERGE", "SET", "DELETE", "DETACH", "REMOVE", "DROP", "ALTER", "INSERT",
        "COPY", "EXPORT", "IMPORT", "LOAD", "ATTACH", "INSTALL", "UNINSTALL", "USE", "UPDATE",
        "BEGIN", "COMMIT", "ROLLBACK", "CHECKPOINT", "TRANSACTION", "TRANSACTIONS",
        "FOREACH", "GRANT", "REVOKE", "DENY", "START", "STOP", "TERMINATE", "ENABLE",
        "DISABLE", "RENAME", "FINISH", "SHOW", "MACRO", "COMMENT", "ANALYZE", "FORCE",
        "EXPLAIN", "PROFILE", "CYPHER",
    }
)  # fmt: skip

# Bare words that open a parenthesis without being a function call.
_NOT_CALLS: Final = frozenset(
    {
        "MATCH", "OPTIONAL", "WHERE", "RETURN", "WITH", "UNWIND", "AS", "AND", "OR", "XOR",
        "NOT", "IN", "IS", "CASE", "WHEN", "THEN", "ELSE", "UNION", "ALL", "DISTINCT", "ON",
        "YIELD", "CONTAINS", "STARTS", "ENDS", "BY", "SKIP", "LIMIT", "ORDER", "SHORTEST",
        "ANY", "NONE", "SINGLE", "EXISTS", "COUNT", "COLLECT",
    }
)  # fmt: skip
_OPEN: Final = {"(": ")", "[": "]", "{": "}"}


@dataclass(frozen=True)
class Rules:
    """What one dialect admits: its lexer, procedures and functions (names lowercase)."""

    dialect: Dialect
    procedures: frozenset[str]
    functions: frozenset[str]
    # Namespaced functions admitted by prefix (Neo4j's "date.", "gds.similarity.").
    function_namespaces: tuple[str, ...] = ()
    # Neo4j's built-in (un-namespaced) functions all compute values and touch nothing.
    plain_functions_are_builtin: bool = False


def _gate(reason: str, *, writes: bool = False) -> ReadOnlyViolation:
    return ReadOnlyViolation(reason, layer="gate", writes=writes)


def _size(reason: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(reason, layer="size")


def check_size(query: str) -> None:
    """The "size" layer's first half: what can be judged before tokenizing."""
    if not query.strip():
        raise _size("the query is empty")
    if len(query) > MAX_QUERY_CHARS:
        raise _size(f"the query is longer than {MAX_QUERY_CHARS} characters; narrow it")


def check_shape(tokens: Sequence[Token]) -> None:
    """The "size" layer on the token stream: token count and nesting depth."""
    if len(tokens) > MAX_TOKENS:
        raise _size(f"the query has more than {MAX_TOKENS} tokens; split it into smaller reads")
    closers: list[str] = []
    cases = 0
    for tok in tokens:
        if tok.kind == "punct" and tok.text in _OPEN:
            closers.append(_OPEN[tok.text])
        elif tok.kind == "punct" and tok.text in (")", "]", "}"):
            if not closers or closers.pop() != tok.text:
                raise _gate(f"an unbalanced {tok.text!r} (at character {tok.pos})")
        elif tok.kind == "word" and tok.text == "CASE":
            cases += 1
            closers.append("END")
            if cases > MAX_CASE_DEPTH:
                raise _size(f"CASE nested deeper than {MAX_CASE_DEPTH} levels; flatten it")
        elif tok.kind == "word" and tok.text == "END" and closers and closers[-1] == "END":
            closers.pop()
            cases -= 1
        if len(closers) > MAX_DEPTH:
            raise _size(
                f"brackets and CASE nested deeper than {MAX_DEPTH} levels "
                f"(at character {tok.pos}); flatten the expression"
            )
    if closers:
        raise _gate(f"an unclosed bracket or CASE (expected {closers[-1]!r})")


def _is_punct(tokens: Sequence[Token], i: int, text: str) -> bool:
    return 0 <= i < len(tokens) and tokens[i].kind == "punct" and tokens[i].text == text


def _is_word(tokens: Sequence[Token], i: int, text: str) -> bool:
    return 0 <= i < len(tokens) and tokens[i].kind == "word" and tokens[i].text == text


def _callable_before(tokens: Sequence[Token], paren: int) -> tuple[int, str, bool] | None:
    """For a '(' at ``paren``: (start index, dotted name, name was one bare word) or None."""
    j = paren - 1
    if j < 0 or tokens[j].kind not in ("word", "name"):
        return None
    parts = [tokens[j].text]
    while _is_punct(tokens, j - 1, ".") and j - 2 >= 0 and tokens[j - 2].kind in ("word", "name"):
        j -= 2
        parts.append(tokens[j].text)
    bare = len(parts) == 1 and tokens[j].kind == "word"
    return j, ".".join(reversed(parts)).lower(), bare


def _check_keywords(tokens: Sequence[Token]) -> None:
    for i, tok in enumerate(tokens):
        if tok.kind != "word" or tok.text not in FORBIDDEN_KEYWORDS:
            continue
        if _is_punct(tokens, i - 1, ".") or _is_punct(tokens, i + 1, "."):
            continue  # a property, or what owns one: n.set, show.name, db.create...
        if _is_punct(tokens, i + 1, ":") and any(
            _is_punct(tokens, i - 1, p) for p in ("{", ",", "(", "[")
        ):
            continue  # a map key or a pattern variable: {set: 1}, (show:Concept)
        raise _gate(f"{tok.text} is not allowed (at character {tok.pos})", writes=True)


def _check_calls(tokens: Sequence[Token], rules: Rules) -> None:
    for i in range(len(tokens)):
        if _is_word(tokens, i, "CALL"):
            j = i + 1
            while j < len(tokens) and (
                tokens[j].kind in ("word", "name") or _is_punct(tokens, j, ".")
            ):
                j += 1
            if j == i + 1 or not _is_punct(tokens, j, "("):
                raise _gate(
                    "CALL must name an allowed procedure and call it with (...); "
                    "subqueries and settings are not allowed",
                    writes=True,
                )
        if not _is_punct(tokens, i, "("):
            continue
        found = _callable_before(tokens, i)
        if found is None:
            continue
        start, name, bare = found
        if bare and tokens[start].text in _NOT_CALLS:
            continue
        if _is_word(tokens, start - 1, "CALL"):
            if name not in rules.procedures:
                raise _gate(
                    f"procedure {name!r} is not on the read-only allow-list "
                    f"({', '.join(sorted(rules.procedures)) or 'none'})",
                    writes=True,
                )
            continue
        if name in rules.functions or name.startswith(rules.function_namespaces):
            continue
        if rules.plain_functions_are_builtin and "." not in name:
            continue
        raise _gate(
            f"function {name!r} is not on this store's read-only allow-list "
            "(functions that read files, change settings or sequences, or build "
            "unbounded values are refused)",
            writes=True,
        )


def _int_arg(arg: Sequence[Token], params: Mapping[str, Any]) -> int | None:
    sign = 1
    if len(arg) == 2 and _is_punct(arg, 0, "-"):
        sign, arg = -1, arg[1:]
    if len(arg) != 1:
        return None
    tok = arg[0]
    if tok.kind == "number" and tok.text.isascii() and tok.text.isdigit():
        return sign * int(tok.text)
    if tok.kind == "param":
        value = params.get(tok.text)
        if isinstance(value, int) and not isinstance(value, bool):
            return sign * value
    return None


def _check_ranges(tokens: Sequence[Token], params: Mapping[str, Any]) -> None:
    """range() builds its whole list at once, out of reach of any timeout: bound it here."""
    budget = 1
    for i, tok in enumerate(tokens):
        if not (tok.kind == "word" and tok.text == "RANGE" and _is_punct(tokens, i + 1, "(")):
            continue
        if _is_punct(tokens, i - 1, "."):
            continue
        args: list[list[Token]] = [[]]
        depth = 0
        for t in tokens[i + 2 :]:
            if t.kind == "punct" and t.text in _OPEN:
                depth += 1
            elif t.kind == "punct" and t.text in (")", "]", "}"):
                if depth == 0:
                    break
                depth -= 1
            if depth == 0 and _is_punct([t], 0, ","):
                args.append([])
            else:
                args[-1].append(t)
        values = [_int_arg(a, params) for a in args]
        if len(values) not in (2, 3) or any(v is None for v in values):
            raise _gate(
                "range() takes two or three integer literals or $parameters here "
                f"(at character {tok.pos}); compute bounds before the call"
            )
        lo, hi, step = [*values, 1][:3]
        assert lo is not None and hi is not None and step is not None
        if step == 0:
            raise _gate("range() with a step of 0")
        budget *= max(0, (hi - lo) // step + 1)
        if budget > MAX_RANGE_VALUES:
            raise _gate(
                f"range() would build more than {MAX_RANGE_VALUES:,} values (the product of "
                "every range in the query); narrow the bounds"
            )


def check_read_only(
    query: str, rules: Rules, params: Mapping[str, Any] | None = None
) -> list[Token]:
    """The "size" and "gate" layers; the tokens of an admitted query."""
    check_size(query)
    tokens = tokenize(query, rules.dialect)
    check_shape(tokens)
    if not tokens:
        raise _gate("the query holds only comments")
    for tok in tokens[:-1]:
        if tok.kind == "punct" and tok.text == ";":
            raise _gate(f"only one statement is allowed (a ';' at character {tok.pos})")
    _check_keywords(tokens)
    _check_calls(tokens, rules)
    _check_ranges(tokens, params or {})
    return tokens


def deeper(depth: int) -> int:
    """The depth of what a container at ``depth`` of a returned row holds; past
    ``MAX_VALUE_DEPTH``, the refusal (each store's conversion of a row calls it)."""
    if depth >= MAX_VALUE_DEPTH:
        raise ReadOnlyViolation(
            f"a value it returns nests lists or maps deeper than {MAX_VALUE_DEPTH} levels; "
            "return its parts (UNWIND it, or index into it) instead",
            layer="size",
        )
    return depth + 1


def _params(reason: str) -> ReadOnlyViolation:
    return ReadOnlyViolation(reason, layer="params", field="params")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


def _check_value(path: str, value: object, depth: int, homogeneous: bool) -> None:
    if depth > MAX_PARAM_DEPTH:
        raise _params(f"{path} is nested deeper than {MAX_PARAM_DEPTH} levels; flatten it")
    if isinstance(value, float) and not math.isfinite(value):
        raise _params(f"{path} is {value}; give a finite number")
    if isinstance(value, int) and not isinstance(value, bool) and not -(2**63) <= value < 2**63:
        raise _params(f"{path} does not fit in a 64-bit integer")
    if isinstance(value, dict):
        items: dict[object, object] = cast(dict[object, object], value)
        for key, item in items.items():
            if not isinstance(key, str):
                raise _params(f"{path} has a key that is not a string")
            _check_value(f"{path}.{key}", item, depth + 1, homogeneous)
    elif isinstance(value, list | tuple):
        seq: Sequence[object] = cast(Sequence[object], value)
        kinds = {_kind(v) for v in seq} - {"null"}
        if homogeneous and not seq:
            raise _params(f"{path} is an empty list, which this store cannot type; leave it out")
        if homogeneous and len(kinds) > 1:
            raise _params(
                f"{path} mixes {', '.join(sorted(kinds))}; this store needs every item of a "
                "list to be of one type (split it into one list per type)"
            )
        keysets = {
            tuple(sorted(str(k) for k in cast(dict[object, object], v)))
            for v in seq
            if isinstance(v, dict)
        }
        if homogeneous and len(keysets) > 1:
            raise _params(f"{path} holds maps with different keys; give each the same keys")
        for n, item in enumerate(seq):
            _check_value(f"{path}[{n}]", item, depth + 1, homogeneous)
    elif not (value is None or isinstance(value, bool | int | float | str)):
        raise _params(
            f"{path} is a {type(value).__name__}; use strings, numbers, booleans, lists and maps"
        )


def check_params(params: Mapping[str, Any] | None, *, homogeneous_lists: bool) -> None:
    """The "params" layer: JSON values only, bounded, and typeable by the engine."""
    if not params:
        return
    import json

    try:
        size = len(json.dumps(params))
    except (TypeError, ValueError) as exc:
        raise _params(f"the values are not plain JSON ({exc})") from None
    if size > MAX_PARAM_CHARS:
        raise _params(f"the values are longer than {MAX_PARAM_CHARS} characters as JSON")
    for key, value in params.items():
        if not key or key.startswith("_kenning"):
            raise _params(f"{key!r} is not a usable parameter name; use a plain word")
        _check_value(key, value, 1, homogeneous_lists)


# LadybugDB's pure functions (its show_functions() list, less those that read files,
# change sequences or settings, describe storage, or build unbounded strings).
_LADYBUG_FUNCTIONS: Final = frozenset(
    """
    abs acos all any array_append array_cat array_concat array_contains
    array_cosine_similarity array_cross_product array_distance array_dot_product
    array_extract array_has array_indexof array_inner_product array_position array_prepend
    array_push_back array_push_front array_slice array_squared_distance array_value asin
    atan atan2 avg bitshift_left bitshift_right bitwise_and bitwise_or bitwise_xor blob
    cardinality cast cbrt ceil ceiling century coalesce collect concat concat_ws contains
    cos cot count count_if current_date current_timestamp date datepart datetrunc
    date_part date_trunc dayname decode degrees duration element_at encode ends_with
    end_node epoch_ms equals even exists factorial floor gamma gen_random_uuid greatest hash
    id ifnull initcap interval is_acyclic is_trail keys label labels last_day lcase least
    left length levenshtein lgamma list_any_value list_append list_cat list_concat
    list_contains list_creation list_distinct list_element list_extract list_filter list_has
    list_has_all list_has_any list_indexof list_max list_min list_position list_prepend
    list_product list_reduce list_reverse list_reverse_sort list_slice list_sort list_sum
    list_to_string list_transform list_unique ln log log10 log2 lower ltrim make_date map
    map_extract map_keys map_values max md5 min monthname negate nodes none not_equals nullif
    octet_length offset percentilecont percentiledisc pi pow prefix properties radians random
    range regexp_extract regexp_extract_all regexp_full_match regexp_matches regexp_replace
    regexp_split_to_array relationships rels replace reverse right round rowid rtrim sha256
    sign sin single size split_part sqrt starts_with start_node string string_split
    string_to_array struct_extract struct_pack str_split substr substring suffix sum tan
    timestamp time_bucket tolower toupper to_blob to_bool to_date to_days to_double
    to_epoch_ms to_float to_hours to_int128 to_int16 to_int32 to_int64 to_int8 to_interval
    to_microseconds to_milliseconds to_minutes to_months to_seconds to_serial to_string
    to_timestamp to_uint128 to_uint16 to_uint32 to_uint64 to_uint8 to_uuid to_years trim
    typeof ucase union_extract union_tag union_value upper uuid
    """.split()  # noqa: SIM905 - one word per function reads better than 250 quoted ones
)
# Table functions that only describe the schema.
_LADYBUG_PROCEDURES: Final = frozenset(
    {"show_tables", "table_info", "db_version", "show_connection"}
)

LADYBUG_RULES: Final = Rules(
    dialect=LADYBUG, procedures=_LADYBUG_PROCEDURES, functions=_LADYBUG_FUNCTIONS
)
