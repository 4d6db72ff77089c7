"""Comparing models: the matrix is the stored figures under the board's names, the
disagreements are what the prediction files say, and nothing hidden or unpublished leaks."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from datasets_registry import GOLD_FIELDS, list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.tables import Submission
from evaluator import read_records
from leaderboard import create_app
from scoring import METRICS
from tests.conftest import make_settings
from tests.leaderboard.conftest import make_client
from tests.leaderboard.seeding import TASK, Seeded, seed

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Seeded]:
    """The seeded task with bob's minilm-head unpublished and alice's bow-logreg anonymous."""
    tmp = tmp_path_factory.mktemp("compare")
    ctx = Context.from_settings(make_settings(tmp))
    seeded = seed(ctx, tmp)
    with ctx.db.session() as session:
        session.execute(
            update(Submission)
            .where(Submission.id == seeded.submissions["minilm-head"])
            .values(published=False)
        )
        session.execute(
            update(Submission)
            .where(Submission.id == seeded.submissions["bow-logreg"])
            .values(card={"anonymous": True})
        )
    yield seeded
    ctx.db.dispose()


@pytest.fixture(scope="module")
def app(platform: Seeded) -> FastAPI:
    return create_app(platform.ctx)


@pytest.fixture
async def as_anyone(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(app) as client:
        yield client


def _client(app: FastAPI, platform: Seeded, who: str) -> httpx.AsyncClient:
    return make_client(app, platform.tokens[who])


def _ids(platform: Seeded, *names: str) -> str:
    return ",".join(str(platform.submissions[name]) for name in names)


def _records(ctx: Context, submission_id: int, dataset: str) -> dict[str, dict[str, Any]]:
    with ctx.db.session() as session:
        submission = session.get(Submission, submission_id)
        assert submission is not None
        key = next(
            j.result.predictions_key
            for j in submission.jobs
            if j.dataset.name == dataset and j.result is not None
        )
    assert key
    return {str(r["uid"]): r for r in read_records(ctx.artifacts.read_bytes(key))}


async def test_the_matrix_is_each_models_stored_figures_under_the_boards_names(
    app: FastAPI, platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    models = _ids(platform, "roberta-large", "vader-lexicon")
    body = (await as_anyone.get(f"/tasks/{TASK}/compare", params={"models": models})).json()
    assert [m["name"] for m in body["models"]] == ["roberta-large", "vader-lexicon"]
    labels = {m["name"]: (m["label"], m["direction"]) for m in body["metrics"]}
    assert labels["memory"] == (METRICS["memory"].label, "lower")
    rows = {r["dataset"]: r for r in body["matrix"]}
    assert "hidden-test" not in rows  # a viewer never sees a hidden set named
    board = (await as_anyone.get(f"/tasks/{TASK}/leaderboard")).json()
    by_name = {r["name"]: r for r in board["rows"]}
    board_perf = next(c for c in body["matrix"][0]["cells"] if c["metric"] == "perf")
    roberta = str(platform.submissions["roberta-large"])
    expected_perf = by_name["roberta-large"]["metrics"]["perf"]
    assert board_perf["values"][roberta] == pytest.approx(expected_perf)
    with platform.ctx.db.session() as session:
        submission = session.get(Submission, platform.submissions["roberta-large"])
        assert submission is not None
        stored = next(j.result.metrics for j in submission.jobs if j.dataset.name == "test")
    cells = {c["metric"]: c for c in rows["test"]["cells"]}
    assert cells["memory"]["values"][roberta] == pytest.approx(stored["memory_gib"])
    assert cells["perf"]["values"][roberta] == pytest.approx(stored["perf"])
    # Lower memory is better: the lexicon's is; higher perf is: the transformer's.
    vader = str(platform.submissions["vader-lexicon"])
    assert (cells["memory"]["best"], cells["perf"]["best"]) == ([vader], [roberta])


async def test_the_owner_sees_hidden_figures_but_never_hidden_examples(
    app: FastAPI, platform: Seeded
) -> None:
    models = _ids(platform, "roberta-large", "vader-lexicon")
    async with _client(app, platform, "owner") as owner:
        body = (await owner.get(f"/tasks/{TASK}/compare", params={"models": models})).json()
        hidden = await owner.get(f"/tasks/{TASK}/compare/hidden-test", params={"models": models})
    assert "hidden-test" in {r["dataset"] for r in body["matrix"]}
    assert "hidden-test" not in {d["dataset"] for d in body["datasets"]}
    assert hidden.status_code == 404


async def test_disagreements_are_what_the_prediction_files_say_paged_with_a_total(
    app: FastAPI, platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    ctx = platform.ctx
    names = ("roberta-large", "vader-lexicon", "bow-logreg")
    ids = [platform.submissions[n] for n in names]
    records = [_records(ctx, i, "test") for i in ids]
    dataset = next(d for d in list_datasets(ctx, TASK) if d.name == "test")
    examples = read_examples(ctx, dataset)
    expected = [
        e["uid"] for e in examples if len({r[e["uid"]]["output"]["label"] for r in records}) > 1
    ]
    assert 0 < len(expected) < len(examples)
    models = _ids(platform, *names)
    summary = (await as_anyone.get(f"/tasks/{TASK}/compare", params={"models": models})).json()
    counts = {d["dataset"]: d for d in summary["datasets"]}
    assert (counts["test"]["disagreements"], counts["test"]["examples"]) == (
        len(expected),
        len(examples),
    )
    seen: list[dict[str, Any]] = []
    for offset in range(0, len(expected), 7):
        page = (
            await as_anyone.get(
                f"/tasks/{TASK}/compare/test",
                params={"models": models, "offset": offset, "limit": 7},
            )
        ).json()
        assert page["total"] == len(expected)
        seen.extend(page["examples"])
    assert [e["uid"] for e in seen] == expected
    gold = {e["uid"]: e["label"] for e in examples}
    for example in seen:
        assert example["gold"] == gold[example["uid"]]
        assert set(example["inputs"]) == {"statement"} and not set(example["inputs"]) & set(
            GOLD_FIELDS
        )
        for key, by_uid in zip(map(str, ids), records, strict=True):
            assert example["predictions"][key] == by_uid[example["uid"]]["output"]["label"]
            assert example["scores"][key] == by_uid[example["uid"]]["score"]


@pytest.mark.parametrize(
    ("models", "fragment"),
    [
        ("{a},{b},{c},{d},{e}", "2 to 4 models"),
        ("{a},{a}", "twice"),
        ("{a}", "2 to 4 models"),
        ("{a},x", "submission ids"),
        ("{a},-1", "submission ids"),
        ("{a},\u00b9", "submission ids"),  # a digit to str.isdigit, not to int()
        ("{a},\u0663", "submission ids"),  # ARABIC-INDIC THREE: int() reads it as 3
        ("", "2 to 4 models"),
    ],
)
async def test_a_bad_choice_of_models_is_one_line_of_422(
    platform: Seeded, as_anyone: httpx.AsyncClient, models: str, fragment: str
) -> None:
    names = ["roberta-large", "vader-lexicon", "bow-logreg", "distilbert", "broken-model"]
    ids = dict(zip("abcde", (platform.submissions[n] for n in names), strict=True))
    response = await as_anyone.get(
        f"/tasks/{TASK}/compare", params={"models": models.format(**ids)}
    )
    assert response.status_code == 422
    assert fragment in response.json()["detail"]


async def test_an_unpublished_model_is_unknown_to_all_but_those_who_may_see_it(
    app: FastAPI, platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    models = _ids(platform, "roberta-large", "minilm-head")  # minilm-head: bob's, unpublished
    params = {"models": models}
    assert (await as_anyone.get(f"/tasks/{TASK}/compare", params=params)).status_code == 404
    async with _client(app, platform, "alice") as alice:
        refused = await alice.get(f"/tasks/{TASK}/compare", params=params)
        examples = await alice.get(f"/tasks/{TASK}/compare/test", params=params)
    unknown = await as_anyone.get(f"/tasks/{TASK}/compare", params={"models": "1,999999"})
    assert (refused.status_code, examples.status_code) == (404, 404)
    assert refused.json()["detail"].replace(str(platform.submissions["minilm-head"]), "N") == (
        unknown.json()["detail"].replace("999999", "N")
    )
    for who in ("bob", "owner", "admin"):
        async with _client(app, platform, who) as client:
            assert (await client.get(f"/tasks/{TASK}/compare", params=params)).status_code == 200


async def test_an_anonymous_models_submitter_is_named_only_to_those_allowed(
    app: FastAPI, platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    params = {"models": _ids(platform, "roberta-large", "bow-logreg")}
    body = (await as_anyone.get(f"/tasks/{TASK}/compare", params=params)).json()
    assert [m["user"] for m in body["models"]] == ["alice", None]
    page = await as_anyone.get(f"/ui/tasks/{TASK}/compare", params=params)
    assert page.status_code == 200 and "bow-logreg" in page.text
    assert page.text.count("alice") == 1  # roberta-large's, in the picker
    async with _client(app, platform, "alice") as alice:
        mine = (await alice.get(f"/tasks/{TASK}/compare", params=params)).json()
    assert [m["user"] for m in mine["models"]] == ["alice", "alice"]


async def test_a_model_of_another_task_is_not_one_of_this_tasks(
    app: FastAPI, platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    params = {"models": _ids(platform, "roberta-large", "vader-lexicon")}
    response = await as_anyone.get(f"/tasks/{platform.other_task}/compare", params=params)
    assert response.status_code == 404


async def test_the_page_turns_the_pickers_ticks_into_the_permalink(
    platform: Seeded, as_anyone: httpx.AsyncClient
) -> None:
    a, b = platform.submissions["roberta-large"], platform.submissions["vader-lexicon"]
    ticked = await as_anyone.get(f"/ui/tasks/{TASK}/compare", params=[("m", a), ("m", b)])
    assert ticked.status_code == 303
    assert ticked.headers["location"] == f"/ui/tasks/{TASK}/compare?models={a},{b}"
    page = await as_anyone.get(ticked.headers["location"])
    assert page.status_code == 200 and 'id="compare-matrix"' in page.text
    assert 'id="disagreements"' in page.text
    five = ",".join(str(i) for i in list(platform.submissions.values())[:5])
    refused = await as_anyone.get(f"/ui/tasks/{TASK}/compare", params={"models": five})
    assert 'id="compare-error"' in refused.text and "2 to 4 models" in refused.text
    assert 'id="compare-matrix"' not in refused.text
