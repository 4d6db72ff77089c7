"""Faults of the platform's own parts are waits: a job whose Docker engine goes away waits
for it (back-off, no attempts used, no quota counted) and finishes with the same numbers;
it fails as ``platform_error`` only once the operator's budget is spent.

The engine "goes away" through a socket proxy the test stops and starts; the real engine
(shared) is never touched. Back-off settings are made small by settings injection.
"""

from __future__ import annotations

import gc
import logging
import os
import socket
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from datasets_registry.registry import list_datasets
from evalboard.core.context import Context
from evalboard.core.settings import Settings, get_settings
from evalboard.core.tables import Job, Result, Submission
from evaluator import (
    RunOptions,
    TestSet,
    WorkerPool,
    enqueue_submission,
    evaluate,
    stored_outcome,
)
from evaluator.jobs import faults, queue
from tests.conftest import make_settings
from tests.core.test_artifacts_s3 import S3Server, s3_server  # noqa: F401
from tests.evaluator.conftest import BundleFactory, add_sentiment_task, submit
from tests.evaluator.test_distributed import (  # noqa: F401
    _jobs,
    _start_worker,
    redis_url,
    stop_workers,
)
from tests.helpers.socket_proxy import SocketProxy
from tests.helpers.tasks import sentiment_spec


def _fast(tmp_path: Path, **overrides: Any) -> Settings:
    return make_settings(tmp_path).model_copy(
        update={"platform_backoff_s": 0.2, "platform_backoff_max_s": 1.0, **overrides}
    )


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return _fast(tmp_path)


# Back-off and the queue (no engine needed) -------------------------------------------------


def test_backoff_doubles_up_to_its_cap_and_jitters_down_by_at_most_half(tmp_path: Path) -> None:
    settings = _fast(tmp_path)
    top = [faults.backoff_s(settings, n, rng=lambda: 1.0) for n in range(6)]
    assert top == [0.2, 0.4, 0.8, 1.0, 1.0, 1.0]
    assert [faults.backoff_s(settings, n, rng=lambda: 0.0) for n in range(3)] == [0.1, 0.2, 0.4]
    assert faults.backoff_s(settings, 10_000) <= 1.0  # no overflow on a long outage


def test_a_deferred_job_waits_out_its_backoff_and_keeps_its_attempts(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    submission = submit(ctx, keyword_bundle())
    job_id = enqueue_submission(ctx, submission)[0]
    assert queue.claim(ctx, job_id, owner="w1")
    # Long enough that a busy machine's stall between the checks below does not end it.
    assert queue.defer(ctx, job_id, owner="w1", delay_s=1.5)
    assert not queue.claim(ctx, job_id, owner="w2")  # not before its back-off ends
    assert queue.claim_next(ctx, owner="w2") != job_id
    wait = queue.due_in(ctx, job_id)
    assert wait is not None and 0 < wait <= 1.5
    time.sleep(wait + 0.05)
    assert queue.claim(ctx, job_id, owner="w2")
    with ctx.db.session() as session:
        job = session.get(Job, job_id)
        assert job is not None
        assert (job.attempts, job.faults) == (1, 1)  # the wait used no attempt
        assert job.fault_since is not None
    assert queue.due_in(ctx, job_id) is None  # no longer waiting


def test_an_engine_watch_says_once_when_the_engine_goes_and_once_when_it_returns(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    answers = iter(["refused", "refused", None])
    probes: list[str | None] = []

    def probe() -> str | None:
        probes.append(next(answers))
        return probes[-1]

    watch = faults.EngineWatch(probe)
    assert watch.check() and probes == []  # up: no probe at all on the claiming path
    caplog.set_level(logging.WARNING, logger="evaluator.jobs.faults")
    watch.went_down("the Docker engine at unix:///x")
    watch.went_down("the Docker engine at unix:///x")  # a second job meeting it: no new line
    settings = _fast(tmp_path)
    stop = threading.Event()
    assert not watch.wait_until_up(settings, stop=stop, limit_s=0.05)  # gave up in time
    assert watch.wait_until_up(settings, stop=stop, limit_s=30)
    assert not watch.down and probes == ["refused", "refused", None]
    said = [r.getMessage() for r in caplog.records]
    assert sum("stops claiming" in line for line in said) == 1, said
    assert sum("answers again" in line for line in said) == 1, said


def test_a_waiting_job_says_what_it_waits_for_until_it_is_claimed(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    job_id = enqueue_submission(ctx, submit(ctx, keyword_bundle()))[0]
    assert queue.claim(ctx, job_id, owner="w1")
    assert queue.defer(ctx, job_id, owner="w1", delay_s=0.0, why="the Docker engine at unix:///x")
    with ctx.db.session() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.status == "queued"
        assert (
            job.message
            == "waiting for the platform: the Docker engine at unix:///x does not answer"
        )
    assert queue.claim(ctx, job_id, owner="w2")
    with ctx.db.session() as session:
        job = session.get(Job, job_id)
        assert job is not None and job.message is None


# Against the real engine, through a proxy that the test stops and starts -------------------


@pytest.fixture
def engine_proxy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SocketProxy]:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
        client.images.get(get_settings().base_image)
        client.close()
    except Exception as exc:  # any failure means: no usable engine here
        pytest.skip(f"no Docker engine with the runtime image ({exc})")
    proxy = SocketProxy(tmp_path / "engine.sock").start()
    # The worker under test reaches its engine through the proxy (as an operator points a
    # worker at a remote engine).
    monkeypatch.setenv("DOCKER_HOST", proxy.url)
    yield proxy
    proxy.stop()
    proxy.start()  # leave the process's engine watch "up" for the next test
    faults.ENGINE.check()
    proxy.stop()
    # The docker SDK leaves open the socket of each connection the outage refused
    # (docker/transport/unixconn.py makes it, then its connect fails): collected here,
    # where the outage made them, not as a ResourceWarning in whichever later test the
    # collector happens to run in (seen failing one that never touched Docker).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()


def _own_containers() -> list[str]:
    import docker

    owner = f"{socket.gethostname()}:{os.getpid()}"
    client = docker.DockerClient(base_url="unix:///var/run/docker.sock", timeout=30)
    try:
        return [
            str(c.id)
            for c in client.containers.list(all=True, filters={"label": "org.evalboard.sandbox"})
            if c.labels.get("org.evalboard.owner") == owner
        ]
    finally:
        client.close()


def _direct_perf(ctx: Context, bundle: Path, task: str) -> dict[str, float]:
    datasets = list_datasets(ctx, task)
    names = {d.id: d.name for d in datasets}
    direct = evaluate(
        bundle,
        task=sentiment_spec(),
        datasets=[
            TestSet.from_table(ctx, d, derived_from=names.get(d.derived_from_id or -1))
            for d in datasets
        ],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    out = {}
    for d in datasets:
        metrics = direct.outcome(d.name).metrics
        assert metrics is not None
        out[d.name] = metrics.perf
    return out


@pytest.mark.docker
def test_a_job_waits_for_its_engine_and_finishes_once_with_the_same_numbers(
    ctx: Context,
    sentiment_task: str,
    keyword_bundle: BundleFactory,
    engine_proxy: SocketProxy,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bundle = keyword_bundle()
    submission = submit(ctx, bundle)
    engine_proxy.stop()  # the engine goes away (restarted, upgraded)
    caplog.set_level(logging.WARNING, logger="evaluator")
    with WorkerPool(ctx, concurrency=1, poll_s=0.05, sandbox="docker") as pool:
        created = enqueue_submission(ctx, submission)
        pool.wake()
        deadline = time.monotonic() + 30
        while not faults.ENGINE.down:  # the worker met the outage and stopped claiming
            assert time.monotonic() < deadline, "the worker never met the outage"
            time.sleep(0.05)
        time.sleep(3)  # a few seconds of outage, many back-off periods long
        with ctx.db.session() as session:
            statuses = set(session.scalars(select(Job.status)))
        assert statuses == {"queued"}, statuses  # waiting, none failed
        engine_proxy.start()
        assert pool.wait_idle(timeout=180)
    expected = _direct_perf(ctx, bundle, sentiment_task)
    with ctx.db.session() as session:
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
        assert len(jobs) == len(created) == 3
        for job in jobs:
            assert job.status == "finished", (job.status, job.message)
            assert job.attempts == 1 and job.lease_owner is None and job.not_before is None
            results = list(session.scalars(select(Result).where(Result.job_id == job.id)))
            assert len(results) == 1  # exactly once
            dataset = job.dataset
            assert stored_outcome(results[0], dataset).metrics.perf == expected[dataset.name]
            assert results[0].provenance["sandbox"] == "docker"
        assert sum(job.faults for job in jobs) >= 1
        record = session.get(Submission, submission)
        assert record is not None and not record.platform_fault
    said = [r.getMessage() for r in caplog.records]
    assert _own_containers() == []
    assert sum("stops claiming" in line for line in said) == 1, said
    assert sum("answers again" in line for line in said) == 1, said


@pytest.mark.docker
def test_a_job_fails_as_platform_error_once_the_budget_is_spent(
    tmp_path: Path,
    sentiment_task: str,
    ctx: Context,
    keyword_bundle: BundleFactory,
    engine_proxy: SocketProxy,
) -> None:
    tight = Context.from_settings(ctx.settings.model_copy(update={"platform_fault_budget_s": 1.5}))
    submission = submit(tight, keyword_bundle())
    engine_proxy.stop()  # and it stays away
    with WorkerPool(tight, concurrency=1, poll_s=0.05, reap_every_s=0.2, sandbox="docker"):
        first = enqueue_submission(tight, submission)[0]
        deadline = time.monotonic() + 60
        while True:  # the reaper fails what waited out the budget
            with tight.db.session() as session:
                job = session.get(Job, first)
                assert job is not None
                if job.status == "failed":
                    break
            assert time.monotonic() < deadline, (job.status, job.message)
            time.sleep(0.1)
    with tight.db.session() as session:
        jobs = list(session.scalars(select(Job).order_by(Job.id)))
        failed, others = jobs[0], jobs[1:]
        assert failed.reason == "platform_error" and failed.faults >= 1
        assert failed.message is not None
        assert f"the Docker engine at {engine_proxy.url}" in failed.message
        assert "EVALBOARD_PLATFORM_FAULT_BUDGET_S" in failed.message
        # The worker stopped claiming: the other jobs were never tried and still wait.
        assert [(job.status, job.attempts) for job in others] == [("queued", 0)] * 2
        record = session.get(Submission, submission)
        assert record is not None and record.platform_fault  # not the researcher's quota
    tight.db.dispose()


@pytest.mark.docker
# docker-py's UnixHTTPConnection.connect does not close its socket when the connect fails
# (the engine is away); the leak is the SDK's, and it is collected with a ResourceWarning.
@pytest.mark.filterwarnings(
    "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
)
def test_an_engine_lost_mid_evaluation_is_waited_out_with_nothing_left_behind(
    ctx: Context,
    sentiment_task: str,
    keyword_bundle: BundleFactory,
    engine_proxy: SocketProxy,
) -> None:
    bundle = keyword_bundle(delay_s=0.5)
    submission = submit(ctx, bundle)
    with WorkerPool(ctx, concurrency=1, poll_s=0.05, sandbox="docker") as pool:
        first = enqueue_submission(ctx, submission)[0]
        deadline = time.monotonic() + 60
        while True:  # the model answers: the evaluation is under way
            with ctx.db.session() as session:
                job = session.get(Job, first)
                assert job is not None
                if job.status == "running":
                    break
            assert time.monotonic() < deadline, job.status
            time.sleep(0.02)
        engine_proxy.stop()
        time.sleep(3)
        engine_proxy.start()
        assert pool.wait_idle(timeout=180)
    expected = _direct_perf(ctx, bundle, sentiment_task)
    with ctx.db.session() as session:
        for job in session.scalars(select(Job).order_by(Job.id)):
            assert job.status == "finished", (job.status, job.message)
            assert job.lease_owner is None
            results = list(session.scalars(select(Result).where(Result.job_id == job.id)))
            assert len(results) == 1
            assert (
                stored_outcome(results[0], job.dataset).metrics.perf == expected[job.dataset.name]
            )
    assert _own_containers() == []  # the one the outage kept from removal is gone too


@pytest.mark.docker
@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.slow
def test_a_celery_worker_waits_for_its_engine_and_every_job_finishes_once(
    tmp_path: Path,
    postgres_url: str,
    redis_url: str,  # noqa: F811 (the fixture of test_distributed)
    keyword_bundle: BundleFactory,
    engine_proxy: SocketProxy,
) -> None:
    settings = Settings(data_dir=tmp_path / "data", database_url=postgres_url, broker_url=redis_url)
    ctx = Context.from_settings(settings)
    add_sentiment_task(ctx, tmp_path)
    bundle = keyword_bundle()
    submission = submit(ctx, bundle)
    env = {
        **os.environ,  # DOCKER_HOST: the proxy
        "EVALBOARD_DATA_DIR": str(settings.data_dir),
        "EVALBOARD_DATABASE_URL": postgres_url,
        "EVALBOARD_BROKER_URL": redis_url,
        "EVALBOARD_ARTIFACTS": settings.artifacts,
        "EVALBOARD_SANDBOX": "docker",
        "EVALBOARD_PLATFORM_BACKOFF_S": "0.2",
        "EVALBOARD_PLATFORM_BACKOFF_MAX_S": "1",
    }
    log = tmp_path / "worker.log"
    engine_proxy.stop()
    worker = _start_worker(env, log)
    try:
        enqueue_submission(ctx, submission)
        deadline = time.monotonic() + 60
        # The worker meets the outage either through a job (deferred) or through its
        # heartbeat's probe first (it then stops claiming and hands messages back).
        while not (any(job.faults for job in _jobs(ctx)) or "stops claiming" in log.read_text()):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.1)
        time.sleep(3)
        assert all(job.status == "queued" for job in _jobs(ctx))  # waiting, none failed
        engine_proxy.start()
        deadline = time.monotonic() + 180
        while any(job.status not in ("finished", "failed") for job in _jobs(ctx)):
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.25)
        expected = _direct_perf(ctx, bundle, "sentiment")
        with ctx.db.session() as session:
            for job in session.scalars(select(Job).order_by(Job.id)):
                assert job.status == "finished", (job.status, job.message)
                results = list(session.scalars(select(Result).where(Result.job_id == job.id)))
                assert len(results) == 1  # exactly once
                outcome = stored_outcome(results[0], job.dataset)
                assert outcome.metrics is not None
                assert outcome.metrics.perf == expected[job.dataset.name]
        said = log.read_text()
        assert said.count("stops claiming") == 1, said[-3000:]
        assert said.count("answers again") == 1, said[-3000:]
    finally:
        stop_workers(ctx, worker)


@pytest.mark.slow  # s3fs retries each call a few times before it gives up
def test_a_job_whose_artifact_store_is_gone_waits_then_fails_naming_it(
    tmp_path: Path,
    s3_server: S3Server,  # noqa: F811 (the fixture of test_artifacts_s3)
    keyword_bundle: BundleFactory,
) -> None:
    settings = _fast(tmp_path, artifacts=s3_server.url, platform_fault_budget_s=2.0)
    ctx = Context.from_settings(settings)
    add_sentiment_task(ctx, tmp_path, perturb=False)
    submission = submit(ctx, keyword_bundle())
    s3_server.process.terminate()  # the store goes away for good
    s3_server.process.wait(10)
    try:
        with WorkerPool(ctx, concurrency=1, poll_s=0.05, reap_every_s=0.2, sandbox="local") as pool:
            enqueue_submission(ctx, submission)
            pool.wake()
            assert pool.wait_idle(timeout=120)
        with ctx.db.session() as session:
            (job,) = session.scalars(select(Job))
            assert job.status == "failed" and job.reason == "platform_error"
            assert job.faults >= 1 and job.attempts <= 1  # waits, not attempts
            assert job.message is not None
            assert f"the artifact store {s3_server.url}" in job.message, job.message
            assert "EVALBOARD_PLATFORM_FAULT_BUDGET_S" in job.message
            record = session.get(Submission, submission)
            assert record is not None and record.platform_fault
    finally:
        ctx.db.dispose()
