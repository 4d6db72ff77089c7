from __future__ import annotations

import pytest

from evalboard.core.context import Context
from evalboard.core.states import Verdict
from leaderboard.loop import (
    Failure,
    TargetPool,
    capture_failure,
    collect_example,
    open_round,
    round_vmer,
    validate_example,
)
from tests.loop.conftest import People, add_users

# (author, statement, intended label): the keyword target says positive for "great"/"love",
# negative for "bad"/"terrible", neutral otherwise.
WRITTEN = [
    ("alice", "Great, my flight is cancelled again.", "negative"),  # fools
    ("alice", "I love waiting on hold for hours.", "negative"),  # fools
    ("alice", "The soup was terrible.", "negative"),  # does not fool
    ("bob", "Not bad at all, honestly.", "positive"),  # fools
    ("bob", "This is great.", "positive"),  # does not fool
]


def test_vmer_per_round_and_annotator_matches_a_hand_count(
    ctx: Context, targets: list[int], people: People, pool: TargetPool
) -> None:
    (bob,) = add_users(ctx, "bob")
    authors = {"alice": people.alice, "bob": bob}
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    ids = [
        collect_example(
            ctx,
            "sentiment",
            1,
            author_id=authors[who],
            predictor=pool,
            inputs={"statement": text},
            gold={"label": label},
        ).example.id
        for who, text, label in WRITTEN
    ]
    v1, v2, v3 = people.validators
    for validator in (v1, v2, v3):  # alice's first: verified
        validate_example(ctx, ids[0], user_id=validator, verdict=Verdict.CORRECT)
    for validator in (v1, v2, v3):  # alice's second: rejected
        validate_example(ctx, ids[1], user_id=validator, verdict=Verdict.INCORRECT)
    validate_example(ctx, ids[3], user_id=people.owner, verdict=Verdict.CORRECT, as_owner=True)
    # A captured failure is validated like the rest but is not an annotator's example.
    failure = capture_failure(
        ctx,
        "sentiment",
        Failure(inputs={"statement": "Meh, love it."}, gold={"label": "negative"}),
        reporter_id=people.owner,
    )
    validate_example(ctx, failure.id, user_id=v1, verdict=Verdict.CORRECT, as_owner=True)

    report = round_vmer(ctx, "sentiment", 1)

    # By hand: 5 collected, 3 fooled, 2 verified (alice 1 of 3, bob 1 of 2), none pending.
    assert (report.collected, report.fooled, report.verified, report.pending) == (5, 3, 2, 0)
    assert report.vmer == pytest.approx(2 / 5)
    by_name = {a.name: a for a in report.annotators}
    assert (by_name["alice"].collected, by_name["alice"].fooled, by_name["alice"].verified) == (
        3,
        2,
        1,
    )
    assert by_name["alice"].vmer == pytest.approx(1 / 3)
    assert by_name["bob"].vmer == pytest.approx(1 / 2)


def test_vmer_of_an_empty_round_is_undefined(ctx: Context, targets: list[int]) -> None:
    open_round(ctx, "sentiment", submission_ids=targets[:1])
    report = round_vmer(ctx, "sentiment", 1)
    assert report.collected == 0 and report.vmer is None and report.annotators == []
