"""The metric registry: task metrics by name, and the errors scoring raises.

A metric is registered once with :func:`metric` and looked up by name everywhere else.
Every metric reduces per-example *statistics* to its dataset value, which is what makes
one bootstrap serve them all: resampling examples is summing statistics with counts.

* A mean metric (accuracy, SQuAD F1 and EM) decorates its per-example function, which
  returns one score in [0, 1] per example; its statistics are those scores, and its
  dataset value is their mean x100.
* Any other metric (macro-F1) decorates a function returning an ``(n, s)`` array of
  per-example statistics (for macro-F1, one-hot true positives, false positives and false
  negatives per class) and passes ``reduce``, which turns their sums into the value x100.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Metric",
    "ScoringError",
    "UnknownMetric",
    "compute",
    "get_metric",
    "metric",
    "metric_names",
    "per_example",
    "statistics",
]

FloatArray = NDArray[np.float64]
Labels = Sequence[Any] | None
StatisticsFn = Callable[[Sequence[Any], Sequence[Any], Labels], FloatArray]
PerExampleFn = Callable[[Sequence[Any], Sequence[Any]], FloatArray]
ReduceFn = Callable[[FloatArray, int], FloatArray]
Kind = Literal["label", "span", "text"]


class ScoringError(ValueError):
    """Inputs scoring cannot use: mismatched lengths, empty or non-finite tables, bad weights.

    A ``ValueError`` so that scoring stays free of the service's error tree (importing it
    would load the database layer); callers map it to a usage error (exit 2, HTTP 400).
    """


class UnknownMetric(ScoringError):
    """A metric name that is not registered; the message lists the known ones."""


@dataclass(frozen=True)
class Metric:
    """A registered task metric.

    Attributes:
        name: the registry name, e.g. ``"macro_f1"``.
        kind: ``"label"`` (golds are labels), ``"span"`` (golds are lists of answers) or
            ``"text"`` (golds are lists of reference texts).
        statistics_fn: ``(predictions, golds, labels) -> (n, s)`` per-example statistics.
        reduce: ``(sums, n) -> value x100``; ``sums`` has the statistics summed over
            examples on its last axis, and may carry leading batch axes.
        per_example_fn: the per-example scores in [0, 1] whose mean is the metric, or
            ``None`` where the metric is not such a mean (macro-F1).
    """

    name: str
    kind: Kind
    statistics_fn: StatisticsFn
    reduce: ReduceFn
    per_example_fn: PerExampleFn | None = None

    def statistics(
        self, predictions: Sequence[Any], golds: Sequence[Any], labels: Labels = None
    ) -> FloatArray:
        """Per-example statistics, an ``(n, s)`` array; checks the inputs line up."""
        _check_lengths(predictions, golds)
        return self.statistics_fn(predictions, golds, labels)

    def compute(
        self, predictions: Sequence[Any], golds: Sequence[Any], labels: Labels = None
    ) -> float:
        """The dataset value x100."""
        stats = self.statistics(predictions, golds, labels)
        return float(self.reduce(stats.sum(axis=0), len(stats)))


_REGISTRY: dict[str, Metric] = {}


def _mean_percent(sums: FloatArray, count: int) -> FloatArray:
    return np.asarray(100.0 * sums[..., 0] / count, dtype=np.float64)


def metric(
    name: str, *, kind: Kind = "label", reduce: ReduceFn | None = None
) -> Callable[[Callable[..., FloatArray]], Callable[..., FloatArray]]:
    """Register a metric under ``name``.

    Without ``reduce`` the decorated function gives per-example scores in [0, 1] and the
    metric is their mean x100. With ``reduce`` it gives per-example statistics, an
    ``(n, s)`` array, and takes the task's ``labels`` as its third argument.
    """

    def register(fn: Callable[..., FloatArray]) -> Callable[..., FloatArray]:
        if name in _REGISTRY:
            raise ScoringError(f"Metric {name!r} is already registered")
        if reduce is None:

            def as_statistics(
                predictions: Sequence[Any], golds: Sequence[Any], labels: Labels
            ) -> FloatArray:
                return np.asarray(fn(predictions, golds), dtype=np.float64)[:, None]

            entry = Metric(name, kind, as_statistics, _mean_percent, fn)
        else:
            entry = Metric(name, kind, fn, reduce)
        _REGISTRY[name] = entry
        return fn

    return register


def metric_names() -> tuple[str, ...]:
    """The registered metric names, sorted."""
    return tuple(sorted(_REGISTRY))


def get_metric(name: str) -> Metric:
    """The metric registered as ``name``.

    Raises:
        UnknownMetric: with the known names, if ``name`` is not registered.
    """
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownMetric(
            f"Unknown metric {name!r}; known: {', '.join(metric_names())}"
        ) from None


def compute(
    name: str, predictions: Sequence[Any], golds: Sequence[Any], *, labels: Labels = None
) -> float:
    """The dataset value x100 of metric ``name`` (``labels``: the task's label set)."""
    return get_metric(name).compute(predictions, golds, labels)


def statistics(
    name: str, predictions: Sequence[Any], golds: Sequence[Any], *, labels: Labels = None
) -> FloatArray:
    """Per-example statistics of metric ``name``, an ``(n, s)`` array, for the bootstrap."""
    return get_metric(name).statistics(predictions, golds, labels)


def per_example(name: str, predictions: Sequence[Any], golds: Sequence[Any]) -> FloatArray:
    """Per-example scores in [0, 1] whose mean x100 is metric ``name``.

    Raises:
        ScoringError: for a metric that is not a mean of per-example scores (macro-F1);
            resample its :func:`statistics` instead.
    """
    entry = get_metric(name)
    if entry.per_example_fn is None:
        raise ScoringError(
            f"Metric {name!r} is not a mean of per-example scores; use "
            f"statistics({name!r}, ...) and the metric's reduce, as the bootstrap does"
        )
    _check_lengths(predictions, golds)
    return np.asarray(entry.per_example_fn(predictions, golds), dtype=np.float64)


def _check_lengths(predictions: Sequence[Any], golds: Sequence[Any]) -> None:
    if len(predictions) != len(golds):
        raise ScoringError(
            f"{len(predictions)} predictions for {len(golds)} gold outputs; "
            "pass exactly one prediction per example"
        )
    if len(golds) == 0:
        raise ScoringError("No examples to score; a dataset needs at least one example")
