from __future__ import annotations

import pytest

from submission_sandbox.check import check_outputs

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
    found = check_outputs(ONE, [output], output_type="multiclass", labels=LABELS)
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
    assert (check_outputs(inputs, [output], output_type="span") == []) == ok


def test_one_output_per_input() -> None:
    found = check_outputs(ONE * 2, [{"label": "positive"}], output_type="multiclass", labels=LABELS)
    assert found[0].index is None and "exactly one output per input" in found[0].problem
