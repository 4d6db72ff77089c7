"""The annotator's journey in headless Chromium against a real ``evalboard serve`` whose
round's target is a real model (VADER, in the local sandbox), at desktop and mobile sizes
(issue 19): whitespace-only input answered on the form, an example written, edited and
another retracted, a validator who sees what is left, skips one and gets it back. And the
attacks: another user's example, a judged example, a post without its CSRF token, a NUL.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select

from evalboard.core.context import Context
from evalboard.core.tables import Example
from leaderboard.loop import open_round
from tests.conftest import make_settings
from tests.helpers.browser import SIZES, page_at, sign_in
from tests.helpers.journeys import check_page, signed_in
from tests.leaderboard.conftest import serve
from tests.loop.platform import Platform, build_platform

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PASSWORD = "correct-horse-battery"
TASK = "sentiment"


@dataclass(frozen=True)
class Served:
    url: str
    platform: Platform

    @property
    def ctx(self) -> Context:
        return self.platform.ctx


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One ``evalboard serve`` for the module, over a platform with two real models
    evaluated and a round open with VADER as its target."""
    tmp = tmp_path_factory.mktemp("annotator")
    settings = make_settings(tmp)
    ctx = Context.from_settings(settings)
    platform = build_platform(ctx, tmp)
    open_round(ctx, TASK, submission_ids=[platform.submissions["vader"]])
    try:
        with serve(settings.data_dir, tmp / "server.log") as (url, _):
            yield Served(url, platform)
    finally:
        ctx.db.dispose()


def _example(ctx: Context, example_id: int) -> Example:
    with ctx.db.session() as session:
        example = session.get(Example, example_id)
        assert example is not None
        return example


def _write(page: Any, text: str, label: str) -> int:
    page.fill("#in_statement", text)
    page.select_option("#label", label)
    page.click("#submit-example")
    page.wait_for_selector("#result")
    return int(
        page.locator("#collect-form ~ section tbody tr").first.get_attribute("data-example") or 0
    )


def _queue_size(served: Served, who: str) -> int:
    token = served.platform.tokens[who]
    answer = httpx.get(
        f"{served.url}/tasks/{TASK}/validations/queue",
        params={"limit": 100},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert answer.status_code == 200, answer.text
    return len(answer.json())


@pytest.mark.parametrize("size", SIZES)
def test_the_annotators_journey(browser: Any, served: Served, size: str) -> None:
    base, ctx = served.url, served.ctx
    with page_at(browser, size) as watched:
        page = watched.page
        sign_in(page, base, "alice", PASSWORD, f"/ui/tasks/{TASK}/collect")
        check_page(watched, f"collect ({size})")
        # Whitespace only: answered on the form, the choice kept, nothing stored.
        with ctx.db.session() as session:
            before = session.scalar(select(func.count(Example.id)))
        page.fill("#in_statement", "   \n  ")
        page.select_option("#label", "negative")
        page.click("#submit-example")
        page.wait_for_selector("#collect-error")
        assert "non-empty" in page.inner_text("#collect-error")
        assert page.input_value("#label") == "negative"
        check_page(watched, f"collect with an error ({size})")
        with ctx.db.session() as session:
            assert session.scalar(select(func.count(Example.id))) == before

        # Two examples that fool VADER: one edited, one retracted.
        first = _write(page, f"Great, it rained all week ({size}).", "negative")
        assert "You fooled the model!" in page.inner_text("#verdict")
        check_page(watched, f"a result ({size})")
        second = _write(page, f"Wonderful, the flight was cancelled ({size}).", "negative")
        assert _example(ctx, second).status == "pending"
        page.click(f"a[href='/ui/examples/{first}/edit']")
        page.wait_for_url(f"**/ui/examples/{first}/edit")
        check_page(watched, f"edit ({size})")
        assert "rained" in page.input_value("#in_statement")
        page.fill("#in_statement", f"Great, it rained all week and the roof leaked ({size}).")
        page.click("#save-example")
        page.wait_for_selector("#result")
        assert f"Example {first} edited" in page.inner_text("#verdict")
        assert "roof leaked" in _example(ctx, first).inputs["statement"]
        page.once("dialog", lambda dialog: dialog.accept())
        page.locator(f"tr[data-example='{second}'] button", has_text="Retract").click()
        page.wait_for_selector(".flash")
        assert _example(ctx, second).status == "retracted"
        assert page.locator(f"tr[data-example='{second}'] .status").inner_text() == "retracted"
        watched.assert_clean(f"the author's journey ({size})")

    with page_at(browser, size) as watched:
        page = watched.page
        sign_in(page, base, "val1", PASSWORD, f"/ui/tasks/{TASK}/validate")
        check_page(watched, f"validate ({size})")
        left = _queue_size(served, "val1")
        assert left >= 1
        assert page.inner_text("#queue-counts").startswith(f"{left} example")
        shown = page.locator("form[action$='/validate']").get_attribute("action") or ""
        page.click("#skip")
        page.wait_for_selector(".flash")
        assert f"{left - 1} example" in page.inner_text("#queue-counts")
        assert "(1 skipped)" in page.inner_text("#queue-counts")
        if left > 1:
            assert page.locator("form[action$='/validate']").get_attribute("action") != shown
        # Skipped by val1 only: it stays in val2's queue.
        assert _queue_size(served, "val2") >= 1
        check_page(watched, f"validate after a skip ({size})")
        page.click("#unskip")
        page.wait_for_selector(".flash")
        assert page.inner_text("#queue-counts").startswith(f"{left} example")
        watched.assert_clean(f"the validator's journey ({size})")


def _fooling(client: httpx.Client, csrf: str, text: str) -> int:
    written = client.post(
        f"/ui/tasks/{TASK}/collect",
        data={"csrf_token": csrf, "in_statement": text, "label": "negative", "explanation": ""},
    )
    assert "You fooled the model!" in written.text, written.text[-2000:]
    return int(written.text.split("/ui/examples/", 1)[1].split("/", 1)[0])


def test_an_example_is_edited_or_retracted_by_its_author_only_and_only_unjudged(
    served: Served,
) -> None:
    base, ctx = served.url, served.ctx
    alice, alice_csrf = signed_in(base, "alice", PASSWORD, f"/ui/tasks/{TASK}/collect")
    val1, val1_csrf = signed_in(base, "val1", PASSWORD, f"/ui/tasks/{TASK}/collect")
    with closing(alice), closing(val1):
        mine = _fooling(alice, alice_csrf, "Great, the museum burned down.")
        # Another annotator may neither retract nor edit it.
        for path, data in (
            (f"/ui/examples/{mine}/retract", {}),
            (f"/ui/examples/{mine}/edit", {"in_statement": "hijacked", "label": "positive"}),
        ):
            refused = val1.post(path, data={"csrf_token": val1_csrf, **data})
            assert refused.status_code == 403 and "author" in refused.text
            assert val1.get(f"/ui/examples/{mine}/edit").status_code == 403
        assert _example(ctx, mine).status == "pending"
        assert "museum" in _example(ctx, mine).inputs["statement"]
        # Without the form's CSRF token, its author may not either.
        forged = alice.post(f"/ui/examples/{mine}/retract", data={})
        assert forged.status_code == 403 and _example(ctx, mine).status == "pending"
        # Once judged, it is the validators' and stays as it is.
        judged = val1.post(
            f"/ui/examples/{mine}/validate", data={"csrf_token": val1_csrf, "verdict": "correct"}
        )
        assert judged.status_code == 303
        late = alice.post(f"/ui/examples/{mine}/retract", data={"csrf_token": alice_csrf})
        assert late.status_code == 409 and "verdict" in late.text
        assert _example(ctx, mine).status == "pending"


def test_a_nul_or_a_missing_csrf_token_stores_no_example(served: Served) -> None:
    base, ctx = served.url, served.ctx
    alice, csrf = signed_in(base, "alice", PASSWORD, f"/ui/tasks/{TASK}/collect")
    with closing(alice):
        with ctx.db.session() as session:
            before = session.scalar(select(func.count(Example.id)))
        nul = alice.post(
            f"/ui/tasks/{TASK}/collect",
            data={"csrf_token": csrf, "in_statement": "Great\x00 day", "label": "negative"},
        )
        assert nul.status_code == 422 and "NUL" in nul.text and "Back to the form" in nul.text
        bare = alice.post(
            f"/ui/tasks/{TASK}/collect", data={"in_statement": "Great day", "label": "negative"}
        )
        assert bare.status_code == 403 and "CSRF" in bare.text
        with ctx.db.session() as session:
            assert session.scalar(select(func.count(Example.id))) == before
