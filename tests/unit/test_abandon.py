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


def test_a_turn_waits_for_the_holder_and_is_given_up_with_its_caller() -> None:
    lock = threading.Lock()
    order: list[str] = []

    def waiter(call: Call) -> None:
        def work() -> None:
            try:
                with abandon.turn(lock):
                    order.append("ran")
            except abandon.Abandoned:
                order.append("gave up")

        run_as(call, work)

    with abandon.turn(lock):  # outside any call: plain waiting
        first = Call()
        thread = threading.Thread(target=waiter, args=(first,))
        thread.start()
        time.sleep(0.3)
        assert order == []  # waiting its turn
        first.abandon()
        thread.join(5)
        assert order == ["gave up"]  # its caller left while it waited
        second = threading.Thread(target=waiter, args=(Call(),))
        second.start()
        time.sleep(0.3)
        assert order == ["gave up"]
    second.join(5)
    assert order == ["gave up", "ran"]  # its turn came
    assert not lock.locked()
