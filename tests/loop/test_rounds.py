from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from datasets_registry import add_dataset, list_datasets, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, UsageError
from evalboard.core.states import ExampleStatus, JobStatus, RoundStatus
from evalboard.core.tables import Example, Job
from leaderboard.loop import (
    Failure,
    capture_failure,
    close_round,
    current_round,
    get_round,
    list_rounds,
    open_round,
)
from scoring import InvalidWeightsError
from tests.helpers.tasks import sentiment_rows, write_jsonl
from tests.loop.conftest import People


def _example(
    ctx: Context, round_id: int, author: int, text: str, label: str, status: ExampleStatus
) -> int:
    with ctx.db.session() as session:
        example = Example(
            task_id="sentiment",
            round_id=round_id,
            author_id=author,
            inputs={"statement": text},
            gold={"label": label},
            fooled=status != ExampleStatus.NOT_FOOLING,
            status=status.value,
        )
        session.add(example)
        session.flush()
        return example.id


def test_open_round_with_named_targets(ctx: Context, targets: list[int]) -> None:
    opened = open_round(ctx, "sentiment", submission_ids=[targets[1], targets[0], targets[1]])
    assert (opened.number, opened.status) == (1, RoundStatus.OPEN)
    assert opened.target_submission_ids == [targets[1], targets[0]]
    assert current_round(ctx, "sentiment") is not None


def test_round_numbers_follow_dataset_rounds(
    ctx: Context, targets: list[int], tmp_path: Path
) -> None:
    add_dataset(
        ctx,
        task_id="sentiment",
        name="r3",
        round=3,
        path=write_jsonl(tmp_path / "r3.jsonl", sentiment_rows()),
    )
    assert open_round(ctx, "sentiment", submission_ids=targets[:1]).number == 4


def test_only_one_open_round(ctx: Context, targets: list[int]) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    with pytest.raises(Conflict, match="Round 1 of task 'sentiment' is open; close it first"):
        open_round(ctx, "sentiment", submission_ids=targets[1:])


def test_unknown_target_is_refused(ctx: Context, targets: list[int]) -> None:
    with pytest.raises(NotFound, match="no submission 999"):
        open_round(ctx, "sentiment", submission_ids=[targets[0], 999])


def test_top_k_takes_the_ranking_head(ctx: Context, targets: list[int]) -> None:
    def ranking(_: Context, task_id: str) -> list[int]:
        assert task_id == "sentiment"
        return [targets[1], targets[0]]

    assert open_round(ctx, "sentiment", top=1, ranking=ranking).target_submission_ids == [
        targets[1]
    ]


def test_top_k_without_ranked_models_says_what_to_do(ctx: Context, task: str) -> None:
    with pytest.raises(UsageError, match="no ranked submission yet"):
        open_round(ctx, task, top=2, ranking=lambda _ctx, _task: [])


@pytest.mark.parametrize(
    ("choice", "says"),
    [
        ({}, r"Name the target submissions: the top K .* or submission ids"),
        ({"submission_ids": [1], "top": 1}, "either by submission ids or as the top K"),
    ],
)
def test_targets_either_by_id_or_top(
    ctx: Context, task: str, choice: dict[str, object], says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        open_round(ctx, task, **choice)  # type: ignore[arg-type]


def test_close_turns_verified_examples_into_a_dataset(
    ctx: Context, targets: list[int], people: People
) -> None:
    opened = open_round(ctx, "sentiment", submission_ids=targets)
    kept = [
        _example(
            ctx,
            opened.id,
            people.alice,
            "Oh great, another delay. Love it.",
            "negative",
            ExampleStatus.VERIFIED,
        ),
        _example(
            ctx,
            opened.id,
            people.alice,
            "Not bad at all, she said.",
            "positive",
            ExampleStatus.VERIFIED,
        ),
    ]
    for status in (
        ExampleStatus.REJECTED,
        ExampleStatus.PENDING,
        ExampleStatus.NOT_FOOLING,
        ExampleStatus.FLAGGED,
    ):
        _example(ctx, opened.id, people.alice, "The meal was terrible.", "negative", status)

    closed = close_round(ctx, "sentiment", 1)

    assert closed.round.status == RoundStatus.CLOSED and closed.round.closed_at is not None
    assert closed.dataset is not None and closed.dataset.name == "round-1"
    assert closed.dataset.round == 1 and closed.examples == 2
    # Two examples weigh 2/500 by default (scoring.default_dataset_weight); copies follow.
    assert closed.dataset.weight == pytest.approx(0.004)
    assert closed.derived and all(d.weight == closed.dataset.weight for d in closed.derived)
    rows = read_examples(ctx, closed.dataset)
    assert [row["uid"] for row in rows] == [f"r1-{i}" for i in kept]
    assert rows[0] == {
        "uid": f"r1-{kept[0]}",
        "statement": "Oh great, another delay. Love it.",
        "label": "negative",
    }
    names = {d.name for d in list_datasets(ctx, "sentiment")}
    assert {"round-1", "robustness-round-1"} <= names
    # Every submission gets a job on the new dataset and its copies.
    with ctx.db.session() as session:
        jobs = session.scalars(select(Job).where(Job.dataset_id == closed.dataset.id)).all()
    assert sorted(job.submission_id for job in jobs) == sorted(targets)
    assert all(job.status == JobStatus.QUEUED for job in jobs)
    assert len(closed.jobs) >= 2 * (1 + len(closed.derived))
    assert get_round(ctx, "sentiment", 1).dataset_id == closed.dataset.id


def test_close_without_verified_examples_makes_no_dataset(ctx: Context, targets: list[int]) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    closed = close_round(ctx, "sentiment")
    assert closed.dataset is None and closed.jobs == []
    assert list_rounds(ctx, "sentiment")[0].status == RoundStatus.CLOSED


def test_the_owner_may_give_the_closed_round_a_weight(
    ctx: Context, targets: list[int], people: People
) -> None:
    opened = open_round(ctx, "sentiment", submission_ids=targets[:1])
    _example(ctx, opened.id, people.alice, "Not bad at all.", "positive", ExampleStatus.VERIFIED)
    with pytest.raises(InvalidWeightsError, match="finite number above 0"):
        close_round(ctx, "sentiment", 1, weight=float("nan"))
    assert current_round(ctx, "sentiment") is not None  # refused before anything changed
    closed = close_round(ctx, "sentiment", 1, weight=2.0)
    assert closed.dataset is not None and closed.dataset.weight == 2.0


def test_closing_twice_is_refused(ctx: Context, targets: list[int]) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    close_round(ctx, "sentiment", 1)
    with pytest.raises(Conflict, match="closed already"):
        close_round(ctx, "sentiment", 1)
    with pytest.raises(Conflict, match="no open round"):
        close_round(ctx, "sentiment")


def test_a_failed_close_leaves_the_round_open(
    ctx: Context, targets: list[int], people: People, tmp_path: Path
) -> None:
    opened = open_round(ctx, "sentiment", submission_ids=targets[:1])
    _example(ctx, opened.id, people.alice, "Fine.", "neutral", ExampleStatus.VERIFIED)
    # Someone added other content under the round's dataset name.
    add_dataset(
        ctx,
        task_id="sentiment",
        name="round-1",
        path=write_jsonl(tmp_path / "x.jsonl", sentiment_rows()),
    )
    with pytest.raises(Conflict, match="immutable"):
        close_round(ctx, "sentiment", 1)
    assert get_round(ctx, "sentiment", 1).status == RoundStatus.OPEN


def test_failures_captured_between_rounds_join_the_next(
    ctx: Context, targets: list[int], people: People
) -> None:
    failure = capture_failure(
        ctx,
        "sentiment",
        Failure(inputs={"statement": "Worst purchase, love it not."}, gold={"label": "negative"}),
        reporter_id=people.owner,
    )
    assert failure.round_id is None
    opened = open_round(ctx, "sentiment", submission_ids=targets[:1])
    with ctx.db.session() as session:
        adopted = session.get(Example, failure.id)
        assert adopted is not None and adopted.round_id == opened.id


def test_unknown_round_lists_the_known(ctx: Context, targets: list[int]) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    with pytest.raises(NotFound, match="Round 7 of task 'sentiment' not found; known: 1. Open one"):
        get_round(ctx, "sentiment", 7)
