"""What an admin reads: every user with their roles, the job queue, recent failures and
today's use of the quotas.

Only reading lives here. Changing things goes through the rules' own homes: roles
through :func:`~leaderboard.accounts.grant_role` / ``revoke_role``, tokens through
``revoke_token``, a job through :func:`~leaderboard.submissions.rerun` and ``cancel`` (the
queue's own functions underneath), so an admin's page has no second copy of any rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Select, func, select

from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import JobStatus, UploadState
from evalboard.core.tables import Dataset, Job, RoleGrant, Submission, Upload, User
from leaderboard.schemas import from_row
from leaderboard.submissions import uploads_today

__all__ = [
    "JobRow",
    "UserRow",
    "UserUsage",
    "job_counts",
    "job_submission",
    "queue_rows",
    "recent_failures",
    "usage_today",
    "user_rows",
]


@dataclass(frozen=True)
class UserRow:
    """A user and their grants: ``(role, task or None for platform-wide)``."""

    id: int
    name: str
    is_admin: bool
    created_at: datetime
    grants: list[tuple[str, str | None]]


def user_rows(ctx: Context) -> list[UserRow]:
    """Every user, by name, with their role grants."""
    with ctx.db.session() as session:
        users = session.scalars(select(User).order_by(User.name)).all()
        grants: dict[int, list[tuple[str, str | None]]] = {}
        for grant in session.scalars(select(RoleGrant).order_by(RoleGrant.id)):
            grants.setdefault(grant.user_id, []).append((grant.role, grant.task_id))
    return [UserRow(u.id, u.name, u.is_admin, u.created_at, grants.get(u.id, [])) for u in users]


#: A job with its submission's name and task, its dataset's name and its submitter's name.
_JobQuery = Select[Job, str, str, str, str]


@dataclass(frozen=True)
class JobRow:
    """One job as the queue page lists it."""

    id: int
    status: str
    reason: str | None
    message: str | None
    submission_id: int
    submission: str
    task_id: str
    dataset: str
    user: str | None
    attempts: int
    lease_owner: str | None
    created_at: datetime
    finished_at: datetime | None


def _rows(ctx: Context, query: _JobQuery) -> list[JobRow]:
    with ctx.db.session() as session:
        return [
            from_row(
                JobRow, job, submission=submission, task_id=task_id, dataset=dataset, user=user
            )
            for job, submission, task_id, dataset, user in session.execute(query)
        ]


def _joined() -> _JobQuery:
    return (
        select(Job, Submission.name, Submission.task_id, Dataset.name, User.name)
        .join(Submission, Submission.id == Job.submission_id)
        .join(Dataset, Dataset.id == Job.dataset_id)
        .outerjoin(User, User.id == Submission.user_id)
    )


def queue_rows(ctx: Context, *, status: JobStatus | None = None, limit: int = 200) -> list[JobRow]:
    """Jobs, newest first, of one status or all."""
    query = _joined()
    if status is not None:
        query = query.where(Job.status == status.value)
    return _rows(ctx, query.order_by(Job.id.desc()).limit(limit))


def recent_failures(ctx: Context, *, limit: int = 50) -> list[JobRow]:
    """The latest failed jobs, with their reasons and messages."""
    query = (
        _joined()
        .where(Job.status == JobStatus.FAILED.value)
        .order_by(Job.finished_at.desc().nulls_last(), Job.id.desc())
        .limit(limit)
    )
    return _rows(ctx, query)


def job_counts(ctx: Context) -> dict[str, int]:
    """How many jobs are in each status (every status listed, zeros too)."""
    with ctx.db.session() as session:
        counted = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
    return {s.value: int(counted.get(s.value, 0)) for s in JobStatus}


@dataclass(frozen=True)
class UserUsage:
    """One user's use of the per-user limits, today and now."""

    name: str
    is_admin: bool
    used_today: int
    open_uploads: int
    bytes_in_flight: int


def usage_today(ctx: Context) -> list[UserUsage]:
    """Every user's use of the daily quota and of the open-upload caps."""
    in_flight = (UploadState.OPEN.value, UploadState.CHECKING.value)
    with ctx.db.session() as session:
        users = session.execute(select(User.id, User.name, User.is_admin).order_by(User.name)).all()
        uploads = {
            user_id: (int(count), int(size))
            for user_id, count, size in session.execute(
                select(
                    Upload.user_id, func.count(Upload.id), func.coalesce(func.sum(Upload.size), 0)
                )
                .where(Upload.state.in_(in_flight))
                .group_by(Upload.user_id)
            )
        }
    return [
        UserUsage(
            name=name,
            is_admin=is_admin,
            used_today=uploads_today(ctx, user_id),
            open_uploads=uploads.get(user_id, (0, 0))[0],
            bytes_in_flight=uploads.get(user_id, (0, 0))[1],
        )
        for user_id, name, is_admin in users
    ]


def job_submission(ctx: Context, job_id: int) -> int:
    """The submission a job belongs to.

    Raises:
        NotFound: there is no such job.
    """
    with ctx.db.session() as session:
        submission_id = session.scalar(select(Job.submission_id).where(Job.id == job_id))
    if submission_id is None:
        raise NotFound(f"No job {job_id}; the queue page lists them")
    return int(submission_id)
