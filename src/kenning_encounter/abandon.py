"""A read its caller has given up on stops, instead of running on unseen.

A tool's work runs on a worker thread. When the read's deadline passes, or its client
cancels the call, the answer is given up at once, but a thread cannot be stopped from
outside: the work used to run to its end. An ``orient`` over a million nodes (about
half a minute) went on holding a store reader and a core after its caller had its
timeout, and each retry started another.

So a read runs under a ``Call`` (``run_as``). Giving it up (``Call.abandon``) interrupts
the engine statement running for it, through the hooks the store registered
(``interrupting``), and the next step the work takes (a read statement, a step of the
analytics) raises ``Abandoned``; the work unwinds as from any error, its answer long
given up. A write never runs under a ``Call``: one that outlives its caller may still
commit, and is left to.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Final, TypeVar

T = TypeVar("T")

# How often a read waiting for its turn looks whether its caller is still there.
WAIT_SLICE_S: Final = 0.1


class Abandoned(Exception):
    """The caller gave this work up: nobody reads what it would answer."""


class Call:
    """One read's state: abandoned or not, and what to interrupt when it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._abandoned = False
        self._hooks: list[Callable[[], None]] = []

    @property
    def abandoned(self) -> bool:
        return self._abandoned

    def abandon(self) -> None:
        """Give the work up: interrupt what it is running now, refuse its next step.

        The hooks run under the lock their removal takes: a connection is never
        interrupted once the read that used it has let it go (to another read)."""
        with self._lock:
            self._abandoned = True
            for hook in self._hooks:
                with contextlib.suppress(Exception):  # a connection closed meanwhile, say
                    hook()

    def check(self) -> None:
        if self._abandoned:
            raise Abandoned("the caller gave this read up (its deadline passed, or it cancelled)")

    @contextlib.contextmanager
    def interrupting(self, hook: Callable[[], None]) -> Generator[None]:
        """While the block runs, abandoning the call calls ``hook`` (at once if it is
        abandoned already)."""
        with self._lock:
            self._hooks.append(hook)
            late = self._abandoned
        try:
            if late:
                hook()
            yield
        finally:
            with self._lock:
                self._hooks.remove(hook)


_CURRENT: Final[ContextVar[Call | None]] = ContextVar("kenning_encounter_call", default=None)


def current() -> Call | None:
    """The call the running work belongs to; None outside one (a write, a test)."""
    return _CURRENT.get()


def check() -> None:
    """Raise ``Abandoned`` when the running work's call has been given up."""
    call = _CURRENT.get()
    if call is not None:
        call.check()


def run_as(call: Call, work: Callable[[], T]) -> T:
    """Run ``work`` (on this thread) as ``call``'s."""
    token = _CURRENT.set(call)
    try:
        return work()
    finally:
        _CURRENT.reset(token)


@contextlib.contextmanager
def turn(lock: threading.Lock) -> Generator[None]:
    """Hold ``lock`` for the block, waiting for it as long as the running work's caller is
    still there (``Abandoned`` once it has left)."""
    check()
    while not lock.acquire(timeout=WAIT_SLICE_S):
        check()
    try:
        yield
    finally:
        lock.release()
