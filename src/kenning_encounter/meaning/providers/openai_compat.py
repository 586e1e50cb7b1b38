"""Any OpenAI-compatible chat-completions endpoint (vLLM, Ollama, llama.cpp server, ...)."""

from __future__ import annotations

import threading
from typing import Any

import httpx

from kenning_encounter.errors import ConfigError, MatcherError
from kenning_encounter.meaning.providers.base import ModelRequest, Provider, TransientError

_RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})


class OpenAICompatProvider(Provider):
    """``base_url`` is the API root, e.g. ``http://127.0.0.1:11434/v1``; the key is optional."""

    name = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 5.0,
        json_mode: bool = True,
        max_attempts: int = 3,
        backoff_s: float = 0.25,
    ) -> None:
        super().__init__(
            model=model, timeout_s=timeout_s, max_attempts=max_attempts, backoff_s=backoff_s
        )
        if not base_url:
            raise ConfigError("the OpenAI-compatible matcher needs a base URL")
        self._base_url = base_url.rstrip("/") + "/"
        self._api_key = api_key or None
        # Some local servers reject response_format; json_mode=False leaves it out.
        self._json_mode = json_mode
        self._client: httpx.Client | None = None
        self._client_lock = threading.Lock()

    def warm_up(self) -> None:
        self._get_client()  # building the client (TLS context included) takes ~0.1 s

    def close(self) -> None:
        with self._client_lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def _get_client(self) -> httpx.Client:
        with self._client_lock:
            if self._client is None:
                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(
                    base_url=self._base_url, headers=headers, timeout=self.timeout_s
                )
            return self._client

    def _send(self, request: ModelRequest, timeout_s: float) -> object:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "temperature": 0,
            "max_tokens": request.max_output_tokens,
        }
        if request.json_output and self._json_mode:
            body["response_format"] = {"type": "json_object"}
        try:
            response = self._get_client().post("chat/completions", json=body, timeout=timeout_s)
        except httpx.TimeoutException as exc:
            raise MatcherError(
                "timeout", f"{self._base_url} gave no answer within {timeout_s:.2f}s"
            ) from exc
        except httpx.TransportError as exc:
            raise TransientError(f"{type(exc).__name__} talking to {self._base_url}") from exc
        status = response.status_code
        if status in _RETRY_STATUS or status >= 500:
            raise TransientError(f"HTTP {status} from {self._base_url}")
        if status >= 400:
            raise MatcherError("http_error", f"HTTP {status} from {self._base_url}")
        return response

    def _parse(self, raw: object) -> str:
        if not isinstance(raw, httpx.Response):
            raise MatcherError("malformed_output", "no HTTP response to read")
        try:
            data: Any = raw.json()
            content: Any = data["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise MatcherError(
                "malformed_output", "the reply is not a chat-completions response"
            ) from exc
        if not isinstance(content, str):
            raise MatcherError("malformed_output", "the reply carries no text content")
        return content
