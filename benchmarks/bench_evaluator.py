"""Benchmark the evaluator: its overhead over raw inference, and jobs per minute.

Run: ``.venv/bin/python benchmarks/bench_evaluator.py [--repeats 5] [--jobs 20]``.
Writes medians to ``benchmarks/results/evaluator.json``.

1. End to end on 10,000 examples (real DynaSent/SST sentences from ../shared/datasets,
   cycled to 10,000; synthetic sentences where that is absent) with the real VADER
   lexicon model: ``evaluate_dataset`` in the ``local`` sandbox (start-up, the timed
   phase, output checks, scoring, energy) against the same model's ``predict`` in this
   process over the same batches. Goal: end to end, start-up excluded, within 1.1x the raw
   time; the start-up is reported beside it (``startup_s``: ``Sandbox.start`` until the
   model's hello; the evaluator starts its energy meter on a thread meanwhile, so a
   slower meter start would show there, and in ``evaluator_total_s``, which includes
   everything). The same for a model doing 1 ms of CPU work
   per example, to show how the fixed per-example cost weighs against model cost.
   Beside it, in the same run, the timed phase alone (``measure``, output checks
   included) in one local sandbox with one request in flight (the evaluator before
   pipelining) and with two (what it runs now), alternating, medians.
2. Jobs per minute through the queue with one and with two workers: the embedded pool
   (threads, SQLite) and, where PostgreSQL and Redis run locally, `evalboard worker`
   processes under Celery. Each job is a 200-example dataset for the same model, so the
   figure is dominated by per-job cost (claim, bundle fetch and unpack, sandbox start,
   result write), which is what a busy queue pays. Local sandbox in both.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import func, select  # noqa: E402

from benchmarks._report import machine, save  # noqa: E402
from datasets_registry.registry import add_dataset, create_task  # noqa: E402
from datasets_registry.taskspec import parse_task_spec  # noqa: E402
from evalboard.core.context import Context  # noqa: E402
from evalboard.core.settings import Settings  # noqa: E402
from evalboard.core.tables import Job  # noqa: E402
from evaluator import (  # noqa: E402
    RunOptions,
    TestSet,
    WorkerPool,
    enqueue_submission,
    evaluate_dataset,
)
from evaluator.jobs.dispatch import make_celery  # noqa: E402
from evaluator.measurement import measure  # noqa: E402
from evaluator.provenance import cpu_count, cpu_model  # noqa: E402
from submission_sandbox import open_sandbox  # noqa: E402
from tests.evaluator.conftest import submit  # noqa: E402
from tests.helpers.tasks import SENTIMENT  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "evaluator.json"
BUNDLE = ROOT / "tests" / "evaluator" / "fixtures" / "vader_bundle"
KEYWORD_BUNDLE = ROOT / "tests" / "evaluator" / "fixtures" / "keyword_bundle"
DYNASENT = ROOT.parent / "shared" / "datasets" / "dynasent"
LABELS = {"positive", "negative", "neutral"}


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
        words = [
            "good",
            "bad",
            "food",
            "service",
            "slow",
            "great",
            "the",
            "was",
            "not",
            "awful",
            "staff",
            "lovely",
            "price",
            "ok",
            "room",
            "never",
            "again",
        ]
        rows = [(" ".join(rng.choices(words, k=12)), rng.choice(sorted(LABELS))) for _ in range(n)]
        source = "synthetic"
    examples = [
        {"uid": f"e{i}", "statement": rows[i % len(rows)][0], "label": rows[i % len(rows)][1]}
        for i in range(n)
    ]
    return examples, source


def _handler(bundle: Path) -> Any:
    spec = importlib.util.spec_from_file_location(f"handler_{bundle.name}", bundle / "handler.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def raw_model(bundle: Path) -> Any:
    """The bundle's model loaded in this process, as its author would call it."""
    return _handler(bundle).Model(str(bundle))


def bench_end_to_end(bundle: Path, repeats: int) -> dict[str, Any]:
    task = parse_task_spec(SENTIMENT)
    examples, source = sentences(10_000)
    test_set = TestSet(name="bench-10k", examples=examples, sha256="0" * 64)
    batch = 64
    model = raw_model(bundle)
    inputs = [{"uid": e["uid"], "statement": e["statement"]} for e in examples]

    def raw() -> float:
        started = time.perf_counter()
        for offset in range(0, len(inputs), batch):
            model.predict(inputs[offset : offset + batch])
        return time.perf_counter() - started

    def evaluator() -> tuple[float, float, float]:
        started = time.perf_counter()
        run = evaluate_dataset(
            bundle, test_set, task, options=RunOptions(sandbox="local", batch_size=batch)
        )
        total = time.perf_counter() - started
        assert run.outcome.metrics is not None, run.outcome.failure
        startup = run.outcome.metrics.startup_s or 0.0
        return total, startup, run.outcome.metrics.predict_s

    raw()
    evaluator()  # warm-up: imports, codecarbon's one-off hardware probe, page cache
    raw_s, total_s, startup_s, predict_s = [], [], [], []
    for _ in range(repeats):
        raw_s.append(raw())
        total, startup, predict = evaluator()
        total_s.append(total)
        startup_s.append(startup)
        predict_s.append(predict)
    raw_median = statistics.median(raw_s)
    e2e = statistics.median(t - s for t, s in zip(total_s, startup_s, strict=True))
    return {
        "examples": len(examples),
        "source": source,
        "batch_size": batch,
        "raw_inference_s": round(raw_median, 4),
        "evaluator_end_to_end_excluding_startup_s": round(e2e, 4),
        "evaluator_timed_phase_s": round(statistics.median(predict_s), 4),
        "startup_s": round(statistics.median(startup_s), 4),
        "evaluator_total_s": round(statistics.median(total_s), 4),
        "ratio_end_to_end_to_raw": round(e2e / raw_median, 3),
        "goal_ratio": 1.1,
    }


def bench_in_flight(bundle: Path, repeats: int) -> dict[str, Any]:
    """The timed phase with one request in flight and with two, alternating in one sandbox."""
    task = parse_task_spec(SENTIMENT)
    examples, _ = sentences(10_000)
    inputs = [{"uid": e["uid"], "statement": e["statement"]} for e in examples]
    seconds: dict[int, list[float]] = {1: [], 2: []}
    with open_sandbox(bundle, kind="local", limits=task.limits) as box:
        measure(box, inputs[:640], task, batch_size=64)  # warm-up
        for _ in range(repeats):
            for in_flight, times in seconds.items():
                run = measure(box, inputs, task, batch_size=64, in_flight=in_flight)
                times.append(run.predict_s)
    one, two = (statistics.median(seconds[n]) for n in (1, 2))
    return {
        "examples": len(inputs),
        "batch_size": 64,
        "timed_phase_one_in_flight_s": round(one, 4),
        "timed_phase_two_in_flight_s": round(two, 4),
        "speedup": round(one / two, 3),
    }


def iterations_per_ms() -> int:
    """Loop iterations of the keyword model's ``busy`` that take about 1 ms here (best of 5)."""
    busy = _handler(KEYWORD_BUNDLE).busy
    n = 200_000
    best = min(_timed(busy, n) for _ in range(5))
    return max(1, round(n / (best * 1000)))


def _timed(fn: Any, n: int) -> float:
    started = time.perf_counter()
    fn(n)
    return time.perf_counter() - started


def _prepare(ctx: Context, root: Path, jobs: int) -> int:
    """A task with ``jobs`` datasets of 200 examples, and the VADER model submitted."""
    create_task(ctx, parse_task_spec(SENTIMENT))
    examples, _ = sentences(200 * jobs)
    for n in range(jobs):
        path = root / f"d{n}.jsonl"
        path.write_text("".join(json.dumps(e) + "\n" for e in examples[n * 200 : (n + 1) * 200]))
        add_dataset(ctx, task_id="sentiment", name=f"d{n}", path=path, perturb=False)
    return submit(ctx, _bundle_copy(root))


def bench_jobs_per_minute(workers: int, jobs: int) -> float:
    """The embedded pool: ``workers`` threads over SQLite."""
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        root = Path(tmp)
        ctx = Context.from_settings(Settings(data_dir=root / "data", sandbox="local"))
        submission = _prepare(ctx, root, jobs)
        with WorkerPool(ctx, concurrency=workers, poll_s=0.02) as pool:
            started = time.perf_counter()
            enqueue_submission(ctx, submission)
            pool.wake()
            assert pool.wait_idle(timeout=600)
            elapsed = time.perf_counter() - started
        ctx.db.dispose()
        return jobs / elapsed * 60


def bench_jobs_per_minute_celery(workers: int, jobs: int) -> float | None:
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
                sandbox="local",
            )
            ctx = Context.from_settings(settings)
            submission = _prepare(ctx, root, jobs)
            env = {
                **os.environ,
                "EVALBOARD_DATA_DIR": str(settings.data_dir),
                "EVALBOARD_DATABASE_URL": url,
                "EVALBOARD_BROKER_URL": settings.broker_url,
                "EVALBOARD_ARTIFACTS": settings.artifacts,
                "EVALBOARD_SANDBOX": "local",
            }
            logs = [root / f"worker-{n}.log" for n in range(workers)]
            for log in logs:
                with log.open("wb") as output:
                    processes.append(
                        subprocess.Popen(
                            [
                                str(Path(sys.executable).parent / "evalboard"),
                                "worker",
                                "--concurrency",
                                "1",
                            ],
                            env=env,
                            stdout=output,
                            stderr=subprocess.STDOUT,
                        )
                    )
            deadline = time.monotonic() + 60
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


def _bundle_copy(root: Path) -> Path:
    target = root / "vader_bundle"
    shutil.copytree(BUNDLE, target)
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=20)
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    end_to_end = bench_end_to_end(BUNDLE, args.repeats)
    print("vader:", json.dumps(end_to_end, indent=2))
    in_flight = bench_in_flight(BUNDLE, args.repeats)
    print("vader, timed phase by requests in flight:", json.dumps(in_flight, indent=2))
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-") as tmp:
        # The same pipeline for a model with 1 ms of CPU work per example (a small neural
        # model on CPU costs more): the evaluator's per-example cost, fixed, matters less.
        heavier = Path(tmp) / "keyword_bundle"
        shutil.copytree(KEYWORD_BUNDLE, heavier)
        (heavier / "config.json").write_text(json.dumps({"work": iterations_per_ms()}))
        one_ms = bench_end_to_end(heavier, max(1, args.repeats // 2))
    print("1 ms/example:", json.dumps(one_ms, indent=2))
    per_minute: dict[str, float] = {}
    celery: dict[str, float] = {}
    for workers in (1, 2):
        label = f"{workers}_worker{'s' if workers > 1 else ''}"
        runs = [bench_jobs_per_minute(workers, args.jobs) for _ in range(3)]
        per_minute[label] = round(statistics.median(runs), 1)
        print(f"pool, {label}: {per_minute[label]} jobs/min (runs: {runs})")
        distributed = [bench_jobs_per_minute_celery(workers, args.jobs) for _ in range(3)]
        if all(value is not None for value in distributed):
            celery[label] = round(statistics.median(v for v in distributed if v), 1)
            print(f"celery, {label}: {celery[label]} jobs/min (runs: {distributed})")
    document = {
        "benchmark": "evaluator",
        "end_to_end_10k": end_to_end,
        "end_to_end_10k_model_1ms_per_example": one_ms,
        "timed_phase_10k_by_in_flight": in_flight,
        "jobs_per_minute": {
            **per_minute,
            "jobs": args.jobs,
            "examples_per_job": 200,
            "path": "embedded pool (threads), SQLite, local sandbox",
        },
        "jobs_per_minute_celery": {
            **celery,
            "jobs": args.jobs,
            "examples_per_job": 200,
            "path": "`evalboard worker` processes (concurrency 1), "
            "Celery over Redis, PostgreSQL, local sandbox",
        },
        "repeats": args.repeats,
        # Other work on the machine skews every figure; this says how busy it was.
        "load_average_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
        **machine(),
        "cpu": cpu_model(),
        "cpus": cpu_count(),
    }
    save(RESULTS, document)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()
