"""``infuse_meaning``: what the matcher was given and what it chose, as plain data."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import UTC, datetime
from typing import TypedDict

from kenning_encounter.meaning.matcher import Matcher, MatchResult
from kenning_encounter.meaning.stored import MeaningStore
from kenning_encounter.meaning.window import CandidateSource


class MeaningWindowView(TypedDict):
    used: bool
    size: int
    pool_size: int
    by_source: dict[str, int]


class MeaningGivenView(TypedDict):
    meanings_held: int
    window: MeaningWindowView
    prompt_chars: int
    prompt_budget_chars: int
    trajectory_turns: int


class MeaningPickView(TypedDict):
    id: str
    meaning: str | None  # None when the entry vanished since the match
    why: str | None


class MeaningDiagnostic(TypedDict):
    match_id: str
    channel: str
    fallback_reason: str | None
    fallback_detail: str
    provider: str
    model: str
    given: MeaningGivenView
    chose: list[MeaningPickView]
    unknown_ids_dropped: int
    over_limit_dropped: int
    timings_ms: dict[str, float]


def describe_match(
    result: MatchResult, sidecar: MeaningStore, *, prompt_budget_chars: int
) -> MeaningDiagnostic:
    reasons = result.reasons or {}
    chose: list[MeaningPickView] = []
    for node_id in result.ids:
        entry = sidecar.get(node_id)
        chose.append(
            {
                "id": node_id,
                "meaning": entry.meaning if entry is not None else None,
                "why": reasons.get(node_id),
            }
        )
    t = result.timings
    return {
        "match_id": result.match_id,
        "channel": result.channel,
        "fallback_reason": result.fallback_reason,
        "fallback_detail": result.fallback_detail,
        "provider": result.provider,
        "model": result.model,
        "given": {
            "meanings_held": len(sidecar),
            "window": {
                "used": result.window.used,
                "size": result.window.size,
                "pool_size": result.window.pool_size,
                "by_source": dict(result.window.by_source),
            },
            "prompt_chars": result.prompt_chars,
            "prompt_budget_chars": prompt_budget_chars,
            "trajectory_turns": result.trajectory_turns,
        },
        "chose": chose,
        "unknown_ids_dropped": result.unknown_ids_dropped,
        "over_limit_dropped": result.over_limit_dropped,
        "timings_ms": {
            "assemble": t.assemble_ms,
            "model": t.model_ms,
            "parse": t.parse_ms,
            "total": t.total_ms,
        },
    }


def infuse_meaning(
    matcher: Matcher,
    prompt: str,
    trajectory: Sequence[str] = (),
    *,
    candidates: CandidateSource | None = None,
    exclude: Collection[str] = (),
) -> MeaningDiagnostic:
    """Run one selection exactly as an infusion would (asked now) and describe it."""
    now = datetime.now(UTC)
    result = matcher.select(prompt, trajectory, candidates=candidates, exclude=exclude, now=now)
    return describe_match(
        result, matcher.sidecar, prompt_budget_chars=matcher.options.prompt_budget_chars
    )
