"""One test suite over every registered metric (as huggingface evaluate's test_metric_common)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import scoring
from scoring import ScoringError, UnknownMetric, compute, get_metric, metric_names, statistics

LABELS = ["negative", "neutral", "positive"]
CONTEXT_WORDS = ["the", "blue", "whale", "is", "large", "in", "Paris", "France", "a", ""]
TEXT_WORDS = ["whales", "sing", "under", "blue", "water", "in", "the", "cold", "north", "sea"]


def make_examples(kind: str, n: int, seed: int) -> tuple[list[Any], list[Any]]:
    """Random predictions and golds of the right shape for a metric of ``kind``."""
    rng = np.random.default_rng(seed)
    if kind == "label":
        golds = [LABELS[i] for i in rng.integers(0, 3, n)]
        predictions = [g if rng.random() < 0.6 else LABELS[rng.integers(0, 3)] for g in golds]
        return predictions, golds

    if kind == "text":
        # Several references each, long enough for BLEU's 4-grams.
        def sentence() -> str:
            return " ".join(rng.choice(TEXT_WORDS, size=rng.integers(4, 9)))

        golds = [[sentence() for _ in range(rng.integers(1, 4))] for _ in range(n)]
        predictions = [gs[-1] if rng.random() < 0.5 else sentence() for gs in golds]
        return predictions, golds

    def phrase() -> str:
        return " ".join(rng.choice(CONTEXT_WORDS, size=rng.integers(1, 4)))

    golds = [[] if rng.random() < 0.2 else [phrase() for _ in range(3)] for _ in range(n)]
    predictions = [(gs[0] if gs else "") if rng.random() < 0.5 else phrase() for gs in golds]
    return predictions, golds


def test_registry_holds_the_task_metrics() -> None:
    assert set(metric_names()) >= {"accuracy", "macro_f1", "squad_f1", "squad_em"}
    assert set(metric_names()) >= set(scoring.TEXT_METRICS)


def test_unknown_metric_lists_the_known_ones() -> None:
    with pytest.raises(UnknownMetric) as caught:
        get_metric("acc")
    assert str(caught.value) == f"Unknown metric 'acc'; known: {', '.join(metric_names())}"
    assert isinstance(caught.value, ValueError)


def test_registering_a_name_twice_is_refused() -> None:
    with pytest.raises(ScoringError, match="already registered"):
        scoring.metric("accuracy")(lambda predictions, golds: np.ones(len(golds)))


@pytest.mark.parametrize("name", metric_names())
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_value_is_a_percentage(name: str, seed: int) -> None:
    predictions, golds = make_examples(get_metric(name).kind, 50, seed)
    value = compute(name, predictions, golds, labels=LABELS)
    assert isinstance(value, float)
    assert 0.0 <= value <= 100.0


@pytest.mark.parametrize("name", metric_names())
def test_perfect_predictions_score_100(name: str) -> None:
    _, golds = make_examples(get_metric(name).kind, 40, 3)
    perfect = [
        g if isinstance(g, str) else next((a for a in g if scoring.normalize_answer(a)), "")
        for g in golds
    ]
    # approx: sacrebleu's BLEU is exp(mean of log precisions), 100 within float rounding.
    assert compute(name, perfect, golds, labels=LABELS) == pytest.approx(100.0, abs=1e-9)


@pytest.mark.parametrize("name", metric_names())
def test_value_is_the_reduce_of_summed_statistics_on_any_resample(name: str) -> None:
    """What the bootstrap relies on: a resample's metric is the reduce of its statistics."""
    entry = get_metric(name)
    predictions, golds = make_examples(entry.kind, 60, 4)
    stats = statistics(name, predictions, golds, labels=LABELS)
    assert stats.ndim == 2 and len(stats) == 60
    rng = np.random.default_rng(5)
    for _ in range(5):
        idx = rng.integers(0, 60, 60)
        direct = compute(
            name, [predictions[i] for i in idx], [golds[i] for i in idx], labels=LABELS
        )
        assert float(entry.reduce(stats[idx].sum(axis=0), 60)) == pytest.approx(direct, abs=1e-9)


@pytest.mark.parametrize("name", metric_names())
def test_per_example_mean_is_the_metric_where_defined(name: str) -> None:
    entry = get_metric(name)
    predictions, golds = make_examples(entry.kind, 30, 6)
    if entry.per_example_fn is None:
        with pytest.raises(ScoringError, match="not a mean of per-example scores"):
            scoring.per_example(name, predictions, golds)
        return
    scores = scoring.per_example(name, predictions, golds)
    assert scores.shape == (30,)
    assert np.all((scores >= 0) & (scores <= 1))
    assert 100 * scores.mean() == pytest.approx(compute(name, predictions, golds))


@pytest.mark.parametrize("name", metric_names())
def test_mismatched_lengths_and_empty_inputs_are_refused(name: str) -> None:
    predictions, golds = make_examples(get_metric(name).kind, 5, 7)
    with pytest.raises(ScoringError, match="4 predictions for 5 gold outputs"):
        compute(name, predictions[:4], golds, labels=LABELS)
    with pytest.raises(ScoringError, match="No examples"):
        compute(name, [], [], labels=LABELS)


@pytest.mark.parametrize("name", metric_names())
def test_statistics_are_batched_by_reduce(name: str) -> None:
    entry = get_metric(name)
    predictions, golds = make_examples(entry.kind, 20, 8)
    sums = statistics(name, predictions, golds, labels=LABELS).sum(axis=0)
    batch = entry.reduce(np.stack([sums, sums, sums]), 20)
    assert batch.shape == (3,)
    assert np.all(batch == entry.reduce(sums, 20))
