"""Benchmark how much a model's throughput moves when a neighbour keeps the worker busy.

Run: ``.venv/bin/python benchmarks/bench_stability.py [--runs 5] [--examples 2000]``.
Writes ``benchmarks/results/stability.json``.

The same model (the keyword model of tests/evaluator/fixtures/keyword_bundle doing about
1 ms of CPU work per example, one thread, a 1-CPU limit) is evaluated ``--runs`` times in
a row on the same dataset, in the local and the docker sandbox, under three conditions:

- ``alone``: nothing started beside it (the machine's other work goes on);
- ``neighbour``: a process burning one core for the whole series (``while True: pass``);
- ``neighbour_pinned``: the same, with the sandbox pinned to cores of its own
  (``RunOptions(pin_cpus=True)``, what ``EVALBOARD_CPU_PINNING=auto`` does).

For each: the throughput of every evaluation (the median of its three timed runs, as a
result reports it), the spread max/min over the series, and the same for the sandbox's
CPU seconds per example. Goal: the series with a busy neighbour moves at most 1.10x.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import load_average, machine, save, spread  # noqa: E402
from benchmarks.bench_evaluator import iterations_per_ms, sentences  # noqa: E402
from evalboard.core.limits import SandboxLimits  # noqa: E402
from evaluator import RunOptions, TestSet, evaluate_dataset  # noqa: E402
from tests.helpers.tasks import sentiment_spec  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "stability.json"
KEYWORD = ROOT / "tests" / "evaluator" / "fixtures" / "keyword_bundle"
GOAL = 1.10
BURN = "while True:\n    pass\n"


def _series(bundle: Path, test_set: TestSet, runs: int, sandbox: str, pin: bool) -> dict[str, Any]:
    task = sentiment_spec()
    options = RunOptions(
        sandbox=sandbox, limits=SandboxLimits(cpus=1), measure_energy=False, pin_cpus=pin
    )
    throughputs, cpu, cores = [], [], set()
    for _ in range(runs):
        metrics = evaluate_dataset(bundle, test_set, task, options=options).outcome.metrics
        assert metrics is not None and metrics.load is not None
        throughputs.append(metrics.throughput)
        if metrics.cpu_per_example_s is not None:
            cpu.append(metrics.cpu_per_example_s * 1e3)
        cores.add(metrics.load.cpuset or "unpinned")
    return {
        "throughput_examples_per_s": spread(throughputs, 1),
        "throughput_max_over_min": round(max(throughputs) / min(throughputs), 3),
        "cpu_ms_per_example": spread(cpu, 4) if cpu else None,
        "cpu_max_over_min": round(max(cpu) / min(cpu), 3) if cpu and min(cpu) > 0 else None,
        "cores": sorted(cores),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--no-docker", action="store_true", help="the local sandbox only")
    args = parser.parse_args()
    load_before = load_average()
    examples, source = sentences(args.examples)
    test_set = TestSet(name="stability", examples=examples, sha256="0" * 64)
    found: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        bundle = Path(tmp) / "keyword_bundle"
        shutil.copytree(KEYWORD, bundle)
        work = iterations_per_ms()
        (bundle / "config.json").write_text(json.dumps({"work": work}))
        for sandbox in ["local"] if args.no_docker else ["local", "docker"]:
            evaluate_dataset(
                bundle,
                TestSet(name="warm", examples=examples[:64], sha256="1" * 64),
                sentiment_spec(),
                options=RunOptions(sandbox=sandbox, measure_energy=False),
            )  # builds the image once
            found[sandbox] = {"alone": _series(bundle, test_set, args.runs, sandbox, False)}
            neighbour = subprocess.Popen([sys.executable, "-c", BURN])
            try:
                time.sleep(1.0)  # let the scheduler see it
                found[sandbox]["neighbour"] = _series(bundle, test_set, args.runs, sandbox, False)
                found[sandbox]["neighbour_pinned"] = _series(
                    bundle, test_set, args.runs, sandbox, True
                )
            finally:
                neighbour.kill()
                neighbour.wait()
            print(sandbox, json.dumps(found[sandbox], indent=2), flush=True)
    document = {
        "benchmark": "stability",
        "model": "keyword model with about 1 ms of CPU work per example (one thread)",
        "work_iterations_per_example": work,
        "examples": len(examples),
        "source": source,
        "runs": args.runs,
        "limits_cpus": 1,
        "neighbour": "one process burning one core (while True: pass) for the series",
        "series": found,
        "goal_max_over_min": GOAL,
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
    }
    save(RESULTS, document)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
