"""The ranking's cost grows as n log n, not n squared (issue 20): counted, then timed.

The tables are synthetic (``benchmarks/bench_ranking.py``): the ranking starts from a
loaded table, so no database is needed to measure it.
"""

from __future__ import annotations

import statistics
import time

import pytest

from benchmarks.bench_ranking import interleaved_runs, rank_seconds, synthetic_table
from tests.helpers.counting import CountedName


def _comparisons(n: int) -> int:
    table = synthetic_table(n)
    for entry in table.models:
        entry.key = CountedName(entry.key)
    CountedName.reset()
    rank_seconds(table)
    return CountedName.compared


def test_ranking_compares_model_keys_n_log_n_times() -> None:
    small, large = _comparisons(200), _comparisons(2_000)
    # Sorting the keys: 10 x log(2000) / log(200), about 14x. One list.index(key) per
    # row, as the rank loop once had, makes it about 100x.
    assert 0 < small
    assert large < 20 * small, (small, large)


@pytest.mark.slow
def test_ten_times_the_submissions_cost_under_twenty_times_the_time() -> None:
    # CPU time of this process, sizes interleaved, medians: a busy neighbour slows both.
    runs = interleaved_runs(
        {300: synthetic_table(300), 3_000: synthetic_table(3_000)}, 5, clock=time.process_time
    )
    small, large = statistics.median(runs[300]), statistics.median(runs[3_000])
    assert large < 20 * small, runs
