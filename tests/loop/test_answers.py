from __future__ import annotations

from typing import Any

import pytest

from datasets_registry.taskspec import parse_task_spec
from evalboard.core.errors import InvalidTaskSpec, UsageError
from leaderboard.loop import check_gold, check_inputs, gold_value, is_model_wrong
from tests.helpers.tasks import GENERATIVE_QA, QA, sentiment_spec

SENTIMENT = sentiment_spec()
QA_SPEC = parse_task_spec(QA)
CONTEXT = "The blue whale is the largest animal ever known to have lived."


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ({}, "must be non-empty text"),
        ({"statement": "  "}, "must be non-empty text"),
        ({"statement": 3}, "must be non-empty text"),
        ({"statement": "ok", "extra": "x"}, "Unknown input field(s) extra"),
        ({"statement": "x" * 20_001}, "at most 20000"),
    ],
)
def test_bad_inputs_are_refused(inputs: dict[str, Any], problem: str) -> None:
    with pytest.raises(UsageError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        check_inputs(SENTIMENT, inputs)


def test_label_must_be_the_tasks() -> None:
    with pytest.raises(UsageError, match="negative, neutral, positive"):
        check_gold(SENTIMENT, {"statement": "x"}, {"label": "mixed"})


def test_answer_span_is_found_in_the_context() -> None:
    gold = check_gold(QA_SPEC, {"context": CONTEXT, "question": "q"}, {"answer": "blue whale"})
    assert gold == {"answers": [{"text": "blue whale", "answer_start": 4}]}


@pytest.mark.parametrize(
    "gold",
    [{"answer": "giraffe"}, {"answer": "blue whale", "answer_start": 0}, {"answers": []}, {}],
)
def test_answer_outside_the_context_is_refused(gold: dict[str, Any]) -> None:
    with pytest.raises(UsageError):
        check_gold(QA_SPEC, {"context": CONTEXT, "question": "q"}, gold)


@pytest.mark.parametrize(
    ("label", "wrong"), [("positive", False), ("negative", True), ("neutral", True)]
)
def test_exact_match_rule(label: str, wrong: bool) -> None:
    assert is_model_wrong(SENTIMENT, {"label": label}, "positive") is wrong


@pytest.mark.parametrize(
    ("answer", "wrong"),
    [
        ("the blue whale", False),  # normalised exact match
        ("blue whale is", False),  # F1 0.8
        ("the largest animal", True),  # F1 0 against "blue whale"
        ("", True),
    ],
)
def test_string_f1_rule_uses_the_threshold(answer: str, wrong: bool) -> None:
    gold = gold_value(QA_SPEC, {"answers": [{"text": "blue whale", "answer_start": 4}]})
    assert is_model_wrong(QA_SPEC, {"answer": answer}, gold) is wrong


def test_string_f1_threshold_is_strict_below() -> None:
    spec = parse_task_spec({**QA, "model_wrong": {"string_f1": 0.5}})
    # "blue" vs "blue whale": precision 1, recall 0.5 -> F1 2/3 (not wrong at 0.5)
    assert not is_model_wrong(spec, {"answer": "blue"}, ["blue whale"])
    # "whale shark fin" vs "blue whale": 1 common of 3 and 2 -> F1 0.4 (wrong)
    assert is_model_wrong(spec, {"answer": "whale shark fin"}, ["blue whale"])


GENERATIVE_EXACT = parse_task_spec({**GENERATIVE_QA, "model_wrong": "exact_match"})
GENERATIVE_CHRF = parse_task_spec({**GENERATIVE_QA, "model_wrong": {"chrf_below": 0.5}})
QUESTION = {"context": CONTEXT, "question": "Which animal is the largest?"}


def test_a_text_task_takes_the_annotators_references_or_one_text() -> None:
    gold = check_gold(GENERATIVE_CHRF, QUESTION, {"text": "the blue whale"})
    assert gold == {"references": ["the blue whale"]}
    both = check_gold(GENERATIVE_CHRF, QUESTION, {"references": ["blue whale", "whale"]})
    assert gold_value(GENERATIVE_CHRF, both) == ["blue whale", "whale"]
    with pytest.raises(UsageError, match="non-empty list of non-empty strings"):
        check_gold(GENERATIVE_CHRF, QUESTION, {"references": [""]})


@pytest.mark.parametrize(
    ("task", "text", "wrong"),
    [
        (GENERATIVE_EXACT, "The blue whale.", False),  # normalised exact match
        (GENERATIVE_EXACT, "the blue whales", True),
        (GENERATIVE_CHRF, "the blue whales", False),  # close in characters
        (GENERATIVE_CHRF, "an elephant", True),
    ],
)
def test_the_model_wrong_rule_for_generated_text(task: Any, text: str, wrong: bool) -> None:
    assert is_model_wrong(task, {"text": text}, ["blue whale"]) is wrong


def test_chrf_below_is_only_for_text_tasks() -> None:
    with pytest.raises(InvalidTaskSpec, match="chrf_below is for text tasks"):
        parse_task_spec({**QA, "model_wrong": {"chrf_below": 0.5}})
