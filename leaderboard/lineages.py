"""Lineages: the releases of one model, in order, and who may add one.

A submission may name the model it is a new release of (``release_of`` in its manifest,
or in the upload: ``evalboard model upload --release-of ID``). It then joins that model's
lineage, whose id is the lineage's first release (``Submission.lineage_id``; a first
release is a lineage of its own). The link is set once, when the submission is created,
and may only point to a submission that exists already: so no cycle can ever form.

Only the lineage's owner (the submitter of its first release) or an admin may add a
release to it, and only on the lineage's task. A submission the caller may not see is
named as if it did not exist. Releases are numbered 1, 2, ... in the order they were
submitted, over the whole lineage, so "release 3" means the same to every viewer, even one
who does not see an unpublished release.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from evalboard.core.context import Context
from evalboard.core.errors import NotFound, PermissionDenied, UsageError
from evalboard.core.states import Access, JobStatus
from evalboard.core.tables import Submission, as_utc
from leaderboard.accounts import Principal
from leaderboard.cards import may_see, visible_table
from leaderboard.schemas import LineagePublic, ReleaseDatasetPublic, ReleasePublic, from_row
from leaderboard.table import ModelEntry, TaskTable, load_table

__all__ = [
    "Lineage",
    "Release",
    "check_release_of",
    "lineage_of",
    "lineage_public",
    "lineage_to_join",
    "task_lineages",
]


@dataclass(frozen=True)
class Release:
    """One release of a lineage, numbered from 1 in the order of submission."""

    submission_id: int
    lineage_id: int
    number: int
    name: str
    created_at: datetime
    user_id: int | None
    published: bool
    release_of: int | None

    @property
    def label(self) -> str:
        """How reports name it: ``release 2 (submission 14, bow-v2)``."""
        return f"release {self.number} (submission {self.submission_id}, {self.name})"


@dataclass(frozen=True)
class Lineage:
    """A lineage's releases, as one viewer may see them, oldest first."""

    id: int
    task_id: str
    owner_id: int | None
    releases: list[Release]


#: The columns a release is made of (not the manifest: a task may have many submissions).
_COLUMNS = (
    Submission.id,
    Submission.lineage_id,
    Submission.name,
    Submission.created_at,
    Submission.user_id,
    Submission.published,
    Submission.release_of_id,
    Submission.task_id,
)


def _numbered(rows: Sequence[Any]) -> list[Release]:  # rows of _COLUMNS
    return [
        Release(
            submission_id=row.id,
            lineage_id=row.lineage_id if row.lineage_id is not None else row.id,
            number=number,
            name=row.name,
            created_at=as_utc(row.created_at),
            user_id=row.user_id,
            published=row.published,
            release_of=row.release_of_id,
        )
        for number, row in enumerate(sorted(rows, key=lambda row: int(row.id)), start=1)
    ]


def _lineage(releases: list[Release], task_id: str, principal: Principal | None) -> Lineage:
    first = releases[0]
    return Lineage(
        id=first.lineage_id,
        task_id=task_id,
        # The first release may be gone (deleted): then only an admin owns the lineage.
        owner_id=first.user_id if first.submission_id == first.lineage_id else None,
        releases=[r for r in releases if _visible(principal, task_id, r)],
    )


def _visible(principal: Principal | None, task_id: str, release: Release) -> bool:
    """None stands for the platform itself (the server's gate): it sees every release."""
    return principal is None or may_see(
        principal, task_id=task_id, submitter_id=release.user_id, published=release.published
    )


def lineage_to_join(
    session: Session, principal: Principal, *, task_id: str, release_of: int
) -> int:
    """The lineage a new release of submission ``release_of`` joins, once the caller may
    add one to it; in ``session``, so that creation checks in the transaction that inserts.

    Raises:
        NotFound: no such submission, or one the caller may not see.
        UsageError: it is a model of another task.
        PermissionDenied: the lineage is someone else's.
    """
    target = session.get(Submission, release_of)
    if target is None or not may_see(
        principal, task_id=target.task_id, submitter_id=target.user_id, published=target.published
    ):
        raise NotFound(
            f"There is no submission {release_of} you may see to make a new release of; "
            "name the submission id of your own model (`evalboard model upload` printed it)"
        )
    if target.task_id != task_id:
        raise UsageError(
            f"Submission {release_of} is a model of task {target.task_id!r}, not "
            f"{task_id!r}: a new release stays on its lineage's task"
        )
    root = session.get(Submission, target.lineage) if target.lineage_id is not None else target
    owner_id = root.user_id if root is not None else None
    if not principal.is_admin and (owner_id is None or owner_id != principal.user_id):
        raise PermissionDenied(
            f"Submission {release_of} is in another user's lineage: only its owner (or an "
            "admin) may add a release to it; upload without --release-of (release_of) to "
            "start a lineage of your own"
        )
    return target.lineage


def check_release_of(ctx: Context, principal: Principal, *, task_id: str, release_of: int) -> int:
    """:func:`lineage_to_join` in a session of its own: the early check of an upload."""
    with ctx.db.session() as session:
        return lineage_to_join(session, principal, task_id=task_id, release_of=release_of)


def lineage_of(ctx: Context, principal: Principal | None, submission_id: int) -> Lineage:
    """The lineage ``submission_id`` belongs to (any of its releases names it), with the
    releases ``principal`` may see (every one for None: the platform's own gate).

    Raises:
        NotFound: no such submission, or one ``principal`` may not see.
    """
    with ctx.db.session() as session:
        submission = session.get(Submission, submission_id)
        lineage_id = submission.lineage if submission is not None else 0
        members = session.execute(
            select(*_COLUMNS).where(
                or_(Submission.id == lineage_id, Submission.lineage_id == lineage_id)
            )
        ).all()
    releases = _numbered(members)
    named = next((r for r in releases if r.submission_id == submission_id), None)
    if submission is None or named is None or not _visible(principal, submission.task_id, named):
        raise NotFound(f"No submission {submission_id}, so no lineage {submission_id}")
    return _lineage(releases, submission.task_id, principal)


def task_lineages(
    ctx: Context,
    principal: Principal | None,
    task_id: str,
    *,
    among: Collection[int] | None = None,
) -> list[Lineage]:
    """Every lineage of the task with at least two releases (a model released again), as
    ``principal`` may see it; ``among``: only these submissions count (a suite version's
    cut). Lineages by id, releases by number."""
    with ctx.db.session() as session:
        rows = session.execute(select(*_COLUMNS).where(Submission.task_id == task_id)).all()
    if among is not None:
        kept = set(among)
        rows = [row for row in rows if row.id in kept]
    groups: dict[int, list[Any]] = {}
    for row in rows:
        groups.setdefault(row.lineage_id if row.lineage_id is not None else row.id, []).append(row)
    lineages = []
    for _, members in sorted(groups.items()):
        if len(members) < 2:
            continue
        lineage = _lineage(_numbered(members), task_id, principal)
        if lineage.releases:
            lineages.append(lineage)
    return lineages


def _scored_on(
    table: TaskTable, entry: ModelEntry | None, see_hidden: bool
) -> tuple[list[ReleaseDatasetPublic], int]:
    """The original datasets a release has a finished result on; hidden ones counted only
    (for a viewer who may not see them)."""
    if entry is None:
        return [], 0
    shown, hidden = [], 0
    per_dataset = entry.per_dataset
    for dataset in sorted(table.datasets, key=lambda d: (d.round, d.name)):
        figures = per_dataset.get(dataset.name)
        if dataset.derived_from_id is not None or figures is None:
            continue
        if dataset.access == Access.HIDDEN and not see_hidden:
            hidden += 1
            continue
        perf = figures.get("perf")
        shown.append(
            ReleaseDatasetPublic(
                dataset=dataset.name,
                round=dataset.round,
                perf=float(perf) if perf is not None else None,
            )
        )
    return shown, hidden


def lineage_public(ctx: Context, principal: Principal, submission_id: int) -> LineagePublic:
    """``GET /lineages/ID``: the lineage of any of its releases, with each release's board
    figures and the datasets it was scored on, as ``principal`` may see them.

    Raises:
        NotFound: no such submission, or one ``principal`` may not see.
    """
    lineage = lineage_of(ctx, principal, submission_id)
    table = visible_table(load_table(ctx, lineage.task_id), principal, cache=ctx.cache)
    see_hidden = principal.owns(lineage.task_id)
    releases = []
    for release in lineage.releases:
        entry = table.entry(release.submission_id)
        datasets, hidden = _scored_on(table, entry, see_hidden)
        releases.append(
            from_row(
                ReleasePublic,
                release,
                status=entry.status if entry is not None else JobStatus.QUEUED,
                metrics=dict(entry.metrics) if entry is not None and entry.complete else {},
                datasets=datasets,
                hidden_sets=hidden,
            )
        )
    first = table.entry(lineage.id)
    return LineagePublic(
        lineage=lineage.id,
        task=lineage.task_id,
        owner=first.user if first is not None else None,
        releases=releases,
    )
