"""The scale benchmark end to end on the test Neo4j, at a small size: a synthetic dump
imported by the real import command, then search, infuse and orient on GDS measured.
Its database is emptied (only when it carries the test marker)."""

from __future__ import annotations

import pytest
from bench import scale_bench

from tests.support.backends import require_answering

pytestmark = pytest.mark.neo4j


# Each read is timed over a sample: 10 searches and 10 + 10 prompts (the bench's quick run
# takes 50 and 50 + 50) reach every path a larger sample does, and the figures asserted
# below are as well formed (a read that raises fails the run; a silent infusion is
# counted); the sample's size is the bench's concern, for its figures, not this test's.
PROMPTS = 10


def test_a_small_scale_run_loads_through_import_and_serves_every_read() -> None:
    require_answering()
    row = scale_bench.run_size(1_200, searches=10, prompts=PROMPTS, orients=1)
    assert row["nodes"] == 1_200 and row["import_records_per_s"] > 0
    assert row["search_p95_ms"] >= row["search_p50_ms"] > 0
    assert row["lookup_p95_ms"] >= row["lookup_p50_ms"] > 0
    assert row["infuse_p95_ms"] >= row["infuse_p50_ms"] > 0
    assert row["infuse_warm_p95_ms"] >= row["infuse_warm_p50_ms"] > 0
    assert row["infuse_silent"] < PROMPTS  # the prompts name the memory's topics
    assert row["orient_panel_chars"] > 0
