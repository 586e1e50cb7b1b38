"""The progress an export or import shows: a bar on a terminal, counts in a log."""

from __future__ import annotations

from kenning_encounter.cli import progress_line


def test_a_terminal_gets_a_bar_with_rate_and_time_left() -> None:
    line = progress_line("import", 2_500, 10_000, 2.0, bar=True)
    assert line == (
        "import [######..................]  25% 2,500 of 10,000 records, 1,250/s, 6 s left"
    )
    done = progress_line("import", 10_000, 10_000, 4.0, bar=True)
    assert "[" + "#" * 24 + "] 100%" in done and "left" not in done


def test_a_log_gets_the_counts_alone() -> None:
    assert progress_line("export", 5, 10, 1.0, bar=False) == "export: 5 of 10 records (50%)"
    assert progress_line("export", 0, 0, 0.0, bar=False) == "export: 0 of 0 records"


def test_nothing_to_do_or_no_time_yet_is_no_division_by_zero() -> None:
    assert progress_line("import", 0, 0, 0.0, bar=True).endswith("0 of 0 records, 0/s")
    assert progress_line("import", 0, 10, 0.0, bar=True).startswith("import [....")
