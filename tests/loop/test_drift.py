"""Drift checks in process: what is measured, what is queued, how traffic inputs are labelled
and how they enter a round. (The real-data, real-server journey is
tests/leaderboard/test_drift_live.py.)"""

from __future__ import annotations

import json

import numpy as np
import pytest

from datasets_registry import add_dataset, create_task, list_datasets, read_examples
from datasets_registry.taskspec import parse_task_spec
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, PermissionDenied, UsageError
from evalboard.core.states import Access, ExampleStatus, Verdict
from evalboard.core.tables import Example
from leaderboard.accounts import Principal
from leaderboard.loop import (
    DriftOptions,
    check_drift,
    close_round,
    get_drift_check,
    get_example,
    input_key,
    list_drift_checks,
    may_send_traffic,
    open_round,
    validate_example,
    validation_queue,
)
from leaderboard.loop.schemas import drift_check_public
from tests.helpers.tasks import QA, sentiment_spec, write_jsonl
from tests.loop.conftest import People, add_submission, add_users

_DINER = "food staff table menu price wait drink dessert plate order waiter tip".split()
_FILMS = "film plot actor scene script cast camera ending sequel director".split()


def _sentences(words: list[str], n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(words, size=7)) for _ in range(n)]


def _traffic(words: list[str], n: int, seed: int) -> list[dict[str, str]]:
    return [{"statement": text} for text in _sentences(words, n, seed)]


@pytest.fixture
def task(ctx: Context, tmp_path) -> str:  # type: ignore[no-untyped-def]
    """Sentiment with a scoring set of diner reviews and a hidden set of more of them."""
    create_task(ctx, sentiment_spec())
    for name, access, seed in (("static", Access.SCORING, 1), ("secret-set", Access.HIDDEN, 2)):
        rows = [
            {"uid": f"{name}-{i}", "statement": text, "label": "neutral"}
            for i, text in enumerate(_sentences(_DINER, 40, seed))
        ]
        add_dataset(
            ctx,
            task_id="sentiment",
            name=name,
            path=write_jsonl(tmp_path / f"{name}.jsonl", rows),
            access=access,
            perturb=False,
        )
    return "sentiment"


def _hidden_inputs(ctx: Context) -> list[str]:
    hidden = next(d for d in list_datasets(ctx, "sentiment") if d.access == Access.HIDDEN)
    return [e["statement"] for e in read_examples(ctx, hidden)]


def test_shifted_traffic_is_reported_and_its_most_shifted_inputs_queued(
    ctx: Context, task: str, people: People
) -> None:
    check = check_drift(ctx, task, _traffic(_FILMS + _DINER[:2], 40, 3), reporter_id=people.owner)
    report = check.report
    assert check.number == 1 and check.shifted and report["shifted"]
    assert report["p_value"] < 0.01 and report["auc"] > 0.9
    assert report["n_traffic"] == 40 and report["n_reference"] == 80
    assert len(report["queued"]) == 20 and report["duplicates"] == 0
    queued = [get_example(ctx, i) for i in report["queued"]]
    assert all(
        e.source == "traffic"
        and e.gold == {}
        and e.status == ExampleStatus.PENDING
        and e.round_id is None  # no round open: the next one adopts them
        and e.author_id is None
        for e in queued
    )
    # Highest shift scores first, and the rank and score are said on each.
    scores = [item["score"] for item in report["top"]]
    assert scores == sorted(scores, reverse=True)
    assert [item["example_id"] for item in report["top"][:20]] == report["queued"]
    assert "drift check 1: shift score" in queued[0].explanation
    waiting = validation_queue(ctx, task, user_id=people.validators[0], limit=100)
    assert {e.id for e in waiting} == set(report["queued"])


def test_traffic_like_the_datasets_is_not_shifted_and_nothing_is_queued(
    ctx: Context, task: str
) -> None:
    check = check_drift(ctx, task, _traffic(_DINER, 40, 9), reporter_id=None)
    assert not check.shifted and check.report["p_value"] > 0.05
    assert check.report["queued"] == []
    assert "not shifted" in check.report["not_queued_because"]
    with ctx.db.session() as session:
        assert session.query(Example).count() == 0


def test_hidden_sets_count_in_the_reference_but_are_never_named(ctx: Context, task: str) -> None:
    check = check_drift(ctx, task, _traffic(_FILMS, 30, 4), reporter_id=None)
    assert check.report["reference"] == {
        "datasets": [{"name": "static", "inputs": 40}],
        "hidden": {"datasets": 1, "inputs": 40},
        "sampled": False,
    }
    for full in (True, False):
        shown = drift_check_public(check, full=full).model_dump_json()
        assert "secret-set" not in shown
        assert not any(text in shown for text in _hidden_inputs(ctx))


def test_inputs_already_in_the_task_are_never_queued(
    ctx: Context, task: str, people: People
) -> None:
    # A hidden input (in other case and spacing) among film reviews: shifted, but not queued,
    # so a hidden example never reaches a public round.
    hidden = _hidden_inputs(ctx)[0]
    traffic = [{"statement": "  " + hidden.upper().replace(" ", "   ")}] * 3 + _traffic(
        _FILMS, 30, 5
    )
    first = check_drift(ctx, task, traffic, reporter_id=None, options=DriftOptions(queue=100))
    queued = [get_example(ctx, i).inputs["statement"] for i in first.report["queued"]]
    assert len(queued) == len(set(queued)) and hidden.upper() not in " ".join(queued).upper()
    assert first.report["duplicates"] >= 3  # the hidden one, and its repeats
    # A second check of the same traffic queues nothing again.
    again = check_drift(ctx, task, traffic, reporter_id=None, options=DriftOptions(queue=100))
    assert again.report["queued"] == [] and again.number == 2
    with ctx.db.session() as session:
        assert session.query(Example).count() == len(first.report["queued"])


def test_the_same_input_cannot_be_stored_twice_as_traffic(ctx: Context, task: str) -> None:
    # The database's own guard, for two checks racing past the duplicate check.
    from sqlalchemy.exc import IntegrityError

    key = input_key({"statement": "the same"})
    with pytest.raises(IntegrityError), ctx.db.session() as session:
        for _ in range(2):
            session.add(
                Example(
                    task_id=task,
                    source="traffic",
                    input_key=key,
                    inputs={"statement": "the same"},
                    gold={},
                )
            )
        session.flush()


def test_queue_zero_and_a_span_task_queue_nothing(ctx: Context, task: str, tmp_path) -> None:  # type: ignore[no-untyped-def]
    check = check_drift(
        ctx, task, _traffic(_FILMS, 30, 6), reporter_id=None, options=DriftOptions(queue=0)
    )
    assert check.shifted and check.report["queued"] == []
    create_task(ctx, parse_task_spec(QA))
    contexts = _sentences(_DINER, 30, 7)
    add_dataset(
        ctx,
        task_id="qa",
        name="dev",
        path=write_jsonl(
            tmp_path / "qa.jsonl",
            [
                {"uid": str(i), "context": c, "question": "what?", "answers": []}
                for i, c in enumerate(contexts)
            ],
        ),
        perturb=False,
    )
    films = [{"context": c, "question": "who?"} for c in _sentences(_FILMS, 30, 8)]
    qa = check_drift(ctx, "qa", films, reporter_id=None)
    assert qa.shifted and qa.report["queued"] == []
    assert "classification tasks only" in qa.report["not_queued_because"]


@pytest.mark.parametrize(
    ("traffic", "words"),
    [
        ([{"statement": "one input"}], "at least 20 traffic inputs.*got 1"),
        ([], "at least 20 traffic inputs.*got 0"),
        ([{"statement": "x"}] * 2001, "at most 2,000 traffic inputs"),
        ([{"text": "wrong field"}] * 20, "input 1: Unknown input field"),
        ([{"statement": "x" * 20_001}] * 20, "input 1: .* at most 20000"),
    ],
)
def test_unusable_traffic_is_refused_and_nothing_is_stored(
    ctx: Context, task: str, traffic: list[dict[str, str]], words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        check_drift(ctx, task, traffic, reporter_id=None)
    assert list_drift_checks(ctx, task) == []


def test_a_task_without_enough_dataset_inputs_says_what_to_add(ctx: Context) -> None:
    create_task(ctx, sentiment_spec())
    with pytest.raises(UsageError, match="has 0 dataset input.*Add a dataset first"):
        check_drift(ctx, "sentiment", _traffic(_FILMS, 30, 1), reporter_id=None)


@pytest.mark.parametrize(
    ("options", "words"),
    [({"queue": 101}, "queue 101"), ({"queue": -1}, "queue -1"), ({"alpha": 0}, "alpha 0")],
)
def test_bad_options_are_refused(options: dict[str, float], words: str) -> None:
    with pytest.raises(UsageError, match=words):
        DriftOptions(**options)  # type: ignore[arg-type]


def test_checks_are_numbered_and_listed_newest_first(ctx: Context, task: str) -> None:
    for seed in (1, 2):
        check_drift(ctx, task, _traffic(_DINER, 20, seed), reporter_id=None)
    assert [c.number for c in list_drift_checks(ctx, task)] == [2, 1]
    assert get_drift_check(ctx, task, 1).report["n_traffic"] == 20
    with pytest.raises(Exception, match="no drift check 3"):
        get_drift_check(ctx, task, 3)


def test_only_the_owner_and_monitors_send_traffic() -> None:
    owner = Principal(user_id=1, name="o", owned_tasks=frozenset({"sentiment"}))
    monitor = Principal(user_id=2, name="m", roles=frozenset({("monitor", "sentiment")}))
    elsewhere = Principal(user_id=3, name="e", roles=frozenset({("monitor", "other")}))
    annotator = Principal(user_id=4, name="a", roles=frozenset({("annotator", None)}))
    for allowed in (owner, monitor):
        may_send_traffic(allowed, "sentiment")
    for refused in (elsewhere, annotator):
        with pytest.raises(PermissionDenied, match="needs the monitor role"):
            may_send_traffic(refused, "sentiment")


@pytest.fixture
def queued(ctx: Context, task: str) -> list[int]:
    check = check_drift(
        ctx, task, _traffic(_FILMS, 30, 11), reporter_id=None, options=DriftOptions(queue=3)
    )
    ids: list[int] = check.report["queued"]
    assert len(ids) == 3
    return ids


def test_validators_label_a_traffic_input_and_agreement_verifies_it(
    ctx: Context, queued: list[int], people: People
) -> None:
    first, second, third = people.validators
    example = queued[0]
    validate_example(ctx, example, user_id=first, label="positive")
    validate_example(ctx, example, user_id=second, label="negative")
    assert get_example(ctx, example).status == ExampleStatus.PENDING
    validate_example(ctx, example, user_id=third, label="positive")
    assert get_example(ctx, example).status == ExampleStatus.PENDING  # 2 of 3 agree
    (fourth,) = add_users(ctx, "val4")
    done = validate_example(ctx, example, user_id=fourth, label="positive")
    assert done.status == ExampleStatus.VERIFIED and done.gold == {"label": "positive"}
    with pytest.raises(Conflict, match="verified already"):
        (fifth,) = add_users(ctx, "val5")
        validate_example(ctx, example, user_id=fifth, label="negative")


def test_the_owners_label_settles_and_flags_count_like_labels(
    ctx: Context, queued: list[int], people: People
) -> None:
    settled = validate_example(ctx, queued[0], user_id=people.owner, label="neutral", as_owner=True)
    assert settled.status == ExampleStatus.VERIFIED and settled.gold == {"label": "neutral"}
    # The owner changes their mind: flagged, it has no gold again.
    flagged = validate_example(
        ctx, queued[0], user_id=people.owner, verdict=Verdict.FLAGGED, as_owner=True
    )
    assert flagged.status == ExampleStatus.FLAGGED and flagged.gold == {}
    for user in people.validators:
        validate_example(ctx, queued[1], user_id=user, verdict=Verdict.FLAGGED)
    assert get_example(ctx, queued[1]).status == ExampleStatus.FLAGGED


@pytest.mark.parametrize(
    ("vote", "words"),
    [
        ({"verdict": Verdict.CORRECT}, "unlabeled production input: give its label"),
        ({"verdict": Verdict.LABELLED}, "unlabeled production input: give its label"),
        ({}, "unlabeled production input: give its label"),
        ({"label": "great"}, "Label 'great' is not one of"),
        ({"label": "positive", "verdict": Verdict.FLAGGED}, "give its label"),
    ],
)
def test_a_traffic_input_takes_a_label_not_a_judgement(
    ctx: Context, queued: list[int], people: People, vote: dict[str, object], words: str
) -> None:
    with pytest.raises(UsageError, match=words):
        validate_example(ctx, queued[0], user_id=people.validators[0], **vote)  # type: ignore[arg-type]


def test_an_example_with_an_intended_answer_takes_no_label(
    ctx: Context, task: str, people: People
) -> None:
    with ctx.db.session() as session:
        example = Example(
            task_id=task,
            source="failure",
            inputs={"statement": "meh"},
            gold={"label": "neutral"},
            fooled=True,
        )
        session.add(example)
        session.flush()
        example_id = example.id
    with pytest.raises(UsageError, match="give a verdict"):
        validate_example(ctx, example_id, user_id=people.validators[0], label="positive")


def test_labelled_traffic_enters_the_round_and_its_dataset(
    ctx: Context, task: str, queued: list[int], people: People
) -> None:
    target = add_submission(ctx, task, "target")
    opened = open_round(ctx, task, submission_ids=[target])  # adopts the queued inputs
    assert {get_example(ctx, i).round_id for i in queued} == {opened.id}
    for user in people.validators:
        validate_example(ctx, queued[0], user_id=user, label="positive")
        validate_example(ctx, queued[1], user_id=user, label="negative")
    # queued[2] stays unlabeled: it stays out.
    closed = close_round(ctx, task)
    assert closed.dataset is not None and closed.examples == 2
    rows = read_examples(ctx, closed.dataset)
    by_text = {row["statement"]: row["label"] for row in rows}
    assert by_text == {
        get_example(ctx, queued[0]).inputs["statement"]: "positive",
        get_example(ctx, queued[1]).inputs["statement"]: "negative",
    }
    assert json.dumps(rows)  # plain rows, as any dataset's
    # Now in a dataset of the task, the same inputs are never queued again.
    again = check_drift(
        ctx,
        task,
        [{"statement": s} for s in by_text] + _traffic(_FILMS, 30, 11),
        reporter_id=None,
        options=DriftOptions(queue=100),
    )
    again_queued = {get_example(ctx, i).inputs["statement"] for i in again.report["queued"]}
    assert not again_queued & {get_example(ctx, i).inputs["statement"] for i in queued}
