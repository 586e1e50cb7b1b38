"""Giving the process's freed memory back to the operating system after a large reading.

A whole-memory reading (orient over a million nodes) allocates about a gigabyte of
small objects and frees them when it is done; the C library keeps most of what was
freed in its heap, in pieces too scattered to return by itself, and a long-serving
server's resident size stayed a third of a gigabyte higher after each such reading.
``give_back`` asks the C library to return what it can (glibc's ``malloc_trim``);
elsewhere it does nothing.
"""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _trim() -> Callable[[int], int] | None:
    # Imported on the first reading, not at start-up.
    import ctypes

    try:  # the symbols the process has loaded: the C library's among them
        trim = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None
    if trim is None:
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def give_back() -> bool:
    """Return the heap's free memory to the operating system where the C library can;
    whether it could be asked."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
