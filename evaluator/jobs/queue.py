"""The job queue in the database: one job per (submission, dataset), leased by one worker.

The database is the source of truth on both paths. A worker *claims* a job with one
conditional UPDATE (``status = 'queued'``), which holds on SQLite and PostgreSQL alike, and
then holds a *lease* (``lease_owner``, ``lease_expires_at``) that its heartbeat renews. A
*reaper* puts jobs whose lease expired (their worker died) back in the queue, or fails
them after ``MAX_ATTEMPTS``. A result is written at most once per job: the unique
constraint on ``results.job_id`` backs a check before the insert.

Messages (Celery) only say "look at job N": a duplicate or a lost one is harmless, because
the claim decides who runs it and the reaper re-sends what it re-queues.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from evalboard.core.context import Context
from evalboard.core.states import DEFAULT_LEASE_S, FailureReason, JobStatus, SubmissionKind
from evalboard.core.tables import Dataset, Job, Result, Submission, as_utc, utcnow
from evaluator.jobs.dispatch import Dispatcher, dispatcher_for

__all__ = [
    "ACTIVE",
    "DEFAULT_LEASE_S",
    "MAX_ATTEMPTS",
    "cancel_submission",
    "claim",
    "claim_next",
    "defer",
    "due_in",
    "enqueue_submission",
    "fail",
    "finish",
    "mark_running",
    "queue_missing_jobs",
    "queue_of_job",
    "reap_expired",
    "release",
    "renew",
    "resend_queued",
]

logger = logging.getLogger(__name__)

#: A job whose worker died this many times fails (a platform fault) instead of looping.
MAX_ATTEMPTS = 3
ACTIVE = (JobStatus.BUILDING.value, JobStatus.RUNNING.value)


def _dispatch(
    ctx: Context,
    jobs: Iterable[tuple[int, str]],
    dispatcher: Dispatcher | None,
    delay_s: float = 0.0,
) -> None:
    sender = dispatcher or dispatcher_for(ctx)
    for job_id, queue in jobs:
        if delay_s > 0:
            sender.dispatch(job_id, queue, delay_s)
        else:
            sender.dispatch(job_id, queue)


def _queue_of(submission: Submission) -> str:
    # GPU bundles go to GPU workers only; everything else to CPU workers.
    return "gpu" if int(submission.manifest.get("gpus", 0) or 0) > 0 else "cpu"


def _create_missing(
    ctx: Context,
    submission_ids: Sequence[int] | None,
    task_id: str | None,
    dispatcher: Dispatcher | None,
) -> list[int]:
    created: list[tuple[int, str]] = []
    with ctx.db.session() as session:
        # A predictions-only submission has no model to run: it gets no jobs but its own.
        query = select(Submission).where(Submission.kind == SubmissionKind.BUNDLE.value)
        if submission_ids is not None:
            query = query.where(Submission.id.in_(submission_ids))
        if task_id is not None:
            query = query.where(Submission.task_id == task_id)
        for submission in session.scalars(query.order_by(Submission.id)):
            have = set(
                session.scalars(select(Job.dataset_id).where(Job.submission_id == submission.id))
            )
            datasets = session.scalars(
                select(Dataset.id).where(Dataset.task_id == submission.task_id).order_by(Dataset.id)
            )
            for dataset_id in datasets:
                if dataset_id in have:
                    continue
                job = Job(
                    submission_id=submission.id,
                    dataset_id=dataset_id,
                    status=JobStatus.QUEUED.value,
                    queue=_queue_of(submission),
                )
                session.add(job)
                session.flush()
                created.append((job.id, job.queue))
    _dispatch(ctx, created, dispatcher)
    return [job_id for job_id, _ in created]


def enqueue_submission(
    ctx: Context, submission_id: int, *, dispatcher: Dispatcher | None = None
) -> list[int]:
    """Create (and dispatch) a job for each dataset of the submission's task; returns new ids.

    Idempotent: datasets that already have a job for this submission are skipped.
    """
    try:
        return _create_missing(ctx, [submission_id], None, dispatcher)
    except IntegrityError:
        # Another process created some of the same jobs at the same moment: try once more.
        return _create_missing(ctx, [submission_id], None, dispatcher)


def queue_missing_jobs(
    ctx: Context, task_id: str, *, dispatcher: Dispatcher | None = None
) -> list[int]:
    """Re-evaluation: a job for every (submission, dataset) pair of the task that lacks one.

    Call it when a dataset (a new round) is added, so the leaderboard stays complete.
    """
    try:
        return _create_missing(ctx, None, task_id, dispatcher)
    except IntegrityError:
        return _create_missing(ctx, None, task_id, dispatcher)


def _one_row(done: Any) -> bool:
    return bool(getattr(done, "rowcount", 0) == 1)


def _due(now: Any) -> Any:
    # A job deferred after a platform fault waits out its back-off before any claim.
    return Job.not_before.is_(None) | (Job.not_before <= now)


def claim(ctx: Context, job_id: int, *, owner: str, lease_s: float = DEFAULT_LEASE_S) -> bool:
    """Take a queued job for ``owner``; False when it is not queued (someone else has it)."""
    now = utcnow()
    with ctx.db.session() as session:
        done = session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status == JobStatus.QUEUED.value, _due(now))
            .values(
                status=JobStatus.BUILDING.value,
                lease_owner=owner,
                lease_expires_at=now + timedelta(seconds=lease_s),
                attempts=Job.attempts + 1,
                started_at=now,
                finished_at=None,
                progress=0.0,
                examples_done=None,
                examples_total=None,
                reason=None,
                message=None,
                log_tail=None,
            )
        )
        return _one_row(done)


def claim_next(
    ctx: Context,
    *,
    owner: str,
    queues: Sequence[str] = ("cpu",),
    lease_s: float = DEFAULT_LEASE_S,
) -> int | None:
    """Claim the oldest queued job of the given queues; None when there is none."""
    with ctx.db.session() as session:
        candidates = list(
            session.scalars(
                select(Job.id)
                .where(Job.status == JobStatus.QUEUED.value, Job.queue.in_(queues), _due(utcnow()))
                .order_by(Job.id)
                .limit(16)
            )
        )
    for job_id in candidates:
        if claim(ctx, job_id, owner=owner, lease_s=lease_s):
            return job_id
    return None


def _owned(job_id: int, owner: str) -> Any:
    return (Job.id == job_id) & (Job.lease_owner == owner) & Job.status.in_(ACTIVE)


def renew(
    ctx: Context,
    job_id: int,
    *,
    owner: str,
    lease_s: float = DEFAULT_LEASE_S,
    progress: tuple[int, int] | None = None,
) -> bool:
    """Extend the lease, writing ``progress`` (examples done, in all) when given; False
    when the lease was lost (reaped, cancelled, or finished elsewhere)."""
    values: dict[str, Any] = {"lease_expires_at": utcnow() + timedelta(seconds=lease_s)}
    if progress is not None:
        done, total = progress
        values.update(
            examples_done=done, examples_total=total, progress=done / total if total else 0.0
        )
    with ctx.db.session() as session:
        return _one_row(session.execute(update(Job).where(_owned(job_id, owner)).values(**values)))


def mark_running(ctx: Context, job_id: int, *, owner: str) -> bool:
    """The model answered its hello: building -> running."""
    with ctx.db.session() as session:
        done = session.execute(
            update(Job).where(_owned(job_id, owner)).values(status=JobStatus.RUNNING.value)
        )
        return _one_row(done)


def finish(
    ctx: Context,
    job_id: int,
    *,
    metrics: dict[str, Any],
    provenance: dict[str, Any],
    predictions_key: str | None = None,
    log_tail: str | None = None,
) -> bool:
    """Write the job's result unless it has one, then mark the job finished.

    ``log_tail``: the model's last log lines, kept on the job for the submitter's page.

    Returns True when this call wrote the result, False when one was there already (a
    retried job whose first run got as far) or the job was cancelled meanwhile.
    """
    wrote = False
    # The examples predicted, all of them: the heartbeat may not have written the last batch.
    examples = metrics.get("examples")
    done: Any = examples if isinstance(examples, int) else Job.examples_total
    try:
        with ctx.db.session() as session:
            job = session.get(Job, job_id)
            if job is None or job.status == JobStatus.CANCELLED.value:
                return False
            exists = session.scalar(select(Result.id).where(Result.job_id == job_id))
            if exists is None:
                session.add(
                    Result(
                        job_id=job_id,
                        submission_id=job.submission_id,
                        dataset_id=job.dataset_id,
                        metrics=metrics,
                        provenance=provenance,
                        predictions_key=predictions_key,
                    )
                )
                wrote = True
    except IntegrityError:
        wrote = False  # written by another worker between our check and our insert
    with ctx.db.session() as session:
        session.execute(
            update(Job)
            .where(Job.id == job_id, Job.status != JobStatus.CANCELLED.value)
            .values(
                status=JobStatus.FINISHED.value,
                finished_at=utcnow(),
                progress=1.0,
                examples_done=done,
                examples_total=func.coalesce(Job.examples_total, done),
                lease_owner=None,
                lease_expires_at=None,
                reason=None,
                message=None,
                fault_since=None,
                not_before=None,
                log_tail=log_tail,
            )
        )
    return wrote


def _fail_where(
    ctx: Context, where: Any, job_id: int, reason: FailureReason, message: str, log_tail: str = ""
) -> bool:
    with ctx.db.session() as session:
        done = session.execute(
            update(Job)
            .where(where)
            .values(
                status=JobStatus.FAILED.value,
                reason=reason.value,
                message=message,
                log_tail=log_tail[-64_000:],
                finished_at=utcnow(),
                lease_owner=None,
                lease_expires_at=None,
            )
        )
        failed = _one_row(done)
        if failed and reason.is_platform_fault:
            # Not the researcher's fault: the submission does not count against a quota.
            submission_id = select(Job.submission_id).where(Job.id == job_id).scalar_subquery()
            session.execute(
                update(Submission).where(Submission.id == submission_id).values(platform_fault=True)
            )
        return failed


def fail(
    ctx: Context,
    job_id: int,
    *,
    owner: str | None,
    reason: FailureReason,
    message: str,
    log_tail: str = "",
) -> bool:
    """Mark a job failed with its exact reason (only while ``owner`` holds it, if given)."""
    where = _owned(job_id, owner) if owner is not None else (Job.id == job_id)
    return _fail_where(ctx, where, job_id, reason, message, log_tail)


def _give_back(
    ctx: Context,
    job_id: int,
    owner: str,
    dispatcher: Dispatcher | None,
    delay_s: float = 0.0,
    **values: Any,
) -> bool:
    # A held job back to the queue (``values``: what else changes), and its message re-sent.
    with ctx.db.session() as session:
        done = session.execute(
            update(Job)
            .where(_owned(job_id, owner))
            .values(
                status=JobStatus.QUEUED.value, lease_owner=None, lease_expires_at=None, **values
            )
        )
        given = _one_row(done)
        queue = session.scalar(select(Job.queue).where(Job.id == job_id))
    if given and queue is not None:
        _dispatch(ctx, [(job_id, queue)], dispatcher, delay_s)
    return given


def release(ctx: Context, job_id: int, *, owner: str, dispatcher: Dispatcher | None = None) -> bool:
    """Give a held job back to the queue (a platform fault worth another try)."""
    return _give_back(ctx, job_id, owner, dispatcher)


def defer(
    ctx: Context,
    job_id: int,
    *,
    owner: str,
    delay_s: float,
    why: str = "",
    dispatcher: Dispatcher | None = None,
) -> bool:
    """Give a held job back to the queue after a platform fault, claimable in ``delay_s``.

    ``why`` (what did not answer) stays in the job's message while it waits, for the
    submitter to see and for the reaper to quote if the wait outlasts the budget.

    The wait does not use up one of the job's ``MAX_ATTEMPTS`` (those count lost workers
    and errors of ours, not an engine being restarted); ``fault_since`` keeps the start of
    the run of faults, which the caller measures against the operator's budget.
    """
    now = utcnow()
    return _give_back(
        ctx,
        job_id,
        owner,
        dispatcher,
        delay_s,
        attempts=Job.attempts - 1,
        faults=Job.faults + 1,
        fault_since=func.coalesce(Job.fault_since, now),
        not_before=now + timedelta(seconds=delay_s),
        message=f"waiting for the platform: {why} does not answer" if why else None,
    )


def _fail_waited_out(ctx: Context, now: Any) -> None:
    # Queued jobs that have waited out a platform fault longer than the operator's budget
    # fail here: while the part is down no worker claims them, so no worker would.
    budget = ctx.settings.platform_fault_budget_s
    overdue = (Job.status == JobStatus.QUEUED.value) & (
        Job.fault_since < now - timedelta(seconds=budget)
    )
    with ctx.db.session() as session:
        rows = session.execute(select(Job.id, Job.message).where(overdue)).all()
    for job_id, message in rows:
        waiting = (message or "").removeprefix("waiting for the platform: ")
        _fail_where(
            ctx,
            overdue & (Job.id == job_id),
            job_id,
            FailureReason.PLATFORM_ERROR,
            f"{waiting or 'a part of the platform does not answer'}: waited more than "
            f"{budget:.0f} s (EVALBOARD_PLATFORM_FAULT_BUDGET_S); a platform fault, it "
            "does not count against the submitter's quota",
        )
        logger.warning("job %s: failed after waiting %.0f s for the platform", job_id, budget)


def due_in(ctx: Context, job_id: int) -> float | None:
    """Seconds until a queued, deferred job may be claimed; None when it is not waiting."""
    with ctx.db.session() as session:
        row = session.execute(
            select(Job.status, Job.not_before).where(Job.id == job_id)
        ).one_or_none()
    if row is None or row.status != JobStatus.QUEUED.value or row.not_before is None:
        return None
    return float(max((as_utc(row.not_before) - utcnow()).total_seconds(), 0.0))


def queue_of_job(ctx: Context, job_id: int) -> str | None:
    """The queue a job is sent to (None: no such job)."""
    with ctx.db.session() as session:
        return session.scalar(select(Job.queue).where(Job.id == job_id))


def reap_expired(
    ctx: Context, *, max_attempts: int = MAX_ATTEMPTS, dispatcher: Dispatcher | None = None
) -> list[int]:
    """Re-queue jobs whose lease expired (their worker died); returns the re-queued ids.

    A job that has already been tried ``max_attempts`` times fails as a platform fault
    instead, so that a job that kills its workers cannot loop forever.
    """
    now = utcnow()
    _fail_waited_out(ctx, now)
    expired = (Job.status.in_(ACTIVE)) & (Job.lease_expires_at < now)
    requeued: list[tuple[int, str]] = []
    with ctx.db.session() as session:
        rows = session.execute(
            select(Job.id, Job.attempts, Job.queue, Job.lease_owner).where(expired)
        ).all()
    for job_id, attempts, queue, owner in rows:
        if attempts >= max_attempts:
            _fail_where(
                ctx,
                expired & (Job.id == job_id),
                job_id,
                FailureReason.PLATFORM_ERROR,
                f"the worker running this job was lost {attempts} times (last: "
                f"{owner}); an operator should check the workers",
            )
            continue
        with ctx.db.session() as session:
            done = session.execute(
                update(Job)
                .where(expired, Job.id == job_id)
                .values(status=JobStatus.QUEUED.value, lease_owner=None, lease_expires_at=None)
            )
            if _one_row(done):
                logger.warning("job %s: lease of %s expired; re-queued", job_id, owner)
                requeued.append((job_id, queue))
    _dispatch(ctx, requeued, dispatcher)
    return [job_id for job_id, _ in requeued]


def resend_queued(
    ctx: Context, *, older_than_s: float = 600, dispatcher: Dispatcher | None = None
) -> list[int]:
    """Send again the messages of jobs queued longer than ``older_than_s`` (an operator's
    tool after a broker lost its queue; duplicates are harmless, the claim decides)."""
    cutoff = utcnow() - timedelta(seconds=older_than_s)
    with ctx.db.session() as session:
        rows = session.execute(
            select(Job.id, Job.queue).where(
                Job.status == JobStatus.QUEUED.value, Job.created_at < cutoff
            )
        ).all()
    _dispatch(ctx, [(job_id, name) for job_id, name in rows], dispatcher)
    return [job_id for job_id, _ in rows]


def cancel_submission(ctx: Context, submission_id: int, *, job_id: int | None = None) -> int:
    """Cancel the submission's unfinished jobs (only ``job_id``, when given); running ones
    stop at their next heartbeat. Returns how many were cancelled."""
    with ctx.db.session() as session:
        done = session.execute(
            update(Job)
            .where(
                Job.submission_id == submission_id,
                Job.status.in_((JobStatus.QUEUED.value, *ACTIVE)),
                Job.id == job_id if job_id is not None else Job.id.is_not(None),
            )
            .values(
                status=JobStatus.CANCELLED.value,
                lease_owner=None,
                lease_expires_at=None,
                finished_at=utcnow(),
            )
        )
        return int(getattr(done, "rowcount", 0))
