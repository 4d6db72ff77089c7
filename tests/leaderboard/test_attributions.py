"""Word attributions over the API, computed by real bundles through the local sandbox's
contract: a collected example (its author, the owner) and a drill-down example (anyone
signed in who may see it); cached; capped in words, characters and concurrency."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from datasets_registry import add_dataset
from evalboard.core.context import Context
from evalboard.core.states import Access
from evalboard.core.tables import Submission
from evaluator import queue_missing_jobs
from leaderboard import create_app
from leaderboard.attributions import AttributionLimits, Attributor
from leaderboard.loop import TargetPool, open_round
from tests.conftest import make_settings
from tests.helpers.tasks import write_jsonl
from tests.leaderboard.conftest import make_client
from tests.loop.fakes import FakeFactory, keyword_answer
from tests.loop.platform import STATIC, Platform, build_platform, run_queued_jobs

pytestmark = pytest.mark.anyio

SARCASM = "Oh great, the flight is delayed again."
LONG = "The soup was cold and the waiter was rude, " * 2400  # 103,200 characters: about 100 KB


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Platform]:
    """VADER and the keyword model evaluated on the static set and a hidden one; a round
    open with the keyword model as target; a dataset with one 100 KB example (queued)."""
    tmp = tmp_path_factory.mktemp("attributions")
    ctx = Context.from_settings(make_settings(tmp))
    built = build_platform(ctx, tmp)
    rows = [{"uid": f"h{uid}", "statement": text, "label": label} for uid, text, label in STATIC]
    path = write_jsonl(tmp / "hidden.jsonl", rows)
    add_dataset(
        ctx, task_id="sentiment", name="hidden", path=path, access=Access.HIDDEN, perturb=False
    )
    queue_missing_jobs(ctx, "sentiment")
    run_queued_jobs(ctx)
    long_rows = [{"uid": "long", "statement": LONG, "label": "negative"}]
    path = write_jsonl(tmp / "long.jsonl", long_rows)
    add_dataset(ctx, task_id="sentiment", name="long", path=path, perturb=False)
    queue_missing_jobs(ctx, "sentiment")  # never run: a job is enough for the drill-down
    open_round(ctx, "sentiment", submission_ids=[built.submissions["keyword"]])
    yield built
    ctx.db.dispose()


@pytest.fixture(scope="module")
def app(platform: Platform) -> Iterator[FastAPI]:
    application = create_app(platform.ctx)
    yield application
    application.state.target_pool.close()


def _as(app: FastAPI, platform: Platform, who: str | None) -> httpx.AsyncClient:
    return make_client(app, platform.tokens[who] if who else None)


@pytest.fixture
async def alice(app: FastAPI, platform: Platform) -> AsyncIterator[httpx.AsyncClient]:
    async with _as(app, platform, "alice") as client:
        yield client


async def _collect(client: httpx.AsyncClient, statement: str) -> dict[str, Any]:
    response = await client.post(
        "/tasks/sentiment/rounds/1/examples",
        json={"inputs": {"statement": statement}, "label": "negative"},
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def _scores(body: dict[str, Any]) -> dict[str, float]:
    (field,) = body["fields"]
    return {w["text"]: w["score"] for w in field["words"]}


async def test_a_collected_example_is_explained_by_its_target_through_the_contract(
    alice: httpx.AsyncClient,
) -> None:
    example = await _collect(alice, SARCASM)
    response = await alice.post(f"/examples/{example['id']}/attributions")
    assert response.status_code == 200, response.text
    body = response.json()
    # The keyword model says positive (0.7) because of "great"; without it, neutral (0.15).
    assert (body["prediction"], body["probability"], body["output"]) == (
        "positive",
        0.7,
        "multiclass",
    )
    scores = _scores(body)
    assert scores.pop("great,") == pytest.approx(0.55)
    assert set(scores.values()) == {0.0}
    assert body["variants"] == 8 and body["cached"] is False
    assert "probability of the predicted label" in body["rule"]
    again = (await alice.post(f"/examples/{example['id']}/attributions")).json()
    assert again["cached"] is True and _scores(again) == _scores(body)


async def test_a_drilldown_example_is_explained_for_anyone_signed_in_who_may_see_it(
    app: FastAPI, platform: Platform
) -> None:
    vader = platform.submissions["vader"]
    url = f"/submissions/{vader}/examples/static/attributions"
    async with _as(app, platform, "val1") as client:
        response = await client.post(url, json={"uid": "s1"})
    assert response.status_code == 200, response.text
    body = response.json()
    (field,) = body["fields"]
    assert field["text"] == STATIC[0][1]
    assert [w["text"] for w in field["words"]] == STATIC[0][1].split()
    scores = _scores(body)
    # VADER's lexicon: "wonderful" and "loved" carry the positive answer, "the" nothing.
    assert scores["wonderful"] > 0.05 and scores["loved"] > 0.05
    assert scores["The"] <= 0.0 + 1e-9 and body["prediction"] == "positive"
    async with _as(app, platform, None) as anyone:
        assert (await anyone.post(url, json={"uid": "s1"})).status_code == 401
    async with _as(app, platform, "val1") as client:
        missing = await client.post(url, json={"uid": "nope"})
        hidden = await client.post(
            f"/submissions/{vader}/examples/hidden/attributions", json={"uid": "hs1"}
        )
    assert (missing.status_code, hidden.status_code) == (404, 404)
    async with _as(app, platform, "owner") as owner:
        shown = await owner.post(
            f"/submissions/{vader}/examples/hidden/attributions", json={"uid": "hs1"}
        )
    assert shown.status_code == 200, shown.text


async def test_only_the_author_and_the_owner_see_a_collected_examples_attribution(
    app: FastAPI, platform: Platform, alice: httpx.AsyncClient
) -> None:
    example = await _collect(alice, "What a wonderful way to lose my luggage.")
    url = f"/examples/{example['id']}/attributions"
    async with _as(app, platform, "val1") as other:
        assert (await other.post(url)).status_code == 403
    async with _as(app, platform, None) as anyone:
        assert (await anyone.post(url)).status_code == 401
    async with _as(app, platform, "owner") as owner:
        assert (await owner.post(url)).status_code == 200


async def test_another_users_unpublished_model_is_not_explained(
    app: FastAPI, platform: Platform
) -> None:
    keyword = platform.submissions["keyword"]  # rita's
    ctx = platform.ctx
    with ctx.db.session() as session:
        session.execute(update(Submission).where(Submission.id == keyword).values(published=False))
    try:
        url = f"/submissions/{keyword}/examples/static/attributions"
        async with _as(app, platform, "val1") as other:
            refused = await other.post(url, json={"uid": "s2"})
        async with _as(app, platform, "rita") as rita:
            mine = await rita.post(url, json={"uid": "s2"})
    finally:
        with ctx.db.session() as session:
            session.execute(
                update(Submission).where(Submission.id == keyword).values(published=True)
            )
    assert refused.status_code == 404 and "No submission" in refused.json()["detail"]
    assert mine.status_code == 200, mine.text


async def test_a_100_kb_input_is_refused_before_any_model_runs(
    app: FastAPI, platform: Platform
) -> None:
    vader = platform.submissions["vader"]
    url = f"/submissions/{vader}/examples/long/attributions"
    factory = FakeFactory()
    saved, app.state.target_pool = app.state.target_pool, TargetPool(factory)
    try:
        async with _as(app, platform, "val1") as client:
            long_input = await client.post(url, json={"uid": "long"})
            huge_body = await client.post(url, json={"uid": "x" * 100_000})
        async with _as(app, platform, None) as anyone:
            unsigned = await anyone.post(url, json={"uid": "x" * 100_000})
    finally:
        app.state.target_pool.close()
        app.state.target_pool = saved
    detail = long_input.json()["detail"]
    assert long_input.status_code == 400, detail
    assert f"{len(LONG):,} characters" in detail and "at most 20,000" in detail
    assert (huge_body.status_code, unsigned.status_code) == (422, 413)
    assert factory.made == []


async def test_more_words_than_the_cap_are_refused_with_the_counts(
    app: FastAPI, platform: Platform
) -> None:
    app.state.attributor = Attributor(platform.ctx, AttributionLimits(max_words=3))
    try:
        async with _as(app, platform, "val1") as client:
            response = await client.post(
                f"/submissions/{platform.submissions['vader']}/examples/static/attributions",
                json={"uid": "s3"},
            )
    finally:
        del app.state.attributor
    assert response.status_code == 400
    detail = response.json()["detail"]
    assert "has 8 words" in detail and "at most 3" in detail and "4 inputs" in detail


async def test_past_the_concurrency_cap_a_request_is_told_to_come_back(
    app: FastAPI, platform: Platform
) -> None:
    """One attribution runs (its model blocks); a second is 503 at once; later it works."""
    release = threading.Event()
    entered = threading.Event()

    def slow(example: dict[str, Any]) -> dict[str, Any]:
        entered.set()
        release.wait(10)
        return keyword_answer(example)

    vader = platform.submissions["vader"]
    saved = app.state.target_pool
    app.state.target_pool = TargetPool(FakeFactory({vader: slow}))
    app.state.attributor = Attributor(platform.ctx, AttributionLimits(max_concurrent=1))
    url = f"/submissions/{vader}/examples/static/attributions"
    try:
        async with _as(app, platform, "val1") as client:
            first = asyncio.ensure_future(client.post(url, json={"uid": "s4"}))
            while not entered.is_set():
                await asyncio.sleep(0.01)
            busy = await client.post(url, json={"uid": "s5"})
            release.set()
            done = await first
            later = await client.post(url, json={"uid": "s5"})
    finally:
        release.set()
        app.state.target_pool.close()
        app.state.target_pool = saved
        del app.state.attributor
    assert busy.status_code == 503 and "try again" in busy.json()["detail"]
    assert (done.status_code, later.status_code) == (200, 200)


def test_the_cache_is_per_submission_and_input_text(platform: Platform, tmp_path: Path) -> None:
    """The same text for the same model is answered from the store, without the model."""
    from datasets_registry import get_task

    task = get_task(platform.ctx, "sentiment")
    attributor = Attributor(platform.ctx)
    calls: list[int] = []

    def predict(batch: list[dict[str, Any]]) -> list[dict[str, Any]]:
        calls.append(len(batch))
        return [keyword_answer(x) for x in batch]

    text = {"statement": "A terrible, awful film."}
    first = attributor.attribute(submission_id=9001, task=task, inputs=text, predict=predict)
    again = attributor.attribute(submission_id=9001, task=task, inputs=text, predict=predict)
    other = attributor.attribute(submission_id=9002, task=task, inputs=text, predict=predict)
    assert calls == [5, 5]  # the input and one variant per word; the second was cached
    assert (first.cached, again.cached, other.cached) == (False, True, False)
    assert again.fields == first.fields
