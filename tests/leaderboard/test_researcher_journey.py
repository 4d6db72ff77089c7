"""The researcher's and the task owner's journeys in headless Chromium against one real
``evalboard serve`` (issue 19), at desktop and mobile sizes: no console error, no failed
request, no serious axe-core violation on any page they visit.

Researcher: the name in the header leads to "my submissions" and the token page (a token
made there is shown once, works against the API, and stops working when revoked); a model
is uploaded from the browser in chunks and its submission page follows the jobs in place.
Upload resumes: after a dropped chunk by itself, after a reload from the chunks the server
has. Task owner: the task page links to rounds, collection, validation and manage.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select, update

from datasets_registry import list_datasets
from evalboard.core.tables import Job, Submission, Upload, User
from leaderboard.uploads import CHUNK_SIZE
from submission_sandbox import package_bundle
from tests.helpers.browser import SIZES, page_at, sign_in
from tests.helpers.journeys import check_page
from tests.leaderboard.conftest import LiveServer
from tests.leaderboard.seeding import PASSWORD, TASK
from tests.leaderboard.test_uploads import HANDLER

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _bundle(root: Path, name: str, weight_bytes: int) -> Path:
    """A real (always-positive) model bundle archive; random weights do not compress."""
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "evalboard.yaml").write_text(
        f"name: {name}\ntask: {TASK}\nruntime: python\nentry: handler:Model\n"
    )
    (folder / "handler.py").write_text(HANDLER)
    (folder / "weights.bin").write_bytes(random.Random(name).randbytes(weight_bytes))
    archive, _ = package_bundle(folder, root / f"{name}.tar.gz")
    return archive


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bundles")
    return {
        "small": _bundle(root, "web-upload", 20_000),
        # Three chunks: a resume has something to skip.
        "large": _bundle(root, "web-upload-large", 2 * CHUNK_SIZE + 300_000),
    }


@pytest.mark.parametrize("size", SIZES)
def test_the_researchers_journey(
    browser: Any, live_server: LiveServer, bundles: dict[str, Path], size: str
) -> None:
    base, ctx = live_server.url, live_server.seeded.ctx
    with page_at(browser, size) as watched:
        page = watched.page
        sign_in(page, base, "alice", PASSWORD, f"/ui/tasks/{TASK}")
        # The name in the header leads to the researcher's own pages.
        page.click("header a.who")
        page.wait_for_url("**/ui/me")
        check_page(watched, f"my submissions ({size})")
        mine = page.locator("#my-submissions tbody tr")
        names = mine.locator("td:nth-child(2) a").all_inner_texts()
        assert {"roberta-large", "bow-logreg", "broken-model"} <= set(names)
        broken = live_server.seeded.submissions["broken-model"]
        assert page.locator(f"tr[data-id='{broken}'] .status").inner_text() == "failed"
        assert "submissions used today" in page.inner_text("#quota")

        # A token: made on the page, shown once, works, and is gone once revoked.
        page.click("text=API tokens")
        page.wait_for_url("**/ui/me/tokens")
        check_page(watched, f"tokens ({size})")
        page.fill("#token-label", f"journey {size}")
        page.click("#token-form button[type=submit]")
        token = page.inner_text("#token-value").strip()
        assert token.startswith("eb_")
        check_page(watched, f"a new token ({size})")
        me = httpx.get(f"{base}/users/me", headers={"Authorization": f"Bearer {token}"})
        assert me.status_code == 200 and me.json()["name"] == "alice"
        page.goto(f"{base}/ui/me/tokens")
        assert token not in page.content(), "a token is shown only once"
        row = page.locator("#tokens tbody tr", has_text=f"journey {size}")
        page.once("dialog", lambda dialog: dialog.accept())
        row.locator("button").click()
        page.wait_for_selector(".flash")
        assert "revoked" in page.inner_text(".flash")
        assert page.locator("header a.who").inner_text() == "alice", "still signed in here"
        gone = httpx.get(f"{base}/users/me", headers={"Authorization": f"Bearer {token}"})
        assert gone.status_code == 401

        # Upload from the browser; the submission page follows its jobs in place.
        page.goto(f"{base}/ui/me")
        page.click(f"a[href='/ui/tasks/{TASK}/upload']")
        page.wait_for_url(f"**/ui/tasks/{TASK}/upload")
        check_page(watched, f"upload ({size})")
        page.set_input_files("#bundle-file", str(bundles["small"]))
        page.click("#upload-button")
        page.wait_for_url("**/ui/submissions/*", timeout=60_000)
        submission_id = int(page.url.rsplit("/", 1)[1])
        page.evaluate("window.notReloaded = true")
        page.locator("article.job .status.finished").first.wait_for(timeout=120_000)
        done = page.locator("article.job.finished .examples-done").first.inner_text()
        assert done.endswith("examples") and done.split()[0] == done.split()[2], done
        assert page.evaluate("window.notReloaded") is True, "the page reloaded"
        check_page(watched, f"submission ({size})")
        with ctx.db.session() as session:
            stored = session.get(Submission, submission_id)
            assert stored is not None and stored.name == "web-upload"
        watched.assert_clean(f"the researcher's journey ({size})")


def test_cards_follow_dataset_order_and_a_hidden_failure_says_its_log_is_withheld(
    browser: Any, live_server: LiveServer
) -> None:
    broken = live_server.seeded.submissions["broken-model"]
    with page_at(browser, "desktop") as watched:
        page = watched.page
        sign_in(page, live_server.url, "alice", PASSWORD, f"/ui/submissions/{broken}")
        cards = page.eval_on_selector_all("article.job", "cs => cs.map(c => c.dataset.dataset)")
        # Each original, then its perturbed copies (they were alphabetical: copies first).
        at = cards.index("test")
        assert cards[at : at + 3] == ["test", "fairness-test", "robustness-test"], cards
        hidden = page.locator("article.job", has=page.locator(".withheld"))
        assert hidden.count() == 3, "the hidden set and its two copies"
        assert "withheld" in hidden.first.inner_text()
        assert hidden.first.locator("pre.log").count() == 0
        visible = page.locator("article.job[data-dataset='test']")
        assert visible.locator(".withheld").count() == 0
        assert "Killed" in (visible.locator("pre.log").text_content() or "")
        check_page(watched, "a failed submission")
        watched.assert_clean()


def test_progress_is_examples_done_of_the_total_and_updates_in_place(
    browser: Any, live_server: LiveServer
) -> None:
    ctx = live_server.seeded.ctx
    now = datetime.now(UTC)
    with ctx.db.session() as session:
        alice = session.scalar(select(User.id).where(User.name == "alice"))
        submission = Submission(
            task_id=TASK,
            user_id=alice,
            name="progressing",
            bundle_sha256="2" * 64,
            artifact_key="bundles/progressing.tar.gz",
            manifest={"name": "progressing", "task": TASK, "runtime": "python"},
        )
        session.add(submission)
        session.flush()
        dataset = list_datasets(ctx, TASK)[0]
        job = Job(
            submission_id=submission.id,
            dataset_id=dataset.id,
            status="running",
            started_at=now,
            lease_owner="elsewhere",  # a worker of its own holds it for an hour
            lease_expires_at=now + timedelta(hours=1),
            examples_done=12,
            examples_total=60,
            progress=0.2,
        )
        session.add(job)
        session.flush()
        submission_id, job_id = submission.id, job.id
    with page_at(browser, "mobile") as watched:
        page = watched.page
        sign_in(page, live_server.url, "alice", PASSWORD, f"/ui/submissions/{submission_id}")
        assert page.inner_text("article.job .examples-done") == "12 of 60 examples"
        page.evaluate("window.notReloaded = true")
        with ctx.db.session() as session:
            session.execute(
                update(Job).where(Job.id == job_id).values(examples_done=45, progress=0.75)
            )
        page.wait_for_function(
            "() => document.querySelector('article.job .examples-done').textContent"
            " === '45 of 60 examples'",
            timeout=15_000,
        )
        assert page.locator("article.job progress").evaluate("bar => bar.value") == 0.75
        assert page.evaluate("window.notReloaded") is True
        watched.assert_clean()


def _offset(url: str) -> int:
    return int(url.rsplit("offset=", 1)[1])


def test_an_upload_goes_on_after_a_reload_and_after_a_dropped_chunk(
    browser: Any, live_server: LiveServer, bundles: dict[str, Path]
) -> None:
    base, ctx = live_server.url, live_server.seeded.ctx
    archive = bundles["large"]
    with page_at(browser, "desktop") as watched:
        page = watched.page
        sign_in(page, base, "bob", PASSWORD, f"/ui/tasks/{TASK}/upload")
        # First try: the connection drops after the first chunk; then the page is reloaded.
        cut: list[int] = []

        def only_the_first_chunk(route: Any) -> None:
            if _offset(route.request.url) == 0:
                route.continue_()
            else:
                cut.append(_offset(route.request.url))
                route.abort("connectionreset")

        page.route("**/uploads/*?offset=*", only_the_first_chunk)
        page.set_input_files("#bundle-file", str(archive))
        page.click("#upload-button")
        while not cut:
            page.wait_for_timeout(50)
        page.unroute("**/uploads/*?offset=*")
        page.goto(f"{base}/ui/tasks/{TASK}/upload")
        with ctx.db.session() as session:
            upload = session.scalar(
                select(Upload).where(Upload.filename == archive.name, Upload.state == "open")
            )
            assert upload is not None and upload.received == CHUNK_SIZE
        assert archive.name in page.inner_text("#unfinished")

        # Second try, the same file chosen again: only the rest is sent, and a chunk whose
        # connection drops is sent again by itself.
        sent: list[int] = []
        dropped: list[int] = []

        def drop_one(route: Any) -> None:
            offset = _offset(route.request.url)
            sent.append(offset)
            if not dropped and offset > CHUNK_SIZE:
                dropped.append(offset)
                route.abort("connectionreset")
            else:
                route.continue_()

        page.route("**/uploads/*?offset=*", drop_one)
        page.set_input_files("#bundle-file", str(archive))
        page.click("#upload-button")
        page.wait_for_url("**/ui/submissions/*", timeout=120_000)
        assert sent[0] == CHUNK_SIZE, f"resumed at {sent[0]}, the server had {CHUNK_SIZE}"
        assert dropped == [2 * CHUNK_SIZE] and sent.count(2 * CHUNK_SIZE) == 2, sent
        with ctx.db.session() as session:
            done = session.get(Upload, upload.id)
            assert done is not None and done.state == "completed"
            assert done.submission_id == int(page.url.rsplit("/", 1)[1])


@pytest.mark.parametrize("size", SIZES)
def test_the_task_owners_journey(browser: Any, live_server: LiveServer, size: str) -> None:
    base = live_server.url
    with page_at(browser, size) as watched:
        page = watched.page
        sign_in(page, base, "owner", PASSWORD, f"/ui/tasks/{TASK}")
        links = page.locator("nav.task-links a")
        hrefs = set(links.evaluate_all("as => as.map(a => a.getAttribute('href'))"))
        for place in ("rounds", "collect", "validate", "manage"):
            assert f"/ui/tasks/{TASK}/{place}" in hrefs, f"no link to {place}: {hrefs}"
        assert f"/ui/tasks/{TASK}/upload" in hrefs
        for place in ("manage", "rounds", "validate", "collect"):
            page.click(f"nav.task-links a[href='/ui/tasks/{TASK}/{place}']")
            page.wait_for_url(f"**/ui/tasks/{TASK}/{place}")
            check_page(watched, f"the owner's {place} page ({size})")
            page.goto(f"{base}/ui/tasks/{TASK}")
        watched.assert_clean(f"the owner's journey ({size})")
