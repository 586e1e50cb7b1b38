"""Model providers behind one template (see ``base``); each backend module is imported on demand."""

from __future__ import annotations

from typing import Literal

from kenning_encounter.errors import ConfigError
from kenning_encounter.meaning.providers.base import (
    ModelReply,
    ModelRequest,
    Provider,
    TransientError,
)

ProviderKind = Literal["gemini", "openai"]


def make_provider(
    kind: ProviderKind,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    timeout_s: float = 5.0,
    max_attempts: int = 3,
) -> Provider:
    """The provider the settings name. ``base_url`` is required for ``openai``."""
    if kind == "gemini":
        from kenning_encounter.meaning.providers.gemini import DEFAULT_GEMINI_MODEL, GeminiProvider

        return GeminiProvider(
            api_key=api_key,
            model=model or DEFAULT_GEMINI_MODEL,
            timeout_s=timeout_s,
            base_url=base_url,
            max_attempts=max_attempts,
        )
    if kind == "openai":
        from kenning_encounter.meaning.providers.openai_compat import OpenAICompatProvider

        if not model:
            raise ConfigError("the openai matcher provider needs a model name")
        if not base_url:
            raise ConfigError(
                "the openai matcher provider needs a base URL, e.g. http://127.0.0.1:11434/v1"
            )
        return OpenAICompatProvider(
            base_url=base_url,
            model=model,
            api_key=api_key,
            timeout_s=timeout_s,
            max_attempts=max_attempts,
        )
    raise ConfigError(f"unknown matcher provider {kind!r}; use 'gemini' or 'openai'")


__all__ = [
    "ModelReply",
    "ModelRequest",
    "Provider",
    "ProviderKind",
    "TransientError",
    "make_provider",
]
