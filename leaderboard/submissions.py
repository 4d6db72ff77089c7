"""Submissions: the daily quota, creation (which queues the jobs), status, cancel, re-run,
and the baseline mark.

The evaluator owns the job queue; this module only calls it (``enqueue_submission``,
``cancel_submission``). Re-running puts a submission's failed and cancelled jobs back in
the queue, keeping those that finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from datetime import datetime, time
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, selectinload
from sqlalchemy.sql import ColumnElement

from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, PermissionDenied, QuotaExceeded
from evalboard.core.states import Access, JobStatus, SubmissionKind, UploadState
from evalboard.core.tables import Job, Rerun, Submission, Upload, User, utcnow
from evaluator import cancel_submission, dispatcher_for, enqueue_submission, shown_metrics
from leaderboard.accounts import Principal
from leaderboard.cards import may_see, shown_user
from leaderboard.lineages import lineage_to_join
from leaderboard.phases import enter_phases, revealed_dataset_ids
from leaderboard.schemas import (
    CardPublic,
    JobPublic,
    SubmissionPublic,
    SubmissionStatusPublic,
    from_row,
)
from leaderboard.table import stored_card, summary_status

__all__ = [
    "cancel",
    "card_public",
    "check_quota",
    "create_submission",
    "get_submission",
    "list_submissions",
    "lock_user",
    "refuse_over_quota",
    "rerun",
    "set_baseline",
    "submission_public",
    "submission_status",
    "submissions_of",
    "uploads_today",
    "visible_submission",
]


def _used_today(session: Session, user_id: int) -> int:
    midnight = datetime.combine(utcnow().date(), time(0), tzinfo=utcnow().tzinfo)
    submissions = session.scalar(
        select(func.count(Submission.id)).where(
            Submission.user_id == user_id,
            Submission.created_at >= midnight,
            Submission.platform_fault.is_(False),
        )
    )
    # A rejected upload was checked, a re-run evaluated, at the platform's cost: both count.
    rejected = session.scalar(
        select(func.count(Upload.id)).where(
            Upload.user_id == user_id,
            Upload.state == UploadState.REJECTED.value,
            Upload.updated_at >= midnight,
        )
    )
    reruns = session.scalar(
        select(func.count(Rerun.id)).where(Rerun.user_id == user_id, Rerun.created_at >= midnight)
    )
    return int(submissions or 0) + int(rejected or 0) + int(reruns or 0)


def uploads_today(ctx: Context, user_id: int) -> int:
    """Submissions (platform faults not counted), rejected uploads and re-runs since
    midnight UTC: what the daily quota counts."""
    with ctx.db.session() as session:
        return _used_today(session, user_id)


def _refuse_over_quota(ctx: Context, principal: Principal, used: int) -> None:
    quota = ctx.settings.daily_upload_quota
    if used > quota:
        raise QuotaExceeded(
            f"{principal.name!r} has used the daily quota of {quota} submissions (rejected "
            "uploads count too); try again after midnight UTC (failures of the platform "
            "itself are not counted)"
        )


def refuse_over_quota(ctx: Context, session: Session, principal: Principal) -> None:
    """Count the daily quota in the transaction that inserts (after :func:`lock_user`)."""
    if principal.user_id is not None and not principal.is_admin:
        _refuse_over_quota(ctx, principal, _used_today(session, principal.user_id))


def check_quota(ctx: Context, principal: Principal) -> None:
    """Refuse early when the daily quota is spent (admins have none).

    Only a hint before work starts: :func:`create_submission` counts again in the
    transaction that inserts, which is what holds under concurrency.
    """
    if principal.is_admin or principal.user_id is None:
        return
    _refuse_over_quota(ctx, principal, uploads_today(ctx, principal.user_id) + 1)


def lock_user(session: Session, user_id: int) -> None:
    """Serialize one user's quota-counted writes: a row lock on PostgreSQL; SQLite has one
    writer at a time anyway (the following insert takes its write lock)."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update())


def create_submission(
    ctx: Context,
    principal: Principal,
    *,
    task_id: str,
    manifest: dict[str, Any],
    bundle_sha256: str,
    artifact_key: str,
    upload_id: str | None = None,
    release_of: int | None = None,
) -> Submission:
    """Record a validated bundle as a submission and queue one job per dataset.

    The daily quota is counted in the transaction that inserts (the user's row locked
    first), and the upload it came from, being checked, is marked completed in it too: so
    concurrent completions make at most one submission per upload and never pass the
    quota together. A new release (``release_of``) is checked in that transaction too
    (:func:`leaderboard.lineages.lineage_to_join`).
    """
    with ctx.db.session() as session:
        if principal.user_id is not None:
            lock_user(session, principal.user_id)
        lineage_id = (
            lineage_to_join(session, principal, task_id=task_id, release_of=release_of)
            if release_of is not None
            else None
        )
        submission = Submission(
            task_id=task_id,
            user_id=principal.user_id,
            name=str(manifest["name"]),
            bundle_sha256=bundle_sha256,
            artifact_key=artifact_key,
            manifest=manifest,
            release_of_id=release_of,
            lineage_id=lineage_id,
        )
        session.add(submission)
        session.flush()
        if upload_id is not None:
            done = session.execute(
                update(Upload)
                .where(Upload.id == upload_id, Upload.state == UploadState.CHECKING.value)
                .values(
                    state=UploadState.COMPLETED.value,
                    submission_id=submission.id,
                    updated_at=utcnow(),
                )
            )
            if getattr(done, "rowcount", 0) != 1:
                raise Conflict(f"Upload {upload_id} is not being completed; ask for its state")
        enter_phases(session, principal, task_id=task_id, submission_id=submission.id)
        refuse_over_quota(ctx, session, principal)
    enqueue_submission(ctx, submission.id)
    return submission


def get_submission(ctx: Context, submission_id: int) -> Submission:
    with ctx.db.session() as session:
        submission = session.scalar(
            select(Submission)
            .where(Submission.id == submission_id)
            .options(
                selectinload(Submission.jobs).selectinload(Job.dataset),
                selectinload(Submission.jobs).selectinload(Job.result),
            )
        )
    if submission is None:
        raise NotFound(f"No submission {submission_id}")
    return submission


def _user_name(ctx: Context, user_id: int | None) -> str | None:
    if user_id is None:
        return None
    with ctx.db.session() as session:
        return session.scalar(select(User.name).where(User.id == user_id))


def submission_public(
    submission: Submission, user: str | None, jobs: list[Job] | None = None
) -> SubmissionPublic:
    statuses = [job.status for job in (jobs if jobs is not None else submission.jobs)]
    return from_row(
        SubmissionPublic,
        submission,
        task=submission.task_id,
        user=user,
        runtime=submission.manifest.get("runtime"),
        status=summary_status(statuses),
        release_of=submission.release_of_id,
        predictions_only=submission.kind == SubmissionKind.PREDICTIONS,
    )


def _seen_user(ctx: Context, principal: Principal, submission: Submission) -> str | None:
    return shown_user(
        principal,
        task_id=submission.task_id,
        submitter_id=submission.user_id,
        name=_user_name(ctx, submission.user_id),
        anonymous=stored_card(submission).anonymous,
    )


def card_public(ctx: Context, principal: Principal, submission: Submission) -> CardPublic:
    """The model card of ``submission`` as ``principal`` may read it."""
    card = stored_card(submission)
    return CardPublic(
        submission_id=submission.id,
        task=submission.task_id,
        name=submission.name,
        user=_seen_user(ctx, principal, submission),
        runtime=submission.manifest.get("runtime"),
        description=str(submission.manifest.get("description") or ""),
        published=submission.published,
        **card.model_dump(),
    )


def visible_submission(ctx: Context, principal: Principal, submission_id: int) -> Submission:
    """The submission, if ``principal`` may see it (an unpublished one: its submitter, the
    task owner, an admin); else NotFound, as if it did not exist."""
    submission = get_submission(ctx, submission_id)
    if not may_see(
        principal,
        task_id=submission.task_id,
        submitter_id=submission.user_id,
        published=submission.published,
    ):
        raise NotFound(f"No submission {submission_id}")
    return submission


def _job_order(jobs: list[Job]) -> Callable[[Job], tuple[int, str, str]]:
    """Round by round; each original dataset, then its perturbed copies (issue 19: the
    cards were alphabetical, copies before their originals)."""
    names = {job.dataset.id: job.dataset.name for job in jobs}

    def key(job: Job) -> tuple[int, str, str]:
        dataset = job.dataset
        original = names.get(dataset.derived_from_id or dataset.id, dataset.name)
        return dataset.round, original, dataset.perturbation or ""

    return key


def submission_status(
    ctx: Context, principal: Principal, submission_id: int
) -> SubmissionStatusPublic:
    """Per-dataset status for anyone who may see the submission; messages, logs and hidden
    names for those allowed."""
    submission = visible_submission(ctx, principal, submission_id)
    manage = principal.may_see_logs(task_id=submission.task_id, submitter_id=submission.user_id)
    see_hidden = principal.owns(submission.task_id)
    jobs = sorted(submission.jobs, key=_job_order(submission.jobs))
    public = submission_public(submission, _seen_user(ctx, principal, submission), jobs)
    revealed: set[int] = set()
    if manage and not see_hidden:  # the submitter: their scores on revealed phases' sets
        with ctx.db.session() as session:
            revealed = revealed_dataset_ids(
                session, submission.task_id, [job.dataset for job in jobs]
            )
    views = []
    for index, job in enumerate(jobs, start=1):
        hidden = job.dataset.access == Access.HIDDEN and not see_hidden
        metrics = None
        if job.result is not None and (not hidden or job.dataset_id in revealed):
            metrics = shown_metrics(job.result.metrics)
        views.append(
            JobPublic(
                dataset=f"hidden-{index}" if hidden else job.dataset.name,
                status=JobStatus(job.status),
                reason=job.reason,
                # A hidden set's size is part of what is hidden: an exact fraction (7/500)
                # gives it away, so others see its progress in tenths.
                progress=math.floor(job.progress * 10) / 10 if hidden else job.progress,
                examples_done=None if hidden else job.examples_done,
                examples_total=None if hidden else job.examples_total,
                # A model sees a hidden set's inputs and may print them: its logs on a
                # hidden set are for the task's owner only, like its scores there.
                message=job.message if manage and not hidden else None,
                log_tail=job.log_tail if manage and not hidden else None,
                log_withheld=manage and hidden,
                started_at=job.started_at,
                finished_at=job.finished_at,
                metrics=metrics,
                sandbox=(job.result.provenance or {}).get("sandbox") if job.result else None,
            )
        )
    return SubmissionStatusPublic(**public.model_dump(), jobs=views, may_manage=manage)


def _newest_first(
    session: Session, where: ColumnElement[bool], *, limit: int | None = None
) -> Sequence[Submission]:
    """The submissions ``where`` picks, newest first, their jobs loaded."""
    query = select(Submission).where(where).options(selectinload(Submission.jobs))
    return session.scalars(query.order_by(Submission.id.desc()).limit(limit)).all()


def list_submissions(ctx: Context, principal: Principal, task_id: str) -> list[SubmissionPublic]:
    """The task's submissions ``principal`` may see, anonymous submitters unnamed."""
    with ctx.db.session() as session:
        rows = _newest_first(session, Submission.task_id == task_id)
        users = dict(session.execute(select(User.id, User.name)).all())
    return [
        submission_public(
            s,
            shown_user(
                principal,
                task_id=task_id,
                submitter_id=s.user_id,
                name=users.get(s.user_id) if s.user_id else None,
                anonymous=stored_card(s).anonymous,
            ),
        )
        for s in rows
        if may_see(principal, task_id=task_id, submitter_id=s.user_id, published=s.published)
    ]


def submissions_of(ctx: Context, user_id: int, *, limit: int = 200) -> list[SubmissionPublic]:
    """A user's own submissions on every task, newest first (their "my submissions")."""
    with ctx.db.session() as session:
        rows = _newest_first(session, Submission.user_id == user_id, limit=limit)
        name = session.scalar(select(User.name).where(User.id == user_id))
    return [submission_public(s, name) for s in rows]


def _manageable(ctx: Context, principal: Principal, submission_id: int) -> Submission:
    principal.require_signed_in()
    # One the caller may not see reads as missing, as its page does: "not yours" would
    # tell that an unpublished submission of that number exists.
    submission = visible_submission(ctx, principal, submission_id)
    if not principal.may_see_logs(task_id=submission.task_id, submitter_id=submission.user_id):
        raise PermissionDenied(
            f"Submission {submission_id} is not yours; only its submitter, the task owner or an "
            "admin may cancel or re-run it"
        )
    return submission


def cancel(
    ctx: Context, principal: Principal, submission_id: int, *, job_id: int | None = None
) -> int:
    """Cancel unfinished jobs (only ``job_id``, when given); returns how many were cancelled."""
    _manageable(ctx, principal, submission_id)
    return cancel_submission(ctx, submission_id, job_id=job_id)


def rerun(
    ctx: Context, principal: Principal, submission_id: int, *, job_id: int | None = None
) -> int:
    """Queue failed and cancelled jobs again (and jobs for datasets added since); only
    ``job_id``, when given (an admin retrying one failed job).

    A re-run uses the sandbox, so it counts against the caller's daily quota (admins have
    none), in the transaction that records it. A submission a platform fault left out of
    its submitter's quota counts again instead (else a re-run would be a free submission).
    """
    submission = _manageable(ctx, principal, submission_id)
    if submission.kind == SubmissionKind.PREDICTIONS:
        raise Conflict(
            f"Submission {submission_id} is predictions only: it has no model to run again; "
            "submit corrected predictions as a new submission"
        )
    counted = principal.user_id is not None and not principal.is_admin
    again = (JobStatus.FAILED.value, JobStatus.CANCELLED.value)
    with ctx.db.session() as session:
        if counted:
            assert principal.user_id is not None
            lock_user(session, principal.user_id)
            if not (submission.platform_fault and submission.user_id == principal.user_id):
                session.add(Rerun(submission_id=submission_id, user_id=principal.user_id))
        session.execute(
            update(Submission).where(Submission.id == submission_id).values(platform_fault=False)
        )
        session.flush()
        refuse_over_quota(ctx, session, principal)
        chosen = (
            (Job.submission_id == submission_id)
            & Job.status.in_(again)
            & (Job.id == job_id if job_id is not None else Job.id.is_not(None))
        )
        jobs = session.execute(select(Job.id, Job.queue).where(chosen)).all()
        session.execute(
            update(Job)
            .where(chosen)
            .values(
                status=JobStatus.QUEUED.value,
                reason=None,
                message=None,
                progress=0.0,
                examples_done=None,
                examples_total=None,
                attempts=0,
                started_at=None,
                finished_at=None,
            )
        )
    dispatcher = dispatcher_for(ctx)
    for again_id, queue in jobs:
        dispatcher.dispatch(again_id, queue)
    if job_id is not None:
        return len(jobs)
    return len(jobs) + len(enqueue_submission(ctx, submission_id))


def set_baseline(
    ctx: Context, principal: Principal, submission_id: int, is_baseline: bool
) -> Submission:
    submission = visible_submission(ctx, principal, submission_id)  # as _manageable
    principal.require_owner(submission.task_id, doing="mark baselines")
    with ctx.db.session() as session:
        session.execute(
            update(Submission).where(Submission.id == submission_id).values(is_baseline=is_baseline)
        )
    submission.is_baseline = is_baseline
    return submission
