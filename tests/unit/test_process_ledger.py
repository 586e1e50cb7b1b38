"""The reader face's ledger, kept in its process: bounded in sessions and deliveries,
and handing out copies, so a verdict never sees a save made after its load."""

from __future__ import annotations

from kenning_encounter.infusion.ledger import Delivery, ProcessLedger, Renewal, Verdict


def test_least_recently_used_sessions_and_oldest_deliveries_go_first() -> None:
    ledger = ProcessLedger(max_sessions=2, max_deliveries=2)
    ledger.save("a", 1, {"x": Delivery(1, 1.0, "s")}, at=1.0)
    ledger.save("b", 1, {"x": Delivery(1, 1.0, "s")}, at=1.0)
    ledger.load("a")  # a is used again, so b is the least recent
    ledger.save("c", 1, {}, at=2.0)
    assert ledger.load("b").turn == 0 and ledger.load("a").turn == 1
    ledger.save("a", 2, {"y": Delivery(2, 2.0, "s"), "z": Delivery(2, 3.0, "s")}, at=3.0)
    assert set(ledger.load("a").delivered) == {"y", "z"}


def test_a_loaded_ledger_is_a_copy_and_the_turn_never_goes_back() -> None:
    ledger = ProcessLedger()
    ledger.save("a", 3, {"x": Delivery(3, 1.0, "s")}, at=1.0)
    seen = ledger.load("a")
    seen.delivered.clear()
    ledger.save("a", 2, {}, at=2.0)
    again = ledger.load("a")
    assert again.turn == 3 and "x" in again.delivered
    ledger.forget("a", at=3.0)
    assert ledger.load("a").delivered == {} and ledger.load("a").turn == 3


def test_verdicts() -> None:
    renewal = Renewal(horizon_turns=3, horizon_seconds=100.0)
    ledger = ProcessLedger()
    ledger.save("a", 1, {"x": Delivery(1, 50.0, "open")}, at=50.0)
    seen = ledger.load("a")
    assert renewal.verdict(seen, 2, "y", "open", 60.0) == Verdict.BODY_FIRST
    assert renewal.verdict(seen, 2, "x", "closed", 60.0) == Verdict.BODY_CHANGED
    assert renewal.verdict(seen, 3, "x", "open", 149.9) == Verdict.HANDLE
    assert renewal.verdict(seen, 4, "x", "open", 60.0) == Verdict.BODY_STALE
    assert renewal.verdict(seen, 2, "x", "open", 150.0) == Verdict.BODY_STALE
