"""The board's metric vocabulary (scoring.METRICS) and what it promises its readers."""

from __future__ import annotations

import numpy as np
import pytest

from evaluator import TaskMetrics
from scoring import (
    DEFAULT_WEIGHTS,
    METRICS,
    WEIGHABLE_METRICS,
    figure_arrays,
    fill_missing,
    goods_transform,
    normalise,
    rankable,
)


def test_every_board_metric_reads_a_field_of_the_evaluators_summary() -> None:
    fields = set(TaskMetrics.model_fields)
    assert {m.result_field for m in METRICS.values()} <= fields
    assert METRICS["memory"].result_field == "memory_gib"  # the one rename, kept here


def test_the_weighable_metrics_are_dynaboards_five_then_energy_in_column_order() -> None:
    assert WEIGHABLE_METRICS == (
        "perf",
        "throughput",
        "memory",
        "fairness",
        "robustness",
        "energy",
    )
    assert list(METRICS)[: len(WEIGHABLE_METRICS)] == list(WEIGHABLE_METRICS)


def test_energy_is_weighable_lower_is_better_and_off_by_default() -> None:
    energy = METRICS["energy"]
    assert energy.weighable and energy.direction == "lower" and energy.unit == "J/1k examples"
    assert DEFAULT_WEIGHTS == {
        "perf": 4.0,
        "throughput": 1.0,
        "memory": 1.0,
        "fairness": 1.0,
        "robustness": 1.0,
        "energy": 0.0,
    }
    assert energy.caveat and "estimated" in energy.measured and "measured" in energy.measured
    assert energy.method_field in TaskMetrics.model_fields


@pytest.mark.parametrize(
    ("values", "filled"),
    [
        ([3.0, None, 7.0], [3.0, 7.0, 7.0]),  # lower is better: the missing one gets the most
        ([None, 2.0], [2.0, 2.0]),
        ([0.0, None], [0.0, 0.0]),  # a real zero is a figure, not a missing one
    ],
)
def test_a_missing_energy_figure_is_filled_with_the_worst_one(
    values: list[float | None], filled: list[float]
) -> None:
    table = {f"m{i}": {"perf": 50.0, "energy": v} for i, v in enumerate(values)}
    result = fill_missing(table, ["perf", "energy"])
    assert [result[f"m{i}"]["energy"] for i in range(len(values))] == filled


def test_a_missing_figure_of_a_metric_that_does_not_allow_it_is_refused() -> None:
    with pytest.raises(ValueError, match="no memory figure"):
        fill_missing({"a": {"memory": 1.0}, "b": {"memory": None}}, ["memory"])
    with pytest.raises(ValueError, match="no energy figure"):  # nobody has one: no worst
        fill_missing({"a": {"energy": None}}, ["energy"])


@pytest.mark.parametrize(
    ("name", "values", "expected"),
    [
        ("energy", [1.0, None], True),
        ("energy", [None, None], False),
        ("memory", [1.0, None], False),
        ("memory", [1.0, 2.0], True),
    ],
)
def test_rankable_says_when_a_metric_may_enter_the_dynascore(
    name: str, values: list[float | None], expected: bool
) -> None:
    assert rankable(name, values) is expected


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_says_how_it_is_measured(name: str) -> None:
    metric = METRICS[name]
    assert metric.name == name and metric.label and metric.unit and metric.measured
    assert metric.sign == (1.0 if metric.direction == "higher" else -1.0)


def test_goods_name_only_the_metrics_asked_for() -> None:
    assert goods_transform(["perf", "throughput"], memory_cap_gib=16) == ({}, {})
    directions, offsets = goods_transform(list(METRICS), memory_cap_gib=8)
    assert directions == {"memory": -1.0, "energy": -1.0, "latency_p50": -1.0, "ece": -1.0}
    assert offsets == {"memory": 8.0}


def test_memory_enters_the_dynascore_as_the_cap_minus_the_peak() -> None:
    table = {"a": {"perf": 60.0, "memory": 3.0}, "b": {"perf": 70.0, "memory": 5.0}}
    directions, offsets = goods_transform(["perf", "memory"], memory_cap_gib=16)
    normalised = normalise(table, directions=directions, offsets=offsets)
    assert normalised.goods[:, normalised.metrics.index("memory")].tolist() == [13.0, 11.0]


def test_figure_arrays_mark_a_missing_figure_not_a_figure_that_is_not_a_number() -> None:
    """None or absent is missing; NaN and infinity are figures (what the ranking does with
    them is the metric's rule, not this reading's)."""
    rows = [
        {"perf": 80.0, "memory": None},
        {"perf": float("nan"), "memory": 1.5},
        {"memory": float("inf")},
        {},
    ]
    values, missing = figure_arrays(rows, ["perf", "memory"])
    assert missing.tolist() == [[False, True], [False, False], [True, False], [True, True]]
    assert values[0, 0] == 80.0 and values[1, 1] == 1.5 and values[2, 1] == float("inf")
    assert np.isnan(values[1, 0]) and np.isnan(values[missing]).all()
    empty_values, empty_missing = figure_arrays([], ["perf"])
    assert empty_values.shape == empty_missing.shape == (0, 1)
