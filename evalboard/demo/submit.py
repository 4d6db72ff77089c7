"""Submitting the demo models the way an upload does, and waiting for their jobs.

Each bundle is packed as a reproducible tar archive (not gzipped: the embedding model's
90 MB of float weights shrink by 9% in 8 s), stored under ``bundles/<sha256>.tar`` and
recorded as a submission, which queues one
job per dataset: the same records and job path a ``POST /uploads`` creates, evaluated
by the same worker pool ``evalboard serve`` runs.
"""

from __future__ import annotations

import os
import tarfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from evalboard.core.context import Context
from evalboard.core.scratch import scratch_tree
from evalboard.core.states import JobStatus
from evalboard.core.tables import Job, Submission
from evalboard.demo.models import BuiltModel
from evaluator import WorkerPool, queue_missing_jobs
from leaderboard.accounts import principal_for
from leaderboard.submissions import create_submission
from submission_sandbox import Bundle, iter_bundle_files, load_bundle

__all__ = ["JobCounts", "count_jobs", "submit_models", "wait_for_jobs"]


def _existing(ctx: Context, task_id: str, name: str, sha256: str) -> int | None:
    with ctx.db.session() as session:
        found = session.scalar(
            select(Submission.id)
            .where(
                Submission.task_id == task_id,
                Submission.name == name,
                Submission.bundle_sha256 == sha256,
            )
            .order_by(Submission.id)
        )
        return int(found) if found is not None else None


def _pack(bundle: Bundle, archive: Path) -> None:
    """The bundle's files as a tar with fixed metadata (same bytes on every machine)."""
    with tarfile.open(archive, "w") as tar:
        for relative, path in iter_bundle_files(bundle.path):
            info = tarfile.TarInfo(str(relative))
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            info.uname = info.gname = ""
            with path.open("rb") as handle:
                tar.addfile(info, handle)


def submit_models(
    ctx: Context, built: Sequence[BuiltModel], *, task_id: str, user_id: int
) -> dict[str, tuple[int, bool]]:
    """Submit each bundle once: ``{name: (submission id, created now)}``.

    A bundle already submitted (same name and sha256) is not submitted again, so a second
    demo run reuses the first one's evaluations.
    """
    principal = principal_for(ctx, user_id)
    submitted: dict[str, tuple[int, bool]] = {}
    for model in built:
        bundle = load_bundle(model.path)
        found = _existing(ctx, task_id, bundle.manifest.name, bundle.sha256)
        if found is not None:
            submitted[model.name] = (found, False)
            continue
        key = f"bundles/{bundle.sha256}.tar"
        if not ctx.artifacts.exists(key):
            with scratch_tree("evalboard-demo") as tmp:
                archive = Path(tmp) / f"{model.name}.tar"
                _pack(bundle, archive)
                ctx.artifacts.put_file(key, archive)
        submission = create_submission(
            ctx,
            principal,
            task_id=task_id,
            manifest=bundle.manifest.model_dump(mode="json"),
            bundle_sha256=bundle.sha256,
            artifact_key=key,
        )
        submitted[model.name] = (submission.id, True)
    # Datasets added after a submission (a closed round) get their jobs here too.
    queue_missing_jobs(ctx, task_id)
    return submitted


@dataclass(frozen=True)
class JobCounts:
    total: int
    finished: int
    failed: int
    cancelled: int

    @property
    def done(self) -> int:
        return self.finished + self.failed + self.cancelled


def count_jobs(ctx: Context, task_id: str) -> JobCounts:
    with ctx.db.session() as session:
        rows = session.execute(
            select(Job.status, func.count(Job.id))
            .join(Submission, Submission.id == Job.submission_id)
            .where(Submission.task_id == task_id)
            .group_by(Job.status)
        ).all()
    counts = {str(status): int(n) for status, n in rows}
    return JobCounts(
        total=sum(counts.values()),
        finished=counts.get(JobStatus.FINISHED.value, 0),
        failed=counts.get(JobStatus.FAILED.value, 0),
        cancelled=counts.get(JobStatus.CANCELLED.value, 0),
    )


def wait_for_jobs(
    ctx: Context,
    pool: WorkerPool,
    task_id: str,
    *,
    on_progress: Callable[[JobCounts], None] | None = None,
    timeout_s: float = 1800.0,
    poll_s: float = 0.25,
) -> JobCounts:
    """Wake the pool and block until none of the task's jobs is queued or running."""
    pool.wake()
    deadline = time.monotonic() + timeout_s
    while True:
        counts = count_jobs(ctx, task_id)
        if on_progress is not None:
            on_progress(counts)
        if counts.done >= counts.total:
            return counts
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{counts.total - counts.done} evaluation jobs of {task_id} did not finish in "
                f"{timeout_s:.0f} s; see `evalboard leaderboard --task {task_id}`"
            )
        time.sleep(poll_s)
