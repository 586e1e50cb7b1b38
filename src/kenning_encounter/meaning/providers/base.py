"""The provider template: one public ``complete`` that every model call goes through.

The base owns what every provider needs the same way: a hard deadline, retries
with backoff on transient failures, timing, and logging (content only at
DEBUG). A provider implements ``_send`` (one attempt, raising
``TransientError`` for what is worth retrying and ``MatcherError`` for what is
not) and ``_parse`` (the reply text out of the raw response).

The deadline is enforced here, not left to the HTTP library: each attempt runs
on a short-lived daemon thread and the caller waits for it no longer than the
time left. An attempt that overruns is abandoned (its own transport timeout,
set to the same remaining time, ends it soon after), and the caller gets
``MatcherError("timeout")`` on time.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from kenning_encounter.errors import MatcherError

logger = logging.getLogger(__name__)

# Below this much time left another attempt cannot finish; stop retrying.
_MIN_ATTEMPT_S = 0.05


class TransientError(MatcherError):
    """A failure worth another attempt (5xx, 429, a dropped connection)."""

    def __init__(self, detail: str) -> None:
        super().__init__("http_error", detail)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    system: str
    user: str
    purpose: str  # "select" or "compress"; appears in logs
    json_output: bool = False
    max_output_tokens: int = 512


@dataclass(frozen=True, slots=True)
class ModelReply:
    text: str
    provider: str
    model: str
    elapsed_ms: float
    attempts: int


class Provider(ABC):
    """A model endpoint. Thread-safe: one instance serves concurrent callers."""

    name: ClassVar[str]

    def __init__(
        self,
        *,
        model: str,
        timeout_s: float = 5.0,
        max_attempts: int = 3,
        backoff_s: float = 0.25,
    ) -> None:
        if timeout_s <= 0:
            raise ValueError("timeout_s must be positive")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self._model = model
        self._timeout_s = timeout_s
        self._max_attempts = max_attempts
        self._backoff_s = backoff_s

    @property
    def model(self) -> str:
        return self._model

    @property
    def timeout_s(self) -> float:
        return self._timeout_s

    def check(self) -> None:
        """Raise the ``MatcherError`` a call would surely fail with (no key, no package).

        Cheap and offline; lets a caller skip assembling a prompt that cannot be sent.
        """
        return None

    def warm_up(self) -> None:
        """Do the slow one-time setup (imports, client) now, outside any deadline.

        Call it off the request path at startup; until it is done, the first
        calls may spend their timeout on it. Raises ``MatcherError``.
        """
        return None

    def close(self) -> None:
        """Release connections; the provider is not used afterwards."""
        return None

    def complete(self, request: ModelRequest, *, timeout_s: float | None = None) -> ModelReply:
        """Send ``request`` and return the reply text, or raise ``MatcherError``.

        Never takes longer than ``timeout_s`` (default: the provider's timeout),
        retries included.
        """
        budget = self._timeout_s if timeout_s is None else timeout_s
        started = time.monotonic()
        deadline = started + budget
        logger.debug(
            "%s %s request to %s: system=%r user=%r",
            self.name,
            request.purpose,
            self._model,
            request.system,
            request.user,
        )
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - time.monotonic()
            try:
                if remaining < _MIN_ATTEMPT_S:
                    raise MatcherError("timeout", f"no answer within {budget:.2f}s")
                raw = self._send_within(request, remaining)
                text = self._parse(raw)
            except TransientError as exc:
                pause = self._backoff_s * (2 ** (attempt - 1)) * (1 + random.random() / 2)
                left = deadline - time.monotonic()
                if attempt >= self._max_attempts or left - pause < _MIN_ATTEMPT_S:
                    # Out of attempts, the failure is the answer; out of time for the
                    # next one, the call did not finish within its budget.
                    final = (
                        MatcherError(exc.reason, exc.detail)
                        if attempt >= self._max_attempts
                        else MatcherError(
                            "timeout", f"no answer within {budget:.2f}s (last: {exc.detail})"
                        )
                    )
                    self._log_failure(request, final, attempt, started)
                    raise final from exc
                logger.debug(
                    "%s %s attempt %d failed (%s); retrying in %.2fs",
                    self.name,
                    request.purpose,
                    attempt,
                    exc.detail,
                    pause,
                )
                time.sleep(pause)
                continue
            except MatcherError as exc:
                self._log_failure(request, exc, attempt, started)
                raise
            elapsed_ms = (time.monotonic() - started) * 1000
            logger.debug(
                "%s %s reply from %s in %.0f ms (%d attempt(s)): %r",
                self.name,
                request.purpose,
                self._model,
                elapsed_ms,
                attempt,
                text,
            )
            return ModelReply(text, self.name, self._model, elapsed_ms, attempt)

    def _log_failure(
        self, request: ModelRequest, exc: MatcherError, attempts: int, started: float
    ) -> None:
        logger.info(
            "%s %s call to %s failed after %d attempt(s) and %.0f ms: %s",
            self.name,
            request.purpose,
            self._model,
            attempts,
            (time.monotonic() - started) * 1000,
            exc,
        )

    def _send_within(self, request: ModelRequest, remaining_s: float) -> object:
        outcome: list[object] = []
        failure: list[BaseException] = []

        def attempt() -> None:
            try:
                outcome.append(self._send(request, remaining_s))
            except BaseException as exc:  # handed to the waiting caller
                failure.append(exc)

        worker = threading.Thread(target=attempt, name=f"kenning-{self.name}-call", daemon=True)
        worker.start()
        worker.join(remaining_s)
        if worker.is_alive():
            raise MatcherError("timeout", f"no answer within {remaining_s:.2f}s")
        if failure:
            exc = failure[0]
            if isinstance(exc, MatcherError):
                raise exc
            raise MatcherError("http_error", f"{type(exc).__name__} from {self.name}") from exc
        return outcome[0]

    @abstractmethod
    def _send(self, request: ModelRequest, timeout_s: float) -> object:
        """One attempt; the transport's own timeout should be ``timeout_s``."""

    @abstractmethod
    def _parse(self, raw: object) -> str:
        """The reply text in ``raw``, or ``MatcherError("malformed_output")``."""
