"""The admin's journey in headless Chromium against a real ``evalboard serve`` (issue 19),
at desktop and mobile sizes, and the attacks on the admin pages, held: a non-admin, a
forged session, a stale session, a form without its CSRF token and a NUL in a field all
change nothing."""

from __future__ import annotations

import base64
import json
import time
from contextlib import closing
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from itsdangerous import TimestampSigner
from sqlalchemy import select

from datasets_registry import list_datasets
from evalboard.core.context import Context
from evalboard.core.tables import ApiToken, Job, RoleGrant, Submission, User
from leaderboard.accounts import create_token
from tests.helpers.browser import SIZES, page_at, sign_in
from tests.helpers.journeys import check_page, signed_in
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import PASSWORD, TASK

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PAGES = ["/ui/admin", "/ui/admin/users", "/ui/admin/tokens", "/ui/admin/quotas"]
PAGES += ["/ui/admin/jobs", "/ui/admin/jobs?status=failed", "/ui/admin/failures"]


def _held_job(ctx: Context, name: str) -> int:
    """A running job that a worker elsewhere holds for an hour (the server leaves it)."""
    now = datetime.now(UTC)
    with ctx.db.session() as session:
        bob = session.scalar(select(User.id).where(User.name == "bob"))
        submission = Submission(
            task_id=TASK,
            user_id=bob,
            name=name,
            bundle_sha256="3" * 64,
            artifact_key=f"bundles/{name}.tar.gz",
            manifest={"name": name, "task": TASK, "runtime": "python"},
        )
        session.add(submission)
        session.flush()
        job = Job(
            submission_id=submission.id,
            dataset_id=list_datasets(ctx, TASK)[0].id,
            status="running",
            started_at=now,
            lease_owner="a-worker-elsewhere",
            lease_expires_at=now + timedelta(hours=1),
        )
        session.add(job)
        session.flush()
        return job.id


def _job(ctx: Context, job_id: int) -> Job:
    with ctx.db.session() as session:
        job = session.get(Job, job_id)
        assert job is not None
        return job


def _grants(ctx: Context, name: str) -> set[tuple[str, str | None]]:
    with ctx.db.session() as session:
        user_id = session.scalar(select(User.id).where(User.name == name))
        return {
            (g.role, g.task_id)
            for g in session.scalars(select(RoleGrant).where(RoleGrant.user_id == user_id))
        }


@pytest.mark.parametrize("size", SIZES)
def test_the_admins_journey(browser: Any, live_server: LiveServer, size: str) -> None:
    base, ctx = live_server.url, live_server.seeded.ctx
    with page_at(browser, size) as watched:
        page = watched.page
        sign_in(page, base, "admin", PASSWORD, f"/ui/tasks/{TASK}")
        page.click("header a[href='/ui/admin']")
        page.wait_for_url("**/ui/admin")
        check_page(watched, f"admin overview ({size})")
        assert "failed" in page.inner_text("#job-counts")

        # Users and roles: grant, a bad grant answered beside its form, revoke.
        page.click("nav.task-links a[href='/ui/admin/users']")
        page.wait_for_url("**/ui/admin/users")
        check_page(watched, f"users ({size})")
        carol = page.locator("tr[data-user='carol']")
        carol.locator(".grant-form select[name=role]").select_option("annotator")
        carol.locator(".grant-form input[name=task]").fill("nope")
        carol.locator(".grant-form button").click()
        page.wait_for_selector("#grant-error")
        assert "nope" in page.inner_text("#grant-error")
        carol = page.locator("tr[data-user='carol']")
        kept = carol.locator(".grant-form input[name=task]").input_value()
        assert kept == "nope", "the input is kept"
        assert carol.locator(".grant-form select[name=role]").input_value() == "annotator"
        check_page(watched, f"users with an error ({size})")
        carol.locator(".grant-form input[name=task]").fill(TASK)
        carol.locator(".grant-form button").click()
        page.wait_for_selector(".flash")
        assert ("annotator", TASK) in _grants(ctx, "carol")
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator("tr[data-user='carol'] li", has_text="annotator").locator("button").click()
        page.wait_for_selector(".flash")
        assert ("annotator", TASK) not in _grants(ctx, "carol")

        # Tokens: bob's token revoked here stops working.
        token, row = create_token(ctx, "bob", label=f"bob-{size}")
        page.click("nav.task-links a[href='/ui/admin/tokens']")
        page.wait_for_url("**/ui/admin/tokens")
        check_page(watched, f"tokens ({size})")
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator(f"#tokens tr[data-id='{row.id}'] button").click()
        page.wait_for_selector(".flash")
        gone = httpx.get(f"{base}/users/me", headers={"Authorization": f"Bearer {token}"})
        assert gone.status_code == 401

        # Quotas: the limits in force and each user's use today.
        page.click("nav.task-links a[href='/ui/admin/quotas']")
        page.wait_for_url("**/ui/admin/quotas")
        check_page(watched, f"quotas ({size})")
        assert str(ctx.settings.daily_upload_quota) in page.inner_text("#limits")
        assert page.locator("#usage tr[data-user='alice']").count() == 1

        # The queue: filter, retry a failed job, cancel a running one (asked first).
        page.click("nav.task-links a[href='/ui/admin/jobs']")
        page.wait_for_url("**/ui/admin/jobs")
        check_page(watched, f"jobs ({size})")
        page.select_option("#status-filter", "failed")
        page.click("#job-filter button")
        page.wait_for_url("**/ui/admin/jobs?status=failed")
        statuses = page.locator("#jobs tbody .status").all_inner_texts()
        assert statuses and set(statuses) == {"failed"}
        first = page.locator("#jobs tbody tr").first
        failed_id = int(first.get_attribute("data-job") or 0)
        before = _job(ctx, failed_id)
        first.locator("button").click()
        page.wait_for_selector(".flash")
        assert "queued again" in page.inner_text(".flash")
        deadline = time.monotonic() + 60
        while (now := _job(ctx, failed_id)).status == "failed" and (
            now.finished_at == before.finished_at
        ):
            assert time.monotonic() < deadline, "the retried job never went back to the queue"
            time.sleep(0.2)
        held = _held_job(ctx, f"held-{size}")
        page.goto(f"{base}/ui/admin/jobs?status=running")
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator(f"#jobs tr[data-job='{held}'] button").click()
        page.wait_for_selector(".flash")
        assert _job(ctx, held).status == "cancelled"

        page.click("nav.task-links a[href='/ui/admin/failures']")
        page.wait_for_url("**/ui/admin/failures")
        check_page(watched, f"failures ({size})")
        assert "oom" in page.inner_text("#failures")
        watched.assert_clean(f"the admin's journey ({size})")


def test_only_admins_reach_the_admin_pages(live_server: LiveServer) -> None:
    base = live_server.url
    with httpx.Client(base_url=base) as anonymous:
        for path in PAGES:
            away = anonymous.get(path)
            assert away.status_code == 303 and away.headers["location"].startswith("/ui/login")
    alice, _ = signed_in(base, "alice", PASSWORD)
    with closing(alice):
        for path in PAGES:
            refused = alice.get(path)
            assert refused.status_code == 403, path
            assert "Not allowed" in refused.text and "Only an admin" in refused.text
    admin, _ = signed_in(base, "admin", PASSWORD)
    with closing(admin):
        for path in PAGES:
            assert admin.get(path).status_code == 200, path


def _forged_cookie(secret: str, session: dict[str, Any]) -> str:
    data = base64.b64encode(json.dumps(session).encode())
    return TimestampSigner(secret).sign(data).decode()


def _state(ctx: Context, job_id: int, token_id: int) -> tuple[Any, ...]:
    """What the admin forms could change: carol's roles, the token, the job."""
    with ctx.db.session() as session:
        token = session.get(ApiToken, token_id)
    return (frozenset(_grants(ctx, "carol")), token is not None, _job(ctx, job_id).status)


def test_admin_forms_change_nothing_without_an_admin_and_a_csrf_token(
    live_server: LiveServer,
) -> None:
    base, ctx = live_server.url, live_server.seeded.ctx
    held = _held_job(ctx, "held-attacked")
    _, token = create_token(ctx, "carol", label="attacked")
    posts = [
        ("/ui/admin/users/carol/grant", {"role": "owner", "task": TASK}),
        ("/ui/admin/users/carol/revoke", {"role": "researcher", "task": ""}),
        (f"/ui/admin/tokens/{token.id}/revoke", {}),
        (f"/ui/admin/jobs/{held}/cancel", {}),
    ]
    before = _state(ctx, held, token.id)

    def refused(client: httpx.Client, csrf: str | None, why: str) -> None:
        for path, fields in posts:
            data = {**fields, **({"csrf_token": csrf} if csrf is not None else {})}
            answer = client.post(path, data=data)
            assert answer.status_code in (401, 403), f"{why}: {path} -> {answer.status_code}"
            assert _state(ctx, held, token.id) == before, f"{why} changed something: {path}"

    alice, alice_csrf = signed_in(base, "alice", PASSWORD)
    with closing(alice):
        refused(alice, alice_csrf, "a researcher")
    admin, admin_csrf = signed_in(base, "admin", PASSWORD)
    with closing(admin):
        refused(admin, None, "an admin's post without its CSRF token")
        refused(admin, "not-the-token", "an admin's post with a wrong CSRF token")
        # A NUL in a field: the error page, as a 422, and nothing stored.
        nul = admin.post(
            "/ui/admin/users/carol/grant",
            data={"csrf_token": admin_csrf, "role": "owner", "task": f"{TASK}\x00"},
        )
        assert nul.status_code == 422 and "<html" in nul.text and "NUL" in nul.text
        assert "Back to the form" in nul.text
        assert _state(ctx, held, token.id) == before
        # The same admin's session once they signed out: stale, so anonymous.
        stale_cookie = admin.cookies["evalboard_session"]
        assert admin.post("/ui/logout", data={"csrf_token": admin_csrf}).status_code == 303
    with httpx.Client(base_url=base, cookies={"evalboard_session": stale_cookie}) as stale:
        refused(stale, admin_csrf, "a stale admin session")
    # A session cookie signed with another key, claiming to be the admin.
    with ctx.db.session() as session:
        user = session.scalar(select(User).where(User.name == "admin"))
        assert user is not None
        claim = {"user_id": user.id, "version": user.session_version, "since": int(time.time())}
    forged = _forged_cookie("not-the-servers-key", {**claim, "csrf": "forged"})
    with httpx.Client(base_url=base, cookies={"evalboard_session": forged}) as attacker:
        refused(attacker, "forged", "a forged session")
        assert attacker.get("/ui/admin/users").status_code == 303
