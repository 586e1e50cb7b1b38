"""The scale benchmark end to end on the test Neo4j, at a small size: a synthetic dump
imported by the real import command, then search, infuse and orient on GDS measured.
Its database is emptied (only when it carries the test marker)."""

from __future__ import annotations

import pytest
from bench import scale_bench

from tests.support.backends import require_answering

pytestmark = pytest.mark.neo4j


def test_a_small_scale_run_loads_through_import_and_serves_every_read() -> None:
    require_answering()
    result = scale_bench.run(quick=True, nodes=1_200)
    (row,) = result["rows"]
    assert row["nodes"] == 1_200 and row["import_records_per_s"] > 0
    assert row["search_p95_ms"] >= row["search_p50_ms"] > 0
    assert row["lookup_p95_ms"] >= row["lookup_p50_ms"] > 0
    assert row["infuse_p95_ms"] >= row["infuse_p50_ms"] > 0
    assert row["infuse_warm_p95_ms"] >= row["infuse_warm_p50_ms"] > 0
    assert row["infuse_silent"] < 50  # the prompts name the memory's topics
    assert row["orient_panel_chars"] > 0
