"""The distributed path, for real: PostgreSQL, Redis, Celery and two `evalboard worker`
processes, one of them SIGKILLed in the middle of a job."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from datasets_registry.registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.settings import Settings
from evalboard.core.tables import Job, Result
from evaluator import enqueue_submission
from tests.evaluator.conftest import BundleFactory, submit
from tests.helpers.tasks import sentiment_spec, write_jsonl

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.slow]

EVALBOARD = Path(sys.executable).parent / "evalboard"
JOBS = 10
LEASE_S = 3.0


@pytest.fixture
def redis_url() -> Iterator[str]:
    """An empty Redis database (of the 16) on 127.0.0.1:6379, flushed afterwards."""
    redis = pytest.importorskip("redis")
    for index in random.sample(range(1, 16), 15):
        client = redis.Redis(host="127.0.0.1", port=6379, db=index, socket_timeout=3)
        try:
            if client.dbsize() == 0:
                break
        except redis.exceptions.ConnectionError as exc:
            pytest.skip(f"Redis is not running on 127.0.0.1:6379 ({exc})")
        client.close()
    else:
        pytest.skip("no empty Redis database to use")
    try:
        yield f"redis://127.0.0.1:6379/{index}"
    finally:
        client.flushdb()
        client.close()


def stop_workers(ctx: Context, *workers: subprocess.Popen[bytes]) -> None:
    """SIGTERM each worker still running (SIGKILL after 20 s), then let go of the broker
    connection and the database this test process holds."""
    for process in workers:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    from evaluator.jobs.dispatch import make_celery

    make_celery(ctx.settings).close()
    ctx.db.dispose()


def _start_worker(env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as output:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            [
                str(EVALBOARD),
                "worker",
                "--queues",
                "cpu",
                "--concurrency",
                "1",
                "--lease-s",
                str(LEASE_S),
                "--loglevel",
                "INFO",
            ],
            env=env,
            stdout=output,
            stderr=subprocess.STDOUT,
        )


def _jobs(ctx: Context) -> list[Job]:
    with ctx.db.session() as session:
        return list(session.scalars(select(Job).order_by(Job.id)))


def _held_by(ctx: Context, worker: subprocess.Popen[bytes], *statuses: str) -> list[int]:
    """The jobs in ``statuses`` under the worker process's lease."""
    owner = f":{worker.pid}:"
    return [
        job.id for job in _jobs(ctx) if job.status in statuses and owner in (job.lease_owner or "")
    ]


def test_ten_jobs_each_finish_once_when_a_worker_is_killed_mid_job(
    tmp_path: Path, postgres_url: str, redis_url: str, keyword_bundle: BundleFactory
) -> None:
    settings = Settings(
        data_dir=tmp_path / "data", database_url=postgres_url, broker_url=redis_url, sandbox="local"
    )
    ctx = Context.from_settings(settings)
    create_task(ctx, sentiment_spec())
    for n in range(JOBS):
        rows = [
            {"uid": f"{n}-{i}", "statement": f"great thing number {i}", "label": "positive"}
            for i in range(6)
        ]
        add_dataset(
            ctx,
            task_id="sentiment",
            name=f"set{n}",
            perturb=False,
            path=write_jsonl(tmp_path / f"set{n}.jsonl", rows),
        )
    # Three batches of two, 0.25 s each: every job runs long enough to be killed inside.
    submission = submit(ctx, keyword_bundle(delay_s=0.25))
    env = {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(settings.data_dir),
        "EVALBOARD_DATABASE_URL": postgres_url,
        "EVALBOARD_BROKER_URL": redis_url,
        "EVALBOARD_ARTIFACTS": settings.artifacts,
        "EVALBOARD_SANDBOX": "local",
    }
    logs = [tmp_path / "worker-a.log", tmp_path / "worker-b.log"]
    victim, survivor = (_start_worker(env, log) for log in logs)
    try:
        enqueue_submission(ctx, submission)
        deadline = time.monotonic() + 60
        while not _held_by(ctx, victim, "running") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _held_by(ctx, victim, "running"), logs[0].read_text()[-3000:]
        victim.send_signal(signal.SIGKILL)
        victim.wait(10)
        # What it held when it died, read after: the job seen running may have finished in
        # between and the next been claimed (its lease, LEASE_S, outlives this read).
        held = _held_by(ctx, victim, "building", "running")
        assert len(held) == 1, held
        (killed_job,) = held

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            jobs = _jobs(ctx)
            if all(job.status in ("finished", "failed", "cancelled") for job in jobs):
                break
            time.sleep(0.25)
        jobs = _jobs(ctx)
        report = "\n".join(f"{j.id} {j.status} {j.reason} {j.message}" for j in jobs)
        assert [j.status for j in jobs] == ["finished"] * JOBS, report + logs[1].read_text()[-3000:]
        with ctx.db.session() as session:
            per_job = dict(
                session.execute(
                    select(Result.job_id, func.count(Result.id)).group_by(Result.job_id)
                ).all()
            )
        assert per_job == {job.id: 1 for job in jobs}  # every job finished exactly once
        rerun = next(job for job in jobs if job.id == killed_job)
        assert rerun.attempts == 2  # the killed run, then the re-run elsewhere
        assert all(job.attempts == 1 for job in jobs if job.id != killed_job)
    finally:
        stop_workers(ctx, victim, survivor)
