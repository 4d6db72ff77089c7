"""A full cycle with real models in the local sandbox, driven through the HTTP API.

VADER and a keyword model are evaluated on a static set; the leaderboard's winner is
promoted as the target of round 1; an annotator writes examples (three fool it, three do
not: the sentences are chosen so that both models answer alike, whichever is promoted);
three other accounts validate; the owner closes the round; every submission is scored
on the new dataset and the leaderboard moves.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import Dataset, Job, Result
from leaderboard import create_app
from leaderboard.loop import TargetPool, leaderboard_ranking
from tests.loop.platform import Platform, build_platform, run_queued_jobs

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# (statement, intended label, fools both models?)
WRITTEN = [
    ("Oh great, the flight is delayed again.", "negative", True),
    ("Great, another Monday of endless meetings.", "negative", True),
    ("I love waiting on hold for three hours.", "negative", True),
    ("The food was wonderful.", "positive", False),
    ("The service was terrible.", "negative", False),
    ("The museum opens at nine.", "neutral", False),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def platform(ctx: Context, tmp_path: Path) -> Platform:
    return build_platform(ctx, tmp_path)


@pytest.fixture
async def app(platform: Platform) -> AsyncIterator[FastAPI]:
    application = create_app(platform.ctx)
    yield application
    pool = getattr(application.state, "target_pool", None)
    if isinstance(pool, TargetPool):
        pool.close()


def client(app: FastAPI, platform: Platform, user: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {platform.tokens[user]}"},
        timeout=60,
    )


async def test_a_full_round_with_real_models(app: FastAPI, platform: Platform) -> None:
    ctx = platform.ctx
    leader = leaderboard_ranking(ctx, "sentiment")[0]
    async with client(app, platform, "owner") as owner, client(app, platform, "alice") as alice:
        # The owner promotes the leaderboard's winner; its sandbox is started for the round.
        opened = await owner.post("/tasks/sentiment/rounds", json={"top": 1})
        assert opened.status_code == 201, opened.text
        assert opened.json()["number"] == 1
        assert opened.json()["target_submission_ids"] == [leader]
        pool = app.state.target_pool
        assert pool.is_warm(1, leader)

        # An annotator writes examples and sees each prediction at once.
        ids = []
        for text, label, fools in WRITTEN:
            response = await alice.post(
                "/tasks/sentiment/rounds/1/examples",
                json={"inputs": {"statement": text}, "label": label},
            )
            assert response.status_code == 201, response.text
            example = response.json()
            assert example["fooled"] is fools, text
            assert example["status"] == ("pending" if fools else "not_fooling")
            assert example["target_submission_id"] == leader
            assert set(example["model_output"]["probs"]) == {"negative", "neutral", "positive"}
            assert example["latency_ms"] < 1000
            ids.append(example["id"])
        explained = await alice.put(
            f"/examples/{ids[0]}/explanation",
            json={"explanation": "sarcasm: 'great' means the opposite"},
        )
        assert explained.json()["explanation"].startswith("sarcasm")

        # A production team reports a failure; the owner verifies it alone.
        async with client(app, platform, "rita") as rita:
            failure = await rita.post(
                "/tasks/sentiment/failures",
                json={
                    "failures": [
                        {
                            "inputs": {"statement": "I hate how good this is."},
                            "label": "positive",
                            "prediction": {"label": "negative"},
                        }
                    ]
                },
            )
        assert failure.status_code == 201, failure.text
        failure_id = failure.json()[0]["id"]

        # Three other accounts validate; the author may not.
        assert (
            await alice.post(f"/examples/{ids[0]}/validations", json={"verdict": "correct"})
        ).status_code == 403
        verdicts = {
            ids[0]: ["correct"] * 3,
            ids[1]: ["correct"] * 3,
            ids[2]: ["correct", "correct", "incorrect"],
        }
        for number, name in enumerate(("val1", "val2", "val3")):
            async with client(app, platform, name) as validator:
                queue = (await validator.get("/tasks/sentiment/validations/queue")).json()
                assert {e["id"] for e in queue} == {ids[0], ids[1], ids[2], failure_id}
                for example_id, given in verdicts.items():
                    response = await validator.post(
                        f"/examples/{example_id}/validations", json={"verdict": given[number]}
                    )
                    assert response.status_code == 201, response.text
        settled = await owner.post(
            f"/examples/{failure_id}/validations", json={"verdict": "correct"}
        )
        assert settled.json()["status"] == "verified"
        assert response.json() == {
            "example_id": ids[2],
            "status": "pending",
            "verdicts": {"correct": 2, "incorrect": 1},
            "owner_verdict": None,  # the owner has not voted on it
            "gold": {"label": WRITTEN[2][1]},
        }

        # vMER by hand: 6 collected, 3 fooled, 2 verified (the failure is not collected).
        vmer = (await owner.get("/tasks/sentiment/rounds/1/vmer")).json()
        assert (vmer["collected"], vmer["fooled"], vmer["verified"], vmer["pending"]) == (
            6,
            3,
            2,
            1,
        )
        assert vmer["vmer"] == pytest.approx(2 / 6)
        assert [(a["name"], a["vmer"]) for a in vmer["annotators"]] == [
            ("alice", pytest.approx(2 / 6))
        ]

        # Closing makes dataset round-1 of the verified examples and queues every model.
        closed = await owner.post("/tasks/sentiment/rounds/1/close")
        assert closed.status_code == 200, closed.text
        body = closed.json()
        assert (body["dataset"], body["examples"]) == ("round-1", 3)
        assert body["jobs_queued"] == 2 * (1 + len(body["derived"]))
        assert not pool.is_warm(1, leader)
        late = await alice.post(
            "/tasks/sentiment/rounds/1/examples",
            json={"inputs": {"statement": "Too late."}, "label": "neutral"},
        )
        assert late.status_code == 409

    # The inline worker evaluates every submission on the new dataset.
    assert set(run_queued_jobs(ctx)) == {JobStatus.FINISHED}
    with ctx.db.session() as session:
        round_set = session.scalar(select(Dataset).where(Dataset.name == "round-1"))
        assert round_set is not None and round_set.round == 1 and round_set.rows == 3
        scored = session.execute(
            select(Job.submission_id, Result.metrics)
            .join(Result, Result.job_id == Job.id)
            .where(Job.dataset_id == round_set.id)
        ).all()
    perf = {submission_id: metrics["perf"] for submission_id, metrics in scored}
    assert set(perf) == set(platform.submissions.values())
    # round-1 holds the two sarcastic examples both models missed, and the failure.
    assert perf[platform.submissions["keyword"]] < 50
    async with client(app, platform, "owner") as owner:
        board = (await owner.get("/tasks/sentiment/leaderboard")).json()
    ranked = {row["submission_id"] for row in board["rows"] if row["rank"] is not None}
    assert ranked == set(platform.submissions.values())
