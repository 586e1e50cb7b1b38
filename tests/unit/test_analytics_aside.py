"""Leiden in a worker process (analytics/aside.py): the same communities, or none.

The worker is a real ``python -m kenning_encounter.analytics.aside`` process fed over
real pipes. Its answer must be the one this process finds on the same projection; a
worker that cannot start, fails or takes too long must leave no answer (the panel then
computes Leiden itself), and a panel made with the worker must be the panel made
without it.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import numpy as np
import pytest

from kenning_encounter.analytics import aside
from kenning_encounter.analytics.algorithms import InProcessEngine
from kenning_encounter.analytics.aside import LeidenAside
from kenning_encounter.analytics.orient import build_panel
from kenning_encounter.analytics.projection import Projection, build_projection
from tests.unit.test_analytics_panel import random_memory


def _projection(n: int = 3_000, seed: int = 7) -> Projection:
    return build_projection(*random_memory(n, seed))


@pytest.mark.parametrize("iterations", [-1, 1])
def test_the_worker_finds_the_communities_found_here(iterations: int) -> None:
    projection = _projection()
    here = InProcessEngine().load(projection).leiden(iterations=iterations, seed=11)
    started = LeidenAside.start(projection, iterations, 11)
    assert started is not None
    there = started.result()
    assert there is not None
    assert there.membership.tolist() == here.membership.tolist()
    assert there.sizes.tolist() == here.sizes.tolist()
    assert there.modularity == pytest.approx(here.modularity)
    assert (there.iterations, there.seed, there.engine) == (iterations, 11, here.engine)
    assert here.count > 1  # a partition worth comparing


@pytest.mark.parametrize("python", ["/nonexistent/python", "/bin/false"])
def test_a_worker_that_cannot_start_or_fails_leaves_no_answer(
    python: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger=aside.__name__)
    started = LeidenAside.start(_projection(300), 1, 1, python=python)
    assert started is None or started.result() is None
    assert "computed here" in caplog.text


def test_a_worker_that_takes_too_long_is_stopped(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger=aside.__name__)
    slow = LeidenAside.start(_projection(20_000, 3), -1, 1)
    assert slow is not None
    assert slow.result(timeout=0.01) is None
    assert "took over" in caplog.text


def test_a_panel_made_with_the_worker_is_the_panel_made_without_it(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    nodes, edges = random_memory(2_500, 5)
    without = build_panel(nodes, edges)
    monkeypatch.setattr(aside, "ASIDE_FROM", 0)  # every panel is large enough
    if not aside.worth_it(1):
        pytest.skip("one core: the panel never starts a worker here")
    caplog.set_level(logging.DEBUG, logger=aside.__name__)
    with_worker = build_panel(nodes, edges)
    assert "found by a worker" in caplog.text
    assert with_worker == without
    assert without.communities is not None and without.communities.count > 1
    assert np.isfinite(without.communities.modularity)


@pytest.mark.parametrize("worker", ["fails at once", "reads its input, then fails"])
def test_a_panel_whose_worker_fails_computes_its_communities_itself(
    worker: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    nodes, edges = random_memory(2_000, 9)
    without = build_panel(nodes, edges)
    monkeypatch.setattr(aside, "ASIDE_FROM", 0)
    if not aside.worth_it(1):
        pytest.skip("one core: the panel never starts a worker here")
    python = "/bin/false"
    if worker != "fails at once":  # takes every byte, so the failure is in its answer
        script = tmp_path / "python"
        script.write_text("#!/bin/sh\ncat > /dev/null\nexit 3\n")
        script.chmod(0o755)
        python = str(script)
    monkeypatch.setattr(sys, "executable", python)
    caplog.set_level(logging.WARNING, logger=aside.__name__)
    assert build_panel(nodes, edges) == without
    assert "computed here" in caplog.text
    if worker != "fails at once":
        assert "failed (exit 3" in caplog.text
