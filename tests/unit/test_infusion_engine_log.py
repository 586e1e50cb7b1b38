"""An engine's failure under infusion is logged without its words above DEBUG: they may
quote what it read, and memory content is never logged above DEBUG."""

from __future__ import annotations

import logging

import pytest

from kenning_encounter.errors import EngineError
from kenning_encounter.infusion.pipeline import engine_failed


def test_the_engine_s_words_stay_at_debug(caplog: pytest.LogCaptureFixture) -> None:
    secret = "the pager code is 4471"
    try:
        try:
            raise RuntimeError(f"Runtime exception: could not read value {secret!r}")
        except RuntimeError as cause:
            raise EngineError("a read failed", code="Runtime", detail=str(cause)) from cause
    except EngineError as exc:
        with caplog.at_level(logging.DEBUG, logger="kenning_encounter"):
            engine_failed(exc)
    above = [r for r in caplog.records if r.levelno > logging.DEBUG]
    assert [r.levelname for r in above] == ["ERROR"]
    shown = caplog.handler.format(above[0])  # the record as a handler writes it
    assert "EngineError" in shown and "Runtime" in shown and secret not in shown
    [debug] = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert secret in caplog.handler.format(debug)  # kept for whoever turns DEBUG on
