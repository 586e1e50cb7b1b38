"""Tools that record what was found of nodes without changing them: confirming them and
claiming referents (#17), pinning them (#16).

Each writes process edges from your open encounter (CONFIRMED, REFERENT_CLAIM, PINNED)
and never changes what a node says, so all are the writer face's alone.
"""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.memory.activation import Pinned
from kenning_encounter.memory.identity import Claimed, ClaimIn, Confirmed
from kenning_encounter.server.calls import ToolContext, run_tool
from kenning_encounter.server.params import NodeRef, SessionId
from kenning_encounter.server.registry import ToolKind, ToolRegistrar


def confirmed_text(c: Confirmed) -> str:
    names = ", ".join(f"{n['name']!r} ({n['id']})" for n in c.confirmed)
    return f"Confirmed in {c.encounter}, unchanged: {names}."


def claimed_text(c: Claimed) -> str:
    lines = [f"Claims recorded in {c.encounter}:"]
    for claim in c.claims:
        was = f" (was {claim.revises})" if claim.revises else ""
        lines.append(f"- {claim.source} {claim.resolution} {claim.target}{was}")
    return "\n".join(lines)


def pinned_text(p: Pinned) -> str:
    names = ", ".join(f"{n['name']!r} ({n['id']})" for n in p.nodes)
    if p.pinned:
        return f"Pinned in {p.encounter}: {names} stay hot (never fade) until unpinned."
    return f"Unpinned in {p.encounter}: {names} fade again from this use on."


def register(tools: ToolRegistrar) -> None:
    @tools.tool(ToolKind.WRITE, title="Confirm nodes still hold")
    async def confirm_entities(
        ctx: ToolContext,
        session_id: SessionId,
        refs: Annotated[
            list[NodeRef],
            Field(
                min_length=1,
                max_length=5_000,
                description="Names or ids of nodes you reviewed and found still true. "
                "Example: ['retry storm on deploy'].",
            ),
        ],
        why: Annotated[
            str | None,
            Field(
                max_length=2_000,
                description="What the review checked. Example: 're-read retry.py at HEAD'.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Confirmed]:
        """Record, from your open encounter, that nodes were reviewed and still hold. The nodes
        are not changed (no revision); the confirmation renews their standing, and infusion
        delivers a confirmed node's body again. To change what a node says, supersede it."""
        return await run_tool(
            ctx,
            lambda app: app.memory.confirm_entities(app.hold(session_id), refs, why),
            confirmed_text,
        )

    @tools.tool(ToolKind.WRITE, title="Claim two referents are one, or not")
    async def claim_referents(
        ctx: ToolContext,
        session_id: SessionId,
        claims: Annotated[
            list[ClaimIn],
            Field(
                min_length=1,
                max_length=1_000,
                description="Claims about pairs of referents of one type (Component, Concept "
                "or Citation), all in one transaction. resolution: confirmed (one thing), "
                "distinct (not), proposed (may be). A later claim on a pair revises the "
                'earlier. Example: [{"source": "Alice (billing)", "target": "Alice (infra)", '
                '"resolution": "distinct", "why": "different employee ids"}].',
            ),
        ],
    ) -> Annotated[CallToolResult, Claimed]:
        """Say that two references are one thing, or definitely not, or might be: a claim made
        in your open encounter, with you as its author. Nothing is merged; search and
        trace_provenance follow confirmed claims only with same_as=true."""
        return await run_tool(
            ctx,
            lambda app: app.memory.claim_referents(app.hold(session_id), claims),
            claimed_text,
        )

    @tools.tool(ToolKind.WRITE, title="Pin nodes so they never fade")
    async def pin_entities(
        ctx: ToolContext,
        session_id: SessionId,
        refs: Annotated[
            list[NodeRef],
            Field(
                min_length=1,
                max_length=5_000,
                description="Names or ids of the nodes to pin (or unpin). "
                "Example: ['deploy runbook'].",
            ),
        ],
        unpin: Annotated[
            bool,
            Field(
                description="true to lift the pins instead: the nodes fade again. Default false."
            ),
        ] = False,
        why: Annotated[
            str | None,
            Field(
                max_length=2_000,
                description="Why it must stay near. Example: 'the on-call checklist'.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Pinned]:
        """Pin nodes from your open encounter: a pinned node is hot whatever its age, so it
        never fades from search or infusion and never reaches the operator's review queue.
        Unpinning lets it fade again from now. Nodes are not changed; each pin or unpin is
        a PINNED edge, and counts as a use."""
        return await run_tool(
            ctx,
            lambda app: app.memory.pin_entities(
                app.hold(session_id), refs, pinned=not unpin, why=why
            ),
            pinned_text,
        )
