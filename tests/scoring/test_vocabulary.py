"""The board's metric vocabulary (scoring.METRICS) and what it promises its readers."""

from __future__ import annotations

import pytest

from evaluator import TaskMetrics
from scoring import METRICS, WEIGHABLE_METRICS, goods_transform, normalise


def test_every_board_metric_reads_a_field_of_the_evaluators_summary() -> None:
    fields = set(TaskMetrics.model_fields)
    assert {m.result_field for m in METRICS.values()} <= fields
    assert METRICS["memory"].result_field == "memory_gib"  # the one rename, kept here


def test_the_weighable_metrics_are_dynaboards_five_in_column_order() -> None:
    assert WEIGHABLE_METRICS == ("perf", "throughput", "memory", "fairness", "robustness")
    assert list(METRICS)[: len(WEIGHABLE_METRICS)] == list(WEIGHABLE_METRICS)


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_says_how_it_is_measured(name: str) -> None:
    metric = METRICS[name]
    assert metric.name == name and metric.label and metric.unit and metric.measured
    assert metric.sign == (1.0 if metric.direction == "higher" else -1.0)


def test_goods_name_only_the_metrics_asked_for() -> None:
    assert goods_transform(["perf", "throughput"], memory_cap_gib=16) == ({}, {})
    directions, offsets = goods_transform(list(METRICS), memory_cap_gib=8)
    assert directions == {"memory": -1.0, "latency_p50": -1.0, "ece": -1.0}
    assert offsets == {"memory": 8.0}


def test_memory_enters_the_dynascore_as_the_cap_minus_the_peak() -> None:
    table = {"a": {"perf": 60.0, "memory": 3.0}, "b": {"perf": 70.0, "memory": 5.0}}
    directions, offsets = goods_transform(["perf", "memory"], memory_cap_gib=16)
    normalised = normalise(table, directions=directions, offsets=offsets)
    assert normalised.goods[:, normalised.metrics.index("memory")].tolist() == [13.0, 11.0]
