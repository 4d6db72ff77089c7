"""Benchmark what a job's live progress costs its evaluation (issue 19).

Run: ``.venv/bin/python benchmarks/bench_progress.py [--runs 5] [--examples 2000]``.
Writes medians to ``benchmarks/results/progress.json``.

One job of the keyword model (local sandbox, batch size 2, so a progress report every
batch) over a dataset of ``--examples`` rows, run through the worker's own path
(``claim`` + ``execute_claimed``) on SQLite, alternately:

* ``live``: as shipped, the heartbeat writes examples done at most once per
  ``PROGRESS_EVERY_S`` (1 s) while they move;
* ``quiet``: progress written only with the lease's renewals (every 20 s, so never during
  these jobs), as before issue 19.

Reported per variant: the evaluation's throughput (examples per second over the timed
prediction phase, as the board shows it), the job's wall time and the number of UPDATEs
of the jobs table; and the ratio of the medians. Runs alternate in ABBA order (quiet,
live, live, quiet, ...) so that a busy neighbour weighs on both alike.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._report import machine, save  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "progress.json"
BUNDLE = ROOT / "tests" / "evaluator" / "fixtures" / "keyword_bundle"


def _platform(tmp: Path, examples: int) -> Any:
    from datasets_registry import add_dataset, create_task
    from evalboard.core.context import Context
    from evalboard.core.settings import Settings
    from tests.helpers.tasks import sentiment_rows, sentiment_spec, write_jsonl

    settings = Settings(data_dir=tmp / "data", sandbox="local")
    ctx = Context.from_settings(settings)
    create_task(ctx, sentiment_spec())
    base = sentiment_rows()
    rows = [{**base[i % len(base)], "uid": f"r{i}"} for i in range(examples)]
    add_dataset(
        ctx,
        task_id="sentiment",
        name="bench",
        round=1,
        perturb=False,
        path=write_jsonl(tmp / "bench.jsonl", rows),
    )
    return ctx


def _one_job(ctx: Any, tmp: Path, run: int) -> dict[str, float]:
    from sqlalchemy import event

    from evaluator.jobs import queue
    from evaluator.jobs.job import execute_claimed
    from tests.evaluator.conftest import submit

    bundle = tmp / f"bundle-{run}"
    shutil.copytree(BUNDLE, bundle)
    (job_id,) = queue.enqueue_submission(ctx, submit(ctx, bundle), dispatcher=None)
    assert queue.claim(ctx, job_id, owner="bench")
    updates = [0]

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE JOBS"):
            updates[0] += 1

    event.listen(ctx.db.engine, "before_cursor_execute", count)
    started = time.perf_counter()
    try:
        status = execute_claimed(ctx, job_id, owner="bench", sandbox="local")
    finally:
        event.remove(ctx.db.engine, "before_cursor_execute", count)
    wall = time.perf_counter() - started
    assert status == "finished", status
    from sqlalchemy import select

    from evalboard.core.tables import Result

    with ctx.db.session() as session:
        metrics = session.scalar(select(Result.metrics).where(Result.job_id == job_id))
    assert metrics is not None
    return {"throughput": float(metrics["throughput"]), "wall_s": wall, "updates": updates[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--examples", type=int, default=2000)
    args = parser.parse_args()

    from evaluator.jobs import lease

    shipped = lease.PROGRESS_EVERY_S
    samples: dict[str, list[dict[str, float]]] = {"quiet": [], "live": []}
    with tempfile.TemporaryDirectory(prefix="evalboard-bench-progress-") as folder:
        tmp = Path(folder)
        ctx = _platform(tmp, args.examples)
        _one_job(ctx, tmp, -1)  # warm-up: imports, the first sandbox
        for run in range(args.runs):
            # ABBA: a load that rises or falls during the runs weighs on both alike.
            for variant in ("quiet", "live") if run % 2 == 0 else ("live", "quiet"):
                lease.PROGRESS_EVERY_S = shipped if variant == "live" else 1e9
                samples[variant].append(_one_job(ctx, tmp, 2 * run + (variant == "live")))
        lease.PROGRESS_EVERY_S = shipped
        ctx.db.dispose()

    def median(variant: str, key: str) -> float:
        return statistics.median(s[key] for s in samples[variant])

    report = {
        "what": "one job's evaluation with live progress (1 s) vs progress only at renewals",
        "examples": args.examples,
        "batch_size": 2,
        "runs": args.runs,
        "progress_every_s": shipped,
        **{
            variant: {
                "throughput_median": median(variant, "throughput"),
                "throughput_runs": [s["throughput"] for s in samples[variant]],
                "wall_s_median": median(variant, "wall_s"),
                "updates_median": median(variant, "updates"),
            }
            for variant in samples
        },
        "throughput_ratio_live_to_quiet": median("live", "throughput")
        / median("quiet", "throughput"),
        "wall_ratio_live_to_quiet": median("live", "wall_s") / median("quiet", "wall_s"),
        "machine": machine(),
    }
    save(RESULTS, report)
    for variant in samples:
        print(
            f"{variant:>5}: {median(variant, 'throughput'):8.0f} ex/s, "
            f"{median(variant, 'wall_s'):6.2f} s, {median(variant, 'updates'):.0f} UPDATEs"
        )
    print(f"throughput live/quiet {report['throughput_ratio_live_to_quiet']:.3f}")


if __name__ == "__main__":
    main()
