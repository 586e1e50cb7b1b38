"""What each backend's one execute path reports about every statement it sends.

A ``Tracer`` is called once per statement, after it ran (or failed), with the
statement text, its parameters and the seconds it took. Both backends take one;
``QueryLog``, the default, is the query log: each statement at DEBUG, a slow
one at WARNING. Parameters carry memory content, so the log never shows them
at DEBUG or above: only at ``PARAMS_LEVEL``, a level below DEBUG that an
operator turns on deliberately.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from typing import Any, Final, Protocol

DEFAULT_SLOW_QUERY_MS: Final = 500.0
PARAMS_LEVEL: Final = 5  # below DEBUG (10): parameters are memory content
SLOW_TEXT_CHARS: Final = 200

log = logging.getLogger("kenning_encounter.store.queries")


class Tracer(Protocol):
    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        """Called once per statement sent, after it returned or raised."""
        ...


# A quoted string or a comment in a statement's text, to its end if left open: read_cypher's
# text is an agent's, and what it quotes may be the memory's content (ours put content
# in parameters).
_QUOTED: Final = re.compile(
    r"'(?:[^'\\]|\\.?)*(?:'|\Z)|\"(?:[^\"\\]|\\.?)*(?:\"|\Z)|//[^\n]*|/\*.*?(?:\*/|\Z)",
    re.DOTALL,
)


def _unquoted(statement: str) -> str:
    """The text with each quoted string and comment masked."""
    return _QUOTED.sub(lambda m: "/*…*/" if m.group().startswith("/") else "'…'", statement)


def _short(statement: str) -> str:
    flat = " ".join(_unquoted(statement).split())
    return flat if len(flat) <= SLOW_TEXT_CHARS else flat[: SLOW_TEXT_CHARS - 1] + "…"


class QueryLog:
    """The default tracer: every statement at DEBUG, one slower than ``slow_query_ms``
    at WARNING (0 turns the slow log off)."""

    def __init__(self, slow_query_ms: float = DEFAULT_SLOW_QUERY_MS, *, backend: str = "") -> None:
        if slow_query_ms < 0:
            raise ValueError(
                f"slow_query_ms is {slow_query_ms}; give 0 (off) or a positive number of ms"
            )
        self.slow_query_ms = slow_query_ms
        self._backend = backend

    def __call__(self, statement: str, params: Mapping[str, Any] | None, seconds: float) -> None:
        ms = seconds * 1000
        if self.slow_query_ms and ms > self.slow_query_ms:
            log.warning(
                "slow %s statement (%.1f ms, over %g ms): %s",
                self._backend or "store",
                ms,
                self.slow_query_ms,
                _short(statement),
            )
        if log.isEnabledFor(logging.DEBUG):
            log.debug("%s statement in %.2f ms: %s", self._backend or "store", ms, statement)
        if params and log.isEnabledFor(PARAMS_LEVEL):
            log.log(PARAMS_LEVEL, "parameters: %r", dict(params))
