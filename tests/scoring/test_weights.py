"""One check of weights for metrics and datasets (scoring.weights)."""

from __future__ import annotations

import math

import pytest

from scoring import (
    InvalidWeightsError,
    check_dataset_weight,
    check_weights,
    default_dataset_weight,
    parse_weights,
)

METRICS = ["perf", "throughput", "memory", "fairness", "robustness"]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("perf:1e308,throughput:1e308", "sum to infinity"),
        ("perf:0,memory:0", "Every metric weight is 0 (perf:0,memory:0)"),
        ("perf:nan", "perf:nan is not a finite number"),
        ("perf:-inf", "perf:-inf is not a finite number"),
        ("perf:-1", "perf:-1 is negative"),
        ("acc:1", "Unknown metric 'acc' in the weights; known: perf, throughput"),
        ("acc:x", "Unknown metric 'acc'"),
        ("perf:x", "Weight perf:'x' is not a number"),
        ("perf", "'perf' is not METRIC:NUMBER"),
        (":1", "is not METRIC:NUMBER"),
    ],
)
def test_bad_metric_weights_name_the_bad_value(text: str, says: str) -> None:
    with pytest.raises(InvalidWeightsError) as caught:
        parse_weights(text, known=METRICS)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_good_weights_parse_either_separator_and_blank_is_none() -> None:
    assert parse_weights(" perf=4 , memory:0.5,", known=METRICS) == {"perf": 4.0, "memory": 0.5}
    assert parse_weights("", known=METRICS) is None and parse_weights(None, known=METRICS) is None
    assert check_weights({"perf": 1e300, "memory": 1e300}, known=METRICS) == {
        "perf": 1e300,
        "memory": 1e300,
    }


def test_dataset_weights_may_be_partial_and_zero() -> None:
    known = ["r1-test", "round-2"]
    assert parse_weights("round-2:0", known=known, what="dataset", partial=True) == {"round-2": 0.0}
    with pytest.raises(InvalidWeightsError, match="Every dataset weight is 0"):
        parse_weights("round-2:0", known=known, what="dataset")
    with pytest.raises(
        InvalidWeightsError, match="Unknown dataset 'r3' in the weights; known: r1-test, round-2"
    ):
        parse_weights("r3:1", known=known, what="dataset", partial=True)


@pytest.mark.parametrize("weight", [0.0, -1.0, math.nan, math.inf, 2e6])
def test_an_owners_dataset_weight_is_finite_and_positive(weight: float) -> None:
    with pytest.raises(InvalidWeightsError, match="round-2"):
        check_dataset_weight(weight, name="round-2")
    assert check_dataset_weight(0.25, name="round-2") == 0.25


def test_the_default_weight_of_a_small_round() -> None:
    assert default_dataset_weight(4) == pytest.approx(0.008)
    assert default_dataset_weight(500) == 1.0 and default_dataset_weight(12_284) == 1.0
    with pytest.raises(InvalidWeightsError):
        default_dataset_weight(0)
