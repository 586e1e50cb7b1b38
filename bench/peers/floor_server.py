"""The floor: our server with no memory behind it (``python -m bench.peers.floor_server``).

It answers the calls the peers bench sends ours — the same tools, the same
argument models, results of the same models, rendered and sent the same way,
over our own stdio wire — and records nothing: a write makes its ids and
answers, a search answers with the last ten names it was sent. What ours takes
beyond the floor is the memory's own work (checks, the store, the engine); what
the floor takes is the client, the pipes, the SDK and our wire, which every
Python MCP server pays. A write goal leaves the memory what it leaves above it.
"""

from __future__ import annotations

import uuid
from collections import deque
from datetime import UTC, datetime
from typing import Annotated

from mcp_types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from kenning_encounter.memory.models import (
    Created,
    EdgeOut,
    NameLookup,
    NodeOut,
    RecordedNode,
    Related,
)
from kenning_encounter.server import render
from kenning_encounter.server.outputs import wire
from kenning_encounter.server.params import SessionId
from kenning_encounter.server.stdio import KenningMCPServer
from kenning_encounter.server.tools_write import Entities, Relations

NAME = "kenning-encounter-floor"
HITS = 10


class FloorHit(BaseModel):
    id: str
    type: str
    name: str


class FloorHits(BaseModel):
    hits: list[FloorHit]


class Opened(BaseModel):
    encounter: str


def build() -> KenningMCPServer:
    server = KenningMCPServer(NAME)
    clock = {"tick": 0, "encounter": 0}
    recent: deque[FloorHit] = deque(maxlen=HITS)
    sent: dict[str, NodeOut] = {}  # each name sent -> the node an open answers with

    def _now() -> str:
        return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _answer(text: str, model: BaseModel) -> CallToolResult:
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=wire(model)
        )

    @server.tool()
    async def advance_encounter(
        session_id: SessionId, purpose: str, close_summary: str | None = None
    ) -> Annotated[CallToolResult, Opened]:
        """Opens nothing: names the next encounter."""
        clock["encounter"] += 1
        opened = Opened(encounter=f"E{clock['encounter']}")
        return _answer(f"opened {opened.encounter}", opened)

    @server.tool()
    async def create_entities(
        session_id: SessionId, entities: Entities
    ) -> Annotated[CallToolResult, Created]:
        """Records nothing: answers as a write would."""
        clock["tick"] += 1
        nodes = [
            RecordedNode(id=f"n-{uuid.uuid4()}", type=e.type, name=e.name, status="", revises="")
            for e in entities
        ]
        recent.extend(FloorHit(id=n.id, type=n.type, name=n.name) for n in nodes)
        at = _now()
        for n, e in zip(nodes, entities, strict=True):
            sent[n.name] = NodeOut(
                id=n.id, type=n.type, name=n.name, description=e.description, created_at=at
            )
        created = Created(
            encounter=f"E{clock['encounter']}", tick=clock["tick"], created_at=_now(), created=nodes
        )
        return _answer(render.created(created), created)

    @server.tool()
    async def create_relations(
        session_id: SessionId, relations: Relations
    ) -> Annotated[CallToolResult, Related]:
        """Links nothing: answers as a write would."""
        clock["tick"] += 1
        edges = [EdgeOut(source=r.source, type=r.type, target=r.target) for r in relations]
        related = Related(encounter=f"E{clock['encounter']}", tick=clock["tick"], created=edges)
        return _answer(render.related(related), related)

    @server.tool()
    async def search(
        query: Annotated[str, Field(min_length=1, max_length=2_000)], limit: int = HITS
    ) -> Annotated[CallToolResult, FloorHits]:
        """Searches nothing: the last names it was sent."""
        found = FloorHits(hits=list(recent)[:limit])
        return _answer("\n".join(f"- {h.type} {h.name} {h.id}" for h in found.hits), found)

    @server.tool()
    async def find_by_name(name: str) -> Annotated[CallToolResult, NameLookup]:
        """Finds what it was sent under that name (nothing else is read)."""
        node = sent.get(name)
        if node is None:
            return CallToolResult(
                content=[TextContent(type="text", text=f"no node named {name!r}")], is_error=True
            )
        found = NameLookup(node=node)
        return _answer(render.name_lookup(found), found)

    return server


if __name__ == "__main__":
    build().run()
