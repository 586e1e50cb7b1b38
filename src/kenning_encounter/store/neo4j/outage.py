"""Neo4j not answering: a bounded wait, a plain answer, and recovery without a restart.

A server can stop answering two ways. It refuses connections (stopped, crashed,
restarting): every attempt fails at once, and the driver alone would retry for its
30 s budget. Or it hangs (a frozen JVM, a stopped process, a dead host): the kernel
still takes connections and bytes, and a statement on a pooled connection waits for
an answer that never comes; the driver sets no read timeout of its own.

So every unit of work runs here (``Watch.unit``): the driver's own retries off, and
ours in their place, short for a server that does not answer (``OUTAGE_BUDGET_S``)
and the driver's budget for the server's transient refusals (a deadlock, a leader
changing). A statement that has waited ``STALL_S`` has its server probed with a Bolt
handshake on a fresh connection (``PROBE_TIMEOUT_S``); unanswered, the connections
of every unit waiting on that server are cut, so each fails at once, and units that
start while the server stays silent are answered after one probe. Nothing is kept
across the outage: the first unit to find the server answering again clears it.

A write cut before its commit was sent is rolled back by the server; one cut while
its commit was on the wire may or may not have been applied, and the driver says
which of the two it was (``IncompleteCommit``): translate.py tells the caller.

The cut reaches into the driver (a transaction's connection and its socket: no public
way exists); ``socket_of`` is the one place, and a test pins it to the driver in use.
"""

from __future__ import annotations

import contextlib
import logging
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TypeVar

from kenning_encounter import abandon
from kenning_encounter.errors import StoreUnavailable
from kenning_encounter.store.neo4j.translate import not_answering

if TYPE_CHECKING:
    from neo4j import Session

log = logging.getLogger(__name__)
T = TypeVar("T")

# How long a unit retries a server that refuses or drops its connections.
OUTAGE_BUDGET_S: Final = 3.0
# How long it retries the server's transient refusals (the driver's own default).
RETRY_BUDGET_S: Final = 30.0
# A statement waiting this long has its server probed; the probe waits this long.
STALL_S: Final = 2.0
PROBE_TIMEOUT_S: Final = 2.0
# How often the watch looks at the units in flight.
TICK_S: Final = 0.25
# Bolt's magic, then four version offers (5.4 down to 5.0, 4.4, none, none).
_HANDSHAKE: Final = bytes.fromhex("6060b01700040405000004040000000000000000")


def socket_of(holder: object) -> socket.socket | None:
    """The raw socket under a driver session or transaction (None while a session holds no
    connection), where the driver keeps it as 6.x does."""
    connection = getattr(holder, "_connection", None)
    bolt = getattr(connection, "socket", None)
    raw = getattr(bolt, "_socket", None)
    return raw if isinstance(raw, socket.socket) else None


def _shut(holder: object) -> None:
    """Cut the connection under ``holder``: a read waiting on it returns at once."""
    raw = socket_of(holder)
    if raw is not None:
        with contextlib.suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)


def probe(
    address: tuple[str, int],
    *,
    tls: bool,
    server_name: str | None = None,
    timeout: float = PROBE_TIMEOUT_S,
) -> str | None:
    """None when a Bolt server at ``address`` completes the version handshake within
    ``timeout``; else what happened, in a few words for a message."""
    deadline = time.monotonic() + timeout
    try:
        with socket.create_connection(address, timeout=timeout) as raw:
            conn: socket.socket = raw
            if tls:  # only the handshake's magic goes over it: no certificate is needed
                context = ssl.create_default_context()
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
                conn = context.wrap_socket(raw, server_hostname=server_name or address[0])
            conn.settimeout(max(deadline - time.monotonic(), 0.05))
            conn.sendall(_HANDSHAKE)
            reply = b""
            while len(reply) < 4:
                chunk = conn.recv(4 - len(reply))
                if not chunk:
                    return "it closed the connection"
                reply += chunk
    except TimeoutError:
        return f"no answer within {timeout:g} s"
    except ConnectionRefusedError:
        return "connection refused"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None if reply != b"\0\0\0\0" else "it offered no Bolt version"


@dataclass(eq=False)
class _Flight:
    """One unit in flight: the driver's session (or explicit transaction) it runs on, and
    since when it waits (moved on each time a probe finds the server answering)."""

    holder: object | None = None
    since: float = field(default_factory=time.monotonic)
    cut: str | None = None  # why its connection was cut, once it was
    overdue_at: float | None = None  # past this its answer is not coming: cut
    overdue: bool = False


class Overdue(Exception):
    """A watched transaction had no answer within the time it was given, and was cut."""


class Watch:
    """The units in flight on one store's server, and the thread that probes it when one
    of them waits too long."""

    def __init__(self, uri: str, address: tuple[str, int], *, tls: bool) -> None:
        self._uri = uri  # redacted: it reaches the caller
        self._address = address
        self._tls = tls
        self._lock = threading.Lock()
        self._flights: set[_Flight] = set()
        self._silent: str | None = None  # the last probe's finding while the server is out
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()

    # --- the units ----------------------------------------------------------------------
    def unit(
        self,
        session: Callable[[], Session],
        work: Callable[[Any], T],
        *,
        write: bool,
        doing: str,
        tell_write: bool | None = None,
    ) -> T:
        """``work`` as a managed transaction of a ``session`` (made with the driver's
        retries off), retried here; the driver's errors pass through for the caller to
        translate, except a server found silent, which is our StoreUnavailable (saying
        nothing of it was applied when ``tell_write``, by default when ``write``)."""
        from neo4j.exceptions import DriverError, IncompleteCommit, Neo4jError

        told = write if tell_write is None else tell_write
        started = time.monotonic()
        delay = 0.2
        flight = _Flight()
        # A read its caller gave up on is cut where it waits (kenning_encounter.abandon).
        call = None if write else abandon.current()
        while True:
            if call is not None:
                call.check()
            self.check_answering(doing, write=told)
            try:
                with session() as s:
                    # Watched from the start: BEGIN waits for its answer too.
                    flight.holder = s
                    with self._flying(flight, call):
                        return s.execute_write(work) if write else s.execute_read(work)
            except IncompleteCommit:
                raise  # never again: it may have been applied
            except (DriverError, Neo4jError) as exc:
                if call is not None and call.abandoned:  # cut by its caller's leaving
                    raise abandon.Abandoned(str(exc)) from exc
                if flight.cut is not None:  # whatever the driver made of the cut
                    raise self._unavailable(doing, flight.cut, write=told) from exc
                self._retry_or_raise(exc, started, delay, doing, told)
            time.sleep(delay * random.uniform(0.8, 1.2))
            delay = min(delay * 2, 2.0)

    def _retry_or_raise(
        self, exc: Exception, started: float, delay: float, doing: str, told: bool
    ) -> None:
        """Return to try again; raise when the failure is final or its budget spent."""
        from neo4j.exceptions import DriverError, Neo4jError, ServiceUnavailable, SessionExpired

        if isinstance(exc, ServiceUnavailable | SessionExpired):
            if time.monotonic() - started + delay > OUTAGE_BUDGET_S:
                found = probe(self._address, tls=self._tls)
                if found is None:
                    raise exc  # it answers now: the driver's own words say what failed
                with self._lock:
                    self._silent = found
                raise self._unavailable(doing, found, write=told) from exc
            return
        assert isinstance(exc, DriverError | Neo4jError)
        if not exc.is_retryable() or time.monotonic() - started > RETRY_BUDGET_S:
            raise exc
        log.warning("Neo4j refused a unit for now (%s); trying again", type(exc).__name__)

    @contextlib.contextmanager
    def watching(
        self, session: object, doing: str, *, answer_within: float | None = None
    ) -> Generator[None]:
        """A session's explicit transaction (read_cypher's) watched as a unit's are; with
        ``answer_within`` (seconds), one still waiting then is cut and ``Overdue`` raised,
        the server answering or not (it may have failed to send its answer: a value
        nested thousands deep overflows its encoder, and nothing comes back)."""
        from neo4j.exceptions import DriverError, Neo4jError

        flight = _Flight(session)
        if answer_within is not None:
            flight.overdue_at = time.monotonic() + answer_within
        # A read its caller gave up on is cut where it waits, as a unit's is.
        call = abandon.current()
        try:
            with self._flying(flight, call):
                yield
        except (DriverError, Neo4jError) as exc:
            if call is not None and call.abandoned:
                raise abandon.Abandoned(str(exc)) from exc
            if flight.cut is not None:
                raise self._unavailable(doing, flight.cut, write=False) from exc
            if flight.overdue:
                raise Overdue(doing) from exc
            raise

    def check_answering(self, doing: str, *, write: bool) -> None:
        """While the server is known silent, one probe decides: still silent, the unit is
        answered now rather than after the driver's connection timeout."""
        if self._silent is None:
            return
        found = probe(self._address, tls=self._tls)
        with self._lock:
            self._silent = found
        if found is not None:
            raise self._unavailable(doing, found, write=write)
        log.warning("Neo4j at %s answers again", self._uri)

    def _unavailable(self, doing: str, why: str, *, write: bool) -> StoreUnavailable:
        return not_answering(self._uri, why, doing, write=write)

    @contextlib.contextmanager
    def _flying(self, flight: _Flight, call: abandon.Call | None = None) -> Generator[None]:
        """The flight watched while the block runs; with ``call``, its connection is cut
        when the call is given up."""
        with self._lock:
            flight.since = time.monotonic()
            self._flights.add(flight)
            if self._thread is None and not self._stopped.is_set():
                self._thread = threading.Thread(
                    target=self._watch, name="kenning-neo4j-watch", daemon=True
                )
                self._thread.start()
        cut = (
            call.interrupting(lambda: _shut(flight.holder))
            if call is not None
            else contextlib.nullcontext()
        )
        try:
            with cut:
                yield
        finally:
            with self._lock:
                self._flights.discard(flight)

    def close(self) -> None:
        self._stopped.set()
        thread = self._thread
        if thread is not None:
            thread.join(PROBE_TIMEOUT_S + 1)

    # --- the watch -------------------------------------------------------------------
    def _peer(self, flight: _Flight) -> tuple[str, int]:
        """The server a flight's connection talks to (a cluster member, not always the
        URI's host), else the URI's."""
        raw = socket_of(flight.holder)
        with contextlib.suppress(OSError, ValueError):
            if raw is not None:
                host, port = raw.getpeername()[:2]
                return str(host), int(port)
        return self._address

    def _watch(self) -> None:
        while not self._stopped.wait(TICK_S):
            now = time.monotonic()
            with self._lock:
                stalled = [f for f in self._flights if now - f.since > STALL_S]
                late = [
                    f
                    for f in self._flights
                    if f.overdue_at is not None and now > f.overdue_at and not f.overdue
                ]
                for f in late:
                    f.overdue = True
            for f in late:
                _shut(f.holder)
            peers = {self._peer(f) for f in stalled}
            for peer in peers:
                self._probe_peer(peer, [f for f in stalled if self._peer(f) == peer])

    def _probe_peer(self, peer: tuple[str, int], stalled: list[_Flight]) -> None:
        found = probe(peer, tls=self._tls, server_name=self._address[0])
        with self._lock:
            if found is None:  # it answers: the statements are merely slow
                for f in stalled:
                    f.since = time.monotonic()
                return
            self._silent = found
            waiting = [f for f in self._flights if f.cut is None and self._peer(f) == peer]
            for f in waiting:
                f.cut = found
        log.warning(
            "Neo4j at %s is not answering (%s): %d unit(s) waiting on it answered",
            self._uri,
            found,
            len(waiting),
        )
        for f in waiting:
            _shut(f.holder)
