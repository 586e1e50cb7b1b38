"""Result models for the tools whose services return plain data.

The memory services already return pydantic models for the encounter, write
and search tools; the vocabulary and read_cypher answers are plain data, so
they get a published shape here (their output schema is what a client sees).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kenning_encounter.store.port import CypherResult


class PropertyOut(BaseModel):
    name: str
    kind: str = Field(description="text, time (ISO-8601) or status")
    required: bool
    doc: str


class NodeTypeOut(BaseModel):
    name: str
    layer: str = Field(
        description="process (written only by the spine tools), semantic or reference"
    )
    doc: str
    when: str = Field(description="When to record a node of this type")
    writable: bool = Field(description="False for the process layer: no tool of yours writes it")
    properties: list[PropertyOut]
    statuses: list[str]
    default_status: str | None


class RelationTypeOut(BaseModel):
    name: str
    authored: bool = Field(description="True when create_relations may make it")
    doc: str
    when: str
    sources: list[str] = Field(description="Node types allowed at the start")
    targets: list[str] = Field(description="Node types allowed at the end")
    same_type: bool = Field(description="Both ends must be of one type (SUPERSEDES)")
    properties: list[PropertyOut]


class StatusEffect(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    from_: list[str] = Field(alias="from", description="Statuses the change applies to")
    to: str


class NodeTypes(BaseModel):
    node_types: list[NodeTypeOut]


class RelationTypes(BaseModel):
    relation_types: list[RelationTypeOut]


class Vocabulary(BaseModel):
    node_types: list[NodeTypeOut]
    relation_types: list[RelationTypeOut]
    status_effects: dict[str, dict[str, StatusEffect]] = Field(
        description="relation -> target type -> the status change creating it makes"
    )


class Schema(Vocabulary):
    store: dict[str, Any] = Field(description="The backend holding this memory")


class CypherRows(BaseModel):
    columns: list[str]
    rows: list[list[Any]]
    truncated: bool = Field(description="True when a cap cut the result")
    row_cap: int
    char_cap: int
    note: str = ""

    @classmethod
    def of(cls, result: CypherResult) -> CypherRows:
        return cls(
            columns=result.columns,
            rows=result.rows,
            truncated=result.truncated,
            row_cap=result.row_cap,
            char_cap=result.char_cap,
            note=result.note,
        )
