"""Behaviour of each task metric, calibration and the delta metrics, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from scoring import (
    ScoringError,
    calibration_error,
    compute,
    delta,
    delta_metric,
    delta_per_example,
    normalize_answer,
    per_example,
    reliability,
)


def test_accuracy_compares_labels_of_any_type() -> None:
    assert compute("accuracy", [1, 2, 3, 4], [1, 2, 0, 0]) == 50.0
    assert compute("accuracy", ["a", "b"], ["a", "a"]) == 50.0
    assert compute("accuracy", np.array(["x", "y"]), ["x", "y"]) == 100.0
    assert compute("accuracy", ["1", 2], [1, 2]) == 50.0


def test_macro_f1_by_hand() -> None:
    predictions = ["pos", "pos", "neg", "neu", "neg", "pos"]
    golds = ["pos", "neg", "neg", "neu", "neu", "pos"]
    # pos: tp 2 fp 1 fn 0 -> 4/5; neg: tp 1 fp 1 fn 1 -> 2/4; neu: tp 1 fp 0 fn 1 -> 2/3
    expected = 100 * (4 / 5 + 2 / 4 + 2 / 3) / 3
    value = compute("macro_f1", predictions, golds, labels=["neg", "neu", "pos"])
    assert value == pytest.approx(expected, abs=1e-12)


def test_macro_f1_leaves_out_classes_absent_from_golds_and_predictions() -> None:
    value = compute("macro_f1", ["pos", "pos"], ["pos", "pos"], labels=["neg", "neu", "pos"])
    assert value == 100.0


def test_macro_f1_counts_a_prediction_outside_the_labels_as_wrong() -> None:
    value = compute("macro_f1", ["pos", "???"], ["pos", "neg"], labels=["neg", "pos"])
    # pos: 2*1/(2+0+0) = 1; neg: tp 0, fn 1 -> 0
    assert value == 50.0


def test_macro_f1_refuses_a_gold_outside_the_labels() -> None:
    with pytest.raises(ScoringError, match="not in the task's label set"):
        compute("macro_f1", ["a"], ["z"], labels=["a", "b"])


def test_macro_f1_without_labels_uses_those_seen() -> None:
    assert compute("macro_f1", ["a", "b"], ["a", "b"]) == 100.0


@pytest.mark.parametrize(
    ("text", "normal"),
    [
        ("The Cat", "cat"),
        ("an  apple,  a pear!", "apple pear"),
        ("theatre", "theatre"),
        ("A", ""),
        ("Hello\tworld\n", "hello world"),
        ("U.S.A.", "usa"),
    ],
)
def test_squad_normalisation(text: str, normal: str) -> None:
    assert normalize_answer(text) == normal


def test_squad_f1_takes_the_best_gold_answer() -> None:
    # vs "blue whale": p 2/3 r 1 -> 0.8; vs "large blue whale": exact -> 1
    assert compute("squad_f1", ["a large blue whale"], [["blue whale", "large blue whale"]]) == (
        100.0
    )
    # "the cat sat" vs "cat on mat": tokens cat,sat vs cat,on,mat: p 1/2 r 1/3 -> 0.4
    assert compute("squad_f1", ["the cat sat"], [["cat on mat"]]) == pytest.approx(40.0)


def test_squad_v2_unanswerable() -> None:
    assert per_example("squad_f1", ["", "x", ""], [[], [], ["y"]]).tolist() == [1.0, 0.0, 0.0]
    assert per_example("squad_em", ["", "x", ""], [[], [], ["y"]]).tolist() == [1.0, 0.0, 0.0]
    # Gold answers that normalise to nothing are dropped, as the official v2 script does.
    assert per_example("squad_em", [""], [["the", "."]]).tolist() == [1.0]


def test_squad_refuses_a_bare_string_as_gold_answers() -> None:
    with pytest.raises(ScoringError, match="wrap it in a list"):
        compute("squad_f1", ["paris"], ["paris"])


def test_delta_for_classifiers_is_percent_unchanged() -> None:
    assert delta_metric("accuracy") == delta_metric("macro_f1") == "accuracy"
    assert delta("macro_f1", ["a", "b", "a", "c"], ["a", "a", "a", "a"]) == 50.0


def test_delta_for_qa_scores_against_the_original_prediction() -> None:
    perturbed = ["blue whale", "the whale", "", "cat"]
    original = ["blue whale", "blue whale", "", ""]
    scores = delta_per_example("squad_f1", perturbed, original)
    assert scores.tolist() == pytest.approx([1.0, 2 / 3, 1.0, 0.0])
    assert delta("squad_em", perturbed, original) == 50.0


def test_calibration_error_by_hand() -> None:
    probs = [
        {"neg": 0.95, "pos": 0.05},  # bin 9, correct
        {"neg": 0.15, "pos": 0.85},  # bin 8, correct
        {"neg": 0.81, "pos": 0.19},  # bin 8, wrong
        {"neg": 0.5, "pos": 0.5},  # bin 4 (0.4, 0.5], argmax ties to the first label: neg
    ]
    golds = ["neg", "pos", "pos", "pos"]
    expected = 100 * (
        1 / 4 * abs(1 - 0.95) + 2 / 4 * abs(0.5 - (0.85 + 0.81) / 2) + 1 / 4 * abs(0 - 0.5)
    )
    assert calibration_error(probs, golds) == pytest.approx(expected, abs=1e-12)
    bins = reliability(probs, golds)
    assert [b.count for b in bins] == [0, 0, 0, 0, 1, 0, 0, 0, 2, 1]
    assert np.isnan(bins[0].accuracy)


def test_calibration_accepts_arrays_and_refuses_bad_probabilities() -> None:
    assert calibration_error(np.array([[1.0, 0.0]]), [0]) == 0.0
    assert calibration_error([[0.2, 0.8]], ["a"], labels=["b", "a"]) == pytest.approx(20.0)
    with pytest.raises(ScoringError, match=r"in \[0, 1\]"):
        calibration_error([[1.5, -0.5]], [0])
    with pytest.raises(ScoringError, match="one row of class probabilities"):
        calibration_error([[0.5, 0.5]], [0, 1])
