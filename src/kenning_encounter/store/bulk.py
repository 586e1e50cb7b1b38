"""Helpers for reads that make a million records at once (the whole authored graph).

Two costs grow with such a read beyond the rows themselves. The cyclic collector walks
every live record again each time enough new ones are made, so a read of four million
records spent a third of its time in it; and the engine hands each row's strings over
as new objects, so the same node id stood in memory once for its node and once for
each relation end, and an encounter's name once for each record it wrote. Such a read
keeps a dict of the strings it met and takes each value through its ``setdefault``
(``same(v, v)``: the first equal string held, None for None).
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Generator
from contextlib import contextmanager

_lock = threading.Lock()
_holders = 0
_restore = False


@contextmanager
def collector_paused() -> Generator[None]:
    """The cyclic collector off while the block runs (records hold no cycles to find).

    Nested and concurrent holders share one pause: the collector comes back when the last
    one leaves, and only if it was on when the first came in."""
    global _holders, _restore
    with _lock:
        if _holders == 0:
            _restore = gc.isenabled()
            gc.disable()
        _holders += 1
    try:
        yield
    finally:
        with _lock:
            _holders -= 1
            if _holders == 0 and _restore:
                gc.enable()
