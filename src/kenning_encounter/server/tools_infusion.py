"""Infusion tools: the unasked recall channel, and what the matcher saw and chose."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, cast

from mcp_types import CallToolResult
from pydantic import Field

from kenning_encounter.errors import InvalidInput
from kenning_encounter.lazymodel import LazyModel
from kenning_encounter.server.calls import ToolContext, run_tool
from kenning_encounter.server.context import AppContext
from kenning_encounter.server.params import IncludeCold, SessionId
from kenning_encounter.server.registry import ToolKind, ToolRegistrar

Prompt = Annotated[
    str,
    Field(
        min_length=1,
        max_length=32_000,
        description="The user's prompt as typed (never a tool result). Example: 'why did the "
        "deploy fail again?'",
    ),
]
Trajectory = Annotated[
    list[str] | None,
    Field(
        max_length=20,
        description="The session's previous user turns, oldest first (the hook sends up to 6). "
        "Example: ['look at the deploy logs', 'the auth service is slow'].",
    ),
]


class InfusionMeta(LazyModel):
    channel: str = Field(description="meaning, lexical, or none")
    degraded_reason: str | None = Field(
        default=None, description="Sent when the channel fell back: why"
    )


class Infusion(LazyModel):
    """What a model reads from infuse: the payload and how it was chosen. The counts,
    ids and timings the pipeline also reports are diagnostics (the HTTP /infuse
    answer carries them); the payload already says what it delivered."""

    payload: str = Field(
        description="The signed, budgeted text to place in context; empty = silence"
    )
    status: str = Field(description="infused, or silent when nothing held bears on the prompt")
    meta: InfusionMeta

    @classmethod
    def of(cls, result: Mapping[str, Any]) -> Infusion:
        payload = str(result.get("payload", ""))
        meta = cast(Mapping[str, Any], result.get("meta") or {})
        degraded = bool(meta.get("degraded"))
        return cls(
            payload=payload,
            status=str(result.get("status") or ("infused" if payload else "silent")),
            meta=InfusionMeta(
                channel=str(meta.get("channel", "none")),
                degraded_reason=str(meta.get("degraded_reason")) if degraded else None,
            ),
        )


class MeaningDiagnosis(LazyModel):
    available: bool
    reason: str = ""
    diagnostic: dict[str, Any] = Field(default_factory=dict[str, Any])


def _render_infusion(result: Infusion) -> str:
    if result.payload:
        return result.payload
    meta = result.meta
    why = f" ({meta.degraded_reason})" if meta.degraded_reason else ""
    return f"(silence: nothing held bears on this prompt; channel {meta.channel}{why})"


def _diagnose(app: AppContext, prompt: str, trajectory: list[str]) -> MeaningDiagnosis:
    services = app.require_services()
    if services.meaning is None:
        reason = (
            "the matcher is off (KENNING_ENCOUNTER_MATCHER=off, or auto without GEMINI_API_KEY)"
            if app.settings.matcher_provider == "off"
            else "the matcher has no API key (GEMINI_API_KEY) or provider"
        )
        return MeaningDiagnosis(available=False, reason=reason)
    found = services.meaning.diagnose(prompt, trajectory)
    return MeaningDiagnosis(available=True, diagnostic=dict(found))


def _render_diagnosis(d: MeaningDiagnosis) -> str:
    if not d.available:
        return f"matcher unavailable: {d.reason}"
    return "\n".join(f"{k}: {v}" for k, v in d.diagnostic.items())


def register(tools: ToolRegistrar) -> None:
    deadline = tools.settings.read_timeout

    @tools.tool(ToolKind.READ, title="Infuse: what the memory holds about this prompt")
    async def infuse(
        ctx: ToolContext,
        session_id: SessionId,
        prompt: Prompt,
        trajectory: Trajectory = None,
        include_cold: IncludeCold = False,
    ) -> Annotated[CallToolResult, Infusion]:
        """The few things already held that bear on this prompt, signed and budgeted, or
        silence. Normally called by the Claude Code hook once per typed prompt; what was
        delivered earlier in the session comes back as a one-line handle. Nodes nobody
        used for long (cold) stay out unless include_cold."""

        def work(app: AppContext) -> Infusion:
            if app.infuse is None:
                raise InvalidInput("prompt", "infusion is not configured on this server")
            locus = app.hold(session_id)
            answer = app.infuse(locus, prompt, trajectory or [], include_cold=include_cold)
            return Infusion.of(answer)

        return await run_tool(ctx, work, _render_infusion, deadline=deadline)

    @tools.tool(ToolKind.READ, title="What the meaning matcher saw and chose")
    async def infuse_meaning(
        ctx: ToolContext, prompt: Prompt, trajectory: Trajectory = None
    ) -> Annotated[CallToolResult, MeaningDiagnosis]:
        """Diagnostic: run one meaning selection and show what the matcher was given
        (sizes, candidate window) and what it chose. Changes nothing."""
        return await run_tool(
            ctx,
            lambda app: _diagnose(app, prompt, trajectory or []),
            _render_diagnosis,
            deadline=deadline,
        )
