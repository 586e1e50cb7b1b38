"""The analytics package's public surface, and the benchmark's synthetic memory."""

from __future__ import annotations

import inspect
from collections import Counter
from pathlib import Path

import anyio
import pytest
from bench.orient_bench import measure, synthetic_memory
from pydantic import BaseModel

import kenning_encounter.analytics as analytics
from kenning_encounter.config import load_settings
from kenning_encounter.server.app import build_server
from kenning_encounter.server.context import Runtime
from kenning_encounter.vocabulary import RELATION_TYPES

# What each exported name is: a class, a protocol (structural type), a pydantic model, a
# function, or the tuple of algorithm names the gds_* tools are made from.
EXPORTS: dict[str, str] = {
    "ALGORITHMS": "names",
    "AlgorithmReport": "model",
    "Baseline": "model",
    "BaselineStore": "class",
    "Engine": "protocol",
    "EngineGraph": "protocol",
    "InProcessEngine": "class",
    "Panel": "model",
    "Projection": "class",
    "ProjectionCatalog": "class",
    "ProjectionInfo": "model",
    "Scope": "class",
    "SectionTimer": "class",
    "build_panel": "function",
    "build_projection": "function",
    "orient_panel": "function",
}


def _kind(value: object) -> str:
    if isinstance(value, tuple):
        return "names"
    if inspect.isfunction(value):
        return "function"
    if not isinstance(value, type):
        return type(value).__name__
    if issubclass(value, BaseModel):
        return "model"
    if getattr(value, "_is_protocol", False):
        return "protocol"
    return "class"


def test_the_exported_names_are_exactly_the_declared_ones() -> None:
    assert analytics.__all__ == sorted(EXPORTS), "keep __all__ sorted and declared here"
    for name in analytics.__all__:  # the package binds a name on its first use
        getattr(analytics, name)
    public = {
        n
        for n, v in vars(analytics).items()
        if not n.startswith("_") and not inspect.ismodule(v) and n != "annotations"
    }
    assert public == set(EXPORTS), "a name is public without being exported, or the reverse"


@pytest.mark.parametrize("name", sorted(EXPORTS))
def test_each_export_is_of_its_kind_and_defined_in_the_package(name: str) -> None:
    value = getattr(analytics, name)
    assert _kind(value) == EXPORTS[name]
    if EXPORTS[name] != "names":
        module = getattr(value, "__module__", "")
        assert module.startswith("kenning_encounter.analytics."), module
        assert getattr(value, "__name__", None) == name


def test_the_in_process_engine_offers_what_the_engine_port_asks() -> None:
    wanted = {n for n in vars(analytics.Engine) if not n.startswith("_")}
    assert wanted, "the Engine protocol declares no operation"
    for op in sorted(wanted):
        offered = getattr(analytics.InProcessEngine, op, None)
        assert offered is not None, op
        assert callable(offered) == callable(getattr(analytics.Engine, op)), op


def test_every_algorithm_is_served_as_a_gds_tool(tmp_path: Path) -> None:
    assert analytics.ALGORITHMS and all(isinstance(a, str) for a in analytics.ALGORITHMS)
    settings = load_settings(data_dir=tmp_path, matcher="off", namespace="", face="reader")
    served = {t.name for t in anyio.run(build_server(settings, Runtime(settings)).list_tools)}
    gds = {n for n in served if n.startswith("gds_")}
    assert gds == {f"gds_{a}" for a in analytics.ALGORITHMS} | {
        "gds_create_projection",
        "gds_drop_projection",
    }


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
