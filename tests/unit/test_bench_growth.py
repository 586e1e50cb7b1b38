"""bench.growth: the fitted power of a figure's growth, and the reading against a release."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from bench import growth

SIZES = (1_000, 10_000, 100_000, 1_000_000)


def _rows(cost: object) -> list[dict[str, object]]:
    return [{"nodes": n, "p95_ms": cost(n), "calls": 5} for n in SIZES]  # type: ignore[operator]


@pytest.mark.parametrize(
    ("cost", "power", "dominant"),
    [
        (lambda n: 7.0, 0.0, "constant"),
        (lambda n: 0.002 * n, 1.0, "linear"),
        (lambda n: 1e-6 * n * n, 2.0, "quadratic or worse"),
        (lambda n: 0.3 * n**0.5, 0.5, "n^0.50"),
    ],
)
def test_the_power_and_its_term(cost: object, power: float, dominant: str) -> None:
    (line,) = growth.growth(_rows(cost))
    assert line["figure"] == "p95_ms"
    assert line["power"] == pytest.approx(power, abs=0.01)
    assert line["dominant"] == dominant
    assert line["sizes"] == "1,000-1,000,000"


def test_a_throughput_is_read_as_its_cost_per_item() -> None:
    rows = [{"nodes": n, "import_records_per_s": 1e6 / math.log(n)} for n in SIZES]
    (line,) = growth.growth(rows)
    assert line["power"] == pytest.approx(0.1, abs=0.01)  # seconds per record grow like log n
    assert line["dominant"] == "logarithmic or a small power"
    falling = [{"nodes": n, "x_per_s": 1e7 / n} for n in SIZES]
    assert growth.growth(falling)[0]["dominant"] == "linear"


def test_fewer_than_three_sizes_give_no_fit() -> None:
    assert growth.growth(_rows(lambda n: n)[:2]) == []
    with pytest.raises(ValueError, match="two sizes"):
        growth.fit_power([(10.0, 1.0), (10.0, 2.0)])


RECORD = {
    "bands": {"p95_ms": 1.5},
    "benches": {"infuse": {"10000": {"p95_ms": 20.0, "x_per_s": 100.0, "gone_ms": 3.0}}},
}


def test_each_figure_beside_the_recorded_one_with_its_flag() -> None:
    rows = [{"nodes": 10_000, "p95_ms": 40.0, "x_per_s": 40.0}, {"nodes": 1_000, "p95_ms": 1.0}]
    lines = {line["figure"]: line for line in growth.against("infuse", rows, RECORD)}
    assert set(lines) == {"p95_ms @ 10,000", "x_per_s @ 10,000"}  # only what both hold
    slower = lines["p95_ms @ 10,000"]
    assert (slower["was"], slower["now"], slower["ratio"]) == (20.0, 40.0, 2.0)
    assert (slower["band"], slower["flag"]) == ("x1.5", "slower")
    # a throughput that fell is slower, beyond the default band
    assert lines["x_per_s @ 10,000"]["flag"] == "slower"
    within = growth.against("infuse", [{"nodes": 10_000, "p95_ms": 26.0}], RECORD)
    assert within[0]["flag"] == ""
    faster = growth.against("infuse", [{"nodes": 10_000, "p95_ms": 10.0}], RECORD)
    assert faster[0]["flag"] == "faster"
    assert growth.against("store", rows, RECORD) == []


def test_the_recorded_release_names_real_bench_figures() -> None:
    record = growth.recorded()
    assert record["benches"], "bench/recorded/0.1.0.json is missing"
    for bench, sizes in record["benches"].items():
        for figures in sizes.values():
            assert all(growth.is_cost(f) for f in figures), bench


def test_saved_runs_are_merged_and_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i, sizes in enumerate(((1_000, 10_000), (100_000,))):
        rows = [{"nodes": n, "p95_ms": 0.001 * n} for n in sizes]
        saved = {"benches": {"infuse": {"rows": rows}}}
        (tmp_path / f"{i}.json").write_text(json.dumps(saved), encoding="utf-8")
    assert growth.main([str(tmp_path / "0.json"), str(tmp_path / "1.json")]) == 0
    out = capsys.readouterr().out
    assert "== infuse: growth" in out and "dominant=linear" in out
    assert "== infuse: against" in out and "p95_ms @ 10,000" in out
