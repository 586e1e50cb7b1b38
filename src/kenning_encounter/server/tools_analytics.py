"""Analytics tools: the orient panel, and focused algorithms on named projections."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.analytics.panel import Panel
from kenning_encounter.analytics.reports import AlgorithmReport, ProjectionInfo
from kenning_encounter.memory import asof
from kenning_encounter.memory.activation import Present
from kenning_encounter.server.calls import WHOLE_MEMORY, ToolContext, run_tool
from kenning_encounter.server.context import AppContext
from kenning_encounter.server.holds import split_handle
from kenning_encounter.server.params import AsOf
from kenning_encounter.server.registry import ToolKind, ToolRegistrar
from kenning_encounter.store.outline import Outline, Relations
from kenning_encounter.store.port import ReadTx
from kenning_encounter.store.records import NodeRecord

ProjectionName = Annotated[
    str,
    Field(
        min_length=1,
        max_length=64,
        description="A name for the projection, letters, digits, '-' and '_'. Example: 'auth-work'.",
    ),
]
# The panel and the reports carry their text view; sending it in the JSON too would
# say everything twice.
TEXT_VIEW = frozenset({"text"})
# The services' own bounds (analytics/catalog.py and orient.py MAX_TOP_K, projection.py
# MAX_HOPS), restated so the schemas need not import the analytics: a host checks and
# fills in arguments from the schema, so a bound it states must be the one a call meets
# (tests/e2e/test_ts_client.py tries every bound a read tool's schema states).
TopK = Annotated[int, Field(ge=1, le=100, description="How many nodes to list. Example: 10.")]
OrientTopK = Annotated[
    int, Field(ge=1, le=50, description="How many nodes each list shows, 1-50. Example: 10.")
]
Hops = Annotated[int, Field(ge=1, le=4, description="With `around`: how far, 1-4. Default 2.")]


def _graph(app: AppContext) -> tuple[list[NodeRecord], Relations]:
    outline: Outline = app.store.read(lambda tx: tx.authored_outline())
    return _visible(app, outline)


def _visible(app: AppContext, outline: Outline) -> tuple[list[NodeRecord], Relations]:
    hidden = app.memory.hidden_loci
    seen = outline.without_loci(hidden)
    return seen.nodes, seen.relations


def _current_encounter(app: AppContext, session_id: str | None) -> str | None:
    if not session_id:
        return None
    # A read needs no proof: the handle's id part names the session.
    locus = split_handle(session_id)[0]
    found = app.store.read(lambda tx: tx.open_encounter_of(locus))
    return found.name if found else None


def _orient_then(app: AppContext, as_of: int | str, budget: int, top_k: int) -> Panel:
    """The panel over the graph as it stood at a past tick (memory/asof.py): no drift,
    and no baseline saved (a reading of the past is no step of the present)."""
    from kenning_encounter.analytics.orient import build_panel

    asof.check(as_of)
    services = app.require_services()

    def work(tx: ReadTx) -> tuple[Outline, int]:
        then = asof.view(tx, as_of)
        past = asof.moment_of(then)
        return then.authored_outline(), past.tick if past is not None else 0

    with app.memory.whole_reading():
        outline, tick = app.store.read(work)
        nodes, edges = _visible(app, outline)
        panel = build_panel(nodes, edges, budget_chars=budget, top_k=top_k, engine=services.engine)
    return panel.model_copy(update={"text": f"As of tick {tick}.\n{panel.text}"})


def _orient(
    app: AppContext, session_id: str | None, budget: int, top_k: int, as_of: int | str | None
) -> Panel:
    if as_of is not None:
        return _orient_then(app, as_of, budget, top_k)
    # Imported on the first reading: it brings igraph, numpy and scipy.
    from kenning_encounter.analytics.orient import orient_panel

    services = app.require_services()
    memory = app.memory
    with memory.whole_reading():
        nodes, edges = _graph(app)
        at = datetime.now(UTC)

        def present(tx: ReadTx) -> Present:
            return memory.work_time.present(tx, memory.activation, at)

        return orient_panel(
            nodes,
            edges,
            baselines=services.baselines,
            encounter=_current_encounter(app, session_id),
            budget_chars=budget,
            top_k=top_k,
            engine=services.engine,
            standing=(memory.activation, memory.store.read(present)),
        )


class AlgorithmSent(AlgorithmReport):
    """A report as sent: Leiden's detail is said once, by its communities section."""

    detail: str = ""

    @classmethod
    def of(cls, report: AlgorithmReport) -> AlgorithmSent:
        said = report.communities is not None and report.communities.detail == report.detail
        return cls.model_validate({**dict(report), "detail": "" if said else report.detail})


def _report_text(report: AlgorithmReport) -> str:
    return report.text


def _info_text(info: ProjectionInfo) -> str:
    return f"projection {info.name}: {info.nodes} nodes, {info.edges} edges ({info.scope}; {info.engine})"


def register(tools: ToolRegistrar) -> None:
    deadline = tools.settings.read_timeout

    @tools.tool(ToolKind.READ, title="Orient: the instrument panel over your memory")
    async def orient(
        ctx: ToolContext,
        session_id: Annotated[
            str | None,
            Field(
                description="Your session id: drift is then read against the previous encounter's "
                "baseline and this reading saved for the next. Omit for a one-off reading."
            ),
        ] = None,
        budget_chars: Annotated[
            int,
            Field(
                ge=1_000,
                le=30_000,
                description="Size limit of the answer in characters, for the structured panel "
                "as JSON and for the text view alike. Default 8000.",
            ),
        ] = 8_000,
        top_k: OrientTopK = 10,
        as_of: AsOf = None,
    ) -> Annotated[CallToolResult, Panel]:
        """One call over the authored graph (process edges excluded): mass, frontier mass and
        their divergence, betweenness, communities, components, fragility, weave audit, drift,
        and the frontier (open questions, untested hypotheses, ungrounded concepts). Built
        against rich-get-richer feedback: what mass makes prominent is never all it shows.
        With `as_of`, the graph as it stood at that past tick (no drift, nothing saved)."""
        return await run_tool(
            ctx,
            lambda app: _orient(app, session_id, budget_chars, top_k, as_of),
            lambda p: p.text,
            deadline=deadline,
            exclude=TEXT_VIEW,
            narrow=WHOLE_MEMORY,
        )

    @tools.tool(ToolKind.READ, title="Create a named projection for focused algorithms")
    async def gds_create_projection(
        ctx: ToolContext,
        name: ProjectionName,
        node_types: Annotated[
            list[str] | None,
            Field(description="Keep only these node types. Example: ['Concept', 'Hypothesis']."),
        ] = None,
        around: Annotated[
            str | None,
            Field(description="Keep what lies within `hops` relations of this node (name or id)."),
        ] = None,
        hops: Hops = 2,
        include_history: Annotated[
            bool, Field(description="Keep superseded revisions as their own nodes. Default false.")
        ] = False,
    ) -> Annotated[CallToolResult, ProjectionInfo]:
        """Project the authored graph (heads of revision chains by default) under a name, for
        gds_pagerank / gds_articlerank / gds_betweenness / gds_leiden / gds_wcc. Projections
        expire when idle; drop them with gds_drop_projection."""

        def work(app: AppContext) -> ProjectionInfo:
            with app.memory.whole_reading():  # it reads the whole outline to cut from
                nodes, edges = _graph(app)
                return app.require_services().catalog.create(
                    name,
                    nodes,
                    edges,
                    node_types=node_types,
                    around=around,
                    hops=hops,
                    include_history=include_history,
                )

        return await run_tool(
            ctx,
            work,
            _info_text,
            deadline=deadline,
            narrow="narrow the projection (node_types, or around a node with fewer hops), "
            "or raise KENNING_ENCOUNTER_READ_TIMEOUT and restart",
        )

    def _algorithm(algorithm: str, title: str, doc: str) -> None:
        async def run(
            ctx: ToolContext, name: ProjectionName, top_k: TopK = 10
        ) -> Annotated[CallToolResult, AlgorithmSent]:
            return await run_tool(
                ctx,
                lambda app: AlgorithmSent.of(
                    app.require_services().catalog.run(name, algorithm, top_k=top_k)
                ),
                _report_text,
                deadline=deadline,
                exclude=TEXT_VIEW,
            )

        run.__name__ = f"gds_{algorithm}"
        run.__doc__ = doc
        tools.tool(ToolKind.READ, title=title)(run)

    _algorithm(
        "pagerank",
        "PageRank on a projection",
        "PageRank over a named projection: where the links lead.",
    )
    _algorithm(
        "articlerank",
        "ArticleRank on a projection",
        "ArticleRank (damped accumulation) over a named projection: what accumulates weight.",
    )
    _algorithm(
        "betweenness",
        "Betweenness on a projection",
        "Betweenness over a named projection: the nodes that bridge (sampled on large graphs).",
    )
    _algorithm(
        "leiden",
        "Leiden communities on a projection",
        "Leiden communities, each labelled by its most central members.",
    )
    _algorithm(
        "wcc",
        "Weakly connected components",
        "Weakly connected components: count, sizes and isolated nodes.",
    )

    @tools.tool(ToolKind.READ, title="Drop a named projection")
    async def gds_drop_projection(
        ctx: ToolContext, name: ProjectionName
    ) -> Annotated[CallToolResult, ProjectionInfo]:
        """Drop a named projection and free what it held."""
        return await run_tool(
            ctx, lambda app: app.require_services().catalog.drop(name), _info_text
        )
