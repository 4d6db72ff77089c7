from __future__ import annotations

import pytest

from evalboard.core.context import Context
from evalboard.core.errors import Conflict, PermissionDenied
from evalboard.core.states import ExampleStatus, Verdict
from leaderboard.loop import (
    TargetPool,
    close_round,
    collect_example,
    decide,
    open_round,
    validate_example,
    validation_queue,
    verdicts_of,
)
from tests.loop.conftest import People

C, X, F = Verdict.CORRECT, Verdict.INCORRECT, Verdict.FLAGGED


@pytest.mark.parametrize(
    ("verdicts", "status"),
    [
        ([], ExampleStatus.PENDING),
        ([C, C], ExampleStatus.PENDING),
        ([C, C, C], ExampleStatus.VERIFIED),
        ([C, X, C, X, X], ExampleStatus.REJECTED),
        ([F, C, F, C, F], ExampleStatus.FLAGGED),
        ([C, X, F, C, X, F], ExampleStatus.PENDING),
    ],
)
def test_decide_at_num_matching(verdicts: list[Verdict], status: ExampleStatus) -> None:
    assert decide(verdicts, num_matching=3) is status


def _fooling(ctx: Context, pool: TargetPool, people: People, targets: list[int]) -> int:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    example = collect_example(
        ctx,
        "sentiment",
        1,
        author_id=people.alice,
        predictor=pool,
        inputs={"statement": "Great, it broke again."},
        gold={"label": "negative"},
    ).example
    assert example.status == ExampleStatus.PENDING
    return example.id


def test_three_agreeing_validators_verify(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    v1, v2, v3 = people.validators
    assert validate_example(ctx, example_id, user_id=v1, verdict=C).status == "pending"
    assert validate_example(ctx, example_id, user_id=v2, verdict=C).status == "pending"
    assert validate_example(ctx, example_id, user_id=v3, verdict=C).status == "verified"
    assert [v.verdict for v in verdicts_of(ctx, example_id)] == ["correct"] * 3


def test_the_author_never_validates(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    with pytest.raises(PermissionDenied, match="You wrote example"):
        validate_example(ctx, example_id, user_id=people.alice, verdict=C)
    with pytest.raises(PermissionDenied):
        validate_example(ctx, example_id, user_id=people.alice, verdict=C, as_owner=True)


def test_one_verdict_per_validator(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    validate_example(ctx, example_id, user_id=people.validators[0], verdict=C)
    with pytest.raises(Conflict, match="judged example .* already"):
        validate_example(ctx, example_id, user_id=people.validators[0], verdict=X)


def test_the_owner_settles_alone_even_after_a_flag(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    for validator in people.validators:
        validate_example(ctx, example_id, user_id=validator, verdict=F)
    with pytest.raises(Conflict, match="is flagged already"):
        validate_example(ctx, example_id, user_id=people.owner, verdict=C)
    example = validate_example(ctx, example_id, user_id=people.owner, verdict=C, as_owner=True)
    assert example.status == ExampleStatus.VERIFIED
    # The owner may change their mind while the round is open.
    example = validate_example(ctx, example_id, user_id=people.owner, verdict=X, as_owner=True)
    assert example.status == ExampleStatus.REJECTED


def test_examples_that_did_not_fool_are_not_validated(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    example = collect_example(
        ctx,
        "sentiment",
        1,
        author_id=people.alice,
        predictor=pool,
        inputs={"statement": "A wonderful film."},
        gold={"label": "positive"},
    ).example
    with pytest.raises(Conflict, match="did not fool"):
        validate_example(ctx, example.id, user_id=people.validators[0], verdict=C)


def test_no_verdicts_after_the_round_closed(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    close_round(ctx, "sentiment", 1)
    with pytest.raises(Conflict, match="closed"):
        validate_example(ctx, example_id, user_id=people.validators[0], verdict=C)


def test_the_queue_leaves_out_own_and_judged_examples(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    example_id = _fooling(ctx, pool, people, targets)
    v1, v2, _ = people.validators
    assert validation_queue(ctx, "sentiment", user_id=people.alice) == []
    assert [e.id for e in validation_queue(ctx, "sentiment", user_id=v1)] == [example_id]
    validate_example(ctx, example_id, user_id=v1, verdict=F)
    assert validation_queue(ctx, "sentiment", user_id=v1) == []
    assert [e.id for e in validation_queue(ctx, "sentiment", user_id=v2)] == [example_id]
