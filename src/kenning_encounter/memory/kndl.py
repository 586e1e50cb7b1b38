"""KNDL facts out of a memory (``kenning-encounter kndl export``); the mapping both ways.

Which nodes are facts: Observations (a fact seen or told) and Concepts (a fact built
from others: KNDL's derived facts). Questions, Hypotheses and Notes assert nothing yet;
Citations become a fact's ``source`` and Components what it is about (``subject``).

Every Observation and Concept goes out, superseded ones included (KNDL keeps old facts
for time travel), as a fact whose ``@id`` is ``urn:kenning:<memory>:<node id>``; the
way in is kndl_import.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, Protocol, TypeVar

from kenning_encounter.memory.kndl_facts import CONTEXT, CONTEXT_PATH, object_value
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import EdgeRecord, NodeRecord

FACT_TYPES: Final = ("Observation", "Concept")
SUBJECT_KIND: Final = "kndl-subject"  # a Component standing for a KNDL subject
SUBJECT_LABEL: Final = "kndl"
DERIVATION: Final = ("GROUNDS", "SUPPORTS", "INFORMS")  # into a fact: derivedFrom
# Our own IRIs: how a later import names a node this memory holds.
ID_TAIL: Final = re.compile(r"urn:kenning:(?P<memory>[^:]+):(?P<id>[a-z]{3}_[0-9a-f]{12})")


def iri(memory: str, node_id: str) -> str:
    return f"urn:kenning:{memory}:{node_id}"


# --- out ------------------------------------------------------------------------------
def _classes(stored: object) -> str | list[str] | None:
    if not isinstance(stored, str) or not stored:
        return None
    upper = [c.upper() for c in stored.split(",")]
    return upper[0] if len(upper) == 1 else upper


def _one_or_many(values: Iterable[str]) -> str | list[str] | None:
    items = sorted(set(values))
    return None if not items else items[0] if len(items) == 1 else items


def facts_of(
    nodes: Sequence[NodeRecord], edges: Sequence[EdgeRecord], memory: str
) -> list[dict[str, Any]]:
    """The memory's facts, in creation order, each without its ``@context``."""
    by_id = {n.id: n for n in nodes}
    name = {n.id: iri(memory, n.id) for n in nodes}

    def source_of(node: NodeRecord) -> str:
        uri = node.props.get("uri") if node.type == "Citation" else None
        return uri if isinstance(uri, str) and uri else name[node.id]

    def subject_of(node: NodeRecord) -> str:
        if node.type == "Component" and node.props.get("source_kind") == SUBJECT_KIND:
            return str(node.props.get("source_key"))
        return name[node.id]

    revises: dict[str, EdgeRecord] = {}
    derived: dict[str, set[str]] = {}
    sources: dict[str, set[str]] = {}
    subjects: dict[str, set[str]] = {}
    for e in edges:
        s, t = by_id.get(e.source), by_id.get(e.target)
        if s is None or t is None:
            continue
        if e.type == "SUPERSEDES":
            revises[s.id] = e
        elif e.type in DERIVATION and s.type in FACT_TYPES and t.type in FACT_TYPES:
            derived.setdefault(t.id, set()).add(name[s.id])
        elif e.type == "OBSERVED_AT" and s.type in FACT_TYPES:
            sources.setdefault(s.id, set()).add(source_of(t))
        elif e.type in ("GROUNDS", "SUPPORTS") and s.type == "Citation" and t.type in FACT_TYPES:
            sources.setdefault(t.id, set()).add(source_of(s))
        elif e.type == "ABOUT" and s.type in FACT_TYPES:
            subjects.setdefault(s.id, set()).add(subject_of(t))
    out: list[dict[str, Any]] = []
    for n in sorted(nodes, key=lambda n: (n.tick, n.ord, n.id)):
        if n.type not in FACT_TYPES:
            continue
        fact: dict[str, Any] = {
            "@id": name[n.id],
            "@type": "Fact" if n.type == "Observation" else ["Fact", "Concept"],
            "statement": n.description or n.name,
            "label": n.name,
            "subject": _one_or_many(subjects.get(n.id, ())),
            "source": _one_or_many(sources.get(n.id, ())),
            "validFrom": n.props.get("valid_from"),
            "validUntil": n.props.get("valid_until"),
            "observedAt": n.props.get("t_observed"),
            "recordedAt": n.created_at,
            "classification": _classes(n.props.get("classification")),
            "retention": n.props.get("retention"),
            "predicate": n.props.get("predicate"),
        }
        held = n.props.get("object")
        if isinstance(held, str):
            kind = n.props.get("object_type")
            fact["object"] = object_value(held, kind if isinstance(kind, str) else None)
        edge = revises.get(n.id)
        if edge is not None:
            fact["supersedes"] = name[edge.target]
            fact["revisionWhy"] = edge.revision_why
        if n.id in derived:
            fact["derivedFrom"] = sorted(derived[n.id])
        out.append({k: v for k, v in fact.items() if v is not None})
    return out


T = TypeVar("T")


class Readable(Protocol):
    """All an export needs of a store: a gated one (memory/gates.py) will do."""

    def read(self, work: Callable[[ReadTx], T]) -> T: ...


def export_facts(store: Readable, memory: str) -> list[dict[str, Any]]:
    graph = store.read(lambda tx: tx.authored_graph())
    return facts_of(graph.nodes, graph.edges, memory)


def slug(fact_iri: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", fact_iri.rsplit(":", 1)[-1]).strip("-") or "fact"


def as_graph(facts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One document holding every fact: the form for a single file or standard output."""
    return {"@context": CONTEXT, "@graph": list(facts)}


def as_files(facts: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The KNDL directory layout: relative path -> document."""
    files: dict[str, dict[str, Any]] = {CONTEXT_PATH: {"@context": CONTEXT}}
    for fact in facts:
        files[f"facts/{slug(fact['@id'])}.fact.json"] = {"@context": "../" + CONTEXT_PATH, **fact}
    return files
