"""Benchmark the input-shift test (scoring.domain_shift) on real data, at three sizes.

SST-2 test sentences (movie reviews) as traffic against DynaSent round-1 test sentences
(Yelp) as reference, and, for the null, held-out DynaSent sentences against the same
reference; n traffic + n reference inputs for n in 300, 1,000, 2,000 (the check's caps),
999 permutations. Sizes are timed interleaved so that a neighbour's load falls on all
alike. Also written: each case's AUC, interval and p-value, and the AUC of a kernel ridge
classifier (the same features, folds and seed, no permutations) for the docs' comparison.

Run: ``.venv/bin/python benchmarks/bench_drift.py [--repeats N]`` (needs ../shared/datasets).
Writes ``benchmarks/results/drift.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, save  # noqa: E402
from scoring import domain_shift, shift_features  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "drift.json"
DATA = ROOT.parent / "shared" / "datasets"
SIZES = (300, 1_000, 2_000)


def _texts() -> tuple[list[str], list[str]]:
    rows = [
        json.loads(line)["sentence"]
        for line in (DATA / "dynasent" / "dynasent-v1.1-round01-yelp-test.jsonl")
        .read_text()
        .splitlines()
    ]
    random.Random(0).shuffle(rows)
    with (DATA / "sst" / "sst2_csv" / "test.csv").open(newline="") as handle:
        sst = [row["sentence"] for row in csv.DictReader(handle)]
    random.Random(0).shuffle(sst)
    return rows, sst


def _ridge_auc(traffic: list[str], reference: list[str], penalty: float = 1.0) -> float:
    """The AUC a (centred, linear) kernel ridge classifier gets on the same folds."""
    from scoring.shift import _aucs, _folds

    rows = shift_features([*traffic, *reference]).astype(np.float64)
    gram = rows @ rows.T
    is_traffic = np.arange(len(rows)) < len(traffic)
    fold = _folds(is_traffic, 5, np.random.default_rng(0))
    total = 0.0
    for k in range(5):
        test, train = fold == k, fold != k
        inner = gram[np.ix_(train, train)]
        mean = inner.mean(axis=0)
        centred = inner - mean[None, :] - mean[:, None] + mean.mean()
        cross = gram[np.ix_(test, train)]
        cross = cross - cross.mean(axis=1, keepdims=True) - mean[None, :] + mean.mean()
        y = is_traffic[train].astype(np.float64)
        alpha = np.linalg.solve(centred + penalty * np.eye(train.sum()), y - y.mean())
        total += float(_aucs((cross @ alpha)[:, None], is_traffic[test][:, None])[0])
    return total / 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    dynasent, sst = _texts()
    times: dict[int, dict[str, list[float]]] = {n: {"sst": [], "held_out": []} for n in SIZES}
    outcomes: dict[int, dict[str, Any]] = {n: {} for n in SIZES}
    for _ in range(args.repeats):
        for n in SIZES:
            reference = dynasent[:n]
            for case, traffic in (("sst", sst[:n]), ("held_out", dynasent[n : 2 * n])):
                started = time.perf_counter()
                test = domain_shift(traffic, reference)
                times[n][case].append(time.perf_counter() - started)
                outcomes[n][case] = {
                    "auc": round(test.auc.estimate, 4),
                    "auc_interval": [round(test.auc.low, 4), round(test.auc.high, 4)],
                    "p_value": test.p_value,
                }
    for n in SIZES:
        outcomes[n]["sst"]["kernel_ridge_auc"] = round(_ridge_auc(sst[:n], dynasent[:n]), 4)
    report = {
        "what": "scoring.domain_shift: n SST-2 (or held-out DynaSent) vs n DynaSent R1 inputs",
        "machine": machine(),
        "repeats": args.repeats,
        "sizes": {
            str(n): {
                case: {
                    "median_s": round(statistics.median(values), 3),
                    "min_s": round(min(values), 3),
                    "max_s": round(max(values), 3),
                    **outcomes[n][case],
                }
                for case, values in times[n].items()
            }
            for n in SIZES
        },
    }
    save(RESULTS, report)
    print(json.dumps(report, indent=2))  # noqa: T201


if __name__ == "__main__":
    main()
