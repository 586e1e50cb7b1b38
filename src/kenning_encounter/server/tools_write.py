"""Write tools: authored nodes and relations, always inside your open encounter."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.memory.models import Created, Deleted, EntityIn, Related, RelationIn
from kenning_encounter.server import render
from kenning_encounter.server.calls import ToolContext, run_tool
from kenning_encounter.server.params import NodeRef, SessionId
from kenning_encounter.server.registry import ToolKind, ToolRegistrar

Entities = Annotated[
    list[EntityIn],
    Field(
        min_length=1,
        max_length=5_000,
        description="The nodes to record, all in one transaction (all or nothing). Each has type, "
        "name, description, and the properties of its type (list_node_types shows them). "
        'Example: [{"type": "Observation", "name": "retry storm on deploy", '
        '"description": "Deploys at 09:00 set off a retry storm against auth.", '
        '"t_observed": "2026-03-02T09:00:00Z"}]. Any node may state when it held in the world: '
        '"valid_from" and "valid_until" (ISO-8601). To revise a node, record a new one with '
        '"supersedes" (the old name or id) and "revision_why".',
    ),
]

Relations = Annotated[
    list[RelationIn],
    Field(
        min_length=1,
        max_length=5_000,
        description="The links, all in one transaction (all or nothing). Endpoints are names or "
        "ids of existing nodes; list_relation_types shows which types each relation allows. "
        'Example: [{"source": "retry storm on deploy", "type": "SUPPORTS", '
        '"target": "cron overlaps deploy"}].',
    ),
]


def register(tools: ToolRegistrar) -> None:
    @tools.tool(ToolKind.WRITE, title="Record nodes")
    async def create_entities(
        ctx: ToolContext, session_id: SessionId, entities: Entities
    ) -> Annotated[CallToolResult, Created]:
        """Record observations, questions, hypotheses, concepts, notes, components or citations
        in your open encounter. Refused, with nothing written, when any item is malformed."""
        return await run_tool(
            ctx,
            lambda app: app.memory.create_entities(app.hold(session_id), entities),
            render.created,
        )

    @tools.tool(ToolKind.WRITE, title="Link nodes")
    async def create_relations(
        ctx: ToolContext, session_id: SessionId, relations: Relations
    ) -> Annotated[CallToolResult, Related]:
        """Link existing nodes with authored relations. RESOLVES, SUPPORTS and CHALLENGES move the
        target's status (a question becomes resolved, a hypothesis supported or challenged)."""
        return await run_tool(
            ctx,
            lambda app: app.memory.create_relations(app.hold(session_id), relations),
            render.related,
        )

    @tools.tool(ToolKind.WRITE, title="Undo nodes of this encounter", destructive=True)
    async def delete_entities(
        ctx: ToolContext,
        session_id: SessionId,
        refs: Annotated[
            list[NodeRef],
            Field(
                min_length=1,
                max_length=5_000,
                description="Names or ids of nodes your open encounter recorded. "
                "Example: ['retry storm on deploy'].",
            ),
        ],
    ) -> Annotated[CallToolResult, Deleted]:
        """Delete nodes your open encounter recorded (undoing a mistake). Older knowledge, and
        a node another encounter has linked, confirmed, pinned or claimed, is never deleted:
        supersede it, or retire a question or hypothesis, instead."""
        return await run_tool(
            ctx,
            lambda app: app.memory.delete_entities(app.hold(session_id), refs),
            render.deleted,
        )

    @tools.tool(ToolKind.WRITE, title="Undo relations of this encounter", destructive=True)
    async def delete_relations(
        ctx: ToolContext, session_id: SessionId, relations: Relations
    ) -> Annotated[CallToolResult, Deleted]:
        """Delete relations your open encounter created (undoing a mistake); a status the
        relation changed goes back to what it was."""
        return await run_tool(
            ctx,
            lambda app: app.memory.delete_relations(app.hold(session_id), relations),
            render.deleted,
        )
