"""Calibration: expected calibration error (ECE) and its reliability bins.

Confidence is the highest class probability and an example is correct where that class
is the gold label (Guo et al., 2017). Examples fall into equal-width bins over [0, 1],
bin ``i`` holding confidences in ``(i/bins, (i+1)/bins]`` (the first also holds 0), and
ECE is the example-weighted mean of ``|accuracy - confidence|`` over the bins, x100.

>>> probs = [{"neg": 0.9, "pos": 0.1}, {"neg": 0.3, "pos": 0.7}, {"neg": 0.6, "pos": 0.4}]
>>> round(calibration_error(probs, ["neg", "pos", "pos"]), 6)
33.333333
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from scoring.registry import FloatArray, ScoringError

__all__ = ["ReliabilityBin", "calibration_error", "reliability"]


@dataclass(frozen=True)
class ReliabilityBin:
    """One confidence bin: its bounds, how many examples, their mean confidence and accuracy
    (both NaN in an empty bin)."""

    low: float
    high: float
    count: int
    confidence: float
    accuracy: float


def _confidence_and_correct(
    probs: Sequence[Mapping[Any, float]] | ArrayLike,
    golds: Sequence[Any],
    labels: Sequence[Any] | None,
) -> tuple[FloatArray, FloatArray]:
    if isinstance(probs, Sequence) and probs and isinstance(probs[0], Mapping):
        rows: Sequence[Mapping[Any, float]] = probs  # type: ignore[assignment]
        label_list = list(labels) if labels is not None else sorted(rows[0], key=str)
        matrix = np.array([[row.get(label, 0.0) for label in label_list] for row in rows])
    else:
        matrix = np.asarray(probs, dtype=np.float64)
        label_list = list(labels) if labels is not None else list(range(matrix.shape[-1]))
    if matrix.ndim != 2 or len(matrix) != len(golds) or len(golds) == 0:
        raise ScoringError(
            f"Expected one row of class probabilities per gold label ({len(golds)}), "
            f"got an array of shape {matrix.shape}"
        )
    if not np.all(np.isfinite(matrix)) or np.any(matrix < 0) or np.any(matrix > 1):
        raise ScoringError("Probabilities must be finite numbers in [0, 1]")
    best = matrix.argmax(axis=1)
    predicted = [label_list[i] for i in best]
    correct = np.fromiter(
        (p == g for p, g in zip(predicted, golds, strict=True)), np.float64, len(golds)
    )
    return matrix.max(axis=1), correct


def reliability(
    probs: Sequence[Mapping[Any, float]] | ArrayLike,
    golds: Sequence[Any],
    *,
    labels: Sequence[Any] | None = None,
    bins: int = 10,
) -> list[ReliabilityBin]:
    """The reliability diagram's bins.

    Args:
        probs: per example, either a mapping label -> probability (the model output's
            ``probs``) or a row of an ``(n, classes)`` array whose columns follow ``labels``
            (column indices when ``labels`` is not given).
        golds: the gold label of each example.
        labels: the label of each column; for mappings, the labels to read (default: the
            first mapping's keys, sorted).
        bins: the number of equal-width bins over [0, 1].
    """
    if bins < 1:
        raise ScoringError(f"bins must be at least 1, got {bins}")
    confidence, correct = _confidence_and_correct(probs, golds, labels)
    edges = np.arange(bins + 1) / bins
    which = np.clip(np.searchsorted(edges, confidence, side="left") - 1, 0, bins - 1)
    counts = np.bincount(which, minlength=bins)
    conf_sums = np.bincount(which, weights=confidence, minlength=bins)
    correct_sums = np.bincount(which, weights=correct, minlength=bins)
    result = []
    for i in range(bins):
        n = int(counts[i])
        result.append(
            ReliabilityBin(
                low=float(edges[i]),
                high=float(edges[i + 1]),
                count=n,
                confidence=float(conf_sums[i] / n) if n else float("nan"),
                accuracy=float(correct_sums[i] / n) if n else float("nan"),
            )
        )
    return result


def calibration_error(
    probs: Sequence[Mapping[Any, float]] | ArrayLike,
    golds: Sequence[Any],
    *,
    labels: Sequence[Any] | None = None,
    bins: int = 10,
) -> float:
    """Expected calibration error x100 over ``bins`` equal-width bins (see :func:`reliability`).

    >>> round(calibration_error([[0.8, 0.2], [0.8, 0.2]], [0, 1]), 9)
    30.0
    """
    binned = reliability(probs, golds, labels=labels, bins=bins)
    total = sum(b.count for b in binned)
    return 100.0 * sum(b.count / total * abs(b.accuracy - b.confidence) for b in binned if b.count)
