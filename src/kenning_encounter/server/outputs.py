"""Result models for the tools whose services return plain data.

The memory services already return pydantic models for the encounter, write
and search tools; the vocabulary and read_cypher answers are plain data, so
they get a published shape here (their output schema is what a client sees).

What a tool sends is what the model reads, so it is sent compact (``wire``: no
nulls, no field left at its default) and sized as JSON (``wire_chars``), which
is what the size limits bound.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.memory.models import Provenance
from kenning_encounter.store.port import CypherResult

# The most characters of JSON a trace_provenance answer sends (the orient default).
PROVENANCE_CHARS: Final = 8_000


class PropertyOut(LazyModel):
    name: str
    kind: str = Field(description="text, time (ISO-8601) or status")
    required: bool = False
    doc: str


class NodeTypeOut(LazyModel):
    name: str
    layer: str = Field(
        description="process (written only by the spine tools), semantic or reference"
    )
    doc: str
    when: str = Field(description="When to record a node of this type")
    writable: bool = Field(
        default=True, description="False for the process layer: no tool of yours writes it"
    )
    properties: list[PropertyOut]
    statuses: list[str] = Field(default_factory=list[str])
    default_status: str | None = None


class RelationTypeOut(LazyModel):
    name: str
    authored: bool = Field(default=True, description="True when create_relations may make it")
    doc: str
    when: str
    sources: list[str] = Field(description="Node types allowed at the start")
    targets: list[str] = Field(description="Node types allowed at the end")
    same_type: bool = Field(default=False, description="Both ends must be of one type (SUPERSEDES)")
    properties: list[PropertyOut] = Field(default_factory=list[PropertyOut])


class StatusEffect(LazyModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: list[str] = Field(alias="from", description="Statuses the change applies to")
    to: str


class NodeTypes(LazyModel):
    node_types: list[NodeTypeOut]


class RelationTypes(LazyModel):
    relation_types: list[RelationTypeOut]


class Vocabulary(LazyModel):
    node_types: list[NodeTypeOut]
    relation_types: list[RelationTypeOut]
    status_effects: dict[str, dict[str, StatusEffect]] = Field(
        description="relation -> target type -> the status change creating it makes"
    )


class Schema(Vocabulary):
    store: dict[str, Any] = Field(description="The backend holding this memory")


class CypherRows(LazyModel):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = Field(default=False, description="True when a cap cut the result")
    row_cap: int | None = Field(default=None, description="Sent when truncated")
    char_cap: int | None = Field(
        default=None, description="Sent when truncated: the cap on the answer's JSON size"
    )
    note: str = ""

    @classmethod
    def of(cls, result: CypherResult) -> CypherRows:
        rows = cls(
            columns=result.columns,
            rows=result.rows,
            truncated=result.truncated,
            row_cap=result.row_cap if result.truncated else None,
            char_cap=result.char_cap if result.truncated else None,
            note=result.note,
        )
        return fit_rows(rows, row_cap=result.row_cap, char_cap=result.char_cap)


def wire(result: BaseModel, *, exclude: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What a tool sends as structured content: no nulls or empty defaults."""
    return result.model_dump(
        mode="json", by_alias=True, exclude_defaults=True, exclude=set(exclude) or None
    )


def wire_chars(data: object) -> int:
    """Characters of ``data`` as a client passes it on: compact JSON, non-ASCII kept."""
    return len(json.dumps(data, separators=(",", ":"), ensure_ascii=False, default=str))


def _longest_prefix(count: int, fits: Callable[[int], bool]) -> int:
    """The largest k in [0, count] with fits(k), for a fits that holds up to some k."""
    low, high = 0, count
    while low < high:
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return low


def fit_rows(rows: CypherRows, *, row_cap: int, char_cap: int) -> CypherRows:
    """``rows`` cut, from the end, until its JSON is within ``char_cap`` characters."""
    if wire_chars(wire(rows)) <= char_cap:
        return rows
    note = (
        f"result cut at {{k}} rows so the answer stays within {char_cap} characters of JSON "
        f"(caps: {row_cap} rows, {char_cap} characters); narrow the query or add a LIMIT"
    )

    def cut(k: int) -> CypherRows:
        return rows.model_copy(
            update={
                "rows": rows.rows[:k],
                "truncated": True,
                "row_cap": row_cap,
                "char_cap": char_cap,
                "note": note.format(k=k),
            }
        )

    return cut(_longest_prefix(len(rows.rows), lambda k: wire_chars(wire(cut(k))) <= char_cap))


def fit_provenance(trace: Provenance, budget: int) -> Provenance:
    """``trace`` with as many grounding nodes (oldest first) as fit ``budget`` characters.

    An edge stays when both its ends are still shown, so nothing points at a node
    the answer left out; the totals say what was cut.
    """
    if wire_chars(wire(trace)) <= budget:
        return trace
    edges = trace.edges

    def cut(k: int) -> Provenance:
        kept = trace.grounding[:k]
        shown = {trace.node.id, *(n.id for n in kept)}
        return trace.model_copy(
            update={
                "grounding": kept,
                "edges": [e for e in edges if e.source in shown and e.target in shown],
                "grounding_total": len(trace.grounding),
                "edges_total": len(edges),
            }
        )

    return cut(_longest_prefix(len(trace.grounding), lambda k: wire_chars(wire(cut(k))) <= budget))
