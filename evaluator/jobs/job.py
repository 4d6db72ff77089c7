"""Run one job: the same code under the in-process pool and under Celery.

A job is one (submission, dataset). Its runner claims it (or is handed a claimed one),
holds the lease with a heartbeat, fetches and unpacks the bundle, evaluates the dataset
in a fresh sandbox, and writes the result once. A model failure fails the job with its
exact reason and log tail; a fault of ours puts it back in the queue for another worker,
up to ``MAX_ATTEMPTS``, and never counts against the researcher. A part of the platform
that does not answer (the engine, the store) is waited out instead (:mod:`evaluator.jobs.faults`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import select

from datasets_registry import parse_task_spec
from evalboard.core.context import Context
from evalboard.core.errors import InvalidBundle, PlatformError
from evalboard.core.scratch import scratch_full, scratch_tree
from evalboard.core.states import FailureReason, JobStatus
from evalboard.core.tables import Dataset, Job, Result, Submission, Task, as_utc
from evaluator import provenance
from evaluator.evaluation import DatasetRun, RunOptions, evaluate_dataset
from evaluator.jobs import faults, queue
from evaluator.jobs.lease import Lease, worker_identity
from evaluator.measurement import Aborted
from evaluator.result import (
    SCHEMA_VERSION,
    DatasetMetrics,
    DatasetOutcome,
    shown_metrics,
    stored_metrics,
)
from evaluator.scorecard import outputs_by_uid, read_records
from evaluator.testset import TestSet
from submission_sandbox import Bundle, load_bundle

__all__ = ["execute_claimed", "run_job", "stored_outcome"]

logger = logging.getLogger(__name__)


@dataclass
class _Work:
    job: Job
    submission: Submission
    dataset: Dataset
    original: Dataset | None
    task: Task
    has_result: bool
    #: For a perturbed copy: where the same submission's predictions on the original are
    #: stored, if that job has finished (then the original need not be predicted again).
    original_predictions: str | None = None


def _load(ctx: Context, job_id: int) -> _Work:
    with ctx.db.session() as session:
        job = session.get(Job, job_id)
        if job is None:
            raise LookupError(f"job {job_id} does not exist")
        submission = session.get(Submission, job.submission_id)
        dataset = session.get(Dataset, job.dataset_id)
        assert submission is not None and dataset is not None
        original = (
            session.get(Dataset, dataset.derived_from_id) if dataset.derived_from_id else None
        )
        task = session.get(Task, dataset.task_id)
        assert task is not None
        has_result = session.scalar(select(Result.id).where(Result.job_id == job_id))
        original_predictions = (
            session.scalar(
                select(Result.predictions_key).where(
                    Result.submission_id == submission.id, Result.dataset_id == original.id
                )
            )
            if original is not None
            else None
        )
        return _Work(
            job, submission, dataset, original, task, has_result is not None, original_predictions
        )


def _stored_original_outputs(
    ctx: Context, work: _Work, test_set: TestSet
) -> dict[str, dict[str, Any]] | None:
    """The model's stored outputs on a copy's originals, when its job on them finished.

    A robustness or fairness copy compares the model with itself on the original inputs;
    reusing what the original's job stored saves predicting them all again (and compares
    with exactly the predictions the original was scored on). None: predict them.
    """
    if work.original_predictions is None:
        return None
    try:
        stored = outputs_by_uid(read_records(ctx.artifacts.read_bytes(work.original_predictions)))
    except (OSError, ValueError, KeyError):
        logger.warning(
            "job %s: cannot read %s; predicting the originals again",
            work.job.id,
            work.original_predictions,
        )
        return None
    wanted = {str(example["input_id"]) for example in test_set.examples}
    return stored if wanted <= stored.keys() else None


def _fetch_bundle(ctx: Context, submission: Submission, workdir: Path) -> Bundle:
    local = ctx.artifacts.local_file(submission.artifact_key, workdir)
    return load_bundle(local, unpack_to=workdir / "bundle")


class _JobProgress:
    """Moves the job to ``running`` at the first batch and hands the heartbeat the
    examples done (it writes them, throttled, in its own thread)."""

    def __init__(self, ctx: Context, lease: Lease) -> None:
        self.ctx, self.lease, self.total, self.running = ctx, lease, 0, False

    def begin(self, dataset: str, total: int) -> None:
        self.total = total

    def advance(self, dataset: str, done: int) -> None:
        if not self.running:
            self.running = True
            queue.mark_running(self.ctx, self.lease.job_id, owner=self.lease.owner)
        self.lease.report(done, self.total)

    def end(self, dataset: str, note: str) -> None:
        pass


def _provenance(
    run: DatasetRun, work: _Work, sandbox: str, limits: dict[str, Any]
) -> dict[str, Any]:
    record = provenance.collect(
        bundle_sha256=work.submission.bundle_sha256,
        image_digest=run.image_digest,
        dataset_sha256={
            work.dataset.name: work.dataset.sha256,
            **({work.original.name: work.original.sha256} if work.original else {}),
        },
        sandbox=run.sandbox or sandbox,
        sandbox_isolating=run.isolating,
        limits=limits,
        gpu=run.gpu,
        started_at=as_utc(work.job.started_at) if work.job.started_at else datetime.now(UTC),
        power=run.power,
    ).model_dump(mode="json")
    return {
        "schema_version": SCHEMA_VERSION,
        **record,
        "energy": run.energy.model_dump(mode="json"),
    }


def execute_claimed(
    ctx: Context,
    job_id: int,
    *,
    owner: str,
    lease_s: float = queue.DEFAULT_LEASE_S,
    sandbox: str | None = None,
) -> JobStatus | None:
    """Run a job this owner has claimed; returns its final status (None: lease lost)."""
    kind = sandbox or ctx.settings.sandbox
    attempts = queue.MAX_ATTEMPTS  # until the job is read: no retry of what we cannot read
    with Lease(ctx, job_id, owner, lease_s=lease_s) as lease:
        try:
            work = _load(ctx, job_id)
            attempts = work.job.attempts
            if work.has_result:  # a retry of a job whose first run wrote its result
                queue.finish(ctx, job_id, metrics={}, provenance={})
                return JobStatus.FINISHED
            spec = parse_task_spec(work.task.spec, source=f"task {work.task.id}")
            with scratch_tree("evalboard-job") as tmp:
                bundle = _fetch_bundle(ctx, work.submission, Path(tmp))
                original = TestSet.from_table(ctx, work.original) if work.original else None
                test_set = TestSet.from_table(
                    ctx, work.dataset, derived_from=original.name if original is not None else None
                )
                run = evaluate_dataset(
                    bundle,
                    test_set,
                    spec,
                    options=RunOptions(
                        sandbox=kind,
                        limits=spec.limits,
                        pin_cpus=ctx.settings.cpu_pinning == "auto",
                    ),
                    original=original,
                    original_outputs=_stored_original_outputs(ctx, work, test_set),
                    progress=_JobProgress(ctx, lease),
                    abort=lease.lost,
                )
            if lease.lost.is_set():
                return None
            failure = run.outcome.failure
            if failure is not None:
                _when_the_database_answers(
                    ctx,
                    lease,
                    lambda: queue.fail(
                        ctx,
                        job_id,
                        owner=owner,
                        reason=FailureReason(failure.reason),
                        message=failure.message,
                        log_tail=failure.log_tail,
                    ),
                )
                return JobStatus.FAILED
            assert run.outcome.metrics is not None
            key = None
            if run.quality is not None:
                key = f"predictions/{work.submission.id}/job-{job_id}.jsonl"
                ctx.artifacts.put_bytes(key, run.quality.jsonl())
            metrics = stored_metrics(run.outcome.metrics)
            record = _provenance(run, work, kind, spec.limits.model_dump(mode="json"))
            _when_the_database_answers(
                ctx,
                lease,
                lambda: queue.finish(
                    ctx,
                    job_id,
                    metrics=metrics,
                    provenance=record,
                    predictions_key=key,
                    log_tail=run.outcome.log_tail,
                ),
            )
            return JobStatus.FINISHED
        except Aborted:
            return None
        except InvalidBundle as exc:
            return _failed(ctx, job_id, owner, FailureReason.INVALID_BUNDLE, exc.message)
        except Exception as exc:
            full = scratch_full(exc)
            if full is not None:  # retrying here would fill the same disk: fail, say where
                logger.error("job %s: %s", job_id, full)
                return _failed(ctx, job_id, owner, FailureReason.PLATFORM_ERROR, full)
            part = faults.unreachable_part(ctx, kind)
            if part is not None:
                return _wait_out(ctx, job_id, owner=owner, part=part, error=exc)
            logger.exception("job %s: platform error", job_id)
            if attempts < queue.MAX_ATTEMPTS and queue.release(ctx, job_id, owner=owner):
                return JobStatus.QUEUED
            message = f"{type(exc).__name__}: {exc}"
            return _failed(ctx, job_id, owner, FailureReason.PLATFORM_ERROR, message)


def _failed(
    ctx: Context, job_id: int, owner: str, reason: FailureReason, message: str
) -> JobStatus:
    queue.fail(ctx, job_id, owner=owner, reason=reason, message=message)
    return JobStatus.FAILED


def _when_the_database_answers(ctx: Context, lease: Lease, write: Callable[[], object]) -> None:
    """Write the job's outcome, waiting while the database does not answer.

    The evaluation is done: waiting for the database (with back-off, for as long as this
    worker holds the lease) keeps its outcome, where giving up would leave the job to the
    reaper, to be run again from the start. Raises :class:`Aborted` once the lease is lost.
    """
    tries = 0
    while True:
        try:
            write()
        except PlatformError as exc:  # the database's faults, mapped in one place
            logger.debug("job %s: writing its outcome failed: %s", lease.job_id, exc)
            faults.DATABASE.went_down(faults.DATABASE_PART)
            if lease.lost.wait(faults.backoff_s(ctx.settings, tries)):
                raise Aborted from exc
            tries += 1
            continue
        faults.DATABASE.came_back()
        return


def _wait_out(
    ctx: Context, job_id: int, *, owner: str, part: str, error: Exception
) -> JobStatus | None:
    """Defer a job whose part does not answer, or fail it once the budget is spent."""
    with ctx.db.session() as session:
        row = session.execute(select(Job.fault_since, Job.faults).where(Job.id == job_id)).one()
    since, count = row.fault_since, int(row.faults or 0)
    waited = (datetime.now(UTC) - as_utc(since)).total_seconds() if since is not None else 0.0
    budget = ctx.settings.platform_fault_budget_s
    if waited < budget:
        delay = faults.backoff_s(ctx.settings, count)
        logger.warning(
            "job %s: %s does not answer; retrying in %.1f s (waited %.0f of %.0f s)",
            job_id,
            part,
            delay,
            waited,
            budget,
        )
        # False: the lease was lost meanwhile (cancelled, reaped); the job is not ours.
        return (
            JobStatus.QUEUED
            if queue.defer(ctx, job_id, owner=owner, delay_s=delay, why=part)
            else None
        )
    return _failed(
        ctx,
        job_id,
        owner,
        FailureReason.PLATFORM_ERROR,
        f"{part} did not answer for {waited:.0f} s (EVALBOARD_PLATFORM_FAULT_BUDGET_S="
        f"{budget:.0f}); last error: {type(error).__name__}: {error}. A platform fault: it "
        "does not count against the submitter's quota",
    )


def run_job(
    ctx: Context,
    job_id: int,
    *,
    owner: str | None = None,
    lease_s: float = queue.DEFAULT_LEASE_S,
    sandbox: str | None = None,
) -> JobStatus | None:
    """Claim and run a job; None when it is not queued (another worker has or had it)."""
    owner = owner or worker_identity()
    if not queue.claim(ctx, job_id, owner=owner, lease_s=lease_s):
        return None
    return execute_claimed(ctx, job_id, owner=owner, lease_s=lease_s, sandbox=sandbox)


def stored_outcome(
    result: Result, dataset: Dataset, original: Dataset | None = None
) -> DatasetOutcome:
    """A stored job result as a DatasetOutcome (for :func:`evaluator.summarize`)."""
    return DatasetOutcome.of(
        dataset,
        derived_from=original.name if original is not None else None,
        metrics=DatasetMetrics.model_validate(shown_metrics(result.metrics)),
        predictions=result.predictions_key,
    )
