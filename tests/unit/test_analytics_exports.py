"""The analytics package's public surface, and the benchmark's synthetic memory."""

from __future__ import annotations

from collections import Counter

from bench.orient_bench import measure, synthetic_memory

import kenning_encounter.analytics as analytics
from kenning_encounter.vocabulary import RELATION_TYPES


def test_public_names() -> None:
    assert sorted(analytics.__all__) == [
        "ALGORITHMS",
        "AlgorithmReport",
        "Baseline",
        "BaselineStore",
        "Engine",
        "EngineGraph",
        "InProcessEngine",
        "Panel",
        "Projection",
        "ProjectionCatalog",
        "ProjectionInfo",
        "Scope",
        "SectionTimer",
        "build_panel",
        "build_projection",
        "orient_panel",
    ]
    for name in analytics.__all__:
        assert getattr(analytics, name) is not None


def test_the_synthetic_memory_is_valid_and_repeatable() -> None:
    memory = synthetic_memory(1_000)
    types = {n.id: n.type for n in memory.nodes}
    for e in memory.edges:
        assert RELATION_TYPES[e.type].allows(types[e.source], types[e.target]), e
    assert 2.9 <= len(memory.edges) / len(memory.nodes) <= 3.1
    successors = Counter(e.source for e in memory.edges if e.type == "SUPERSEDES")
    assert successors and max(successors.values()) == 1
    assert all(types[n.superseded_by] == n.type for n in memory.nodes if n.superseded_by)
    again = synthetic_memory(1_000)
    assert again.nodes == memory.nodes and again.edges == memory.edges


def test_a_benchmark_measurement_reports_time_memory_and_steps() -> None:
    result = measure(1_000, repeats=1)
    assert result["nodes"] == 1_000
    assert result["seconds"] > 0 and result["cpu_seconds"] > 0
    assert result["peak_rss_mb"] > 0
    assert {"projection", "mass", "betweenness", "communities", "drift"} <= set(result["steps"])
    assert 0 < result["panel_chars"] <= 8_000
