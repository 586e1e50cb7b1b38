"""Session tools: the only tools that write the spine (Locus, Encounter)."""

from __future__ import annotations

from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.memory import asof
from kenning_encounter.memory.models import Closed, ReEntry
from kenning_encounter.server import render
from kenning_encounter.server.calls import ToolContext, run_tool
from kenning_encounter.server.context import AppContext
from kenning_encounter.server.params import AsOf, SessionId
from kenning_encounter.server.registry import ToolKind, ToolRegistrar


def register(tools: ToolRegistrar) -> None:
    @tools.tool(ToolKind.SESSION, title="Open the next encounter")
    async def advance_encounter(
        ctx: ToolContext,
        session_id: SessionId,
        purpose: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2_000,
                description="What this unit of work sets out to do, in one or two sentences. "
                "Example: 'Find out why deploys at 09:00 trigger a retry storm'.",
            ),
        ],
        close_summary: Annotated[
            str | None,
            Field(
                description="Only when your session still has an encounter open: its summary, "
                "sealing it in the same call. Omit otherwise. Example: 'Traced the storm to "
                "the auth client; no backoff jitter.'",
            ),
        ] = None,
        director: Annotated[
            str | None,
            Field(
                max_length=200,
                description="Who directs this session (the person the work is for), set at "
                "the session's first advance and kept. Omit to use the server's configured "
                "director (by default the operating-system user). Example: 'Ada Lovelace'.",
            ),
        ] = None,
        director_key: Annotated[
            str | None,
            Field(
                max_length=500,
                description="With director: what identifies that person, e.g. an email "
                "address, on one line of visible text. Sessions naming one key meet one "
                "Person; a name without a key is a person of this session only. Example: "
                "'ada@example.org'.",
            ),
        ] = None,
        as_of: AsOf = None,
    ) -> Annotated[CallToolResult, ReEntry]:
        """Open your session's next encounter before recording anything.

        Returns the re-entry payload: recent encounters, open questions, live
        hypotheses, recent concepts, and encounters other sessions left unsealed; with
        `as_of`, those lists as the memory stood at that past tick.
        """

        def work(app: AppContext) -> ReEntry:
            locus = app.hold(session_id)
            # A bad as_of is refused before anything is written.
            past = as_of
            then = (
                app.memory.store.read(lambda tx: asof.moment(tx, past))
                if past is not None
                else None
            )
            opened = app.memory.advance_encounter(
                locus,
                purpose,
                close_summary=close_summary,
                director=director,
                director_key=director_key,
            )
            if then is not None:  # the payload's lists as the memory stood then
                opened = asof.reentry_then(
                    app.memory.store, opened, locus, then, hidden=app.memory.hidden_loci
                )
            return opened.model_copy(update={"handle": app.holds.handle(locus)})

        return await run_tool(ctx, work, render.reentry)

    @tools.tool(ToolKind.SESSION, title="Seal the encounter")
    async def close_encounter(
        ctx: ToolContext,
        session_id: SessionId,
        summary: Annotated[
            str,
            Field(
                min_length=1,
                max_length=10_000,
                description="What the encounter found or changed, for whoever re-enters later. "
                "Example: 'Confirmed the cron overlap; opened a question about the 09:05 spike.'",
            ),
        ],
        encounter: Annotated[
            str | None,
            Field(
                description="Name of the encounter to seal when it is not your open one, e.g. an "
                "encounter dissolved by a server restart. Omit to seal your open encounter. "
                "Example: 'E42'.",
            ),
        ] = None,
    ) -> Annotated[CallToolResult, Closed]:
        """Seal your encounter with a summary. A sealed encounter takes no more writes."""
        return await run_tool(
            ctx,
            lambda app: app.memory.close_encounter(app.hold(session_id), summary, encounter),
            render.closed,
        )
