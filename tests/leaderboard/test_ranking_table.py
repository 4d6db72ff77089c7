"""Ranking a loaded table (no database): the metrics a board shows and weighs."""

from __future__ import annotations

from typing import cast

from benchmarks.bench_ranking import synthetic_table
from evalboard.core.context import Context
from leaderboard import build_leaderboard


def test_a_board_without_memory_figures_ranks_on_the_other_metrics() -> None:
    # A sandbox that could not read its peak memory leaves memory None; the goods then
    # name only the metrics every model has (memory's direction used to be passed anyway,
    # and the Dynascore refused it as an unknown metric).
    table = synthetic_table(5)
    for entry in table.models:
        entry.metrics["memory"] = None
    board = build_leaderboard(cast(Context, None), table, intervals=False)
    assert [m.name for m in board.metrics] == ["perf", "throughput", "fairness", "robustness"]
    assert [r.rank for r in board.rows] == [1, 2, 3, 4, 5]
    assert all("memory" not in r.contributions for r in board.rows)
