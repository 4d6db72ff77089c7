"""A researcher's submission page in headless Chromium (issue 19): job status updates in
place, so an open "Last log lines" panel stays open; cards keep the API's order; "Cancel
unfinished jobs" shows only when something is unfinished, and asks first."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from datasets_registry import list_datasets
from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import Job, Submission, User
from tests.helpers.browser import ARTIFACTS, Watched, sign_in, watched_page
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import PASSWORD, TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture
def watched(browser: Any) -> Iterator[Watched]:
    with watched_page(browser) as watched:
        yield watched


def _running_submission(ctx: Context, user: str) -> tuple[int, list[int]]:
    """A submission of ``user`` whose jobs run on a worker that holds their leases for an
    hour (so the server's own worker leaves them alone)."""
    now = datetime.now(UTC)
    with ctx.db.session() as session:
        user_id = session.scalar(select(User.id).where(User.name == user))
        submission = Submission(
            task_id=TASK,
            user_id=user_id,
            name="live-status",
            bundle_sha256="1" * 64,
            artifact_key="bundles/live-status.tar.gz",
            manifest={"name": "live-status", "task": TASK, "runtime": "python"},
        )
        session.add(submission)
        session.flush()
        jobs = [
            Job(
                submission_id=submission.id,
                dataset_id=dataset.id,
                status=JobStatus.RUNNING.value,
                started_at=now,
                lease_expires_at=now + timedelta(hours=1),
            )
            for dataset in list_datasets(ctx, TASK)[:3]
        ]
        session.add_all(jobs)
        session.flush()
        return submission.id, [job.id for job in jobs]


def _job_says(ctx: Context, job_id: int, **values: Any) -> None:
    with ctx.db.session() as session:
        session.execute(update(Job).where(Job.id == job_id).values(**values))


def _statuses(ctx: Context, job_ids: list[int]) -> list[str]:
    with ctx.db.session() as session:
        return list(session.scalars(select(Job.status).where(Job.id.in_(job_ids))))


def test_status_updates_in_place_and_an_open_log_stays_open(
    watched: Watched, live_server: LiveServer
) -> None:
    ctx = live_server.seeded.ctx
    submission_id, job_ids = _running_submission(ctx, "alice")
    page = watched.page
    sign_in(page, live_server.url, "alice", PASSWORD, f"/ui/submissions/{submission_id}")
    api = httpx.get(
        f"{live_server.url}/submissions/{submission_id}",
        headers={"Authorization": f"Bearer {live_server.seeded.tokens['alice']}"},
    ).json()
    cards = "cards => cards.map(c => c.dataset.dataset)"
    assert page.eval_on_selector_all("article.job", cards) == [j["dataset"] for j in api["jobs"]]
    page.evaluate("window.notReloaded = true")

    first = page.locator("article.job").first
    assert first.locator("details").count() == 0
    _job_says(ctx, job_ids[0], log_tail="loading weights\n", progress=0.25)
    first.locator("details").wait_for(timeout=10_000)
    first.locator("summary").click()
    _job_says(ctx, job_ids[0], log_tail="loading weights\nexample 500 of 1000\n", progress=0.5)
    page.wait_for_function(
        "() => document.querySelector('article.job pre.log').textContent.includes('500 of')",
        timeout=10_000,
    )
    assert first.locator("details").get_attribute("open") is not None, "the open log closed"
    assert first.locator("progress").evaluate("bar => bar.value") == 0.5
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "submission-live.png"), full_page=True)
    assert page.evaluate("window.notReloaded") is True
    # Finished in place too: its status, its figures, and the same order as before.
    _job_says(
        ctx,
        job_ids[1],
        status=JobStatus.FAILED.value,
        reason="oom",
        message="The model used more than its 4g memory limit (exit 137).",
        finished_at=datetime.now(UTC),
    )
    second = page.locator("article.job").nth(1)
    second.locator(".status.failed").wait_for(timeout=10_000)
    assert second.locator(".reason").inner_text() == "oom"
    assert "4g memory limit" in second.locator(".error-message").inner_text()
    assert page.eval_on_selector_all("article.job", cards) == [j["dataset"] for j in api["jobs"]]

    # Cancelling asks first: dismissed, nothing is cancelled.
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.click("#cancel-form button")
    assert sorted(_statuses(ctx, job_ids)) == ["failed", "running", "running"]
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel-form button")
    page.wait_for_selector(".flash")
    assert "Cancelled 2 job(s)" in page.inner_text(".flash")
    assert sorted(_statuses(ctx, job_ids)) == ["cancelled", "cancelled", "failed"]
    # Nothing is unfinished now: no cancel button.
    assert page.locator("#cancel-form").count() == 0
    assert "Cancel unfinished jobs" not in page.inner_text("main")
    assert watched.problems == []


def test_a_finished_submission_offers_no_cancel(watched: Watched, live_server: LiveServer) -> None:
    broken = live_server.seeded.submissions["broken-model"]
    page = watched.page
    sign_in(page, live_server.url, "alice", PASSWORD, f"/ui/submissions/{broken}")
    assert page.locator(".job").count() >= 2
    assert "Cancel unfinished jobs" not in page.inner_text("main")
    assert "Re-run failed and cancelled" in page.inner_text("main")
    assert watched.problems == []
