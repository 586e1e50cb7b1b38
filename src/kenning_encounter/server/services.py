"""The services beside the memory: infusion (with the meaning matcher) and analytics.

Built once per process after the memory opens, closed before it closes. The
matcher is optional: with no key, or ``matcher=off``, infusion runs on the
lexical path and every payload says why.

What needs the numeric stack (the infuser's ranking, the projection catalog)
is made on first use: a client that starts the server to record or search
never waits for numpy, scipy and igraph to load. The settings they read are
checked here, at start, all the same.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kenning_encounter.analytics.baseline import BaselineStore
from kenning_encounter.config import Settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.infusion.config import InfusionConfig, preset
from kenning_encounter.infusion.ledger_store import StoreLedger
from kenning_encounter.infusion.log import InfusionRecorder
from kenning_encounter.memory.service import Memory
from kenning_encounter.store.infusion_log import KeepsInfusionLog
from kenning_encounter.store.meanings import KeepsDerived

if TYPE_CHECKING:
    from kenning_encounter.analytics.catalog import ProjectionCatalog
    from kenning_encounter.analytics.engine import Engine
    from kenning_encounter.infusion.meaning_bridge import MeaningRuntime
    from kenning_encounter.infusion.pipeline import Infuser
    from kenning_encounter.infusion.select import Selection

log = logging.getLogger(__name__)


class _Unavailable:
    """Stands in for the matcher when it cannot run at all; every selection falls back."""

    def __init__(self, reason: str, detail: str) -> None:
        self.reason = reason
        self.detail = detail

    def select_seeds(
        self,
        prompt: str,
        trajectory: Any,
        limit: int,
        *,
        timeout_s: float | None = None,
        now: Any = None,
    ) -> Selection:
        from kenning_encounter.infusion.select import Selection

        return Selection("fallback", (), fallback_reason=self.reason, fallback_detail=self.detail)


@dataclass
class Services:
    memory: Memory
    infusion: InfusionConfig
    baselines: BaselineStore
    engine: Engine | None = None
    meaning: MeaningRuntime | None = None
    ledger: StoreLedger | None = None  # the store's ledger; None on the reader face
    unavailable: _Unavailable | None = None  # why the matcher cannot run, when it cannot
    infusion_log: InfusionRecorder | None = None  # the inspector's log; None on the reader face
    _infuser: Infuser | None = field(default=None, init=False, repr=False)
    _catalog: ProjectionCatalog | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def infuser(self) -> Infuser:
        with self._lock:
            if self._infuser is None:
                from kenning_encounter.infusion.pipeline import Infuser

                matcher = self.meaning if self.meaning is not None else self.unavailable
                self._infuser = Infuser(
                    self.memory.store,
                    self.infusion,
                    matcher=matcher,
                    hidden_loci=self.memory.hidden_loci,
                    ledger=self.ledger,
                    infusion_log=self.infusion_log,
                    activation=self.memory.activation,
                    work_time=self.memory.work_time,
                )
            return self._infuser

    def infuse(
        self,
        session_id: str,
        prompt: str,
        trajectory: Sequence[str] = (),
        *,
        deadline_s: float | None = None,
        include_cold: bool = False,
    ) -> dict[str, Any]:
        return self.infuser.infuse(
            session_id, prompt, trajectory, deadline_s=deadline_s, include_cold=include_cold
        )

    @property
    def catalog(self) -> ProjectionCatalog:
        with self._lock:
            if self._catalog is None:
                from kenning_encounter.analytics.catalog import ProjectionCatalog

                # On Neo4j several servers may serve the memory, each with its own catalog.
                shared = self.memory.store.backend == "neo4j"
                self._catalog = ProjectionCatalog(self.engine, shared=shared)
            return self._catalog

    def close(self) -> None:
        with self._lock:
            catalog = self._catalog
        if catalog is not None:
            catalog.close()
        if self.engine is not None:
            from kenning_encounter.analytics.gds import GdsEngine  # loaded: it made the engine

            if isinstance(self.engine, GdsEngine):  # after the catalog: its graphs are dropped
                self.engine.close()
        if self.meaning is not None:
            self.meaning.close()


def api_key(settings: Settings) -> str | None:
    if settings.matcher_provider == "gemini":
        return settings.gemini_api_key.get_secret_value() if settings.gemini_api_key else None
    return os.environ.get(settings.matcher_api_key_env) or None


def _meaning(
    settings: Settings, memory: Memory
) -> tuple[MeaningRuntime | None, _Unavailable | None]:
    if settings.matcher_provider == "off":
        return None, None
    from kenning_encounter.infusion.meaning_bridge import MeaningRuntime
    from kenning_encounter.meaning import MatcherOptions, StoredMeanings, make_provider

    key = api_key(settings)
    if settings.matcher_provider == "gemini" and key is None:
        return None, _Unavailable(
            "no_key", "set GEMINI_API_KEY (env or .env) to enable the matcher"
        )
    try:
        provider = make_provider(
            settings.matcher_provider,
            model=settings.matcher_model,
            api_key=key,
            base_url=settings.matcher_base_url,
            timeout_s=settings.matcher_timeout,
        )
    except ConfigError as exc:
        return None, _Unavailable("provider_missing", str(exc))
    store = memory.store
    shared = isinstance(store, KeepsDerived)
    runtime = MeaningRuntime(
        store,
        StoredMeanings(store.meanings) if shared else settings.resolved_data_dir / "sidecar",
        provider,
        MatcherOptions(
            prompt_budget_chars=settings.matcher_prompt_budget, reasons=settings.matcher_reasons
        ),
        hidden_loci=memory.hidden_loci,
    )
    # Meanings a store keeps are made by the full faces serving it; a reader face only
    # reads them, since it never writes the store.
    if settings.face == "full" or not shared:
        runtime.start()
    memory.add_listener(runtime)
    return runtime, None


def _baselines(settings: Settings, memory: Memory) -> BaselineStore:
    directory = settings.resolved_data_dir / "analytics"
    store = memory.store
    if not isinstance(store, KeepsDerived):
        return BaselineStore(directory)
    return BaselineStore(directory, table=store.baselines, read_only=settings.face != "full")


def _engine(memory: Memory) -> Engine | None:
    """GDS when the store's server runs it; otherwise None, and the in-process engine serves."""
    executor = memory.store.analytics_executor()
    if executor is None:
        log.debug("the store offers no analytics engine; analytics run in process")
        return None
    from kenning_encounter.analytics.gds import GdsEngine

    return GdsEngine.start(executor)


def build_services(settings: Settings, memory: Memory) -> Services:
    meaning, unavailable = _meaning(settings, memory)
    if unavailable is not None:
        log.warning(
            "meaning matcher unavailable (%s): infusion runs on the lexical path and says so; "
            "%s, or pass --matcher off",
            unavailable.reason,
            unavailable.detail,
        )
    # The full face keeps the ledger in the store, shared by every server on it; a
    # reader face never writes the store, so its ledger lives and dies with the process.
    ledger = StoreLedger(memory.store.ledgers) if settings.face == "full" else None
    recorder = _infusion_log(settings, memory)
    return Services(
        memory=memory,
        infusion=preset(settings.infusion_preset, budget_chars=settings.infusion_budget),
        baselines=_baselines(settings, memory),
        engine=_engine(memory),
        meaning=meaning,
        ledger=ledger,
        unavailable=unavailable,
        infusion_log=recorder,
    )


def _infusion_log(settings: Settings, memory: Memory) -> InfusionRecorder | None:
    """The full face writes the log; a reader face never writes the store."""
    store = memory.store
    if settings.face != "full" or not isinstance(store, KeepsInfusionLog):
        return None
    return InfusionRecorder(
        store.infusion_log,
        keep_per_session=settings.infusion_log_per_session,
        retention_s=settings.infusion_log_days * 86_400.0,
        keep_prompts=settings.infusion_log_prompts,
    )
