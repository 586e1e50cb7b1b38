"""Read tools: they change nothing, so the reader face serves exactly these."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.memory import conflicts as contest
from kenning_encounter.memory.conflicts import ConflictsResult
from kenning_encounter.memory.contested import KINDS
from kenning_encounter.memory.history import ChainHistory
from kenning_encounter.memory.models import NameLookup, Provenance, SearchResult
from kenning_encounter.server import render
from kenning_encounter.server.calls import ToolContext, run_tool
from kenning_encounter.server.context import AppContext
from kenning_encounter.server.outputs import (
    PROVENANCE_CHARS,
    CypherRows,
    NodeTypes,
    RelationTypes,
    Schema,
    Vocabulary,
    fit_provenance,
)
from kenning_encounter.server.params import AsOf, ConsultedBy, IncludeCold, NodeRef, SameAs
from kenning_encounter.server.registry import ToolKind, ToolRegistrar


def _consulting(app: AppContext, session_id: str | None) -> str | None:
    """The session a read is recorded for: held by the caller (its handle), and only
    where the memory records consultations (never a reader face)."""
    if session_id is None or not app.memory.consults:
        return None
    return app.hold(session_id)


def register(tools: ToolRegistrar) -> None:
    deadline = tools.settings.read_timeout

    @tools.tool(ToolKind.READ, title="Search the memory")
    async def search(
        ctx: ToolContext,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=2_000,
                description="Words to look for in names and descriptions (lexical, ranked). "
                "Example: 'retry storm auth'.",
            ),
        ],
        types: Annotated[
            list[str] | None,
            Field(
                description="Only these node types: Observation, Question, Hypothesis, Concept, "
                "Note, Component, Citation. Omit for all. Example: ['Hypothesis', 'Question'].",
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=100, description="Most hits to return, 1-100. Example: 10.")
        ] = 10,
        include_superseded: Annotated[
            bool,
            Field(
                description="Also return older revisions a newer node supersedes. Default false."
            ),
        ] = False,
        when: Annotated[
            str | None,
            Field(
                max_length=200,
                description="Only nodes whose time falls here: world time where the node "
                "states it (valid_from/valid_until, t_observed), else when it was recorded. "
                "An ISO date or range ('2023-05-07', '2023-05-01..2023-05-31', "
                "'2023-05-01..') or a phrase read against now, or against as_of's moment "
                "when given ('yesterday', 'last week', "
                "'December', 'March to May 2023'), or an event the memory records ('before the migration', "
                "'between the migration and the launch', 'from May 3, 2026 until the launch'). "
                "Omit for all times; a time named in the query ranks, "
                "never filters: a date, or an event the memory records ('before the "
                "migration').",
            ),
        ] = None,
        same_as: SameAs = False,
        as_of: AsOf = None,
        include_cold: IncludeCold = False,
    ) -> Annotated[CallToolResult, SearchResult]:
        """Find nodes by the words in their names and descriptions, best match first;
        `when` keeps only those of a time, and a time the query names ranks them first.
        What your work keeps using ranks higher (activation, one declared signal: each hit
        says its tier); cold nodes, unused for long, only with include_cold. A search hit
        is not a use: open a hit with find_by_name to renew it."""
        return await run_tool(
            ctx,
            lambda app: app.memory.search(
                query,
                types=types,
                limit=limit,
                include_superseded=include_superseded,
                when=when,
                same_as=same_as,
                as_of=as_of,
                include_cold=include_cold,
            ),
            render.search,
            deadline=deadline,
            quick=True,
        )

    @tools.tool(ToolKind.READ, title="Look a node up by name")
    async def find_by_name(
        ctx: ToolContext, name: NodeRef, as_of: AsOf = None, session_id: ConsultedBy = None
    ) -> Annotated[CallToolResult, NameLookup]:
        """The live node carrying this name (or id), with its 20 newest older revisions and
        its tier (hot, warm, cold, frozen: any tier is found here); with `as_of`, the node
        that was live then, as it was then. A longer chain says how many older revisions
        it left out (history_left_out) and the chain_history call that pages through them
        (history_next). With your session_id the read counts as a use of the node (a
        CONSULTED edge from your open encounter): a faded node is hot again."""
        return await run_tool(
            ctx,
            lambda app: app.memory.find_by_name(
                name, as_of=as_of, session_id=_consulting(app, session_id)
            ),
            render.name_lookup,
            deadline=deadline,
            quick=True,
        )

    @tools.tool(ToolKind.READ, title="Trace what a node rests on")
    async def trace_provenance(
        ctx: ToolContext,
        ref: NodeRef,
        depth: Annotated[
            int,
            Field(
                ge=1, le=10, description="How many evidence hops to walk back, 1-10. Example: 5."
            ),
        ] = 5,
        same_as: SameAs = False,
        as_of: AsOf = None,
        session_id: ConsultedBy = None,
    ) -> Annotated[CallToolResult, Provenance]:
        """Walk back from a node along its evidence (GROUNDS, SUPPORTS, OBSERVED_AT, ...): what
        it rests on, its revisions and the encounter that recorded it. A long trace is cut
        to 8000 characters, oldest grounding first, and then says how much there was."""
        return await run_tool(
            ctx,
            lambda app: fit_provenance(
                app.memory.trace_provenance(
                    ref,
                    depth=depth,
                    same_as=same_as,
                    as_of=as_of,
                    session_id=_consulting(app, session_id),
                ),
                PROVENANCE_CHARS,
            ),
            render.provenance,
            deadline=deadline,
        )

    @tools.tool(ToolKind.READ, title="A chain's whole history")
    async def chain_history(
        ctx: ToolContext,
        node: NodeRef,
        direction: Annotated[
            Literal["around", "older", "newer"],
            Field(
                description="Which page: 'around' the version named (default), the versions "
                "'older' than it, or those 'newer' than it. Example: 'older'."
            ),
        ] = "around",
        session_id: ConsultedBy = None,
    ) -> Annotated[CallToolResult, ChainHistory]:
        """Every version of a node's revision chain, oldest first, whichever version you name:
        each version's text and status, why it replaced the one before (revision_why), the
        encounter and session that wrote it, its tick and time, and which version is the
        live head. A node never revised is a one-version history. At most 100 versions per
        answer, a page: older_left and newer_left count the versions beyond it, and `cut`
        gives the call for the next page (direction 'older' or 'newer' from the last id
        shown). A deleted version leaves no trace in its chain; the answer lists the
        encounters of these versions that had nodes deleted."""
        return await run_tool(
            ctx,
            lambda app: app.memory.chain_history(
                node, direction=direction, session_id=_consulting(app, session_id)
            ),
            render.chain_history,
            deadline=deadline,
        )

    @tools.tool(ToolKind.READ, title="What the memory contests")
    async def conflicts(
        ctx: ToolContext,
        kinds: Annotated[
            list[str] | None,
            Field(
                description="Only these conflict kinds: "
                + "; ".join(f"'{k}' ({doc})" for k, doc in KINDS.items())
                + ". Omit for all. Example: ['competing answers'].",
            ),
        ] = None,
        types: Annotated[
            list[str] | None,
            Field(
                description="Only conflicts over nodes of these types (Hypothesis, Concept, "
                "Question, ...). Omit for all. Example: ['Hypothesis'].",
            ),
        ] = None,
        about: Annotated[
            str | None,
            Field(
                min_length=1,
                max_length=200,
                description="Only conflicts this node (name or id) takes part in, contested "
                "or contesting. Example: 'cache flush'.",
            ),
        ] = None,
        limit: Annotated[
            int, Field(ge=1, le=100, description="Most conflicts to return, 1-100. Example: 20.")
        ] = 20,
    ) -> Annotated[CallToolResult, ConflictsResult]:
        """What the memory contests, sharpest first: open challenges against live nodes,
        challenged revisions, hypotheses both supported and challenged, questions with more
        than one answer, and revisions that lost the support the replaced version had (the
        kinds an infusion's conflict sections use). One entry per contested node, with the
        nodes on each side. Load-bearing first (other live nodes rest on it), then by how
        many lean on it, then the newest evidence."""

        def work(app: AppContext) -> ConflictsResult:
            with app.memory.whole_reading():  # it ranks over the whole outline
                return contest.conflicts(
                    app.memory.store,
                    kinds=kinds,
                    types=types,
                    about=about,
                    limit=limit,
                    hidden_loci=app.memory.hidden_loci,
                )

        return await run_tool(ctx, work, render.conflicts, deadline=deadline)

    @tools.tool(ToolKind.READ, title="Read-only Cypher query")
    async def read_cypher(
        ctx: ToolContext,
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=20_000,
                description="One read-only Cypher statement (MATCH ... RETURN). Writes, COPY, "
                "EXPORT, IMPORT, LOAD, ATTACH, INSTALL and procedures that write are refused. "
                "get_schema shows the labels and relation types. Example: "
                "'MATCH (q:Question) WHERE q.status = $s RETURN q.name LIMIT 20'.",
            ),
        ],
        params: Annotated[
            dict[str, Any] | None,
            Field(description='Values for $parameters in the query. Example: {"s": "open"}.'),
        ] = None,
    ) -> Annotated[CallToolResult, CypherRows]:
        """Run one read-only Cypher query; rows are capped in number and in the size of the
        answer's JSON, and the answer says when a cap cut it. A classified node this server
        is not granted is absent from every answer, whatever the query's shape (on Neo4j,
        shortestPath() is then refused: write SHORTEST 1 instead)."""
        return await run_tool(
            ctx,
            lambda app: CypherRows.of(app.memory.read_cypher(query, params)),
            render.cypher,
            deadline=deadline,
        )

    @tools.tool(ToolKind.READ, title="Schema of the memory")
    async def get_schema(ctx: ToolContext) -> Annotated[CallToolResult, Schema]:
        """The node types, relation types, endpoint rules and status effects, and the store."""
        return await run_tool(
            ctx,
            lambda app: Schema.model_validate(app.memory.get_schema()),
            render.schema,
            quick=True,
        )

    @tools.tool(ToolKind.READ, title="Node types")
    async def list_node_types(ctx: ToolContext) -> Annotated[CallToolResult, NodeTypes]:
        """Every node type: its layer, when to use it, its properties and statuses."""
        return await run_tool(
            ctx,
            lambda app: NodeTypes.model_validate({"node_types": app.memory.list_node_types()}),
            render.node_types,
            quick=True,
        )

    @tools.tool(ToolKind.READ, title="Relation types")
    async def list_relation_types(ctx: ToolContext) -> Annotated[CallToolResult, RelationTypes]:
        """Every relation type: when to use it and which node types may stand at each end."""
        return await run_tool(
            ctx,
            lambda app: RelationTypes.model_validate(
                {"relation_types": app.memory.list_relation_types()}
            ),
            render.relation_types,
            quick=True,
        )

    @tools.tool(ToolKind.READ, title="The whole vocabulary")
    async def list_vocabulary(ctx: ToolContext) -> Annotated[CallToolResult, Vocabulary]:
        """Node types, relation types and the status changes relations make, in one answer."""
        return await run_tool(
            ctx,
            lambda app: Vocabulary.model_validate(
                {k: v for k, v in app.memory.get_schema().items() if k != "store"}
            ),
            render.vocabulary,
            quick=True,
        )
