"""Occlusion's pure parts: words, the variants without each word, and each output type's
attribution rule."""

from __future__ import annotations

import pytest

from datasets_registry.taskspec import parse_task_spec
from leaderboard.occlusion import RULES, attribution_scores, variants, without, words_of
from tests.helpers.tasks import GENERATIVE_QA, QA, sentiment_spec


@pytest.mark.parametrize(
    ("text", "start", "end", "left"),
    [
        ("Not  bad, really.", 0, 3, "bad, really."),
        ("Not  bad, really.", 5, 9, "Not  really."),
        ("Not  bad, really.", 10, 17, "Not  bad,"),
        ("alone", 0, 5, ""),
        ("line one\nline two", 5, 8, "line line two"),
    ],
)
def test_a_word_goes_with_the_space_after_it(text: str, start: int, end: int, left: str) -> None:
    assert without(text, start, end) == left


def test_every_word_of_every_input_field_gets_one_variant() -> None:
    inputs = {"context": "Paris is in France.", "question": "Where is Paris?"}
    words = words_of(inputs, ["context", "question"])
    assert [(w.field, w.text) for w in words] == [
        ("context", "Paris"),
        ("context", "is"),
        ("context", "in"),
        ("context", "France."),
        ("question", "Where"),
        ("question", "is"),
        ("question", "Paris?"),
    ]
    made = variants(inputs, words)
    assert made[3] == {"context": "Paris is in", "question": "Where is Paris?"}
    assert made[6] == {"context": "Paris is in France.", "question": "Where is"}
    assert all(inputs[w.field][w.start : w.end] == w.text for w in words)


def test_classification_scores_the_drop_in_the_predicted_labels_probability() -> None:
    task = sentiment_spec()
    full = {"label": "positive", "probs": {"negative": 0.1, "neutral": 0.2, "positive": 0.7}}
    occluded = [
        {"label": "neutral", "probs": {"negative": 0.1, "neutral": 0.8, "positive": 0.1}},
        {"label": "positive", "probs": {"negative": 0.0, "neutral": 0.1, "positive": 0.9}},
    ]
    assert attribution_scores(task, full, occluded) == pytest.approx([0.6, -0.2])
    # Without probabilities a label counts as probability 1: 1 where it changed, else 0.
    bare = attribution_scores(task, {"label": "positive"}, [{"label": "neutral"}, full])
    assert bare == pytest.approx([1.0, 0.3])


def test_a_span_task_scores_one_minus_the_answers_string_f1() -> None:
    task = parse_task_spec(QA)
    full = {"answer": "the blue whale"}
    occluded = [
        {"answer": "the blue whale"},
        {"answer": "blue"},
        {"answer": "a fish"},
        {"answer": ""},
    ]
    # SQuAD normalisation drops "the": F1("blue", "blue whale") = 2/3.
    assert attribution_scores(task, full, occluded) == pytest.approx([0.0, 1 / 3, 1.0, 1.0])
    assert "F1" in RULES["span"]


def test_a_text_task_scores_one_minus_sentence_chrf() -> None:
    task = parse_task_spec(GENERATIVE_QA)
    full = {"text": "Rollo was the first ruler of Normandy"}
    same, near, other = attribution_scores(
        task,
        full,
        [full, {"text": "Rollo was the first ruler"}, {"text": "unrelated words entirely"}],
    )
    assert same == pytest.approx(0.0) and 0 < near < other <= 1
    assert "chrF" in RULES["text"]
