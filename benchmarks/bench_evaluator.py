"""Benchmark ``evalboard evaluate`` end to end against raw inference, and jobs per minute.

Run: ``.venv/bin/python benchmarks/bench_evaluator.py [--repeats 5] [--jobs 20]``.
Writes ``benchmarks/results/evaluator.json``: every figure a median with its range.

1. ``evalboard evaluate`` as a user runs it: the console script in a fresh process, so
   everything is in the figure (Python's start, the imports, the bundle read and hashed,
   the dataset file read, the sandbox's start, the timed phase, output checks, scoring,
   the sandbox's close, the JSON written and the tables printed), on 10,000 examples
   (real DynaSent/SST sentences from ../shared/datasets, cycled; synthetic sentences
   where that is absent), against the same model's ``predict`` over the same batches of
   64 in a fresh process of its own, one pass timed as the sandbox makes one ("raw
   inference", ``_raw_inference.py``: a Python loop's speed differs by up to 15% from one
   process to the next, so each side is a fresh process). Each repetition times both, one after the
   other, and gives one ratio. Models, named by what they are:

   - ``vader``: VADER (vaderSentiment's rule-based lexicon model,
     tests/evaluator/fixtures/vader_bundle), tens of microseconds per example; in the
     local sandbox with ``--no-energy`` and with ``--energy`` (the default), and in the
     docker sandbox (the bundle's requirements.txt names vaderSentiment, resolved once
     on the host like any bundle's). Goal: at most 2x raw inference.
   - ``keyword_1ms``: the keyword model of tests/evaluator/fixtures/keyword_bundle doing
     about 1 ms of CPU work per example (calibrated on this machine), local sandbox, no
     energy. Goal: at most 1.05x.
2. Jobs per minute through the queue with one and with two workers, each job a
   200-example dataset of VADER, so the figure is dominated by per-job cost (claim,
   bundle fetch and unpack, sandbox start, result write): the embedded pool (threads,
   SQLite) and, where PostgreSQL and Redis run locally, ``evalboard worker`` processes
   under Celery; each with the local sandbox and with the docker sandbox.

What each fixed cost of one dataset is (imports, energy meter, sandbox start, scoring,
close) is measured by ``bench_startup.py``.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from benchmarks._report import load_average, machine, save, spread, user_env  # noqa: E402
from datasets_registry import add_dataset, create_task, parse_task_spec  # noqa: E402
from evalboard.core.context import Context  # noqa: E402
from evalboard.core.settings import Settings  # noqa: E402
from evalboard.core.tables import Job  # noqa: E402
from evaluator import WorkerPool, enqueue_submission  # noqa: E402
from evaluator.jobs.dispatch import make_celery  # noqa: E402
from evaluator.provenance import cpu_count, cpu_model  # noqa: E402
from tests.evaluator.conftest import submit  # noqa: E402
from tests.helpers.sentiment_bundles import load_handler  # noqa: E402
from tests.helpers.tasks import SENTIMENT  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "evaluator.json"
VADER = ROOT / "tests" / "evaluator" / "fixtures" / "vader_bundle"
KEYWORD = ROOT / "tests" / "evaluator" / "fixtures" / "keyword_bundle"
RAW_INFERENCE = ROOT / "benchmarks" / "_raw_inference.py"
DYNASENT = ROOT.parent / "shared" / "datasets" / "dynasent"
EVALBOARD = Path(sys.executable).parent / "evalboard"
LABELS = {"positive", "negative", "neutral"}
BATCH = 64
EXAMPLES = 10_000


def sentences(n: int) -> tuple[list[dict[str, Any]], str]:
    """n examples: real sentences when ../shared is there, else seeded synthetic ones."""
    rows: list[tuple[str, str]] = []
    if DYNASENT.is_dir():
        for path in sorted(DYNASENT.glob("*.jsonl")):
            for line in path.read_text(encoding="utf-8").splitlines():
                record = json.loads(line)
                if record.get("gold_label") in LABELS:
                    rows.append((record["sentence"], record["gold_label"]))
        source = "dynasent+sst (cycled)"
    else:
        rng = random.Random(0)
        words = "good bad food service slow great the was not awful staff lovely".split()
        rows = [(" ".join(rng.choices(words, k=12)), rng.choice(sorted(LABELS))) for _ in range(n)]
        source = "synthetic"
    examples = [
        {"uid": f"e{i}", "statement": rows[i % len(rows)][0], "label": rows[i % len(rows)][1]}
        for i in range(n)
    ]
    return examples, source


def _timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def bench_end_to_end(
    bundle: Path, root: Path, repeats: int, *, sandbox: str, energy: bool
) -> dict[str, Any]:
    """The CLI on 10,000 examples against raw inference, one ratio per repetition."""
    examples, source = sentences(EXAMPLES)
    dataset = root / "bench-10k.jsonl"
    if not dataset.is_file():
        dataset.write_text("".join(json.dumps(e) + "\n" for e in examples), encoding="utf-8")
    task_file = root / "task.json"  # JSON is YAML
    task_file.write_text(json.dumps(SENTIMENT), encoding="utf-8")
    inputs = root / "bench-10k-inputs.jsonl"  # what the model sees: no labels
    unlabelled = ({"uid": e["uid"], "statement": e["statement"]} for e in examples)
    inputs.write_text("".join(json.dumps(e) + "\n" for e in unlabelled), encoding="utf-8")
    raw_argv = [sys.executable, str(RAW_INFERENCE), str(bundle), str(inputs), str(BATCH)]
    argv = [str(EVALBOARD), "evaluate", str(bundle), "--task-file", str(task_file)]
    argv += ["--dataset", str(dataset), "--sandbox", sandbox, "--json", str(root / "r.json")]
    argv += ["--batch-size", str(BATCH), "--energy" if energy else "--no-energy"]
    env = user_env(EVALBOARD_DATA_DIR=str(root / "data"), COLUMNS="120")

    def raw() -> float:
        """The predict loop's seconds, in a fresh process (benchmarks/_raw_inference.py)."""
        done = subprocess.run(raw_argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"raw inference failed ({done.returncode}):\n{done.stderr[-3000:]}")
        return float(done.stdout.strip().splitlines()[-1])

    def cli() -> None:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise SystemExit(f"evaluate failed ({done.returncode}):\n{done.stderr[-3000:]}")

    raw()
    cli()  # warm-up: the page cache, an image build, codecarbon's kept hardware probe
    raw_s, cli_s = [], []
    for _ in range(repeats):
        raw_s.append(raw())
        cli_s.append(_timed(cli))
    result = json.loads((root / "r.json").read_text())["datasets"][0]["metrics"]
    return {
        "examples": len(examples),
        "source": source,
        "batch_size": BATCH,
        "sandbox": sandbox,
        "energy": energy,
        "raw_us_per_example": round(statistics.median(raw_s) / len(examples) * 1e6, 1),
        "raw_inference_s": spread(raw_s),
        "evaluate_cli_s": spread(cli_s),
        "ratio_cli_to_raw": spread([c / r for c, r in zip(cli_s, raw_s, strict=True)], 3),
        "last_run": {
            key: result.get(key)
            for key in ("throughput", "startup_s", "predict_s", "cpu_per_example_s")
        },
    }


def iterations_per_ms() -> int:
    """Loop iterations of the keyword model's ``busy`` that take about 1 ms here (best of 5)."""
    busy = load_handler(KEYWORD).busy
    n = 200_000
    best = min(_timed(lambda: busy(n)) for _ in range(5))
    return max(1, round(n / (best * 1000)))


def _docker_vader(root: Path) -> Path:
    """VADER with its lexicon package named, as a docker bundle needs it."""
    target = root / "vader_docker"
    shutil.copytree(VADER, target)
    (target / "requirements.txt").write_text(f"vaderSentiment=={version('vaderSentiment')}\n")
    return target


def _prepare(ctx: Context, root: Path, jobs: int) -> int:
    """A task with ``jobs`` datasets of 200 examples, and the VADER model submitted."""
    create_task(ctx, parse_task_spec(SENTIMENT))
    examples, _ = sentences(200 * jobs)
    for n in range(jobs):
        path = root / f"d{n}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in examples[n * 200 : (n + 1) * 200]))
        add_dataset(ctx, task_id="sentiment", name=f"d{n}", path=path, perturb=False)
    return submit(ctx, _docker_vader(root))


def bench_jobs_per_minute(workers: int, jobs: int, sandbox: str) -> float:
    """The embedded pool: ``workers`` threads over SQLite."""
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        root = Path(tmp)
        ctx = Context.from_settings(Settings(data_dir=root / "data", sandbox=sandbox))
        submission = _prepare(ctx, root, jobs)
        with WorkerPool(ctx, concurrency=workers, poll_s=0.02) as pool:
            started = time.perf_counter()
            enqueue_submission(ctx, submission)
            pool.wake()
            assert pool.wait_idle(timeout=900)
            elapsed = time.perf_counter() - started
        ctx.db.dispose()
        return jobs / elapsed * 60


def bench_jobs_per_minute_celery(workers: int, jobs: int, sandbox: str) -> float | None:
    """``workers`` `evalboard worker` processes over PostgreSQL and Redis (None: absent)."""
    import uuid

    try:
        import psycopg
        import redis

        admin = psycopg.connect(
            "postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True, connect_timeout=3
        )
        broker = next(
            client
            for index in range(15, 0, -1)
            if (
                client := redis.Redis(host="127.0.0.1", port=6379, db=index, socket_timeout=3)
            ).dbsize()
            == 0
        )
    except Exception as exc:
        print(f"skipping the Celery figure: {exc}")
        return None
    name = f"evalboard_bench_{uuid.uuid4().hex[:10]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    url = f"postgresql+psycopg://postgres@127.0.0.1:5432/{name}"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
            root = Path(tmp)
            index = broker.connection_pool.connection_kwargs["db"]
            settings = Settings(
                data_dir=root / "data",
                database_url=url,
                broker_url=f"redis://127.0.0.1:6379/{index}",
                sandbox=sandbox,
            )
            ctx = Context.from_settings(settings)
            submission = _prepare(ctx, root, jobs)
            env = user_env(
                EVALBOARD_DATA_DIR=str(settings.data_dir),
                EVALBOARD_DATABASE_URL=url,
                EVALBOARD_BROKER_URL=settings.broker_url,
                EVALBOARD_ARTIFACTS=settings.artifacts,
                EVALBOARD_SANDBOX=sandbox,
            )
            logs = [root / f"worker-{n}.log" for n in range(workers)]
            for log in logs:
                with log.open("wb") as output:
                    processes.append(
                        subprocess.Popen(
                            [str(EVALBOARD), "worker", "--concurrency", "1"],
                            env=env,
                            stdout=output,
                            stderr=subprocess.STDOUT,
                        )
                    )
            deadline = time.monotonic() + 120
            while not all("ready." in log.read_text() for log in logs):
                assert time.monotonic() < deadline, "workers did not start"
                time.sleep(0.1)
            started = time.perf_counter()
            enqueue_submission(ctx, submission)
            while True:
                with ctx.db.session() as session:
                    left = session.scalar(
                        select(func.count(Job.id)).where(
                            Job.status.in_(("queued", "building", "running"))
                        )
                    )
                if not left:
                    break
                time.sleep(0.05)
            elapsed = time.perf_counter() - started
            ctx.db.dispose()
            make_celery(settings).close()
            return jobs / elapsed * 60
    finally:
        for process in processes:
            process.terminate()
            process.wait(30)
        broker.flushdb()
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def jobs_per_minute(jobs: int, repeats: int, sandboxes: list[str]) -> dict[str, Any]:
    """Jobs per minute by path, sandbox and workers; the Celery path where its servers run."""
    found: dict[str, Any] = {}
    for sandbox in sandboxes:
        count = jobs if sandbox == "local" else max(4, jobs // 2)  # a container a job
        for workers in (1, 2):
            label = f"{workers}_worker{'s' if workers > 1 else ''}"
            pool = [bench_jobs_per_minute(workers, count, sandbox) for _ in range(repeats)]
            found[f"pool_{sandbox}_{label}"] = spread(pool, 1)
            celery = [bench_jobs_per_minute_celery(workers, count, sandbox)]
            if celery[0] is not None:
                celery += [bench_jobs_per_minute_celery(workers, count, sandbox)]
                celery += [bench_jobs_per_minute_celery(workers, count, sandbox)]
                found[f"celery_{sandbox}_{label}"] = spread([v for v in celery if v], 1)
            print(sandbox, label, {k: v for k, v in found.items() if label in k}, flush=True)
    return {
        **found,
        "jobs": {"local": jobs, "docker": max(4, jobs // 2)},
        "examples_per_job": 200,
        "model": "vader (vaderSentiment lexicon)",
        "paths": {
            "pool": "embedded pool (threads), SQLite",
            "celery": "`evalboard worker` processes (concurrency 1), Celery over Redis, PostgreSQL",
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--no-docker", action="store_true", help="the local sandbox only")
    args = parser.parse_args()
    load_before = load_average()
    sandboxes = ["local"] if args.no_docker else ["local", "docker"]
    end_to_end: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        root = Path(tmp)
        cases = [
            ("vader_local_no_energy", VADER, "local", False),
            ("vader_local_energy", VADER, "local", True),
        ]
        if not args.no_docker:
            cases.append(("vader_docker_no_energy", _docker_vader(root), "docker", False))
        for name, bundle, sandbox, energy in cases:
            end_to_end[name] = {
                "model": "vader (vaderSentiment lexicon)",
                **bench_end_to_end(bundle, root, args.repeats, sandbox=sandbox, energy=energy),
                "goal_ratio": 2.0,
            }
            print(name, json.dumps(end_to_end[name], indent=1), flush=True)
        # A model with 1 ms of CPU work per example (a small neural model on CPU costs
        # more): the evaluator's fixed costs, the same, weigh far less.
        heavier = root / "keyword_bundle"
        shutil.copytree(KEYWORD, heavier)
        (heavier / "config.json").write_text(json.dumps({"work": iterations_per_ms()}))
        end_to_end["keyword_1ms_local_no_energy"] = {
            "model": "keyword model with about 1 ms of CPU work per example",
            **bench_end_to_end(
                heavier, root, max(3, args.repeats // 2), sandbox="local", energy=False
            ),
            "goal_ratio": 1.05,
        }
        print(json.dumps(end_to_end["keyword_1ms_local_no_energy"], indent=1), flush=True)
    document = {
        "benchmark": "evaluator",
        "end_to_end_10k": end_to_end,
        "jobs_per_minute": jobs_per_minute(args.jobs, 3, sandboxes),
        "repeats": args.repeats,
        # Other work on the machine skews every figure; this says how busy it was.
        "load_average_1m": {"before": load_before, "after": load_average()},
        **machine(),
        "cpu": cpu_model(),
        "cpus": cpu_count(),
    }
    save(RESULTS, document)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
