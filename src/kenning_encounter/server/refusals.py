"""Validation errors rewritten for the model that made the call.

Pydantic's own text ("1 validation error for searchArguments ... For further
information visit https://...") names the rule it applied, not what the caller
should send instead. Each error here becomes one clause in the house style:
the field's path (``entities[1].name``), what was wrong, the allowed names or
values where the set is closed, and the fix, with a close match offered for a
misspelt name. The tool's input schema, when given, supplies the names a level
allows and the type a field expects, so the message and the published schema
cannot disagree.

Values the caller sent are not repeated: a refusal is logged by the SDK at
INFO, and what a caller sends may be memory content. Field names are repeated,
since they are what the caller must correct.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any, Final, cast

from pydantic import ValidationError
from pydantic_core import ErrorDetails

MAX_CLAUSES: Final = 5
DESCRIPTION_CHARS: Final = 220

Schema = Mapping[str, Any]

_JSON_WORDS: Final[dict[str, str]] = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "array": "a list",
    "object": "an object",
    "null": "null",
}


def field_path(loc: Sequence[int | str]) -> str:
    """``("entities", 1, "name")`` as ``entities[1].name``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "arguments"


def close_match(name: str, allowed: Sequence[str]) -> str | None:
    found = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    if found:
        return found[0]
    lowered = {a.lower(): a for a in allowed}
    return lowered.get(name.lower())


def _resolve(schema: Schema, root: Schema) -> Schema:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        defs = cast(Mapping[str, Any], root.get("$defs", {}))
        return cast(Schema, defs.get(ref.removeprefix("#/$defs/"), {}))
    return schema


def _branches(schema: Schema, root: Schema) -> list[Schema]:
    """The non-null alternatives of a (possibly nullable) schema, references resolved."""
    schema = _resolve(schema, root)
    options = schema.get("anyOf") or schema.get("oneOf")
    if not isinstance(options, list):
        return [schema]
    found = [_resolve(cast(Schema, o), root) for o in cast(list[Any], options)]
    return [o for o in found if o.get("type") != "null"]


def _nullable(schema: Schema, root: Schema) -> bool:
    options = _resolve(schema, root).get("anyOf")
    return isinstance(options, list) and any(
        isinstance(o, dict) and cast(dict[str, Any], o).get("type") == "null"
        for o in cast(list[Any], options)
    )


def _step(here: Schema, root: Schema, part: int | str) -> Schema | None:
    """The schema of item or property ``part`` of a value ``here`` describes, if any."""
    for branch in _branches(here, root):
        if isinstance(part, int) and isinstance(branch.get("items"), dict):
            return cast(Schema, branch["items"])
        if isinstance(part, str) and part in branch.get("properties", {}):
            return cast(Schema, branch["properties"][part])
    return None


def schema_at(root: Schema, loc: Sequence[int | str]) -> Schema | None:
    """The schema of the value at ``loc``, or None when the schema does not reach it."""
    here: Schema | None = root
    for part in loc:
        here = _step(here, root, part)
        if here is None:
            return None
    return here


def _names_at(root: Schema, loc: Sequence[int | str]) -> list[str]:
    parent = schema_at(root, loc)
    if parent is None:
        return []
    names: list[str] = []
    for branch in _branches(parent, root):
        names += [
            n for n in cast(Mapping[str, Any], branch.get("properties", {})) if n not in names
        ]
    return names


def _expected(schema: Schema, root: Schema) -> str:
    words: list[str] = []
    for branch in _branches(schema, root):
        kind = branch.get("type")
        if not isinstance(kind, str):
            continue
        word = _JSON_WORDS.get(kind, kind)
        items = branch.get("items")
        if kind == "array" and isinstance(items, dict):
            inner = [
                _JSON_WORDS.get(str(b.get("type")), "")
                for b in _branches(cast(Schema, items), root)
            ]
            inner = [w.removeprefix("a ").removeprefix("an ") for w in inner if w]
            if inner:
                word = f"a list of {' or '.join(inner)}s"
        enum = branch.get("enum")
        if isinstance(enum, list) and enum:
            word = "one of " + ", ".join(str(v) for v in cast(list[Any], enum))
        words.append(word)
    if _nullable(schema, root):
        words.append("null (or leave it out)")
    return " or ".join(words)


def _got(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _described(schema: Schema | None, root: Schema) -> str:
    if schema is None:
        return ""
    text = _resolve(schema, root).get("description")
    if not isinstance(text, str) or not text:
        return ""
    text = " ".join(text.split())
    if len(text) > DESCRIPTION_CHARS:
        text = text[: DESCRIPTION_CHARS - 1].rstrip() + "…"
    return f" ({text})"


_LIMITS: Final[dict[str, str]] = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be greater than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "string_too_short": "must be at least {min_length} character(s) long",
    "string_too_long": "must be at most {max_length} characters long",
    "too_short": "must hold at least {min_length} item(s)",
    "too_long": "must hold at most {max_length} items",
}

_TYPE_ERRORS: Final = frozenset(
    {
        "string_type",
        "int_type",
        "int_parsing",
        "int_from_float",
        "float_type",
        "float_parsing",
        "bool_type",
        "bool_parsing",
        "list_type",
        "dict_type",
        "model_type",
        "model_attributes_type",
        "none_required",
    }
)


def clause(err: ErrorDetails, root: Schema) -> str:
    """One error as ``path: what was wrong; the fix``."""
    loc = err["loc"]
    path = field_path(loc)
    kind = err["type"]
    ctx = err.get("ctx") or {}
    if kind == "extra_forbidden":
        name = str(loc[-1])
        allowed = _names_at(root, loc[:-1])
        match = close_match(name, allowed) if allowed else None
        hint = f"; did you mean {match!r}?" if match else "; remove it."
        listed = f" Allowed here: {', '.join(allowed)}." if allowed else ""
        return f"{path}: unknown field{hint}{listed}"
    here = schema_at(root, loc)
    if kind == "missing":
        return f"{path}: required, and missing; add it{_described(here, root)}"
    if kind in _TYPE_ERRORS:
        expected = _expected(here, root) if here is not None else ""
        want = f"expected {expected}" if expected else "wrong type"
        return f"{path}: {want}, got {_got(err.get('input'))}{_described(here, root)}"
    if kind in ("literal_error", "enum"):
        allowed = [
            a.strip(" '\"") for a in str(ctx.get("expected", "")).replace(" or ", ", ").split(",")
        ]
        allowed = [a for a in allowed if a]
        value = err.get("input")
        match = close_match(value, allowed) if isinstance(value, str) else None
        hint = f"; did you mean {match!r}?" if match else "."
        return f"{path}: not an allowed value{hint} Allowed: {', '.join(allowed)}."
    template = _LIMITS.get(kind)
    if template is not None:
        try:
            return f"{path}: {template.format(**ctx)}"
        except KeyError:
            pass
    msg = err["msg"]
    if msg.startswith("Input should be "):
        msg = "must be " + msg.removeprefix("Input should be ")
    elif msg.startswith("Value error, "):
        msg = msg.removeprefix("Value error, ")
    return f"{path}: {msg[:1].lower()}{msg[1:]}"


def refusal_text(exc: ValidationError, schema: Schema | None = None) -> str:
    """Every error of ``exc`` in the house style, the first few in full."""
    root: Schema = schema or {}
    errors = exc.errors(include_url=False)
    clauses: list[str] = []
    for err in errors:
        text = clause(err, root)
        if text not in clauses:
            clauses.append(text)
    shown = clauses[:MAX_CLAUSES]
    more = len(clauses) - len(shown)
    tail = f" … and {more} more like these; fix these first." if more > 0 else ""
    return "\n".join(shown) + tail


def _takes_boolean(schema: Schema, root: Schema) -> bool:
    """Whether a JSON true or false is one of the values ``schema`` allows."""
    for branch in _branches(schema, root):
        kind = branch.get("type")
        enum = branch.get("enum")
        if kind == "boolean" or (kind is None and not isinstance(enum, list)):
            return True
        if isinstance(enum, list) and any(isinstance(v, bool) for v in cast(list[Any], enum)):
            return True
    return False


def boolean_refusal(
    value: Any, root: Schema, loc: tuple[int | str, ...] = (), here: Schema | None = None
) -> str | None:
    """The clause for the first true or false sent where the schema takes none, else None.

    JSON Schema holds a boolean to be no integer and no number, but pydantic's lax mode
    reads true as 1: ``as_of: true`` would read the memory at tick 1 and ``limit: true``
    give one hit, each answering a question the caller never asked. So the published
    schema is held here, before the models see the arguments. ``here``: the schema at
    ``loc``, handed down as the walk descends (a batch of thousands is walked once)."""
    if not isinstance(value, (bool, Mapping, list)):
        return None  # text, a number, null: nothing to say of it here
    if here is None:
        here = schema_at(root, loc) if loc else root
        if here is None:
            return None
    if isinstance(value, bool):
        if _takes_boolean(here, root):
            return None
        expected = _expected(here, root)
        want = f"expected {expected}" if expected else "wrong type"
        return f"{field_path(loc)}: {want}, got true or false{_described(here, root)}"
    items: list[tuple[int | str, Any]] = []
    if isinstance(value, Mapping):
        items = [(str(k), v) for k, v in cast(Mapping[Any, Any], value).items()]
    else:
        items = list(enumerate(cast(list[Any], value)))
    steps: dict[int | str, Schema | None] = {}  # a list's items share one schema
    for key, item in items:
        if not isinstance(item, (bool, Mapping, list)):
            continue
        kind: int | str = -1 if isinstance(key, int) else key
        if kind not in steps:
            steps[kind] = _step(here, root, key)
        below = steps[kind]
        if below is None:
            continue  # the schema does not reach it: the models refuse it by name
        found = boolean_refusal(item, root, (*loc, key), below)
        if found is not None:
            return found
    return None
