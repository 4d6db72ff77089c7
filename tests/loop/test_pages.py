"""The loop's pages over HTTP (sessions and CSRF as a browser sends them; a fake target)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
from fastapi import FastAPI

from datasets_registry import create_task
from evalboard.core.context import Context
from evalboard.core.states import Role
from leaderboard import create_app
from leaderboard.accounts import create_user, grant_role
from leaderboard.loop import TargetPool, round_vmer, verdicts_of
from tests.helpers.tasks import sentiment_spec
from tests.loop.conftest import add_submission
from tests.loop.fakes import FakeFactory

pytestmark = pytest.mark.anyio
PASSWORD = "correct-horse-battery"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def app(ctx: Context) -> AsyncIterator[FastAPI]:
    owner = create_user(ctx, "owner", password=PASSWORD)
    create_task(ctx, sentiment_spec(), owner_id=owner.id)
    grant_role(ctx, "owner", Role.OWNER, task_id="sentiment")
    for name in ("alice", "val1", "val2", "val3"):
        create_user(ctx, name, password=PASSWORD, roles=(Role.ANNOTATOR,))
    create_user(ctx, "rita", password=PASSWORD)
    add_submission(ctx, "sentiment", "keyword")
    application = create_app(ctx)
    application.state.target_pool = TargetPool(FakeFactory())
    yield application
    application.state.target_pool.close()


@asynccontextmanager
async def _signed_in(app: FastAPI, name: str) -> AsyncIterator[tuple[httpx.AsyncClient, str]]:
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    ) as client:
        yield client, await _sign_in(client, name)


async def _sign_in(client: httpx.AsyncClient, name: str) -> str:
    page = await client.get("/ui/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token is not None
    response = await client.post(
        "/ui/login",
        data={"name": name, "password": PASSWORD, "csrf_token": token.group(1), "next": "/ui"},
    )
    assert response.status_code == 303, response.text
    home = await client.get("/ui")
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', home.text)
    assert csrf is not None
    return csrf.group(1)


async def test_owner_opens_and_closes_rounds_annotators_write_and_validate(
    app: FastAPI, ctx: Context
) -> None:
    async with _signed_in(app, "owner") as (owner, owner_csrf):
        page = await owner.get("/ui/tasks/sentiment/rounds")
        assert page.status_code == 200 and "No rounds yet" in page.text
        opened = await owner.post(
            "/ui/tasks/sentiment/rounds", data={"csrf_token": owner_csrf, "submission_ids": "1"}
        )
        assert opened.status_code == 303
        page = await owner.get("/ui/tasks/sentiment/rounds")
        assert "Round 1 is open with targets 1" in page.text
        assert "Close into dataset round-1" in page.text

    async with _signed_in(app, "alice") as (alice, alice_csrf):
        written = await alice.post(
            "/ui/tasks/sentiment/collect",
            data={
                "csrf_token": alice_csrf,
                "in_statement": "Great, it rained all week.",
                "label": "negative",
                "explanation": "",
            },
        )
        assert written.status_code == 200
        assert (
            "You fooled the model!" in written.text and 'id="prediction">positive' in written.text
        )
        refused = await alice.post(
            "/ui/tasks/sentiment/collect", data={"in_statement": "x", "label": "negative"}
        )
        assert refused.status_code == 403  # no CSRF token

    for name in ("val1", "val2", "val3"):
        async with _signed_in(app, name) as (validator, csrf):
            page = await validator.get("/ui/tasks/sentiment/validate")
            assert "Great, it rained all week." in page.text
            example_id = re.search(r"/ui/examples/(\d+)/validate", page.text)
            assert example_id is not None
            done = await validator.post(
                f"/ui/examples/{example_id.group(1)}/validate",
                data={"csrf_token": csrf, "verdict": "correct"},
            )
            assert done.status_code == 303
            after = await validator.get("/ui/tasks/sentiment/validate")
            assert "Nothing is waiting for your verdict" in after.text
    assert round_vmer(ctx, "sentiment", 1).verified == 1

    async with _signed_in(app, "owner") as (owner, owner_csrf):
        # Before the irreversible close: what it would write, and a question to confirm.
        page = await owner.get("/ui/tasks/sentiment/rounds")
        preview = re.search(
            r'<div class="closing-preview" id="closing-preview">(.*?)</div>', page.text, re.S
        )
        assert preview is not None
        shown = " ".join(preview.group(1).split())
        assert "dataset round-1</strong>: 1 verified example(s), labels negative 1 (100%)" in shown
        assert "Great, it rained all week. → <strong>negative</strong>" in shown
        question = "Close round 1 into dataset round-1 with 1 verified example(s) (negative 1)?"
        assert f'data-confirm="{question}' in page.text
        refused = await owner.post(
            "/ui/tasks/sentiment/rounds/1/close", data={"csrf_token": owner_csrf, "weight": "x"}
        )
        assert refused.status_code == 422 and "is not a number" in refused.text
        closed = await owner.post(
            "/ui/tasks/sentiment/rounds/1/close", data={"csrf_token": owner_csrf, "weight": ""}
        )
        assert closed.status_code == 303
        page = await owner.get("/ui/tasks/sentiment/rounds")
        # One example: min(1, 1/500) by default.
        assert "Round 1 closed: dataset round-1 (1 examples, weight 0.002)" in page.text
        assert "100.0%" in page.text  # vMER: 1 verified of 1 collected


async def test_only_annotators_write_and_only_owners_manage_rounds(app: FastAPI) -> None:
    async with _signed_in(app, "rita") as (rita, _):
        assert (await rita.get("/ui/tasks/sentiment/collect")).status_code == 403
        assert (await rita.get("/ui/tasks/sentiment/rounds")).status_code == 403
    anonymous = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://testserver"
    )
    async with anonymous:
        away = await anonymous.get("/ui/tasks/sentiment/collect")
        assert away.status_code == 303 and away.headers["location"].startswith("/ui/login")
        api = await anonymous.post("/tasks/sentiment/rounds", json={"top": 1})
        assert api.status_code == 401


async def test_a_missing_label_or_blank_input_gives_the_form_again_with_the_input_kept(
    app: FastAPI, ctx: Context
) -> None:
    async with _signed_in(app, "owner") as (owner, owner_csrf):
        opened = await owner.post(
            "/ui/tasks/sentiment/rounds", data={"csrf_token": owner_csrf, "submission_ids": "1"}
        )
        assert opened.status_code == 303
    async with _signed_in(app, "alice") as (alice, csrf):
        page = await alice.get("/ui/tasks/sentiment/collect")
        # No label is chosen for the annotator: the placeholder is selected and not sendable.
        assert re.search(r'<option value="" disabled selected>', page.text)
        refused = await alice.post(
            "/ui/tasks/sentiment/collect",
            data={
                "csrf_token": csrf,
                "in_statement": "The service was fine, I suppose.",
                "explanation": "hedged",
            },
        )
        assert refused.status_code == 200  # the form again, not an error page
        assert 'id="collect-error">Choose the label you intend' in refused.text
        assert ">The service was fine, I suppose.</textarea>" in refused.text
        assert ">hedged</textarea>" in refused.text
        blank = await alice.post(
            "/ui/tasks/sentiment/collect",
            data={"csrf_token": csrf, "in_statement": "   ", "label": "neutral"},
        )
        assert blank.status_code == 200 and 'id="collect-error"' in blank.text
        assert "<option selected>neutral</option>" in blank.text
    assert round_vmer(ctx, "sentiment", 1).collected == 0


async def test_the_owner_sees_earlier_votes_and_an_override_is_recorded_as_such(
    app: FastAPI, ctx: Context
) -> None:
    async with _signed_in(app, "owner") as (owner, owner_csrf):
        await owner.post(
            "/ui/tasks/sentiment/rounds", data={"csrf_token": owner_csrf, "submission_ids": "1"}
        )
    async with _signed_in(app, "alice") as (alice, csrf):
        written = await alice.post(
            "/ui/tasks/sentiment/collect",
            data={
                "csrf_token": csrf,
                "in_statement": "Great, it rained all week.",
                "label": "negative",
            },
        )
        assert "You fooled the model!" in written.text
    async with _signed_in(app, "val1") as (val1, csrf):
        page = await val1.get("/ui/tasks/sentiment/validate")
        assert 'id="votes"' not in page.text  # earlier votes are the owner's to see
        example_id = int(re.search(r"/ui/examples/(\d+)/validate", page.text).group(1))  # type: ignore[union-attr]
        await val1.post(
            f"/ui/examples/{example_id}/validate", data={"csrf_token": csrf, "verdict": "incorrect"}
        )
    async with _signed_in(app, "owner") as (owner, owner_csrf):
        page = await owner.get("/ui/tasks/sentiment/validate")
        votes = re.search(r'<div id="votes">(.*?)</div>', page.text, re.S)
        assert votes is not None and "val1: <strong>incorrect</strong>" in votes.group(1)
        settled = await owner.post(
            f"/examples/{example_id}/validations",
            json={"verdict": "correct"},
            headers={"X-CSRF-Token": owner_csrf},
        )
        assert settled.status_code == 201, settled.text
        assert settled.json()["status"] == "verified"
        assert settled.json()["owner_verdict"] == "correct"
        assert settled.json()["verdicts"] == {"incorrect": 1, "correct": 1}
    recorded = {(v.verdict, v.by_owner) for v in verdicts_of(ctx, example_id)}
    assert recorded == {("incorrect", False), ("correct", True)}
