"""Benchmark scoring: re-ranking 10,000 submissions, and the bootstrap for 100 models.

Run: ``.venv/bin/python benchmarks/bench_scoring.py``. Writes the medians (seconds and
milliseconds, over several repeats, timed with ``time.perf_counter``) to
``benchmarks/results/scoring.json``. Goal: re-ranking with new weights under 20 ms.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import scoring
from benchmarks._report import load_average, machine, save, spread

RESULTS = Path(__file__).resolve().parent / "results" / "scoring.json"
METRICS = ["perf", "throughput", "memory", "fairness", "robustness", "latency", "energy", "co2"]
LOWER_IS_BETTER = {"memory": 16.0, "latency": 1000.0, "energy": 10.0, "co2": 10.0}


def timings_ms(fn: Callable[[], Any], repeats: int) -> list[float]:
    """Milliseconds of each of ``repeats`` calls, after one untimed call."""
    fn()  # warm up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return times


def submissions(n: int, rng: np.random.Generator) -> dict[str, dict[str, float]]:
    values = rng.uniform(1, 100, size=(n, len(METRICS)))
    values[:, METRICS.index("memory")] = rng.uniform(0.5, 15.5, n)
    return {
        f"sub-{i:05d}": dict(zip(METRICS, row.tolist(), strict=True))
        for i, row in enumerate(values)
    }


def main() -> None:
    rng = np.random.default_rng(0)
    directions = {m: -1.0 for m in LOWER_IS_BETTER}
    offsets = dict(LOWER_IS_BETTER)
    table = submissions(10_000, rng)
    weights = [
        {m: float(w) for m, w in zip(METRICS, rng.uniform(0, 5, len(METRICS)), strict=True)}
        for _ in range(64)
    ]
    cycle = iter(range(10**9))

    def next_weights() -> dict[str, float]:
        return weights[next(cycle) % len(weights)]

    normalised = scoring.normalise(table, directions=directions, offsets=offsets)
    spreads: dict[str, Any] = {}
    load_before = load_average()

    times = timings_ms(lambda: normalised.rank(next_weights()), repeats=51)
    spreads["rerank_prepared_10000x8_ms"] = spread(times, 3)
    times = timings_ms(
        lambda: scoring.rank(table, weights=next_weights(), directions=directions, offsets=offsets),
        repeats=21,
    )
    spreads["rerank_from_table_10000x8_ms"] = spread(times, 3)
    times = timings_ms(
        lambda: scoring.dynascore(
            table, weights=next_weights(), directions=directions, offsets=offsets
        ),
        repeats=21,
    )
    spreads["dynascore_from_table_10000x8_ms"] = spread(times, 3)

    n_models, n_examples, n_resamples = 100, 10_000, 1000
    rates = rng.uniform(0.5, 0.9, n_models)
    examples = {
        f"model-{i:03d}": {"test": (rng.random(n_examples) < rate).astype(np.float64)}
        for i, rate in enumerate(rates)
    }
    others = {
        m: {k: v for k, v in row.items() if k != "perf"}
        for m, row in zip(examples, submissions(n_models, rng).values(), strict=True)
    }
    times = timings_ms(
        lambda: scoring.bootstrap(
            examples,
            table=others,
            directions=directions,
            offsets=offsets,
            n_resamples=n_resamples,
            seed=1,
        ),
        repeats=5,
    )
    spreads["bootstrap_100_models_10000_examples_1000_resamples_ms"] = spread(times, 3)
    # The board's bootstrap: the paired baseline floor (three constant answers) and
    # throughput resampled from three timed runs, beside the plain one above.
    constants = [{"test": (rng.random(n_examples) < 1 / 3).astype(np.float64)} for _ in range(3)]
    repeats = {
        m: {"throughput": [row["throughput"] * f for f in (0.9, 1.0, 1.1)]}
        for m, row in others.items()
    }
    times = timings_ms(
        lambda: scoring.bootstrap(
            examples,
            table=others,
            directions=directions,
            offsets=offsets,
            baseline=constants,
            repeats=repeats,
            n_resamples=n_resamples,
            seed=1,
        ),
        repeats=5,
    )
    spreads["bootstrap_floor_and_repeats_100_models_10000_examples_1000_resamples_ms"] = spread(
        times, 3
    )

    labels = ["neg", "neu", "pos"]
    golds = [labels[i] for i in rng.integers(0, 3, n_examples)]
    f1_examples = {
        m: {
            "test": scoring.statistics(
                "macro_f1",
                [g if rng.random() < 0.7 else "neg" for g in golds],
                golds,
                labels=labels,
            )
        }
        for m in examples
    }
    times = timings_ms(
        lambda: scoring.bootstrap(f1_examples, metric="macro_f1", n_resamples=n_resamples, seed=1),
        repeats=3,
    )
    spreads["bootstrap_macro_f1_100_models_10000_examples_1000_resamples_ms"] = spread(times, 3)

    report = {
        "benchmark": "scoring",
        "spread_ms": spreads,
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
    }
    save(RESULTS, report)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
