"""Benchmark the fixed costs of the CLI and of ``evaluate``, each named.

Run: ``.venv/bin/python benchmarks/bench_startup.py [--runs 7] [--tree PATH]``.
Writes ``benchmarks/results/startup.json``: every figure a median with its range.

1. ``evalboard --help`` and ``evalboard evaluate --help``: wall time of the console
   script; and every import of ``evalboard --help`` (the console script under
   ``python -X importtime``, Python's own start-up imports included, as in 2): the CLI's
   shell (typer, rich) and every command's module, which ``--help`` lists. (``import
   evalboard.cli`` alone is a lazy facade that loads none of them: timing it said nothing.)
2. What ``evalboard evaluate`` imports: the console script run under ``-X importtime``
   (VADER, 100 examples, ``--sandbox local --no-energy``), every import of the run summed,
   and the largest packages. Goal: under 0.3 s of import for ``--help`` and for the start
   of ``evaluate``; no database layer (sqlalchemy) for a task file.
3. The energy meter, each in a fresh process: importing codecarbon; the first start on a
   machine (codecarbon's hardware probe) and a first start that reuses the probe kept in
   the data directory (``evaluator/_energy_probe.py``); the first figure (the end of the
   first part: codecarbon's reference tables read); one dataset's part of a running
   meter (begin + end).
4. One dataset's fixed costs, each timed on its own in this process (VADER, 100 examples,
   the local and the docker sandbox): the sandbox's start until the model's hello,
   scoring, the sandbox's close; beside them the timed phase for scale.
5. What is left of evaluate's own cost on bench_evaluator.py's 10,000 VADER examples
   (local sandbox): the bundle read (its manifest parsed and checked, its files hashed),
   the dataset read, the start, the timed phase beside raw inference, scoring, the close,
   each timed on its own.

``--tree PATH`` measures only 1 and 2, on another checkout of the project (``PYTHONPATH``
first), e.g. the main branch for a before/after; it prints and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import load_average, machine, save, spread, user_env  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "startup.json"
VADER = ROOT / "tests" / "evaluator" / "fixtures" / "vader_bundle"
EVALBOARD = Path(sys.executable).parent / "evalboard"
#: Loaded by evaluate only where a command needs them (tests/cli/test_startup.py's list).
HEAVY = ("sqlalchemy", "alembic", "fastapi", "uvicorn", "celery", "docker", "torch", "pandas")
_IMPORT = re.compile(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)")


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> str:
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stderr


def _wall(argv: list[str], env: dict[str, str], runs: int) -> dict[str, Any]:
    """Wall time of a command (one untimed run first: the page cache)."""
    _run(argv, env)
    return spread([_timed(lambda: _run(argv, env)) for _ in range(runs)])


def _imports(stderr: str) -> tuple[float, Counter[str]]:
    """Seconds of import in a ``-X importtime`` report, and each top package's share."""
    total = 0.0
    packages: Counter[str] = Counter()
    for line in stderr.splitlines():
        match = _IMPORT.match(line)
        if match is None:
            continue
        own, cumulative, indent, name = match.groups()
        if len(indent) <= 1:  # a top-level import: its figure holds everything under it
            total += int(cumulative) / 1e6
        packages[name.split(".")[0]] += int(own)
    return total, packages


def bench_cli(tree: Path, runs: int) -> dict[str, Any]:
    env = user_env(PYTHONPATH=str(tree), COLUMNS="80")
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        env["EVALBOARD_DATA_DIR"] = str(Path(tmp) / "data")
        argv = [sys.executable, "-X", "importtime", str(EVALBOARD), "--help"]
        _run(argv, env)
        imported = [_imports(_run(argv, env))[0] for _ in range(runs)]
        return {
            "help_imports_s": spread(imported),
            "help_s": _wall([str(EVALBOARD), "--help"], env, runs),
            "evaluate_help_s": _wall([str(EVALBOARD), "evaluate", "--help"], env, runs),
            "goal_import_s": 0.3,
        }


def _small_dataset(root: Path, count: int = 100) -> tuple[Path, Path]:
    from tests.helpers.tasks import SENTIMENT, sentiment_rows

    task_file = root / "task.json"  # JSON is YAML
    task_file.write_text(json.dumps(SENTIMENT), encoding="utf-8")
    rows = sentiment_rows()
    dataset = root / "bench.jsonl"
    dataset.write_text(
        "".join(json.dumps({**rows[i % len(rows)], "uid": f"e{i}"}) + "\n" for i in range(count)),
        encoding="utf-8",
    )
    return task_file, dataset


def bench_evaluate_imports(tree: Path, runs: int) -> dict[str, Any]:
    env = user_env(PYTHONPATH=str(tree), COLUMNS="120")
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        root = Path(tmp)
        env["EVALBOARD_DATA_DIR"] = str(root / "data")
        task_file, dataset = _small_dataset(root)
        argv = [sys.executable, "-X", "importtime", str(EVALBOARD), "evaluate", str(VADER)]
        argv += ["--task-file", str(task_file), "--dataset", str(dataset), "--sandbox", "local"]
        argv += ["--no-energy", "--json", str(root / "r.json")]
        _run(argv, env)
        totals, shares = [], Counter[str]()
        for _ in range(runs):
            total, packages = _imports(_run(argv, env))
            totals.append(total)
            shares.update(packages)
        top = {name: round(us / runs / 1e6, 4) for name, us in shares.most_common(12)}
        loaded = set(shares)
        return {
            "command": "evaluate VADER (100 examples) --sandbox local --no-energy",
            "import_s": spread(totals),
            "largest_packages_s": top,
            "heavy_loaded": sorted(name for name in HEAVY if name in loaded),
            "goal_import_s": 0.3,
        }


_METER = """
import json, sys, time
started = time.perf_counter()
import codecarbon
imported = time.perf_counter() - started
from evaluator import EnergyMeter
meter = EnergyMeter("USA")
started = time.perf_counter()
meter.start()
meter.begin_part("first")
first = time.perf_counter() - started
started = time.perf_counter()
meter.end_part()
first_figure = time.perf_counter() - started
parts = []
for n in range(int(sys.argv[1])):
    started = time.perf_counter()
    meter.begin_part(f"p{n}")
    meter.end_part()
    parts.append(time.perf_counter() - started)
meter.stop()
print(json.dumps({
    "import": imported, "first": first, "first_figure": first_figure, "parts": parts,
    "pandas": "pandas" in sys.modules,
}))
"""


def bench_energy_meter(runs: int) -> dict[str, Any]:
    """Each figure in a fresh process: a first start is once per process."""
    found: dict[str, list[float]] = {
        name: [] for name in ("import", "probe", "kept", "figure", "part")
    }
    pandas = False
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
            env = user_env(EVALBOARD_DATA_DIR=tmp, PYTHONPATH=str(ROOT))
            argv = [sys.executable, "-c", _METER, "5"]
            probing = json.loads(
                subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
            )
            kept = json.loads(
                subprocess.run(argv, env=env, capture_output=True, text=True, check=True).stdout
            )
        found["import"].append(kept["import"])
        found["probe"].append(probing["first"])
        found["kept"].append(kept["first"])
        found["figure"].append(kept["first_figure"])
        found["part"].extend(kept["parts"])
        pandas = pandas or kept["pandas"]
    return {
        "import_codecarbon_s": spread(found["import"]),
        "first_start_probing_s": spread(found["probe"]),
        "first_start_probe_kept_s": spread(found["kept"]),
        "first_figure_probe_kept_s": spread(found["figure"]),
        "part_of_running_meter_s": spread(found["part"]),
        "pandas_loaded_probe_kept": pandas,
        "codecarbon": version("codecarbon"),
        "note": "a first start waits for codecarbon's set-up (the hardware probe where none "
        "is kept); the first figure (end of the first part) reads the reference tables it "
        "needs (evaluator/energy.py: no pandas with a kept probe); later parts are "
        "milliseconds",
    }


def bench_per_dataset(runs: int, kinds: list[str]) -> dict[str, Any]:
    """One dataset's fixed costs, each step of ``evaluate_dataset`` timed on its own."""
    from evaluator.measurement import measure
    from evaluator.scorecard import score
    from submission_sandbox import load_bundle, open_sandbox
    from tests.helpers.tasks import sentiment_rows, sentiment_spec

    task = sentiment_spec()
    rows = sentiment_rows()
    examples = [{**rows[i % len(rows)], "uid": f"e{i}"} for i in range(100)]
    found: dict[str, Any] = {"examples": len(examples), "model": "vader (vaderSentiment lexicon)"}

    def one_dataset(bundle: Any, kind: str) -> tuple[float, ...]:
        box = open_sandbox(bundle, kind=kind, limits=task.limits)
        start = _timed(box.start)
        started = time.perf_counter()
        outputs = measure(box, examples, task, batch_size=64).outputs
        timed = time.perf_counter() - started
        scoring = _timed(lambda: score(task, examples, outputs))
        return start, timed, scoring, _timed(box.close)

    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        # The image has no vaderSentiment: a docker bundle names it (resolved once on the
        # host); the local sandbox runs with this Python's packages.
        with_requirements = Path(tmp) / "vader"
        shutil.copytree(VADER, with_requirements)
        (with_requirements / "requirements.txt").write_text(
            f"vaderSentiment=={version('vaderSentiment')}\n"
        )
        for kind in kinds:
            bundle = load_bundle(VADER if kind == "local" else with_requirements)
            steps: dict[str, list[float]] = {"start": [], "timed": [], "score": [], "close": []}
            one_dataset(bundle, kind)  # builds the image, warms the page cache
            for _ in range(runs):
                for name, value in zip(steps, one_dataset(bundle, kind), strict=True):
                    steps[name].append(value)
            found[kind] = {
                "sandbox_start_s": spread(steps["start"]),
                "timed_phase_s": spread(steps["timed"]),
                "scoring_s": spread(steps["score"]),
                "sandbox_close_s": spread(steps["close"]),
            }
            print(kind, json.dumps(found[kind]), flush=True)
    return found


def bench_evaluate_10k(runs: int) -> dict[str, Any]:
    """What is left of ``evaluate``'s own cost on bench_evaluator's 10,000 VADER examples
    (local sandbox, no energy), each step timed on its own in this process, beside the
    model's raw inference over the same batches: the bundle read (``load_bundle``: its
    manifest parsed and validated, its files hashed), the dataset file read (parsed,
    addressed by its canonical sha256), the sandbox's start until the model's hello, the
    timed phase (requests, the model's answers, each output checked), scoring, the
    sandbox's close."""
    from benchmarks.bench_evaluator import BATCH, EXAMPLES, sentences
    from datasets_registry import parse_task_spec
    from evaluator import TestSet
    from evaluator.measurement import measure
    from evaluator.scorecard import score
    from submission_sandbox import load_bundle, open_sandbox
    from tests.helpers.sentiment_bundles import load_in_process
    from tests.helpers.tasks import SENTIMENT

    task = parse_task_spec(SENTIMENT)
    examples, source = sentences(EXAMPLES)
    inputs = [{"uid": e["uid"], "statement": e["statement"]} for e in examples]
    model = load_in_process(VADER)
    steps: dict[str, list[float]] = {
        name: [] for name in ("bundle", "read", "start", "timed", "raw", "score", "close")
    }
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        dataset = Path(tmp) / "bench-10k.jsonl"
        dataset.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")

        def raw() -> None:
            for offset in range(0, len(inputs), BATCH):
                model.predict(inputs[offset : offset + BATCH])

        for run in range(runs + 1):  # the first: the page cache, numpy's first calls
            started = time.perf_counter()
            bundle = load_bundle(VADER)
            read_bundle = time.perf_counter() - started
            started = time.perf_counter()
            test_set = TestSet.from_jsonl(dataset)
            read = time.perf_counter() - started
            box = open_sandbox(bundle, kind="local", limits=task.limits)
            start = _timed(box.start)
            started = time.perf_counter()
            outputs = measure(box, test_set.examples, task, batch_size=BATCH).outputs
            timed = time.perf_counter() - started
            close = _timed(box.close)
            started = time.perf_counter()
            score(task, test_set.examples, outputs)
            scoring = time.perf_counter() - started
            if run:
                figures = (read_bundle, read, start, timed, _timed(raw), scoring, close)
                for name, value in zip(steps, figures, strict=True):
                    steps[name].append(value)
    return {
        "examples": EXAMPLES,
        "source": source,
        "model": "vader (vaderSentiment lexicon)",
        "sandbox": "local",
        "bundle_read_s": spread(steps["bundle"]),
        "dataset_read_s": spread(steps["read"]),
        "sandbox_start_s": spread(steps["start"]),
        "timed_phase_s": spread(steps["timed"]),
        "raw_inference_s": spread(steps["raw"]),
        "timed_minus_raw_s": spread(
            [t - r for t, r in zip(steps["timed"], steps["raw"], strict=True)]
        ),
        "scoring_s": spread(steps["score"]),
        "sandbox_close_s": spread(steps["close"]),
        "note": "the CLI runs scoring while the sandbox closes; the rest of its figure is "
        "Python's start, the imports (evaluate_imports) and the process's exit",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-docker", action="store_true", help="the local sandbox only")
    parser.add_argument(
        "--tree", type=Path, default=ROOT, help="the checkout to time the CLI of (default: this)"
    )
    args = parser.parse_args()
    tree = args.tree.resolve()
    load_before = load_average()
    cli = bench_cli(tree, args.runs)
    print("cli:", json.dumps(cli, indent=2), flush=True)
    imports = bench_evaluate_imports(tree, max(3, args.runs // 2))
    print("evaluate's imports:", json.dumps(imports, indent=2), flush=True)
    if tree != ROOT:
        return  # 3 and 4 time this checkout's evaluator, whatever the tree
    meter = bench_energy_meter(max(3, args.runs // 2))
    print("energy meter:", json.dumps(meter, indent=2), flush=True)
    per_dataset = bench_per_dataset(
        max(3, args.runs // 2), ["local"] if args.no_docker else ["local", "docker"]
    )
    evaluate_10k = bench_evaluate_10k(max(3, args.runs // 2))
    print("evaluate's own cost, 10k examples:", json.dumps(evaluate_10k, indent=2), flush=True)
    document = {
        "benchmark": "startup",
        "cli": cli,
        "evaluate_imports": imports,
        "energy_meter": meter,
        "per_dataset": per_dataset,
        "evaluate_10k": evaluate_10k,
        # Other work on the machine skews every figure; this says how busy it was.
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
    }
    save(RESULTS, document)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
