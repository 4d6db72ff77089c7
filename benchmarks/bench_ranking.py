"""Benchmark the leaderboard's ranking: a loaded table of 1,000 and 10,000 submissions.

Times :func:`leaderboard.build_leaderboard` without intervals (the Dynascore, the
baseline floor, contributions, throughput spreads and the rows the API returns) on a
synthetic :class:`leaderboard.table.TaskTable`, so that loading the table from the
database is not in the figure; ``bench_service.py`` and the issue's leaderboard benchmark
time the whole request. Sizes are timed interleaved (1k, 10k, 1k, 10k, ...) so that a
neighbour's load falls on both alike; the medians and spreads of the runs are written.

Run: ``.venv/bin/python benchmarks/bench_ranking.py [--repeats N]``. Writes
``benchmarks/results/ranking.json``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, save, spread  # noqa: E402
from datasets_registry import parse_task_spec  # noqa: E402
from evalboard.core.context import Context  # noqa: E402
from evalboard.core.states import JobStatus  # noqa: E402
from evaluator import DatasetMetrics, DatasetOutcome  # noqa: E402
from leaderboard import build_leaderboard  # noqa: E402
from leaderboard.entry import EntryDetails  # noqa: E402
from leaderboard.table import ModelEntry, TaskTable  # noqa: E402
from scoring import DEFAULT_WEIGHTS  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "ranking.json"
SIZES = (1_000, 10_000)
TASK = {
    "id": "bench",
    "name": "Benchmark",
    "input": [{"name": "statement"}],
    "output": {"type": "multiclass", "labels": ["negative", "neutral", "positive"]},
    "perf_metric": "macro_f1",
}


def synthetic_table(n: int, *, seed: int = 0) -> TaskTable:
    """A task table of ``n`` complete submissions with random metrics, each with one
    original dataset timed three times (so the throughput spread is computed too)."""
    rng = np.random.default_rng(seed)
    spec = parse_task_spec(TASK)
    perf = rng.uniform(30, 90, n)
    throughput = rng.uniform(1, 5000, n)
    memory = rng.uniform(0.1, 15, n)
    fairness = rng.uniform(50, 100, n)
    robustness = rng.uniform(50, 100, n)
    models = []
    for i in range(n):
        runs = [float(throughput[i] * f) for f in (0.95, 1.0, 1.05)]
        outcome = DatasetOutcome(
            dataset="test",
            sha256="0" * 64,
            metrics=DatasetMetrics(
                perf=float(perf[i]),
                perf_metric=spec.perf_metric,
                examples=500,
                throughput=runs[1],
                batch_size=32,
                predict_s=500 / runs[1],
                memory_gib=float(memory[i]),
                throughput_runs=runs,
            ),
        )
        models.append(
            ModelEntry(
                key=str(i + 1),
                submission_id=i + 1,
                name=f"model-{i:05d}",
                user="bench",
                user_id=1,
                is_baseline=False,
                status=JobStatus.FINISHED,
                complete=True,
                metrics={
                    "perf": float(perf[i]),
                    "throughput": float(throughput[i]),
                    "memory": float(memory[i]),
                    "fairness": float(fairness[i]),
                    "robustness": float(robustness[i]),
                    "latency_p50": None,
                    "ece": None,
                },
                details=EntryDetails.of({}, [outcome]),
            )
        )
    return TaskTable(
        task=spec,
        default_weights=dict(DEFAULT_WEIGHTS),
        owner_id=None,
        datasets=[],
        scoring=[],
        models=models,
        majority_by_dataset=None,
        dataset_weights={"test": 1.0},
    )


Clock = Callable[[], float]


def rank_seconds(table: TaskTable, *, clock: Clock = time.perf_counter) -> float:
    """Seconds to build the ranked board of ``table`` once with the owner's weights (no
    intervals: without a context nothing is read from storage)."""
    start = clock()
    build_leaderboard(cast(Context, None), table, intervals=False)
    return clock() - start


def interleaved_runs(
    tables: dict[int, TaskTable], repeats: int, *, clock: Clock = time.perf_counter
) -> dict[int, list[float]]:
    """Seconds per run for each size, the sizes taking turns; one warm-up run each.

    The prebuilt tables are frozen out of the garbage collector's reach while they are
    timed: otherwise each full collection walks every table held here, the large one
    too, a cost of this harness (a request holds only its own table), not of ranking.
    """
    for table in tables.values():
        rank_seconds(table, clock=clock)
    runs: dict[int, list[float]] = {n: [] for n in tables}
    gc.collect()
    gc.freeze()
    try:
        for _ in range(repeats):
            for n, table in tables.items():
                runs[n].append(rank_seconds(table, clock=clock))
    finally:
        gc.unfreeze()
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args()
    tables = {n: synthetic_table(n) for n in SIZES}
    runs = interleaved_runs(tables, args.repeats)
    medians = {n: statistics.median(r) for n, r in runs.items()}
    small, large = SIZES
    report: dict[str, Any] = {
        "benchmark": "ranking",
        "what": "leaderboard.build_leaderboard on a loaded table, no intervals",
        "repeats": args.repeats,
        # Each size's figure in the shape every results file gives one (a spread), so the
        # README and reproduce read it as they read the others (benchmarks/whole_runs.py).
        "ms": {str(n): spread([s * 1000 for s in r], 3) for n, r in runs.items()},
        "ratio_10x_rows": round(medians[large] / medians[small], 2),
        "goal": {"ratio_10x_rows_below": 20.0},
        **machine(),
    }
    save(RESULTS, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
