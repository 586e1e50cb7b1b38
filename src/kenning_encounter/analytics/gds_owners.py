"""Who holds which GDS graph, and dropping the graphs nobody holds any more.

A GDS graph stays in the Neo4j server's heap until someone drops it. An engine
drops its own graphs as they close; a server that dies (SIGKILL, a lost host)
cannot, so another server must. Several servers, on one host or on many, share
one database and may start, stop and sweep at any moment, so whether a graph's
maker is gone cannot be read from a PID: a PID means something only on its own
host, and a server in a container is PID 1 at every start.

Each engine is an *owner*, known by a random token made when it is built. Its
graphs are named ``kenning:<memory>:<owner>:<uuid>`` (a memory's name holds no
``:``), and while it holds any it keeps a lease in the database, a
``:KenningGdsLease {_memory, owner}`` node expiring ``lease_s`` after its last
renewal, on the database's clock (so the hosts' clocks never have to agree),
renewed every ``renew_s`` by a daemon thread. A graph is dead when it is this
memory's and its owner has no unexpired lease. Why sweeps are safe:

- a live owner's graph is never dropped: the lease is committed before each
  graph is projected, and a sweep lists the graphs *before* it reads the
  leases, so every graph it sees was made under a lease it also sees. An owner
  stalled for longer than its lease (a partition, a frozen VM) loses its graphs
  and its next call on one fails naming the step; the lease's length makes that
  rare, and the lease is taken again at the next load;
- sweeps racing each other are harmless: a drop accepts a graph already gone,
  and deleting the leases past their expiry means the same run twice;
- a memory's sweep reads only that memory's graph names and leases, so it never
  drops another memory's graphs, nor anything we did not name.

Graphs named before memories had names (``kenning-<host>-<pid>-<uuid>``) are
the default memory's; they go by the rule of their time: made on this host by a
process that is gone.

An engine started for a server (``GdsEngine.start``) sweeps when it starts and
then every ``sweep_s``, so the graphs of a replica that died are dropped within
about ``lease_s + sweep_s`` by any replica still running, also when the dead one
comes back at once (its lease has not expired yet when it starts again).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import socket
import threading
import time
import uuid
from collections.abc import Generator, Mapping
from dataclasses import dataclass
from typing import Any, Final, LiteralString

from kenning_encounter.errors import EngineError, StoreError
from kenning_encounter.store.neo4j import gds_queries as q
from kenning_encounter.store.port import AnalyticsExecutor

logger = logging.getLogger(__name__)

GRAPH_PREFIX: Final = "kenning:"
LEGACY_PREFIX: Final = "kenning-"
DEFAULT_MEMORY: Final = "default"
# Long enough that a busy server is never taken for a dead one; short enough that
# a dead replica's graphs do not hold the heap for long.
LEASE_S: Final = 90.0
RENEW_S: Final = 15.0
SWEEP_S: Final = 60.0


@dataclass(frozen=True)
class LeaseTimes:
    lease_s: float = LEASE_S
    renew_s: float = RENEW_S
    sweep_s: float = SWEEP_S

    def __post_init__(self) -> None:
        if not 0 < self.renew_s < self.lease_s:
            raise ValueError(
                f"renew_s ({self.renew_s}) must be above 0 and below lease_s ({self.lease_s}), "
                "or the lease lapses between renewals"
            )
        if self.sweep_s <= 0:
            raise ValueError(f"sweep_s ({self.sweep_s}) must be above 0")


@contextlib.contextmanager
def _step(doing: str) -> Generator[None]:
    """A refusal by GDS, named by the step that met it; unreachable servers pass as they are."""
    try:
        yield
    except EngineError as exc:
        raise StoreError(f"GDS failed while {doing}: {exc.detail or exc}") from exc


def run_step(
    executor: AnalyticsExecutor, statement: LiteralString, params: Mapping[str, Any], doing: str
) -> list[dict[str, Any]]:
    with _step(doing):
        return executor.run(statement, params, doing=doing)


def _drop_unless_gone(executor: AnalyticsExecutor, name: str) -> bool:
    """Drop ``name``; False when another sweep dropped it first. GDS 2.13 can fail a drop
    that races another drop of the same graph (its catalog finds the entry gone between
    its check and its removal, and says so as a NullPointerException): gone is what the
    sweep wanted, so that failure counts as "another dropped it" once the graph is gone."""
    doing = "dropping a GDS graph a stopped server left"
    try:
        return bool(run_step(executor, q.DROP, {"graph": name}, doing))
    except StoreError:
        rows = run_step(executor, q.EXISTS, {"graph": name}, "checking a GDS graph is gone")
        if rows and rows[0]["exists"]:
            raise
        return False


def graph_prefix(memory: str, owner: str) -> str:
    return f"{GRAPH_PREFIX}{memory}:{owner}:"


def owner_of(name: str, memory: str) -> str | None:
    """The owner named in a graph name of ``memory``; None for every other name."""
    head = f"{GRAPH_PREFIX}{memory}:"
    if not name.startswith(head):
        return None
    owner, sep, rest = name[len(head) :].partition(":")
    return owner if owner and sep and rest else None


def _host_tag() -> str:
    return re.sub(r"[^A-Za-z0-9.]", "_", socket.gethostname()) or "host"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _legacy_dead(name: str) -> bool:
    mine = f"{LEGACY_PREFIX}{_host_tag()}-"
    if not name.startswith(mine):
        return False
    pid = name[len(mine) :].split("-", 1)[0]
    return pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid))


def sweep(executor: AnalyticsExecutor, *, keep: str | None = None) -> list[str]:
    """Drop the executor's memory's GDS graphs whose owners hold no lease; the names
    of those this call dropped (not those another sweep dropped first).

    ``keep`` is the caller's own owner token, never swept whatever its lease says.
    """
    memory = executor.memory
    rows = run_step(executor, q.LIST_GRAPHS, {}, "listing the GDS graphs")
    graphs = [str(name) for name in rows[0]["graphs"]] if rows else []
    # Read after the list, never before: see the module docstring.
    rows = run_step(executor, q.LIVE_OWNERS, {}, "reading the GDS leases")
    live = {str(owner) for owner in rows[0]["owners"]} if rows else set[str]()
    if keep is not None:
        live.add(keep)
    dead: list[str] = []
    for name in graphs:
        owner = owner_of(name, memory)
        unheld = (owner is not None and owner not in live) or (
            owner is None and memory == DEFAULT_MEMORY and _legacy_dead(name)
        )
        if unheld and _drop_unless_gone(executor, name):
            dead.append(name)
    run_step(executor, q.FORGET_EXPIRED, {}, "forgetting expired GDS leases")
    if dead:
        logger.info(
            "dropped %d GDS graph(s) of memory %r left by stopped servers", len(dead), memory
        )
    return dead


class Owner:
    """One engine's name on its graphs, and the lease that keeps them while it holds any."""

    def __init__(
        self, executor: AnalyticsExecutor, times: LeaseTimes, *, sweeping: bool = False
    ) -> None:
        self.token = uuid.uuid4().hex[:16]
        self.prefix = graph_prefix(executor.memory, self.token)
        self._executor = executor
        self._times = times
        self._sweeping = sweeping
        self._lock = threading.Lock()
        self._renewing = threading.Lock()  # one MERGE at a time: the lease has no constraint
        self._held = 0
        self._renewed_at: float | None = None
        self._swept_at = time.monotonic()
        self._failing = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._closed = False

    def hold(self) -> None:
        """Before a graph is projected: a lease fresh enough to outlast a renewal
        period, and the keeper running. Raises ``StoreError`` when the lease cannot
        be written (a graph made without one could be swept while in use)."""
        with self._lock:
            if self._closed:
                raise StoreError("the GDS engine is closed; start a new one")
            stale = (
                self._renewed_at is None
                or time.monotonic() - self._renewed_at >= self._times.renew_s
            )
            self._held += 1
        if stale:
            try:
                self._renew()
            except BaseException:
                self.release()
                raise
        self._keep_running()

    def release(self) -> None:
        """A graph this owner held was dropped."""
        with self._lock:
            self._held = max(self._held - 1, 0)

    def start_keeping(self) -> None:
        """Keep sweeping (and renewing while graphs are held) until ``close``."""
        self._sweeping = True
        self._keep_running()

    def close(self) -> None:
        """Stop the keeper and give the lease up, so the graphs left (if any) may go."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            thread = self._thread
        self._stop.set()
        if thread is not None:
            thread.join()
        try:
            run_step(
                self._executor, q.LEASE_RELEASE, {"owner": self.token}, "giving up a GDS lease"
            )
        except StoreError as exc:  # it expires by itself
            logger.warning("could not give up the GDS lease of %s: %s", self.token, exc)

    def _renew(self) -> None:
        with self._renewing:
            started = time.monotonic()
            params = {
                "owner": self.token,
                "lease_ms": int(self._times.lease_s * 1000),
                "host": socket.gethostname(),
                "pid": os.getpid(),
            }
            run_step(self._executor, q.LEASE_RENEW, params, "renewing a GDS lease")
            # The server counts the lease from when it ran the statement, after
            # ``started``: measured from here it is never thought longer than it is.
            with self._lock:
                self._renewed_at = started

    def _keep_running(self) -> None:
        with self._lock:
            if self._thread is not None or self._closed:
                return
            self._thread = threading.Thread(
                target=self._keep, name=f"gds-lease-{self.token}", daemon=True
            )
            self._thread.start()

    def _keep(self) -> None:
        while not self._stop.wait(self._times.renew_s):
            with self._lock:
                held = self._held
                if not held and not self._sweeping:
                    self._thread = None  # started again by the next hold
                    return
            try:
                if held:
                    self._renew()
                if self._sweeping and time.monotonic() - self._swept_at >= self._times.sweep_s:
                    self._swept_at = time.monotonic()
                    sweep(self._executor, keep=self.token)
            except Exception as exc:  # housekeeping: the thread must outlive any failure
                # Once per outage at WARNING: the next success says it is over.
                logger.log(
                    logging.DEBUG if self._failing else logging.WARNING,
                    "GDS lease keeping failed (retried every %gs): %s",
                    self._times.renew_s,
                    exc,
                )
                self._failing = True
            else:
                if self._failing:
                    logger.info("GDS lease keeping works again")
                self._failing = False
