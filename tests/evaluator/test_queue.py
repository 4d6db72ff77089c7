"""The job queue in the database: jobs per dataset, claims, leases, the reaper, results once.

Run on SQLite and on the real PostgreSQL (``any_ctx``).
"""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

from sqlalchemy import func, select, update

from datasets_registry.registry import add_dataset
from evalboard.core.context import Context
from evalboard.core.states import FailureReason
from evalboard.core.tables import Dataset, Job, Result, Submission, utcnow
from evaluator.jobs import queue
from evaluator.jobs.lease import Lease
from tests.evaluator.conftest import BundleFactory, add_sentiment_task, submit
from tests.helpers.tasks import sentiment_rows, write_jsonl


class Recorder:
    def __init__(self) -> None:
        self.sent: list[tuple[int, str]] = []

    def dispatch(self, job_id: int, queue: str) -> None:
        self.sent.append((job_id, queue))


def _setup(ctx: Context, tmp_path: Path, bundle: Path) -> int:
    add_sentiment_task(ctx, tmp_path, perturb=False)
    return submit(ctx, bundle)


def _jobs(ctx: Context) -> list[Job]:
    with ctx.db.session() as session:
        return list(session.scalars(select(Job).order_by(Job.id)))


def test_one_job_per_dataset_dispatched_once_and_idempotent(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    sent = Recorder()
    created = queue.enqueue_submission(any_ctx, submission, dispatcher=sent)
    assert len(created) == 1 and sent.sent == [(created[0], "cpu")]
    assert queue.enqueue_submission(any_ctx, submission, dispatcher=sent) == []
    # A new round: the missing (submission, dataset) pair, and only it, is queued.
    add_dataset(
        any_ctx,
        task_id="sentiment",
        name="round2",
        round=2,
        perturb=False,
        path=write_jsonl(tmp_path / "r2.jsonl", sentiment_rows()[:2]),
    )
    added = queue.queue_missing_jobs(any_ctx, "sentiment", dispatcher=sent)
    assert len(added) == 1 and len(_jobs(any_ctx)) == 2
    assert queue.queue_missing_jobs(any_ctx, "sentiment", dispatcher=sent) == []


def test_gpu_bundles_go_to_the_gpu_queue(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    with any_ctx.db.session() as session:
        row = session.get(Submission, submission)
        assert row is not None
        row.manifest = {**row.manifest, "gpus": 1}
    sent = Recorder()
    queue.enqueue_submission(any_ctx, submission, dispatcher=sent)
    assert [q for _, q in sent.sent] == ["gpu"]
    assert queue.claim_next(any_ctx, owner="cpu-worker", queues=["cpu"]) is None
    assert queue.claim_next(any_ctx, owner="gpu-worker", queues=["gpu"]) is not None


def test_a_job_is_claimed_by_exactly_one_of_many_workers(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    with any_ctx.db.session() as session:  # eight datasets -> eight jobs
        for n in range(7):
            session.add(
                Dataset(
                    task_id="sentiment", name=f"d{n}", sha256="0" * 64, rows=1, artifact_key="x"
                )
            )
    queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    claimed: list[int] = []
    lock = threading.Lock()

    def work(owner: str) -> None:
        while (job_id := queue.claim_next(any_ctx, owner=owner)) is not None:
            with lock:
                claimed.append(job_id)

    threads = [threading.Thread(target=work, args=(f"w{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == [job.id for job in _jobs(any_ctx)]
    assert all(job.status == "building" and job.attempts == 1 for job in _jobs(any_ctx))


def _expire(ctx: Context, job_id: int) -> None:
    with ctx.db.session() as session:
        session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(lease_expires_at=utcnow() - timedelta(seconds=1))
        )


def test_the_reaper_requeues_expired_leases_then_gives_up(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    sent = Recorder()
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=sent)
    assert queue.claim(any_ctx, job_id, owner="alive", lease_s=60)
    assert queue.reap_expired(any_ctx, dispatcher=sent) == []  # lease still valid
    for attempt in range(1, queue.MAX_ATTEMPTS + 1):
        if attempt > 1:
            assert queue.claim(any_ctx, job_id, owner=f"dead-{attempt}")
        _expire(any_ctx, job_id)
        reaped = queue.reap_expired(any_ctx, dispatcher=sent)
        assert reaped == ([job_id] if attempt < queue.MAX_ATTEMPTS else [])
    (job,) = _jobs(any_ctx)
    assert job.status == "failed" and job.reason == "platform_error"
    assert "lost 3 times" in (job.message or "")
    with any_ctx.db.session() as session:
        row = session.get(Submission, submission)
        assert row is not None and row.platform_fault  # never counts against a quota
    assert sent.sent.count((job_id, "cpu")) == queue.MAX_ATTEMPTS  # first + two re-sends


def test_a_result_is_written_once_per_job(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    assert queue.claim(any_ctx, job_id, owner="a")
    assert queue.finish(any_ctx, job_id, metrics={"perf": 1.0}, provenance={})
    assert not queue.finish(any_ctx, job_id, metrics={"perf": 2.0}, provenance={})
    with any_ctx.db.session() as session:
        results = list(session.scalars(select(Result)))
        assert [r.metrics for r in results] == [{"perf": 1.0}]
    (job,) = _jobs(any_ctx)
    assert job.status == "finished" and job.lease_owner is None and job.progress == 1.0


def test_a_cancelled_job_loses_its_lease_and_writes_nothing(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    assert queue.claim(any_ctx, job_id, owner="a", lease_s=0.3)
    with Lease(any_ctx, job_id, "a", lease_s=0.3) as lease:
        time.sleep(0.25)
        assert not lease.lost.is_set()  # renewed past its first expiry
        assert queue.cancel_submission(any_ctx, submission) == 1
        assert lease.lost.wait(2)
    assert not queue.finish(any_ctx, job_id, metrics={}, provenance={})
    (job,) = _jobs(any_ctx)
    assert job.status == "cancelled"
    with any_ctx.db.session() as session:
        assert session.scalar(select(func.count(Result.id))) == 0


def test_a_failure_keeps_reason_message_and_log(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    assert queue.claim(any_ctx, job_id, owner="a")
    assert not queue.fail(
        any_ctx, job_id, owner="b", reason=FailureReason.OOM, message="x"
    )  # not b's lease
    assert queue.fail(
        any_ctx,
        job_id,
        owner="a",
        reason=FailureReason.OOM,
        message="killed at 4g",
        log_tail="allocating...",
    )
    (job,) = _jobs(any_ctx)
    assert (job.status, job.reason, job.message, job.log_tail) == (
        "failed",
        "oom",
        "killed at 4g",
        "allocating...",
    )


def test_renew_fails_for_a_lease_someone_else_holds(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    owner = "a"
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    assert queue.claim(any_ctx, job_id, owner=owner)
    assert queue.renew(any_ctx, job_id, owner=owner, progress=(5, 10))
    assert not queue.renew(any_ctx, job_id, owner="intruder")
    assert not queue.claim(any_ctx, job_id, owner="intruder")


def test_resend_queued_sends_old_queued_jobs_again(
    any_ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    submission = _setup(any_ctx, tmp_path, keyword_bundle())
    (job_id,) = queue.enqueue_submission(any_ctx, submission, dispatcher=Recorder())
    sent = Recorder()
    assert queue.resend_queued(any_ctx, older_than_s=3600, dispatcher=sent) == []
    assert queue.resend_queued(any_ctx, older_than_s=-1, dispatcher=sent) == [job_id]
    assert sent.sent == [(job_id, "cpu")]
