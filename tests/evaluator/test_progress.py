"""A job's real progress (issue 19): examples done of the total, written by the worker
while the job runs, at most once a second, by the heartbeat's thread."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event, select

from datasets_registry import add_dataset, create_task
from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import Job
from evaluator.jobs import queue
from evaluator.jobs.job import execute_claimed
from evaluator.jobs.lease import Lease
from tests.evaluator.conftest import BundleFactory, submit
from tests.helpers.tasks import sentiment_rows, sentiment_spec, write_jsonl

ROWS = 60


def _task_of(ctx: Context, tmp_path: Path) -> None:
    create_task(ctx, sentiment_spec())
    base = sentiment_rows()
    rows = [{**base[i % len(base)], "uid": f"r{i}"} for i in range(ROWS)]
    add_dataset(
        ctx,
        task_id="sentiment",
        name="sixty",
        round=1,
        perturb=False,
        path=write_jsonl(tmp_path / "sixty.jsonl", rows),
    )


@contextmanager
def _job_updates(ctx: Context) -> Iterator[list[str]]:
    """The UPDATE statements on the jobs table while the block runs."""
    updates: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE JOBS"):
            updates.append(statement)

    event.listen(ctx.db.engine, "before_cursor_execute", count)
    try:
        yield updates
    finally:
        event.remove(ctx.db.engine, "before_cursor_execute", count)


def _progress(ctx: Context, job_id: int) -> tuple[str, int | None, int | None]:
    with ctx.db.session() as session:
        row = session.execute(
            select(Job.status, Job.examples_done, Job.examples_total).where(Job.id == job_id)
        ).one()
    return row.status, row.examples_done, row.examples_total


def test_a_running_job_shows_examples_done_of_the_total(
    ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    _task_of(ctx, tmp_path)
    # 30 batches of 2, a tenth of a second each: about 3 s of predicting.
    submission = submit(ctx, keyword_bundle(delay_s=0.1))
    (job_id,) = queue.enqueue_submission(ctx, submission, dispatcher=None)
    assert queue.claim(ctx, job_id, owner="w")
    # The default lease: its renewals alone come every 20 s, after this job is done.
    run = threading.Thread(
        target=execute_claimed, args=(ctx, job_id), kwargs={"owner": "w", "sandbox": "local"}
    )
    run.start()
    seen: list[tuple[int | None, int | None]] = []
    while run.is_alive():
        status, done, total = _progress(ctx, job_id)
        if status == JobStatus.RUNNING and done is not None:
            seen.append((done, total))
        time.sleep(0.2)
    run.join()
    assert _progress(ctx, job_id) == (JobStatus.FINISHED, ROWS, ROWS)
    partway = [done for done, total in seen if total == ROWS and 0 < (done or 0) < ROWS]
    assert len(set(partway)) >= 2, f"no progress shown while it ran: {seen}"
    assert partway == sorted(partway)


def test_progress_is_written_at_most_once_a_second_however_often_it_moves(
    ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    _task_of(ctx, tmp_path)
    (job_id,) = queue.enqueue_submission(ctx, submit(ctx, keyword_bundle()), dispatcher=None)
    assert queue.claim(ctx, job_id, owner="w")
    with _job_updates(ctx) as updates:
        with Lease(ctx, job_id, "w") as lease:
            started = time.monotonic()
            done = 0
            while time.monotonic() - started < 3.2:
                done += 1
                lease.report(done, 10**9)
                time.sleep(0.001)
            reported = done
            # The last report is written too, at the heartbeat's next tick: waited for (a
            # slow write moves that tick later), not slept past.
            deadline = time.monotonic() + 30
            while _progress(ctx, job_id)[1] != reported:
                assert time.monotonic() < deadline, "the last report was never written"
                time.sleep(0.05)
    assert reported > 500
    assert 2 <= len(updates) <= 5, len(updates)
    assert _progress(ctx, job_id)[1:] == (reported, 10**9)


def test_a_quiet_lease_writes_nothing_between_renewals(
    ctx: Context, tmp_path: Path, keyword_bundle: BundleFactory
) -> None:
    _task_of(ctx, tmp_path)
    (job_id,) = queue.enqueue_submission(ctx, submit(ctx, keyword_bundle()), dispatcher=None)
    assert queue.claim(ctx, job_id, owner="w")
    with _job_updates(ctx) as updates:
        with Lease(ctx, job_id, "w", lease_s=6.0) as lease:  # renewed every 2 s
            lease.report(1, 10)
            time.sleep(3.0)
    # The report once, and one renewal: not one write per second.
    assert 1 <= len(updates) <= 3, len(updates)
