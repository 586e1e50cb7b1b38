"""KNDL facts as documents: reading them from files and checking each field.

A KNDL memory keeps one JSON-LD document per fact (``facts/<slug>.fact.json``), in the
compact form with KNDL's term names. This module reads that form only: it checks each
fact's fields by name and type, and does not expand arbitrary JSON-LD contexts (a fact
whose context renames the terms is refused as having unknown fields, never misread).

A refusal names the file, the fact's ``@id`` and the field, so one bad fact among a
thousand is found at once; checking happens before the memory is touched (kndl.py).
"""

from __future__ import annotations

import json
import re
import stat
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

from kenning_encounter.errors import InvalidInput
from kenning_encounter.memory.validate import iso_time

# Our own context: KNDL's term names mapped to IRIs under a namespace of ours, plus the
# two terms this memory adds (label: the node's handle; revisionWhy: a revision's reason).
VOCAB: Final = "urn:kenning:kndl#"
CONTEXT: Final[dict[str, Any]] = {
    "@version": 1.1,
    "@vocab": VOCAB,
    "xsd": "http://www.w3.org/2001/XMLSchema#",
    "Fact": VOCAB + "Fact",
    "Concept": VOCAB + "Concept",
    "subject": {"@type": "@id"},
    "source": {"@type": "@id"},
    "supersedes": {"@type": "@id"},
    "derivedFrom": {"@type": "@id", "@container": "@set"},
    "inference": {"@type": "@id"},
    "consent": {"@type": "@id"},
    "validFrom": {"@type": "xsd:dateTime"},
    "validUntil": {"@type": "xsd:dateTime"},
    "observedAt": {"@type": "xsd:dateTime"},
    "recordedAt": {"@type": "xsd:dateTime"},
}
CONTEXT_PATH: Final = "context/v1.jsonld"
FACT_SUFFIX: Final = ".fact.json"

# Fields a fact may carry that this memory reads but does not hold: an import says how
# many facts carried each (nothing is dropped unannounced). ``confidence`` stays out on
# purpose: standing here is carried by edges and time, never by an author's number.
NOT_HELD: Final = (
    "confidence",
    "decay",
    "inference",
    "consent",
    "tenant",
    "recordedAt",
)
FIELDS: Final = frozenset(
    {
        "@context",
        "@id",
        "@type",
        "statement",
        "subject",
        "source",
        "validFrom",
        "validUntil",
        "observedAt",
        "supersedes",
        "derivedFrom",
        "negated",
        "classification",
        "retention",
        "label",
        "revisionWhy",
        "predicate",
        "object",
        *NOT_HELD,
    }
)
TYPES: Final = ("Fact", "Concept")
_NO_SPACE: Final = re.compile(r"\S+")
# Python's own limit on reading an integer from text (sys.get_int_max_str_digits).
_MAX_DIGITS: Final = 4_300


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact, checked; ``where`` is the file it came from, for every later refusal."""

    where: str
    id: str
    concept: bool
    statement: str
    label: str | None
    subjects: tuple[str, ...]
    sources: tuple[str, ...]
    valid_from: str | None
    valid_until: str | None
    observed_at: str | None
    supersedes: str | None
    revision_why: str | None
    derived_from: tuple[str, ...]
    classification: tuple[str, ...]
    retention: str | None
    tenant: str | None
    not_held: tuple[str, ...]
    predicate: str | None = None
    # The triple's object as the memory keeps it: its text and its type (vocabulary
    # OBJECT_TYPES); (None, None) when the fact has none.
    object: tuple[str, str] | None = None

    def field(self, name: str) -> str:
        return f"{self.where} ({self.id}).{name}"


class _Reader:
    def __init__(self, data: Mapping[str, Any], where: str) -> None:
        self.data = data
        self.where = where
        self.id = "?"

    def path(self, name: str) -> str:
        return f"{self.where} ({self.id}).{name}"

    def refuse(self, name: str, message: str) -> InvalidInput:
        return InvalidInput(self.path(name), message)

    def text(self, name: str, *, required: bool = False, iri: bool = False) -> str | None:
        value = self.data.get(name)
        if value is None:
            if required:
                raise self.refuse(name, "is required")
            return None
        if isinstance(value, dict) and iri:
            value = cast(dict[str, Any], value).get("@id")
        if not isinstance(value, str) or not value.strip():
            raise self.refuse(name, "must be a non-empty string" + (" (an @id)" if iri else ""))
        value = value.strip()
        if iri and not _NO_SPACE.fullmatch(value):
            raise self.refuse(name, f"{value!r} is not an IRI: it holds white space")
        if iri and not unicodedata.is_normalized("NFC", value):
            # One spelling per IRI: in another form it would not match the same IRI
            # spelt composed (a reference would name no fact, a source another one).
            raise self.refuse(
                name,
                "is not in Unicode's composed form (NFC), so it would not match the same "
                f"IRI spelt composed; write it composed: {unicodedata.normalize('NFC', value)!r}",
            )
        return value

    def texts(self, name: str, *, iri: bool = True) -> tuple[str, ...]:
        value = self.data.get(name)
        if value is None:
            return ()
        items: list[Any] = cast(list[Any], value) if isinstance(value, list) else [value]
        if not items:
            raise self.refuse(name, "is an empty list; leave the field out instead")
        out: list[str] = []
        for i, item in enumerate(items):
            one = _Reader({name: item}, self.where)
            one.id = self.id
            got = one.text(name, iri=iri)
            if got is None:
                raise self.refuse(f"{name}[{i}]", "must not be null")
            if got not in out:
                out.append(got)
        return tuple(out)

    def time(self, name: str) -> str | None:
        if self.data.get(name) is None:
            return None
        return iso_time(self.data[name], self.path(name))


def read_fact(data: object, where: str, *, context: bool = True) -> Fact:
    """One fact document, every field checked. ``context``: the document must carry its
    own ``@context`` (a fact inside a ``@graph`` shares the graph's)."""
    if not isinstance(data, dict):
        raise InvalidInput(where, "a fact must be a JSON object")
    r = _Reader(cast(dict[str, Any], data), where)
    r.id = r.text("@id", required=True, iri=True) or "?"
    unknown = sorted(set(r.data) - FIELDS)
    if unknown:
        raise r.refuse(
            unknown[0], "is not a KNDL fact field; allowed: " + ", ".join(sorted(FIELDS))
        )
    if context and r.data.get("@context") is None:
        raise r.refuse("@context", "is required: a JSON-LD fact names its context")
    types = r.texts("@type", iri=False)
    if "Fact" not in types or any(t not in TYPES for t in types):
        raise r.refuse("@type", f"must be 'Fact' (or ['Fact', 'Concept']); got {list(types)}")
    if r.data.get("negated") not in (None, False):
        raise r.refuse(
            "negated",
            "a negated fact (known false) is not held by this memory, and importing it as a "
            "plain statement would assert the opposite; state it in its negative form, or "
            "leave it out",
        )
    confidence = r.data.get("confidence")
    if confidence is not None and (
        isinstance(confidence, bool)
        or not isinstance(confidence, int | float)
        or not 0 <= confidence <= 1
    ):
        raise r.refuse("confidence", f"must be a number from 0 to 1; got {confidence!r}")
    for name in ("decay", "tenant"):
        r.text(name)
    r.text("inference", iri=True)
    r.text("consent", iri=True)
    r.time("recordedAt")
    statement = r.text("statement", required=True)
    derived = r.texts("derivedFrom")
    if r.id in derived:
        raise r.refuse("derivedFrom", "a fact cannot be derived from itself")
    subjects = r.texts("subject")
    if r.id in subjects:
        raise r.refuse("subject", "a fact cannot be about itself")
    supersedes = r.text("supersedes", iri=True)
    if supersedes == r.id:
        raise r.refuse("supersedes", "a fact cannot supersede itself")
    revision_why = r.text("revisionWhy")
    if revision_why is not None and supersedes is None:
        raise r.refuse("revisionWhy", "only goes with supersedes")
    return Fact(
        where=where,
        id=r.id,
        concept="Concept" in types,
        statement=statement or "",
        label=r.text("label"),
        subjects=subjects,
        sources=r.texts("source"),
        valid_from=r.time("validFrom"),
        valid_until=r.time("validUntil"),
        observed_at=r.time("observedAt"),
        supersedes=supersedes,
        revision_why=revision_why,
        derived_from=derived,
        classification=r.texts("classification", iri=False),
        retention=r.text("retention"),
        tenant=r.text("tenant"),
        not_held=tuple(n for n in NOT_HELD if r.data.get(n) is not None),
        predicate=r.text("predicate"),
        object=_object(r),
    )


def _object(r: _Reader) -> tuple[str, str] | None:
    """A triple's object: a string, a number, true or false, or a node named by its
    ``@id``; kept as text with its type, so an export gives back the same JSON."""
    value = r.data.get("object")
    if value is None:
        return None
    if isinstance(value, bool):
        return ("true" if value else "false"), "boolean"
    if isinstance(value, int | float):
        if value != value or value in (float("inf"), float("-inf")):
            raise r.refuse("object", f"must be a finite number; got {value!r}")
        return json.dumps(value), "number"
    if isinstance(value, dict):
        node = r.text("object", iri=True)
        assert node is not None
        if set(cast(dict[str, Any], value)) != {"@id"}:
            raise r.refuse("object", 'a node as object is {"@id": IRI} and nothing else')
        return node, "iri"
    if not isinstance(value, str):
        raise r.refuse(
            "object", 'must be a string, a number, true or false, or a node as {"@id": IRI}'
        )
    text = r.text("object")
    assert text is not None
    return text, "string"


def object_value(text: str, kind: str | None) -> object:
    """The JSON a stored object gives back in a fact (the reverse of ``_object``)."""
    if kind == "number":
        return json.loads(text)
    if kind == "boolean":
        return text == "true"
    if kind == "iri":
        return {"@id": text}
    return text


class _Unreadable(Exception):
    """A document JSON allows but no fact can be read from; the text says why and what to do."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # JSON leaves a repeated key to the reader, and readers differ: one that takes the
    # first "@id" would see another fact than this one, which takes the last.
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            raise _Unreadable(
                f"holds the key {key!r} twice in one object; readers differ on which one "
                "counts: keep one"
            )
        seen.add(key)
    return dict(pairs)


def _integer(digits: str) -> int:
    count = len(digits.lstrip("-"))
    if count > _MAX_DIGITS:
        raise _Unreadable(
            f"holds an integer of {count:,} digits; no fact field takes more than "
            f"{_MAX_DIGITS:,}: write it as a string"
        )
    return int(digits)


def _lone_surrogate(document: object) -> str | None:
    """Where ``document`` holds a string (key or value) that is not Unicode text: JSON lets
    a file escape half a surrogate pair, and no store can take the string it makes."""
    stack: list[tuple[object, str]] = [(document, "")]
    while stack:  # by hand: a document may nest as deep as the JSON reader allows
        value, at = stack.pop()
        if isinstance(value, str):
            if not value.isascii():
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError:
                    return at or "the document"
        elif isinstance(value, dict):
            for key, item in cast(dict[str, Any], value).items():
                inner = f"{at}.{key}" if at else key
                stack += [(key, inner), (item, inner)]
        elif isinstance(value, list):
            stack += [(item, f"{at}[{i}]") for i, item in enumerate(cast(list[Any], value))]
    return None


def _document(file: Path) -> object:
    """One file's JSON, or the refusal naming the file, what is wrong and the fix."""
    where = str(file)
    try:
        mode = file.stat().st_mode  # through a symbolic link, to what it names
        if stat.S_ISDIR(mode):
            raise InvalidInput(where, "is a directory, not a fact file: rename or move it")
        if not stat.S_ISREG(mode):
            # A pipe would never end, a device such as /dev/zero never stop.
            raise InvalidInput(
                where, "is not a regular file (a pipe, a socket or a device): name a fact file"
            )
        raw = file.read_bytes()
    except OSError as exc:
        raise InvalidInput(
            where, f"cannot be read ({exc.strerror or exc}); check that it exists and is readable"
        ) from None
    try:
        # A byte-order mark is not part of the text (some editors write one).
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            where,
            f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start:,}); save it "
            "as UTF-8",
        ) from None
    try:
        document: object = json.loads(text, object_pairs_hook=_pairs, parse_int=_integer)
    except _Unreadable as exc:
        raise InvalidInput(where, str(exc)) from None
    except RecursionError:
        raise InvalidInput(
            where, "nests arrays or objects deeper than a JSON reader goes; a fact is flat"
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidInput(where, f"is not JSON: {exc}") from None
    bad = _lone_surrogate(document)
    if bad is not None:
        raise InvalidInput(
            f"{where} {bad}",
            "holds a lone surrogate (an unpaired \\ud800-\\udfff escape), which is not "
            "Unicode text: write the character itself, or both halves of its pair",
        )
    return document


def _documents(path: Path) -> Iterator[tuple[Path, object]]:
    try:
        folder = path / "facts" if (path / "facts").is_dir() else path
        is_dir = path.is_dir()
        files = sorted(folder.glob("*" + FACT_SUFFIX)) if is_dir else [path]
        there = is_dir or path.exists()
    except OSError as exc:
        raise InvalidInput(
            str(path), f"cannot be read ({exc.strerror or exc}); check that it is readable"
        ) from None
    if not there:
        raise InvalidInput(
            str(path),
            "does not exist; name a KNDL memory directory (with facts/), a folder of "
            f"*{FACT_SUFFIX} files or a fact file",
        )
    if not files:
        raise InvalidInput(
            str(path),
            f"holds no *{FACT_SUFFIX} files (looked in {folder}); name a KNDL memory "
            "directory (with facts/) or a fact file",
        )
    for file in files:
        yield file, _document(file)


def read_facts(path: Path) -> list[Fact]:
    """Every fact under ``path``: a KNDL directory (``facts/*.fact.json``), a folder of
    fact files, one fact file, or one document whose ``@graph`` lists facts."""
    facts: list[Fact] = []
    for file, data in _documents(path):
        where = str(file)
        if isinstance(data, dict) and "@graph" in data:
            doc = cast(dict[str, Any], data)
            graph = doc["@graph"]
            if doc.get("@context") is None:
                raise InvalidInput(f"{where}.@context", "is required beside @graph")
            if not isinstance(graph, list) or not graph:
                raise InvalidInput(f"{where}.@graph", "must be a non-empty list of facts")
            items = cast(list[object], graph)
            facts += [
                read_fact(f, f"{where} @graph[{i}]", context=False) for i, f in enumerate(items)
            ]
        else:
            facts.append(read_fact(data, where))
    seen: dict[str, str] = {}
    for fact in facts:
        if fact.id in seen:
            raise InvalidInput(
                fact.field("@id"), f"is also the @id of the fact in {seen[fact.id]}; ids are unique"
            )
        seen[fact.id] = fact.where
    first = facts[0]
    other = next((f for f in facts if f.tenant != first.tenant), None)
    if other is not None:
        # Named by the file and fact: among a thousand files, the one to move is found.
        raise InvalidInput(
            other.field("tenant"),
            f"is {other.tenant!r}, but the fact in {first.where} ({first.id}) has "
            f"{first.tenant!r}: the facts belong to several tenants; import one tenant's "
            "facts into one memory",
        )
    return facts
