"""The matcher: per prompt, a model reads the meanings and picks the nodes that bear on it.

``Matcher.select`` never raises for a matcher failure and never blocks longer
than the provider's timeout. It always returns a ``MatchResult``; on failure
the result has ``channel == "fallback"``, no ids, and ``fallback_reason`` set,
so a caller that reads ``result.ids`` without looking at the channel gets an
empty selection, never a wrong one, and a caller that checks ``result.ok``
knows to take the lexical path. Reasons:

    no_key            no API key configured
    provider_missing  the provider's optional package is not installed
    timeout           no answer within the timeout
    http_error        the endpoint refused or failed (after retries)
    malformed_output  the answer is not the strict JSON asked for
    empty_pool        the sidecar holds no meanings yet
    internal_error    a defect in this code (logged with its traceback)
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from kenning_encounter.errors import MatcherError
from kenning_encounter.meaning.providers.base import ModelRequest, Provider
from kenning_encounter.meaning.selection import (
    DATE_CHARS,
    LINE_OVERHEAD,
    MEMORY_HEADER,
    parse_selection,
    render_block,
    render_line,
    render_moment,
    select_system,
)
from kenning_encounter.meaning.sidecar import MeaningEntry
from kenning_encounter.meaning.stored import MeaningStore
from kenning_encounter.meaning.window import CandidateSource, WindowQuotas, fit_window

logger = logging.getLogger(__name__)
_MAX_DATED = 200_000  # node dates kept: a large memory's listings read them again past it

Channel = Literal["meaning", "fallback"]


@dataclass(frozen=True, slots=True)
class MatcherOptions:
    prompt_budget_chars: int = 60_000  # whole prompt; over it, a candidate window is used
    reasons: bool = False  # ask for a short "why" per pick (more output tokens, slower)
    max_picks: int = 8
    max_turns: int = 5  # trajectory turns kept, newest
    max_turn_chars: int = 1_000
    max_prompt_chars: int = 4_000
    quotas: WindowQuotas = field(default_factory=WindowQuotas)


@dataclass(frozen=True, slots=True)
class WindowInfo:
    used: bool
    size: int  # meanings listed in the prompt
    pool_size: int  # meanings that could have been listed
    by_source: Mapping[str, int] = field(default_factory=dict[str, int])


@dataclass(frozen=True, slots=True)
class MatchTimings:
    assemble_ms: float = 0.0
    model_ms: float = 0.0
    parse_ms: float = 0.0
    total_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class MatchResult:
    channel: Channel
    match_id: str  # uuid4 hex, for tracing one selection through logs and payloads
    ids: tuple[str, ...]
    provider: str
    model: str
    timings: MatchTimings
    window: WindowInfo
    prompt_chars: int
    trajectory_turns: int
    reasons: Mapping[str, str] | None = None  # node id -> why, when reasons are on
    unknown_ids_dropped: int = 0
    over_limit_dropped: int = 0
    fallback_reason: str | None = None
    fallback_detail: str = ""

    @property
    def ok(self) -> bool:
        return self.channel == "meaning"


@dataclass(frozen=True, slots=True)
class _Listing:
    version: int
    block: str
    handles: dict[int, str]
    entries: tuple[MeaningEntry, ...]


@dataclass(frozen=True, slots=True)
class _Prepared:
    system: str
    user: str
    handles: dict[int, str]
    window: WindowInfo


def _ms(start: float, end: float) -> float:
    return round((end - start) * 1000, 3)


class Matcher:
    """Thread-safe; one instance serves every session of the server."""

    def __init__(
        self,
        sidecar: MeaningStore,
        provider: Provider,
        options: MatcherOptions | None = None,
        *,
        dates: Callable[[Sequence[str]], Mapping[str, str]] | None = None,
    ) -> None:
        """``dates`` gives listed nodes their dates (ISO, by id; a node's time never
        changes, so each is asked once); without it items are listed undated."""
        self._sidecar = sidecar
        self._provider = provider
        self._options = options or MatcherOptions()
        self._full: _Listing | None = None  # the full listing, reused until the sidecar changes
        self._dates = dates
        self._dated: dict[str, str] = {}  # node id -> its date ("" for none), as ``dates`` said
        self._dated_lock = threading.Lock()

    @property
    def options(self) -> MatcherOptions:
        return self._options

    @property
    def sidecar(self) -> MeaningStore:
        return self._sidecar

    @property
    def provider(self) -> Provider:
        return self._provider

    def select(
        self,
        prompt: str,
        trajectory: Sequence[str] = (),
        *,
        candidates: CandidateSource | None = None,
        exclude: Collection[str] = (),
        timeout_s: float | None = None,
        now: datetime | None = None,
    ) -> MatchResult:
        """Pick the nodes that bear on ``prompt``.

        ``trajectory`` is the session's previous user turns, oldest first.
        ``candidates`` supplies the window when the meanings exceed the budget
        (without it the window is the newest meanings). ``exclude`` keeps ids
        out of the pool (e.g. superseded nodes). ``timeout_s`` shortens the
        provider's timeout for this call, for a caller with a deadline of its own.
        ``now`` is the prompt's moment, which the prompt names for the times it reads.
        """
        started = time.monotonic()
        match_id = uuid.uuid4().hex
        opts = self._options
        if timeout_s is not None:
            # A caller's deadline may shorten the configured timeout, never lengthen it.
            timeout_s = min(timeout_s, self._provider.timeout_s)
        turns = self._trim_turns(prompt, trajectory)
        window = WindowInfo(False, 0, 0)
        try:
            self._provider.check()
            prep = self._prepare(prompt, turns, candidates, exclude, now)
            window = prep.window
            if window.pool_size == 0:
                raise MatcherError("empty_pool", "no meanings are held yet")
            if window.size == 0:
                raise MatcherError("empty_pool", "no meaning fits in the prompt budget")
            assembled = time.monotonic()
            reply = self._provider.complete(
                ModelRequest(
                    system=prep.system,
                    user=prep.user,
                    purpose="select",
                    json_output=True,
                    max_output_tokens=64 + opts.max_picks * (48 if opts.reasons else 12),
                ),
                timeout_s=timeout_s,
            )
            answered = time.monotonic()
            parsed = parse_selection(
                reply.text, prep.handles, reasons=opts.reasons, max_picks=opts.max_picks
            )
            done = time.monotonic()
        except MatcherError as exc:
            return self._fallback(match_id, started, exc.reason, exc.detail, turns, window)
        except Exception as exc:
            logger.exception("meaning matcher %s failed unexpectedly", match_id)
            return self._fallback(
                match_id, started, "internal_error", type(exc).__name__, turns, window
            )
        if parsed.unknown_dropped:
            logger.info(
                "meaning matcher %s: dropped %d id(s) the prompt did not show",
                match_id,
                parsed.unknown_dropped,
            )
        return MatchResult(
            channel="meaning",
            match_id=match_id,
            ids=parsed.ids,
            provider=reply.provider,
            model=reply.model,
            timings=MatchTimings(
                assemble_ms=_ms(started, assembled),
                model_ms=_ms(assembled, answered),
                parse_ms=_ms(answered, done),
                total_ms=_ms(started, done),
            ),
            window=window,
            prompt_chars=len(prep.system) + len(prep.user),
            trajectory_turns=len(turns),
            reasons=parsed.reasons,
            unknown_ids_dropped=parsed.unknown_dropped,
            over_limit_dropped=parsed.over_limit_dropped,
        )

    def assemble(
        self,
        prompt: str,
        trajectory: Sequence[str] = (),
        *,
        candidates: CandidateSource | None = None,
        exclude: Collection[str] = (),
        now: datetime | None = None,
    ) -> tuple[str, str, WindowInfo]:
        """The (system, user) prompt ``select`` would send, and its window; no model call."""
        turns = self._trim_turns(prompt, trajectory)
        prep = self._prepare(prompt, turns, candidates, exclude, now)
        return prep.system, prep.user, prep.window

    def _prepare(
        self,
        prompt: str,
        turns: Sequence[str],
        candidates: CandidateSource | None,
        exclude: Collection[str],
        now: datetime | None = None,
    ) -> _Prepared:
        opts = self._options
        text = prompt[: opts.max_prompt_chars]
        moment = render_moment(text, turns, now)
        system = select_system(max_picks=opts.max_picks, reasons=opts.reasons)
        # The budget is for the whole prompt; the meanings get what the rest
        # leaves, but never less than a quarter of it.
        budget = max(
            opts.prompt_budget_chars - len(system) - len(moment) - len(MEMORY_HEADER),
            opts.prompt_budget_chars // 4,
        )
        listing, window = self._listing(budget, exclude, " ".join([*turns, text]), candidates)
        return _Prepared(system, MEMORY_HEADER + listing.block + moment, listing.handles, window)

    def _trim_turns(self, prompt: str, trajectory: Sequence[str]) -> list[str]:
        turns = [t.strip() for t in trajectory if t.strip()]
        if turns and turns[-1] == prompt.strip():
            turns.pop()  # the hook may pass the current prompt as the last turn too
        keep = turns[-self._options.max_turns :] if self._options.max_turns > 0 else []
        return [t[: self._options.max_turn_chars] for t in keep]

    def _listing(
        self,
        budget: int,
        exclude: Collection[str],
        text: str,
        candidates: CandidateSource | None,
    ) -> tuple[_Listing, WindowInfo]:
        cached = self._full
        if (
            not exclude
            and cached is not None
            and cached.version == self._sidecar.version
            and len(cached.block) <= budget
        ):
            size = len(cached.entries)
            return cached, WindowInfo(False, size, size)
        snap = self._sidecar.snapshot()
        excluded = set(exclude)
        extra = DATE_CHARS if self._dates is not None else 0  # a dated line's more
        total = snap.text_chars + (LINE_OVERHEAD + extra) * len(snap.entries)
        for node_id in excluded:
            entry = self._sidecar.get(node_id)
            if entry is not None:
                total -= len(render_line(entry)) + extra
        window = fit_window(
            snap.entries,
            budget,
            total_chars=total,
            excluded=excluded,
            lookup=self._sidecar.get,
            text=text,
            source=candidates,
            quotas=self._options.quotas,
            extra_per_line=extra,
        )
        listing = _Listing(
            snap.version,
            render_block(window.entries, self._dates_of(window.entries)),
            {e.seq: e.id for e in window.entries},
            window.entries,
        )
        if not window.used and not excluded:
            self._full = listing
        info = WindowInfo(window.used, len(window.entries), window.pool_size, window.by_source)
        return listing, info

    def _dates_of(self, entries: Sequence[MeaningEntry]) -> dict[str, str]:
        """Each entry's node date, from ``dates`` once a node (an unreadable one: none)."""
        if self._dates is None:
            return {}
        with self._dated_lock:
            missing = [e.id for e in entries if e.id not in self._dated]
            if missing and len(self._dated) + len(missing) > _MAX_DATED:
                self._dated.clear()  # past the bound: what is listed now is asked again
                missing = [e.id for e in entries]
        if missing:
            try:
                found = dict(self._dates(missing))
            except Exception:  # a listing goes undated rather than failing the match
                logger.warning("node dates unavailable; items listed undated", exc_info=True)
                return {}
            with self._dated_lock:
                self._dated.update({i: found.get(i, "") for i in missing})
        with self._dated_lock:
            return {e.id: self._dated.get(e.id, "") for e in entries}

    def _fallback(
        self,
        match_id: str,
        started: float,
        reason: str,
        detail: str,
        turns: Sequence[str],
        window: WindowInfo,
    ) -> MatchResult:
        logger.warning("meaning matcher %s fell back to lexical: %s %s", match_id, reason, detail)
        total = _ms(started, time.monotonic())
        return MatchResult(
            channel="fallback",
            match_id=match_id,
            ids=(),
            provider=self._provider.name,
            model=self._provider.model,
            timings=MatchTimings(total_ms=total),
            window=window,
            prompt_chars=0,
            trajectory_turns=len(turns),
            fallback_reason=reason,
            fallback_detail=detail,
        )
