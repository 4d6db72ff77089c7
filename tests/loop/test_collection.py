from __future__ import annotations

import random
from typing import Any

import pytest

from evalboard.core.context import Context
from evalboard.core.errors import Conflict, PermissionDenied, UsageError
from evalboard.core.states import ExampleStatus
from leaderboard.loop import (
    TargetPool,
    close_round,
    collect_example,
    explain_example,
    get_example,
    open_round,
)
from tests.loop.conftest import People, add_submission
from tests.loop.fakes import FakeFactory


def _collect(
    ctx: Context, pool: TargetPool, people: People, text: str, label: str, **extra: Any
) -> Any:
    return collect_example(
        ctx,
        "sentiment",
        1,
        author_id=people.alice,
        inputs={"statement": text},
        gold={"label": label},
        predictor=pool,
        **extra,
    )


def test_a_fooling_example_waits_for_validation(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    collected = _collect(
        ctx, pool, people, "Oh great, the train is late again.", "negative", explanation="sarcasm"
    )
    example = collected.example
    assert example.fooled and example.status == ExampleStatus.PENDING
    assert example.model_output is not None and example.model_output["label"] == "positive"
    assert example.model_output["probs"]["positive"] == pytest.approx(0.8)
    assert example.target_submission_id == targets[0]
    assert example.explanation == "sarcasm"
    assert example.gold == {"label": "negative"} and example.source == "collection"
    assert collected.latency_s < 1.0


def test_an_example_the_target_gets_right_is_kept_as_not_fooling(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    example = _collect(ctx, pool, people, "What a wonderful day.", "positive").example
    assert not example.fooled and example.status == ExampleStatus.NOT_FOOLING


def test_each_example_goes_to_one_target_at_random(
    ctx: Context, targets: list[int], people: People, factory: FakeFactory, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets)
    rng = random.Random(7)
    chosen = [
        _collect(
            ctx, pool, people, f"Statement {i}.", "neutral", rng=rng
        ).example.target_submission_id
        for i in range(30)
    ]
    assert set(chosen) == set(targets)
    # Each target ran in one sandbox, started once, that answered all its examples.
    for target in targets:
        (box,) = factory.boxes(target)
        assert box.starts == 1 and box.requests == chosen.count(target)


def test_collecting_in_a_closed_round_is_refused(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    close_round(ctx, "sentiment", 1)
    with pytest.raises(Conflict, match="closed"):
        _collect(ctx, pool, people, "Fine.", "neutral")


def test_a_bad_label_stores_nothing_and_asks_nothing_of_the_target(
    ctx: Context, targets: list[int], people: People, factory: FakeFactory, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    with pytest.raises(UsageError, match="not one of task 'sentiment'"):
        _collect(ctx, pool, people, "Fine.", "meh")
    assert factory.made == []


def test_the_author_explains_afterwards(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    example = _collect(ctx, pool, people, "I love how it broke on day one.", "negative").example
    explain_example(ctx, example.id, author_id=people.alice, explanation="  sarcastic love ")
    assert get_example(ctx, example.id).explanation == "sarcastic love"
    with pytest.raises(PermissionDenied, match="Only the author"):
        explain_example(ctx, example.id, author_id=people.validators[0], explanation="no")


def test_qa_example_is_fooled_by_string_f1(
    ctx: Context, qa_task: str, people: People, factory: FakeFactory, pool: TargetPool
) -> None:
    target = add_submission(ctx, qa_task, "first-sentence")
    factory.answers[target] = lambda example: {
        "answer": example["context"].split(",")[0],
        "conf": 0.9,
    }
    open_round(ctx, qa_task, submission_ids=[target])
    context = "Paris is large, but the capital of Australia is Canberra."
    example = collect_example(
        ctx,
        qa_task,
        1,
        author_id=people.alice,
        predictor=pool,
        inputs={"context": context, "question": "What is the capital of Australia?"},
        gold={"answer": "Canberra"},
    ).example
    assert example.fooled and example.model_output == {"answer": "Paris is large", "conf": 0.9}
    assert example.gold == {"answers": [{"text": "Canberra", "answer_start": 48}]}
