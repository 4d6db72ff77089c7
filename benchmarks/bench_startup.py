"""Benchmark the fixed costs of the CLI and of ``evaluate``: start-up and the energy meter.

Run: ``.venv/bin/python benchmarks/bench_startup.py [--runs 7] [--tree PATH]``.
Writes medians to ``benchmarks/results/startup.json``.

1. ``evalboard --help`` and ``evalboard evaluate --help``: wall time of the console
   script, and the import time of ``evalboard.cli`` as ``python -X importtime`` reports
   it (its cumulative figure). Goal: under 0.3 s of import.
2. ``evalboard evaluate`` end to end for the VADER model on a 100-example dataset in the
   local sandbox, with ``--energy`` and ``--no-energy``: wall time of the console script.
   What is not the model is start-up: importing, loading the bundle, the sandbox's start,
   and with energy codecarbon's import and hardware probe.
3. The energy meter in this process: importing codecarbon, the first start (the hardware
   probe, once per process), one dataset's part of a running meter (begin + end), and what
   a dataset paid before one meter ran through an evaluation (a tracker set up, started
   and stopped per dataset, the probe already done).
4. What is left per dataset: ``evaluate`` in this process over 1 and over 4 datasets of
   20 examples (energy on); the difference over 3 is each further dataset's fixed cost
   (a fresh sandbox started and closed, scoring, the meter's part).

``--tree PATH`` measures only 1 and 2, on another checkout of the project (``PYTHONPATH``
first), e.g. the main branch for a before/after; it prints and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks._report import machine, save

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "benchmarks" / "results" / "startup.json"
BUNDLE = ROOT / "tests" / "evaluator" / "fixtures" / "vader_bundle"
EVALBOARD = Path(sys.executable).parent / "evalboard"


def _median(samples: list[float]) -> dict[str, Any]:
    return {
        "median_s": round(statistics.median(samples), 4),
        "min_s": round(min(samples), 4),
        "max_s": round(max(samples), 4),
        "runs": len(samples),
    }


def _wall(argv: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    """Median wall time of a command (one untimed run first: the page cache)."""
    samples = []
    for index in range(runs + 1):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr}")
        if index:
            samples.append(elapsed)
    return _median(samples)


def _import_time(env: dict[str, str], runs: int, cwd: Path) -> dict[str, Any]:
    """``python -X importtime -c 'import evalboard.cli'``: the cumulative microseconds.

    Run from ``cwd`` outside any checkout: ``-c`` puts the working directory first on the
    path, ahead of ``PYTHONPATH``.
    """
    samples = []
    for index in range(runs + 1):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", "import evalboard.cli"],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
            check=True,
        )
        last = re.search(r"\|\s*(\d+)\s*\|\s*evalboard\.cli\s*$", done.stderr, re.MULTILINE)
        assert last is not None, done.stderr[-2000:]
        if index:
            samples.append(int(last.group(1)) / 1e6)
    return _median(samples)


def bench_cli(tree: Path, runs: int) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "80"}
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        env["EVALBOARD_DATA_DIR"] = str(Path(tmp) / "data")
        return {
            "import_evalboard_cli": _import_time(env, runs, Path(tmp)),
            "help": _wall([str(EVALBOARD), "--help"], env, runs),
            "evaluate_help": _wall([str(EVALBOARD), "evaluate", "--help"], env, runs),
            "goal_import_s": 0.3,
        }


def bench_evaluate_cli(tree: Path, runs: int) -> dict[str, Any]:
    from tests.helpers.tasks import SENTIMENT, sentiment_rows

    env = {**os.environ, "PYTHONPATH": str(tree), "EVALBOARD_SANDBOX": "local"}
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        root = Path(tmp)
        env["EVALBOARD_DATA_DIR"] = str(root / "data")
        task_file = root / "task.json"  # JSON is YAML
        task_file.write_text(json.dumps(SENTIMENT), encoding="utf-8")
        rows = sentiment_rows()
        dataset = root / "bench.jsonl"
        dataset.write_text(
            "".join(json.dumps({**rows[i % len(rows)], "uid": f"e{i}"}) + "\n" for i in range(100)),
            encoding="utf-8",
        )
        base = [str(EVALBOARD), "evaluate", str(BUNDLE), "--task-file", str(task_file)]
        base += ["--dataset", str(dataset), "--sandbox", "local", "--json", str(root / "r.json")]
        return {
            "examples": 100,
            "energy": _wall([*base, "--energy"], env, runs),
            "no_energy": _wall([*base, "--no-energy"], env, runs),
        }


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bench_energy_meter(runs: int) -> dict[str, Any]:
    import logging

    imported = _timed(lambda: __import__("codecarbon"))
    from evaluator.energy import EnergyMeter, _tracker

    meter = EnergyMeter("USA")
    # The first start in this process: the meter starts in a thread; its first part waits.
    first = _timed(lambda: (meter.start(), meter.begin_part("first")))
    meter.end_part()
    parts = []
    for index in range(runs):
        parts.append(_timed(lambda i=index: (meter.begin_part(f"p{i}"), meter.end_part())))
    meter.stop()

    def tracker_per_dataset() -> None:
        tracker = _tracker("USA")
        tracker.start()
        tracker.stop()

    logging.getLogger("codecarbon").setLevel(logging.ERROR)
    per_dataset = [_timed(tracker_per_dataset) for _ in range(runs)]
    return {
        "import_codecarbon_s": round(imported, 4),
        "first_start_s": round(first, 4),
        "part_of_running_meter": _median(parts),
        "tracker_started_and_stopped_per_dataset": _median(per_dataset),
        "note": "the first start probes the hardware once per process; before, each "
        "dataset set up, started and stopped its own tracker",
    }


def bench_per_dataset(runs: int) -> dict[str, Any]:
    from evaluator import RunOptions, TestSet, evaluate
    from tests.helpers.tasks import sentiment_rows, sentiment_spec

    rows = sentiment_rows()
    examples = [{**rows[i % len(rows)], "uid": f"e{i}"} for i in range(20)]
    sets = [TestSet(name=f"d{n}", examples=examples, sha256=f"{n}" * 64) for n in range(4)]
    task = sentiment_spec()

    def run(count: int) -> float:
        return _timed(
            lambda: evaluate(
                BUNDLE, task=task, datasets=sets[:count], options=RunOptions(sandbox="local")
            )
        )

    run(1)  # warm-up: imports, codecarbon's probe
    one, four = [], []
    for _ in range(runs):
        one.append(run(1))
        four.append(run(4))
    each = (statistics.median(four) - statistics.median(one)) / 3
    return {
        "examples_per_dataset": 20,
        "one_dataset": _median(one),
        "four_datasets": _median(four),
        "each_further_dataset_s": round(each, 4),
        "what": "a fresh local sandbox started and closed, scoring, the energy meter's part",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the checkout to time the CLI of (default: this)"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    load_before = os.getloadavg()[0]
    cli = bench_cli(tree, args.runs)
    print("cli:", json.dumps(cli, indent=2))
    evaluate_cli = bench_evaluate_cli(tree, max(3, args.runs // 2))
    print("evaluate (cli):", json.dumps(evaluate_cli, indent=2))
    if tree != ROOT:
        return  # 3 and 4 time this checkout's evaluator, whatever the tree
    meter = bench_energy_meter(args.runs)
    print("energy meter:", json.dumps(meter, indent=2))
    per_dataset = bench_per_dataset(max(3, args.runs // 2))
    print("per dataset:", json.dumps(per_dataset, indent=2))
    document = {
        "benchmark": "startup",
        "tree": str(tree),
        "cli": cli,
        "evaluate_cli_vader_100": evaluate_cli,
        "energy_meter": meter,
        "per_dataset": per_dataset,
        # Other work on the machine skews every figure; this says how busy it was.
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        **machine(),
    }
    save(RESULTS, document)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
