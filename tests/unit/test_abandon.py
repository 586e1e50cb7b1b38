"""The call a read runs under (kenning_encounter.abandon), without a store: which call is
current, and when a hook runs against the removal of its block."""

from __future__ import annotations

import threading
import time

from kenning_encounter import abandon
from kenning_encounter.abandon import Call, run_as


def test_no_call_is_current_outside_one() -> None:
    assert abandon.current() is None
    abandon.check()  # nothing to give up
    call = Call()
    assert run_as(call, abandon.current) is call
    assert abandon.current() is None


def test_a_connection_let_go_is_never_interrupted_for_the_read_that_left() -> None:
    # A read's hook (its connection's interrupt) must have run or never run once the read
    # lets the connection go: else it could stop another read that took the connection.
    call = Call()
    started, done = threading.Event(), threading.Event()

    def slow_interrupt() -> None:
        started.set()
        time.sleep(0.3)
        done.set()

    with call.interrupting(slow_interrupt):
        giver = threading.Thread(target=call.abandon)
        giver.start()
        assert started.wait(5)
    assert done.is_set()  # leaving the block waited for the hook under way
    giver.join(5)
