from __future__ import annotations

import pytest

from datasets_registry.outputs import (
    BadOutput,
    LabelOutput,
    OutputSpec,
    SpanOutput,
    TextOutput,
    output_problems,
)

SENTIMENT = OutputSpec(type="multiclass", labels=["negative", "positive"])
QA = OutputSpec(type="span")

LABELS = ["negative", "positive"]
ONE = [{"uid": "1", "text": "a"}]


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ({"label": "positive"}, None),
        ({"label": "positive", "probs": {"negative": 0.2, "positive": 0.8}}, None),
        ({"label": "positive", "probs": {"negative": 0.2, "positive": 0.8005}}, None),
        ({"label": "great"}, "not one of the task's labels"),
        ({"label": "positive", "probs": {"negative": 0.5, "positive": 0.6}}, "sum to"),
        ({"label": "positive", "probs": {"other": 1.0}}, "unknown label"),
        ({"label": "positive", "probs": {"negative": -0.5, "positive": 1.5}}, "[0, 1]"),
        ({"label": "positive", "probs": [0.5, 0.5]}, "must be an object"),
    ],
)
def test_classification_outputs(output: dict[str, object], problem: str | None) -> None:
    found = output_problems(SENTIMENT, ONE, [output])
    assert [p.problem for p in found if problem and problem in p.problem] or not found
    assert bool(found) == (problem is not None)


@pytest.mark.parametrize(
    ("output", "ok"),
    [
        ({"answer": "seven million", "conf": 0.9}, True),
        ({"answer": "eight million"}, False),
        ({"answer": 7}, False),
        ({"answer": "seven", "conf": 2}, False),
    ],
)
def test_span_answers_must_come_from_the_context(output: dict[str, object], ok: bool) -> None:
    inputs = [{"uid": "q", "context": "It covers seven million km2.", "question": "How much?"}]
    assert (output_problems(QA, inputs, [output]) == []) == ok


def test_one_output_per_input() -> None:
    found = output_problems(SENTIMENT, ONE * 2, [{"label": "positive"}])
    assert found[0].index is None and "exactly one output per input" in found[0].problem


def test_parse_gives_typed_outputs_and_every_problem_at_once() -> None:
    assert SENTIMENT.parse({"label": "positive"}) == LabelOutput("positive")
    assert QA.parse({"answer": "", "conf": 0.5}, context="c") == SpanOutput("", 0.5)
    with pytest.raises(BadOutput) as caught:
        SENTIMENT.parse({"label": "great", "probs": {"positive": 2}})
    assert len(caught.value.problems) == 2
    assert "'great'" in caught.value.problems[0] and "2" in caught.value.problems[1]


def test_prediction_and_gold_are_what_the_metric_compares() -> None:
    assert SENTIMENT.prediction({"label": "positive", "probs": {"positive": 1.0}}) == "positive"
    assert SENTIMENT.gold({"uid": "1", "label": "negative"}) == "negative"
    assert QA.prediction({"answer": "seven", "conf": 0.1}) == "seven"
    gold = {"answers": [{"text": "seven", "answer_start": 0}, "7"]}
    assert QA.gold(gold) == ["seven", "7"]


def test_probabilities_near_one_pass_and_booleans_are_not_numbers() -> None:
    assert SENTIMENT.parse({"label": "negative", "probs": {"negative": 0.9995}})
    with pytest.raises(BadOutput, match="True"):
        SENTIMENT.parse({"label": "negative", "probs": {"negative": True}})


TEXT = OutputSpec(type="text")


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        ({"text": "Rollo, a Viking"}, None),
        ({"text": ""}, None),
        ({"text": None}, "a string (the generated text) is required"),
        ({"answer": "Rollo"}, "has text None"),
        ({"text": ["Rollo"]}, "has text ['Rollo']"),
    ],
)
def test_text_outputs(output: dict[str, object], problem: str | None) -> None:
    found = output_problems(TEXT, ONE, [output])
    assert bool(found) == (problem is not None)
    assert all(problem in p.problem for p in found if problem)


def test_a_text_output_parses_to_its_text_and_scores_against_the_references() -> None:
    assert TEXT.parse({"text": "Rollo"}) == TextOutput(text="Rollo")
    assert TEXT.prediction({"text": "Rollo"}) == "Rollo"
    assert TEXT.gold({"uid": "1", "references": ["Rollo", "Rollo the Viking"]}) == [
        "Rollo",
        "Rollo the Viking",
    ]
