"""The peers benchmark's verdicts and its table of several sizes, from given figures.

The figures are written here, not measured: what is tested is how a run's numbers
become the goals' verdicts and one table with a row per size and server.
"""

from __future__ import annotations

from typing import Any

from bench import peers_bench


def _server(label: str, per_s: float) -> dict[str, Any]:
    return {
        "status": "ok",
        "label": label,
        "start_ms": 1.0,
        "write": {"entities_per_s": per_s, "batch_p50_ms": 10.0, "batch_p95_ms": 20.0},
        "search": {"p50_ms": 1.0, "p95_ms": 2.0, "mean_hits": 10.0, "mean_chars": 100},
    }


def _result(
    entities: int, ours_per_s: float, reference_per_s: float, floor_per_s: float | None = None
) -> dict[str, Any]:
    servers = {"ours": _server("ours", ours_per_s), "reference": _server("ref", reference_per_s)}
    if floor_per_s is not None:
        servers["floor"] = _server("floor", floor_per_s)
    compare = peers_bench._compare  # pyright: ignore[reportPrivateUsage]
    result: dict[str, Any] = {
        "entities": entities,
        "batch": 50,
        "searches": 200,
        "cpus": 2,
        "load_average_1m": [1.0, 2.0],
        "servers": servers,
        "ratios": {"reference vs ours": compare(servers["reference"], servers["ours"])},
    }
    result["goal"] = peers_bench._goal(result)  # pyright: ignore[reportPrivateUsage]
    result["write_floor"] = peers_bench._write_floor(result)  # pyright: ignore[reportPrivateUsage]
    write = peers_bench._write_goal(result)  # pyright: ignore[reportPrivateUsage]
    result["goals"] = [result["goal"], *([write] if write else [])]
    return result


def test_write_goals_are_judged_at_their_own_size() -> None:
    at_10k = _result(10_000, 3_000, 1_400)  # 2.14x: the 2x goal met
    at_100k = _result(100_000, 3_000, 700)  # 4.29x: the 5x goal not met
    at_1k = _result(1_000, 3_000, 100)
    assert at_10k["goals"][1]["met"] is True
    assert "2x" in at_10k["goals"][1]["statement"]
    assert at_100k["goals"][1]["met"] is False
    assert "5x" in at_100k["goals"][1]["statement"]
    assert len(at_1k["goals"]) == 1  # no write goal at 1k


def test_several_sizes_share_one_table() -> None:
    table = peers_bench.format_sizes([_result(10_000, 3_000, 1_400), _result(100_000, 3_000, 700)])
    rows = [line for line in table.splitlines() if line.strip().startswith(("10,000", "100,000"))]
    # A row per size and server, then a ratio row per size.
    assert len(rows) == 6
    assert "our writes at least 5x the reference server's throughput at 100,000" in table
    assert "NOT met" in table


def test_the_floor_says_what_a_write_goal_leaves_the_memory() -> None:
    # Batches of 50: 5,000/s is 10 ms a batch, 2,500/s 20 ms, 25,000/s 2 ms.
    result = _result(10_000, 5_000, 2_500, floor_per_s=25_000)
    assert result["write_floor"] == {
        "floor_batch_ms": 2.0,
        "ours_batch_ms": 10.0,
        "reference_batch_ms": 20.0,
        "ours_above_floor_ms": 8.0,
        "goal_x": 2.0,
        "goal_leaves_above_floor_ms": 8.0,  # 20 / 2 - 2
    }
    table = peers_bench.format_table(result)
    assert "the floor 2.00 ms; ours 10.00 ms (8.00 above it)" in table
    assert "2x the reference leaves the memory 8.00 ms above the floor" in table
    # No goal at 1k: the floor is still placed, with no goal's share.
    assert "goal_x" not in _result(1_000, 5_000, 2_500, floor_per_s=25_000)["write_floor"]
    # Without a floor run there is nothing to place.
    assert _result(10_000, 5_000, 2_500)["write_floor"] is None
