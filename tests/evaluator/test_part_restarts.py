"""Parts of the platform restarting under a running job: Redis (the broker), PostgreSQL
(refusing connections for 20 s) and the S3 store. Every job finishes, once, with the
numbers it has without the fault, and nothing is left holding a lease.

Each part is real and shared, so it is never restarted itself: the worker under test
reaches it through a TCP proxy (:class:`tests.helpers.socket_proxy.SocketProxy`) that the
test stops (nothing listens on the port, open connections are cut: what a restarting
server looks like from outside) and starts again. The test's own connections go straight
to the part, to set up and to look.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.settings import Settings
from evalboard.core.tables import Job, Result
from evaluator import WorkerPool, enqueue_submission, stored_outcome
from tests.core.test_artifacts_s3 import S3Server, s3_server  # noqa: F401
from tests.evaluator.conftest import BundleFactory, add_sentiment_task, submit
from tests.evaluator.test_distributed import (  # noqa: F401
    _jobs,
    _start_worker,
    redis_url,
    stop_workers,
)
from tests.evaluator.test_platform_faults import _direct_perf
from tests.helpers.socket_proxy import SocketProxy, TcpAddress

#: How long PostgreSQL refuses connections (the issue's figure).
DATABASE_OUTAGE_S = 20.0
#: A Redis restart, and an S3 server restart, as an operator's would take.
RESTART_S = 5.0


@pytest.fixture
def tcp_proxy() -> Iterator[Callable[[TcpAddress], SocketProxy]]:
    """Starts a proxy on a free local port in front of an address; all stopped at the end."""
    started: list[SocketProxy] = []

    def start(target: TcpAddress) -> SocketProxy:
        started.append(SocketProxy(("127.0.0.1", 0), target).start())
        return started[-1]

    yield start
    for proxy in started:
        proxy.stop()


def _wait_for(
    ctx: Context, job_id: int, statuses: set[str], timeout_s: float, log: Path | None = None
) -> Job:
    deadline = time.monotonic() + timeout_s
    while True:
        with ctx.db.session() as session:
            job = session.get(Job, job_id)
            assert job is not None
            if job.status in statuses:
                return job
        where = log.read_text()[-3000:] if log is not None else ""
        assert time.monotonic() < deadline, (job.status, job.message, where)
        time.sleep(0.05)


def _each_finished_once_with(ctx: Context, expected: dict[str, float]) -> list[Job]:
    """Every job finished, with one result holding the fault-free figures, and no lease."""
    with ctx.db.session() as session:
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
        for job in jobs:
            assert job.status == "finished", (job.status, job.message)
            assert job.lease_owner is None and job.lease_expires_at is None
            results = list(session.scalars(select(Result).where(Result.job_id == job.id)))
            assert len(results) == 1  # exactly once
            metrics = stored_outcome(results[0], job.dataset).metrics
            assert metrics is not None and metrics.perf == expected[job.dataset.name]
        session.expunge_all()
        return jobs


@pytest.mark.postgres
@pytest.mark.slow
def test_a_job_outlives_postgresql_refusing_connections_for_20_s(
    tmp_path: Path,
    postgres_url: str,
    keyword_bundle: BundleFactory,
    tcp_proxy: Callable[[TcpAddress], SocketProxy],
    caplog: pytest.LogCaptureFixture,
) -> None:
    proxy = tcp_proxy(("127.0.0.1", 5432))
    settings = Settings(
        data_dir=tmp_path / "data",
        database_url=postgres_url,
        sandbox="local",
        platform_backoff_s=0.2,
        platform_backoff_max_s=1.0,
    )
    ctx = Context.from_settings(settings)  # the test's own, straight to the server
    worker_ctx = Context.from_settings(
        settings.model_copy(
            update={"database_url": postgres_url.replace(":5432/", f":{proxy.port}/")}
        )
    )
    try:
        add_sentiment_task(ctx, tmp_path, perturb=False)
        # Long enough to be under way when the database goes, short enough to end during
        # the outage: its result must wait for the database, not be lost.
        bundle = keyword_bundle(delay_s=0.4)
        submission = submit(ctx, bundle)
        caplog.set_level(logging.WARNING, logger="evaluator")
        with WorkerPool(worker_ctx, concurrency=1, poll_s=0.05, sandbox="local"):
            (job_id,) = enqueue_submission(ctx, submission)
            _wait_for(ctx, job_id, {"running"}, timeout_s=60)
            proxy.stop()  # PostgreSQL refuses every connection
            time.sleep(DATABASE_OUTAGE_S)
            with ctx.db.session() as session:  # the evaluation ended; its result waits
                job = session.get(Job, job_id)
                assert job is not None and job.status == "running"
            proxy.start()
            _wait_for(ctx, job_id, {"finished", "failed"}, timeout_s=60)
        (job,) = _each_finished_once_with(ctx, _direct_perf(ctx, bundle, "sentiment"))
        assert job.attempts == 1  # not run again: the result of the first run was kept
        said = [r.getMessage() for r in caplog.records]
        assert sum("the database does not answer" in line for line in said) == 1, said
        assert sum("the database answers again" in line for line in said) == 1, said
    finally:
        worker_ctx.db.dispose()
        ctx.db.dispose()


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_celery_worker_rides_out_a_redis_restart_and_keeps_taking_jobs(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,  # noqa: F811 (the fixture of test_distributed)
    keyword_bundle: BundleFactory,
    tcp_proxy: Callable[[TcpAddress], SocketProxy],
) -> None:
    proxy = tcp_proxy(("127.0.0.1", 6379))
    settings = Settings(data_dir=tmp_path / "data", database_url=postgres_url, broker_url=redis_url)
    ctx = Context.from_settings(settings)
    add_sentiment_task(ctx, tmp_path, perturb=False)
    bundle = keyword_bundle(delay_s=0.5)
    env = {
        **os.environ,
        "EVALBOARD_DATA_DIR": str(settings.data_dir),
        "EVALBOARD_DATABASE_URL": postgres_url,
        "EVALBOARD_BROKER_URL": redis_url.replace(":6379/", f":{proxy.port}/"),
        "EVALBOARD_ARTIFACTS": settings.artifacts,
        "EVALBOARD_SANDBOX": "local",
    }
    log = tmp_path / "worker.log"
    worker = _start_worker(env, log)
    try:
        (first,) = enqueue_submission(ctx, submit(ctx, bundle))
        _wait_for(ctx, first, {"running"}, timeout_s=60, log=log)
        proxy.stop()  # Redis restarts: the worker's connections are cut, nothing listens
        time.sleep(RESTART_S)
        proxy.start()
        _wait_for(ctx, first, {"finished", "failed"}, timeout_s=60, log=log)
        # Nothing stuck: the worker takes the next job from the broker it reconnected to.
        (second,) = enqueue_submission(ctx, submit(ctx, keyword_bundle("second")))
        _wait_for(ctx, second, {"finished", "failed"}, timeout_s=60, log=log)
        jobs = _each_finished_once_with(ctx, _direct_perf(ctx, bundle, "sentiment"))
        assert [job.attempts for job in jobs] == [1, 1], log.read_text()[-3000:]
        assert proxy.connections > 1  # the worker did connect again after the restart
    finally:
        stop_workers(ctx, worker)


@pytest.mark.slow
def test_a_job_whose_s3_store_restarts_writes_its_predictions_once_it_is_back(
    tmp_path: Path,
    s3_server: S3Server,  # noqa: F811 (the fixture of test_artifacts_s3)
    keyword_bundle: BundleFactory,
    tcp_proxy: Callable[[TcpAddress], SocketProxy],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import s3fs

    # moto keeps its objects in memory, so the server itself cannot restart: the proxy does.
    moto_port = int(os.environ["AWS_ENDPOINT_URL"].rsplit(":", 1)[1])
    proxy = tcp_proxy(("127.0.0.1", moto_port))
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{proxy.port}")
    # One try per call: botocore's own retries (about 12 s) would outlast the restart and
    # hide what the evaluator does when a write fails.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    s3fs.S3FileSystem.clear_instance_cache()
    settings = Settings(
        data_dir=tmp_path / "data",
        artifacts=s3_server.url,
        sandbox="local",
        platform_backoff_s=0.2,
        platform_backoff_max_s=1.0,
    )
    ctx = Context.from_settings(settings)
    try:
        add_sentiment_task(ctx, tmp_path, perturb=False)
        bundle = keyword_bundle(delay_s=0.4)
        submission = submit(ctx, bundle)
        with WorkerPool(ctx, concurrency=1, poll_s=0.05, reap_every_s=0.2, sandbox="local"):
            (job_id,) = enqueue_submission(ctx, submission)
            _wait_for(ctx, job_id, {"running"}, timeout_s=60)
            proxy.stop()  # the store restarts while the model is still answering
            time.sleep(RESTART_S)
            proxy.start()
            _wait_for(ctx, job_id, {"finished", "failed"}, timeout_s=120)
        (job,) = _each_finished_once_with(ctx, _direct_perf(ctx, bundle, "sentiment"))
        # It met the store away and waited (no attempt used), rather than failing.
        assert job.faults >= 1 and job.attempts == 1
        with ctx.db.session() as session:
            (result,) = session.scalars(select(Result))
            assert result.predictions_key is not None
            assert ctx.artifacts.read_bytes(result.predictions_key)  # written, whole
    finally:
        ctx.db.dispose()
