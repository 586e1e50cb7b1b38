"""Shape checks on requests, before anything touches the store.

Each refusal names the field (a path into the request such as
``entities[2].status``), the value and what is allowed.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from typing import Any, Final

from kenning_encounter.errors import InvalidInput, ProcessTypeForbidden, UnknownField, UnknownType
from kenning_encounter.memory import classification
from kenning_encounter.memory.models import EntityIn, RelationIn
from kenning_encounter.plaintext import describe, name_fault, text_fault
from kenning_encounter.textproc_time import OffCalendar, utc_instant
from kenning_encounter.vocabulary import (
    AUTHORED_NODE_TYPES,
    AUTHORED_RELATION_TYPES,
    NODE_TYPES,
    OBJECT_TYPES,
    PROCESS_NODE_TYPES,
    PROCESS_RELATION_TYPES,
    RELATION_TYPES,
    NodeType,
    PropKind,
)

MAX_NAME: Final = 200
MAX_TEXT: Final = 20_000
MAX_BATCH: Final = 5_000
MAX_SESSION_ID: Final = 200
_ENTITY_META: Final = frozenset(
    {"type", "name", "description", "status", "supersedes", "revision_why"}
)


def session_id(value: object, field: str = "session_id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(
            field,
            "is required: pass your harness session id (Claude Code's session_id) so your "
            "encounters chain together",
        )
    if len(value) > MAX_SESSION_ID:
        raise InvalidInput(field, f"is longer than {MAX_SESSION_ID} characters")
    # Shown back to people and agents (the session-start note, encounters' loci, the
    # inspector, operator plans): one line of visible text, as a name is.
    stripped = value.strip()
    return _visible(stripped, field, name_fault(stripped), _SESSION_RULE)


def text(value: object, field: str, *, required: bool, limit: int = MAX_TEXT) -> str:
    if value is None:
        if required:
            raise InvalidInput(field, "is required")
        return ""
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, got {type(value).__name__}", value=value)
    value = value.strip()
    if required and not value:
        raise InvalidInput(field, "must not be empty")
    if len(value) > limit:
        raise InvalidInput(field, f"is {len(value)} characters; the limit is {limit}")
    return value


_WRITTEN_RULE: Final = (
    "written text may hold tabs and line breaks but no other control character, no "
    "direction override and no invisible tag character; remove it and send the text again"
)
_NAME_RULE: Final = (
    "a name is one line of visible text, without line breaks, tabs, control or invisible "
    "formatting characters; remove it (put longer text in the description)"
)

_SESSION_RULE: Final = (
    "a session id is one line of visible text, without line breaks, tabs, control or "
    "invisible formatting characters; pass your harness's session id as it gave it"
)


def _visible(value: str, field: str, fault: tuple[int, str] | None, rule: str) -> str:
    """``value``, or the refusal naming the character ``fault`` found and where."""
    if fault is None:
        return value
    at, ch = fault
    raise InvalidInput(field, f"holds {describe(ch)} at character {at + 1}: {rule}")


def written(value: object, field: str, *, required: bool, limit: int = MAX_TEXT) -> str:
    """``text`` a write keeps: tabs and line breaks allowed, no other control character,
    direction override or tag character (kenning_encounter.plaintext)."""
    checked = text(value, field, required=required, limit=limit)
    return _visible(checked, field, text_fault(checked), _WRITTEN_RULE)


def name(value: object, field: str, *, limit: int = MAX_NAME) -> str:
    """A node's (or a person's) name: one line of visible text (kenning_encounter.plaintext):
    what a reader sees of it is all of it. A director's key is held to it too: it is
    what meets one person again, so it has one spelling and nothing hidden."""
    checked = text(value, field, required=True, limit=limit)
    _visible(checked, field, name_fault(checked), _NAME_RULE)
    if not unicodedata.is_normalized("NFC", checked):
        # One spelling per name: "café" as e + U+0301 would sit beside "café" as é.
        at = next(
            (
                i
                for i in range(1, len(checked))
                if len(unicodedata.normalize("NFC", checked[i - 1 : i + 1])) == 1
            ),
            None,
        )
        where = "" if at is None else f" ({describe(checked[at])} at character {at + 1})"
        raise InvalidInput(
            field,
            f"is not in Unicode's composed form (NFC){where}, so it would be another name "
            f"than the same text spelt composed; send it composed: "
            f"{unicodedata.normalize('NFC', checked)!r}",
        )
    return checked


def iso_time(value: object, field: str) -> str:
    raw = text(value, field, required=True, limit=64)
    try:
        utc_instant(raw)
    except OffCalendar:
        raise off_calendar(field, raw) from None
    except ValueError:
        raise InvalidInput(
            field, f"{raw!r} is not an ISO-8601 time; example: 2026-03-01T14:30:00Z", value=raw
        ) from None
    return raw


def off_calendar(field: str, raw: str) -> InvalidInput:
    """The refusal of a time whose offset carries it off the calendar in UTC."""
    return InvalidInput(
        field,
        f"{raw!r} falls outside the years 1 to 9999 once read in UTC; give it in UTC "
        "(ending in Z) or with an offset that keeps it within them",
        value=raw,
    )


def _span(props: Mapping[str, str], field: str) -> None:
    start, end = props.get("valid_from"), props.get("valid_until")
    if start is not None and end is not None and utc_instant(end) < utc_instant(start):
        raise InvalidInput(
            f"{field}.valid_until",
            f"{end!r} is before valid_from {start!r}; a span ends after it starts: "
            "swap the two, or leave valid_until out while it still holds",
            value=end,
        )


_NUMBER: Final = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")  # JSON's, ASCII
_OBJECT_FORMS: Final[dict[str, tuple[Callable[[str], bool], str]]] = {
    "number": (lambda v: _NUMBER.fullmatch(v) is not None, "a JSON number such as 720 or 0.5"),
    "boolean": (lambda v: v in ("true", "false"), "true or false"),
    "iri": (lambda v: not any(c.isspace() for c in v), "an IRI, without white space"),
    "string": (lambda v: True, "any text"),
}


def _triple(props: Mapping[str, str], field: str) -> None:
    """A triple's object is what its object_type says (vocabulary.TRIPLE_PROPS)."""
    kind = props.get("object_type")
    if kind is None:
        return
    if kind not in OBJECT_TYPES:
        raise InvalidInput(
            f"{field}.object_type",
            f"{kind!r} is not an object type; use one of: {', '.join(OBJECT_TYPES)}",
            value=kind,
        )
    value = props.get("object")
    if value is None:
        raise InvalidInput(f"{field}.object_type", "only goes with object: give the object too")
    fits, form = _OBJECT_FORMS[kind]
    if not fits(value):
        raise InvalidInput(
            f"{field}.object", f"{value[:60]!r} is not {form} (object_type {kind})", value=value
        )


def node_type(value: str, field: str) -> str:
    if value in PROCESS_NODE_TYPES:
        raise ProcessTypeForbidden(field, value)
    if value not in AUTHORED_NODE_TYPES:
        raise UnknownType(field, value, AUTHORED_NODE_TYPES)
    return value


def relation_type(value: str, field: str) -> str:
    spec = RELATION_TYPES.get(value)
    if spec is not None and spec.tool:  # a process edge another tool writes (#17)
        refusal = ProcessTypeForbidden(field, value)
        InvalidInput.__init__(
            refusal, field, f"{value} is a process edge written by {spec.tool}; call that tool"
        )
        refusal.value = value
        raise refusal
    if value in PROCESS_RELATION_TYPES:
        raise ProcessTypeForbidden(field, value)
    if value not in AUTHORED_RELATION_TYPES:
        raise UnknownType(field, value, AUTHORED_RELATION_TYPES)
    return value


def batch(items: object, field: str) -> list[Any]:
    if not isinstance(items, list) or not items:
        raise InvalidInput(field, "must be a non-empty list")
    if len(items) > MAX_BATCH:
        raise InvalidInput(field, f"has {len(items)} items; send at most {MAX_BATCH} per call")
    return items


class EntityDraft:
    """A validated entity, not yet given an id or a tick."""

    __slots__ = (
        "description",
        "field",
        "name",
        "props",
        "revision_why",
        "status",
        "supersedes",
        "type",
    )

    def __init__(
        self,
        field: str,
        type_: str,
        name: str,
        description: str,
        status: str | None,
        props: dict[str, str],
        supersedes: str | None,
        revision_why: str | None,
    ) -> None:
        self.field = field
        self.type = type_
        self.name = name
        self.description = description
        self.status = status
        self.props = props
        self.supersedes = supersedes
        self.revision_why = revision_why


def props_of(
    spec: NodeType, data: Mapping[str, Any], field: str, *, check_text: bool = True
) -> dict[str, str]:
    """A node's own properties (not name, description, status or what the store derives)
    checked and in the form a write keeps them; ``field`` is where they sit.
    ``check_text=False`` takes text as it comes (an import: readers defend against it)."""
    props: dict[str, str] = {}
    for prop in spec.props:
        if prop.name in ("name", "description", "status") or prop.derived:
            continue
        value = data.get(prop.name)
        path = f"{field}.{prop.name}"
        if value is None:
            if prop.required:
                raise InvalidInput(path, f"is required for a {spec.name} ({prop.doc})")
            continue
        props[prop.name] = (
            iso_time(value, path)
            if prop.kind is PropKind.TIME
            else classification.classes(value, path)
            if prop.kind is PropKind.CLASSES
            else classification.retention(value, path)
            if prop.kind is PropKind.RETENTION
            else written(value, path, required=True)
            if check_text
            else str(value)
        )
    _span(props, field)
    _triple(props, field)
    return props


def entity(raw: EntityIn | Mapping[str, Any], field: str) -> EntityDraft:
    data: dict[str, Any] = raw.model_dump() if isinstance(raw, EntityIn) else dict(raw)
    if isinstance(raw, EntityIn) and raw.model_extra:
        data.update(raw.model_extra)
    type_ = node_type(text(data.get("type"), f"{field}.type", required=True), f"{field}.type")
    spec = NODE_TYPES[type_]
    allowed = _ENTITY_META | {p.name for p in spec.props if not p.derived}
    if not spec.statuses:
        allowed = allowed - {"status"}
    for key, value in data.items():
        if key not in allowed and value is not None:
            raise UnknownField(f"{field}.{key}", type_, sorted(allowed - {"type"}))
    shown = name(data.get("name"), f"{field}.name")
    description = written(data.get("description"), f"{field}.description", required=False)
    status: str | None = None
    if spec.statuses:
        status = data.get("status") or spec.default_status
        if status not in spec.statuses:
            raise InvalidInput(
                f"{field}.status",
                f"{status!r} is not a {type_} status; use one of: {', '.join(spec.statuses)}",
                value=status,
            )
    props = props_of(spec, data, field)
    supersedes = data.get("supersedes")
    revision_why = data.get("revision_why")
    if supersedes is not None:
        supersedes = text(supersedes, f"{field}.supersedes", required=True, limit=MAX_NAME)
        revision_why = written(revision_why, f"{field}.revision_why", required=True)
    elif revision_why is not None:
        raise InvalidInput(
            f"{field}.revision_why", "only goes with supersedes (name the node this one revises)"
        )
    return EntityDraft(field, type_, shown, description, status, props, supersedes, revision_why)


def relation(raw: RelationIn | Mapping[str, Any], field: str) -> RelationIn:
    if isinstance(raw, RelationIn):
        rel = raw
    else:
        unknown = sorted(set(raw) - set(RelationIn.model_fields))
        if unknown:
            raise InvalidInput(
                f"{field}.{unknown[0]}",
                f"unknown field; a relation takes: {', '.join(RelationIn.model_fields)}",
            )
        rel = RelationIn.model_validate(dict(raw))
    relation_type(rel.type, f"{field}.type")
    text(rel.source, f"{field}.source", required=True, limit=MAX_NAME)
    text(rel.target, f"{field}.target", required=True, limit=MAX_NAME)
    if rel.type == "SUPERSEDES":
        written(rel.revision_why, f"{field}.revision_why", required=True)
    elif rel.revision_why is not None:
        raise InvalidInput(f"{field}.revision_why", "only SUPERSEDES carries a revision_why")
    return rel
