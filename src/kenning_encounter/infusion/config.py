"""The infusion pipeline's knobs: one config object and named presets."""

from __future__ import annotations

from enum import StrEnum
from typing import Final

from pydantic import ConfigDict, Field

from kenning_encounter.errors import InvalidInput
from kenning_encounter.lazymodel import LazyModel

# Claude Code cuts injected context at 10,000 characters; stay clear of it.
HARD_CAP_CHARS: Final = 9_000


class Preset(StrEnum):
    BALANCED = "balanced"
    FOCUSED = "focused"
    WIDE = "wide"


class InfusionConfig(LazyModel):
    model_config = ConfigDict(frozen=True)

    budget_chars: int = Field(default=4_000, ge=500, le=HARD_CAP_CHARS)
    seeds: int = Field(default=8, ge=1, le=50, description="focal nodes kept from selection")
    candidates: int = Field(
        default=120, ge=10, le=2_000, description="fulltext hits the lexical path ranks"
    )
    neighbours: int = Field(
        default=2, ge=0, le=10, description="encounter neighbours per hit (each side)"
    )
    neighbour_hits: int = Field(
        default=40,
        ge=0,
        le=500,
        description="the hits whose encounter neighbours join: the strongest by the lexical "
        "ranking's reading of their words",
    )
    items: int = Field(default=10, ge=1, le=50, description="neighbourhood items at most")
    expand_bias: float = Field(
        default=0.5, gt=0, le=1, description="restart weight of one-hop expansions"
    )
    frontier_bias: float = Field(
        default=0.3, ge=0, le=1, description="restart weight of the open frontier"
    )
    damping: float = Field(default=0.85, gt=0, lt=1)
    min_match: float = Field(
        default=2.0, ge=0, description="a lexical seed must match query terms worth this much IDF"
    )
    seed_floor: float = Field(
        default=0.1, ge=0, lt=1, description="seeds scoring under this share of the top are dropped"
    )
    horizon_turns: int = Field(
        default=12, ge=1, description="re-deliver a body after this many prompts"
    )
    horizon_seconds: float = Field(default=3_600.0, gt=0, description="…or after this long")
    description_chars: int = Field(
        default=600, ge=80, description="a body's description is cut here"
    )
    trajectory_turns: int = Field(default=6, ge=0, le=20)


PRESETS: Final[dict[Preset, InfusionConfig]] = {
    Preset.BALANCED: InfusionConfig(),
    Preset.FOCUSED: InfusionConfig(budget_chars=2_500, seeds=5, items=6, frontier_bias=0.2),
    Preset.WIDE: InfusionConfig(budget_chars=7_000, seeds=12, items=18, description_chars=900),
}


def preset(name: str, **overrides: object) -> InfusionConfig:
    try:
        base = PRESETS[Preset(name)]
    except ValueError:
        raise InvalidInput(
            "infusion_preset",
            f"unknown preset {name!r}; use one of: {', '.join(p.value for p in Preset)}",
        ) from None
    return base.model_copy(update={k: v for k, v in overrides.items() if v is not None})
