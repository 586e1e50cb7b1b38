"""Gemini through google-genai (an optional extra, imported on first use)."""

from __future__ import annotations

import importlib.util
import threading
from typing import TYPE_CHECKING, Any

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.providers.base import ModelRequest, Provider, TransientError

if TYPE_CHECKING:
    from google.genai import Client

DEFAULT_GEMINI_MODEL = "gemini-3.5-flash-lite"
MISSING_PACKAGE = (
    "google-genai is required for the Gemini matcher: pip install 'kenning-encounter[gemini]'"
)
_NO_KEY = "no Gemini API key; set GEMINI_API_KEY in the environment or in .env"
_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


def _mro_names(exc: BaseException) -> set[str]:
    # google-genai runs on httpx or on its fork httpx2 depending on version and
    # environment; their exception classes share names but not identity.
    return {cls.__name__ for cls in type(exc).__mro__}


class GeminiProvider(Provider):
    name = "gemini"

    def __init__(
        self,
        *,
        api_key: str | None,
        model: str = DEFAULT_GEMINI_MODEL,
        timeout_s: float = 5.0,
        base_url: str | None = None,
        max_attempts: int = 3,
        backoff_s: float = 0.25,
    ) -> None:
        super().__init__(
            model=model, timeout_s=timeout_s, max_attempts=max_attempts, backoff_s=backoff_s
        )
        self._api_key = api_key or None
        self._base_url = base_url
        self._client: Client | None = None
        self._client_lock = threading.Lock()

    def check(self) -> None:
        if self._api_key is None:
            raise MatcherError("no_key", _NO_KEY)
        # find_spec, not import: importing google-genai takes about a second,
        # which belongs in warm_up, not in front of every selection.
        try:
            found = importlib.util.find_spec("google.genai") is not None
        except (ImportError, ValueError):  # ValueError: a module entry set to None
            found = False
        if not found:
            raise MatcherError("provider_missing", MISSING_PACKAGE)

    def warm_up(self) -> None:
        self._get_client()

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _get_client(self) -> Client:
        self.check()
        with self._client_lock:
            if self._client is None:
                try:
                    from google import genai
                    from google.genai import types
                except ImportError as exc:
                    raise MatcherError("provider_missing", MISSING_PACKAGE) from exc

                options = types.HttpOptions(api_version="v1beta")
                if self._base_url:
                    options.base_url = self._base_url
                self._client = genai.Client(
                    api_key=self._api_key, vertexai=False, http_options=options
                )
            return self._client

    def _send(self, request: ModelRequest, timeout_s: float) -> object:
        client = self._get_client()
        from google.genai import errors, types

        config = types.GenerateContentConfig(
            system_instruction=request.system,
            temperature=0.0,
            max_output_tokens=request.max_output_tokens,
            response_mime_type="application/json" if request.json_output else None,
            http_options=types.HttpOptions(timeout=max(1, int(timeout_s * 1000))),
        )
        try:
            return client.models.generate_content(
                model=self.model, contents=request.user, config=config
            )
        except errors.APIError as exc:
            code = int(exc.code or 0)
            if code in _RETRY_STATUS or code >= 500:
                raise TransientError(f"HTTP {code} from Gemini") from exc
            if code in (401, 403):
                raise MatcherError("http_error", f"HTTP {code}: Gemini refused the key") from exc
            raise MatcherError("http_error", f"HTTP {code} from Gemini") from exc
        except Exception as exc:
            names = _mro_names(exc)
            if "TimeoutException" in names:
                raise MatcherError(
                    "timeout", f"Gemini gave no answer within {timeout_s:.2f}s"
                ) from exc
            if "TransportError" in names:
                raise TransientError(f"{type(exc).__name__} talking to Gemini") from exc
            if isinstance(exc, ValueError) or "UnknownApiResponseError" in names:
                # JSONDecodeError and pydantic's ValidationError are ValueErrors
                raise MatcherError(
                    "malformed_output", "Gemini sent an unreadable response"
                ) from exc
            raise

    def _parse(self, raw: object) -> str:
        candidates: Any = getattr(raw, "candidates", None)
        if not candidates:
            raise MatcherError("malformed_output", "Gemini returned no candidates")
        content: Any = getattr(candidates[0], "content", None)
        parts: Any = getattr(content, "parts", None) or []
        # Thought summaries are not the answer, even when a model sends them.
        texts = [
            p.text
            for p in parts
            if isinstance(getattr(p, "text", None), str) and not getattr(p, "thought", False)
        ]
        if not texts:
            raise MatcherError("malformed_output", "Gemini's answer held no text")
        return "".join(texts)
