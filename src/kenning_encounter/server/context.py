"""The app context every tool and HTTP route reads, and the runtime that owns it.

One server process holds one memory. ``Runtime.session()`` opens the store and
the memory service on first entry and closes them when the last entry leaves,
so every transport can enter it from its own lifespan (the streamable-HTTP
manager once, SSE once per connection, the stdio loop once, an in-process test
client once) while the store is opened exactly once. ``serve`` enters it before
any socket is bound, so a store owned by another process fails the start at
once instead of surfacing inside the web server's start-up.

``Runtime.begin_open()`` starts that opening on a thread of its own, so the
command line can open the store while it imports the MCP SDK; the first
``session()`` then takes what that thread opened, or raises what it raised, at
the same point of the start as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncGenerator, Callable
from concurrent.futures import Future
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio

from kenning_encounter.config import Settings
from kenning_encounter.errors import ConfigError
from kenning_encounter.infusion.ledger_store import StoreLedger
from kenning_encounter.memory.activation import Activation
from kenning_encounter.memory.directors import director_policy
from kenning_encounter.memory.service import Memory
from kenning_encounter.server.holds import Holds, load_session_key
from kenning_encounter.server.services import Services, build_services
from kenning_encounter.store.embedded.backend import EmbeddedStore
from kenning_encounter.store.port import GraphStore, WarmsCache, bulk_read

log = logging.getLogger(__name__)


class InfuseFn(Protocol):
    """(session_id, prompt, trajectory) -> {"payload": str, "status": str, "meta": {...}}."""

    def __call__(
        self,
        session_id: str,
        prompt: str,
        trajectory: list[str],
        *,
        deadline_s: float | None = None,
        include_cold: bool = False,
    ) -> dict[str, Any]: ...


@dataclass
class AppContext:
    """What a request may use. Built once per process by ``Runtime``."""

    settings: Settings
    memory: Memory
    holds: Holds = field(init=False)
    infuse: InfuseFn | None = None
    url: str | None = None  # where the server listens, once it does
    services: Services | None = None  # infusion, meaning, analytics
    sweeper: IdleSweeper | None = None

    def __post_init__(self) -> None:
        settings, store = self.settings, self.memory.store

        def exists(locus: str) -> bool:
            return store.read(lambda tx: tx.last_encounter_of(locus)) is not None

        self.holds = Holds(lambda: load_session_key(settings), exists)

    def hold(self, session_id: str) -> str:
        """The plain id of a session the caller may act for; ``SessionNotHeld`` otherwise."""
        return self.holds.claim(session_id)

    def require_services(self) -> Services:
        if self.services is None:
            raise RuntimeError("the services are not built: the runtime did not open them")
        return self.services

    @property
    def store(self) -> GraphStore:
        return self.memory.store


class IdleSweeper:
    """Dissolves idle encounters now and then, off the request path.

    A sweep is idempotent and transactional, so it is safe while other
    processes serving the same memory sweep too.
    """

    def __init__(self, memory: Memory, horizon_s: float, ledger: StoreLedger | None = None) -> None:
        self._memory = memory
        self._horizon_s = horizon_s
        self._ledger = ledger
        self._stopped = threading.Event()
        # Often enough that an encounter outlives its horizon by at most a tenth of it.
        self._every_s = min(max(horizon_s / 10, 1.0), 3_600.0)
        self._thread = threading.Thread(target=self._run, name="idle-sweeper", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.wait(self._every_s):
            try:
                self._memory.sweep_idle(self._horizon_s)
            except Exception:  # a failed sweep is retried at the next round
                log.exception("the idle sweep failed")
            prune_ledger(self._ledger)

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join(timeout=5)


def prune_ledger(ledger: StoreLedger | None) -> None:
    """Drop the ledgers of sessions quiet past the retention; a failure waits for the next round."""
    if ledger is None:
        return
    try:
        gone = ledger.prune(time.time())
    except Exception as exc:
        log.warning("pruning the infusion ledger failed (%s)", type(exc).__name__)
        return
    if gone:
        log.info("dropped the infusion ledgers of %d quiet sessions", gone)


def check_face(settings: Settings) -> None:
    if settings.hide_loci and settings.face != "reader":
        raise ConfigError(
            "hide_loci: hiding loci needs the reader face, where nothing can write around the "
            "hidden nodes; add --face reader (KENNING_ENCOUNTER_FACE=reader)"
        )


StoreFactory = Callable[[Settings], GraphStore]
InfusionFactory = Callable[[AppContext], InfuseFn | None]


def place_problem(settings: Settings) -> str | None:
    """Why the embedded store's data directory cannot be one, naming the setting and the
    fix; None when it can (or the store is not embedded)."""
    if settings.store != "embedded":
        return None
    from kenning_encounter.config import env_name
    from kenning_encounter.store.embedded import place

    why = place.problem(settings.resolved_data_dir)
    if why is None:
        return None
    return f"data_dir: {why}; choose another with --data-dir or {env_name('data_dir')}"


def no_memory(settings: Settings) -> str | None:
    """Why the settings name no memory to act on, or None. A server and an import make an
    embedded memory where none is; a command that reads or erases one must not: a
    mistyped --data-dir would be a new, empty memory it then reports on (an export of
    nothing, "no node named ...")."""
    data_dir = settings.resolved_data_dir
    if settings.store != "embedded":
        return None
    problem = place_problem(settings)
    if problem is not None:
        return problem
    if EmbeddedStore.holds_memory(data_dir):
        return None
    return (
        f"no memory at {data_dir} (nothing was created there); name an existing one with "
        "--data-dir or --memory, or run serve to make one"
    )


def open_store(settings: Settings) -> GraphStore:
    """The backend the settings name. Neo4j is imported only when asked for."""
    if settings.store == "embedded":
        problem = place_problem(settings)
        if problem is not None:
            raise ConfigError(problem)
        return EmbeddedStore.open(
            settings.resolved_data_dir,
            slow_query_ms=settings.slow_query_ms,
            buffer_pool_mib=settings.buffer_pool_mib,
        )
    try:
        from kenning_encounter.store.neo4j import open_from_settings
    except ImportError as exc:
        raise ConfigError(
            f"store=neo4j is not available ({exc}); install it with "
            "pip install 'kenning-encounter[neo4j]'"
        ) from exc
    return open_from_settings(settings)


def _refuse_unfinished_import(store: GraphStore) -> None:
    """A memory an import is still writing holds part of a dump: serving it would show
    (and let agents build on) a memory that is neither the old one nor the new one."""
    marker = bulk_read(store, lambda tx: tx.load_marker())
    if marker is not None:
        raise ConfigError(
            f"this memory holds an unfinished import ({marker.done} records of dump sha256 "
            f"{marker.digest[:12]}… in): finish it with `kenning-encounter import FILE` "
            "(the same dump resumes it), or remove it with `import FILE --restart`, "
            "then serve"
        )


class Runtime:
    """Owns the process's one ``AppContext``; reference-counted across lifespans."""

    def __init__(
        self,
        settings: Settings,
        *,
        store_factory: StoreFactory = open_store,
        infusion_factory: InfusionFactory | None = None,
    ) -> None:
        self.settings = settings
        self._store_factory = store_factory
        self._infusion_factory = infusion_factory
        self._context: AppContext | None = None
        self._opening: Future[AppContext] | None = None
        self.infusion_ready = threading.Event()  # set once ready_infusion() has readied it
        self._users = 0
        self._lock = anyio.Lock()

    def begin_open(self) -> None:
        """Open the memory on a thread now; the first ``session()`` waits for it."""
        if self._opening is not None or self._context is not None:
            return
        opening: Future[AppContext] = Future()

        def run() -> None:
            try:
                opening.set_result(self._open())
            except BaseException as exc:  # handed to session(), which raises it
                opening.set_exception(exc)

        self._opening = opening
        threading.Thread(target=run, name="open-memory", daemon=True).start()

    def close_unclaimed(self) -> None:
        """Close what ``begin_open`` opened when no session took it (the start failed first)."""
        opening, self._opening = self._opening, None
        if opening is None:
            return
        try:
            context = opening.result()
        except BaseException:  # nothing was left open; the start reports its own error
            return
        _close(context)

    def _take_opened(self) -> AppContext:
        opening, self._opening = self._opening, None
        return opening.result() if opening is not None else self._open()

    @property
    def context(self) -> AppContext:
        if self._context is None:
            raise RuntimeError("the memory is not open: enter Runtime.session() first")
        return self._context

    @asynccontextmanager
    async def session(self) -> AsyncGenerator[AppContext]:
        async with self._lock:
            if self._context is None:
                self._context = await anyio.to_thread.run_sync(self._take_opened)
            self._users += 1
            context = self._context
        try:
            yield context
        finally:
            with anyio.CancelScope(shield=True):
                async with self._lock:
                    self._users -= 1
                    if self._users == 0:
                        self._context = None
                        await anyio.to_thread.run_sync(_close, context)

    def _open(self) -> AppContext:
        settings = self.settings
        store = self._store_factory(settings)
        context: AppContext | None = None
        try:
            _refuse_unfinished_import(store)
            memory = Memory(
                store,
                hidden_loci=frozenset(settings.hide_loci),
                granted=settings.granted,
                cypher_row_cap=settings.cypher_row_cap,
                cypher_char_cap=settings.cypher_char_cap,
                cypher_timeout_s=settings.cypher_timeout,
                directors=director_policy(settings),
                activation=Activation(settings.activation_half_life_days),
                consults=settings.face == "full",
            )
            if settings.face == "full":
                # A reader face never writes, not even this mechanical sweep.
                memory.sweep_idle(settings.idle_horizon)
            if isinstance(store, WarmsCache):
                store.start_warming()  # the node cache fills while the first calls come
            context = AppContext(settings=settings, memory=memory)
            context.services = build_services(settings, memory)
            context.infuse = context.services.infuse
            if settings.face == "full":
                prune_ledger(context.services.ledger)
                context.sweeper = IdleSweeper(
                    memory, settings.idle_horizon, context.services.ledger
                )
            if self._infusion_factory is not None:
                context.infuse = self._infusion_factory(context)
        except BaseException:
            if context is not None and context.services is not None:
                context.services.close()
            store.close()
            raise
        log.info("memory open: %s store", settings.store)
        return context

    def listening(self, url: str) -> None:
        """Record where clients reach this server, for a second process to name."""
        context = self.context
        context.url = url
        if isinstance(context.memory.backend, EmbeddedStore):
            context.memory.backend.set_owner_url(url)

    def ready_infusion(self) -> None:
        """Ready infusion off the request path (see ``_ready_infusion``), once the server
        has said where it listens: the numeric stack it imports is no part of a start."""
        context = self.context
        services = context.services
        if services is not None and context.infuse is not None:
            backend = context.memory.backend
            warm = backend.warm if isinstance(backend, EmbeddedStore) else None
            threading.Thread(
                target=_ready_infusion, args=(services, self.infusion_ready, warm), daemon=True
            ).start()


def _close(context: AppContext) -> None:
    if context.sweeper is not None:
        context.sweeper.stop()
    if context.services is not None:
        context.services.close()
    context.store.close()
    log.info("memory closed")


def _ready_infusion(
    services: Services, done: threading.Event, warm: Callable[[], bool] | None = None
) -> None:
    """Make the infuser now that the server answers. A listening server serves the hook,
    whose first prompt waits a few seconds at most; the pipeline's imports (numpy, scipy)
    are paid here, not inside that wait, and so is reading a small embedded memory into
    its node cache (``warm``). A stdio server leaves both to the first call."""
    began = time.monotonic()
    try:
        services.infuser  # noqa: B018 - made on first access
        if warm is not None:
            warm()
        log.info("infusion ready in %.2fs", time.monotonic() - began)
    except Exception:  # the first infusion makes it again and reports its own failure
        log.exception("readying the infusion pipeline failed")
    finally:
        done.set()
