"""Internal: a model x metric table as arrays, and its checks.

Models and metrics are kept sorted by name, so every result is independent of the order
the caller's mappings happen to have, and ties broken "by name" are broken by position.
"""

from __future__ import annotations

import itertools
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from scoring.registry import FloatArray, ScoringError

Table = Mapping[str, Mapping[str, float]]
"""model -> metric -> value, every model with the same metrics."""


@dataclass(frozen=True, eq=False)
class Matrix:
    """A validated table: ``values[i, k]`` is metric ``metrics[k]`` of model ``models[i]``."""

    models: tuple[str, ...]
    metrics: tuple[str, ...]
    values: FloatArray

    def column(self, metric: str, *, role: str = "metric") -> int:
        """The index of ``metric``, or an error naming the known metrics."""
        try:
            return self.metrics.index(metric)
        except ValueError:
            raise ScoringError(
                f"Unknown {role} {metric!r}; the table has: {', '.join(self.metrics)}"
            ) from None


def to_matrix(table: Table) -> Matrix:
    """Validate ``table`` and lay it out as arrays (models and metrics sorted by name)."""
    if not table:
        raise ScoringError("The table has no models; score at least one model")
    models = tuple(sorted(table))
    metrics = tuple(sorted(table[models[0]]))
    if not metrics:
        raise ScoringError(f"Model {models[0]!r} has no metrics")
    pick = operator.itemgetter(*metrics)
    rows = []
    for model in models:
        row = table[model]
        try:
            if len(row) != len(metrics):
                raise KeyError(model)
            rows.append(pick(row))
        except KeyError:
            missing = sorted(set(metrics) - row.keys())
            extra = sorted(row.keys() - set(metrics))
            raise ScoringError(
                f"Model {model!r} does not have the same metrics as {models[0]!r} "
                f"(missing: {', '.join(missing) or '-'}; extra: {', '.join(extra) or '-'}); "
                "every model needs every metric, or leave the model out"
            ) from None
    if len(metrics) == 1:  # itemgetter of one key gives the value, not a tuple
        rows = [(value,) for value in rows]
    flat = itertools.chain.from_iterable(rows)
    try:
        values = np.fromiter(flat, np.float64, len(models) * len(metrics))
    except (TypeError, ValueError) as error:
        raise ScoringError(f"Every value must be a finite number ({error})") from None
    return _checked(models, metrics, values.reshape(len(models), len(metrics)))


def array_matrix(models: Sequence[str], metrics: Sequence[str], values: FloatArray) -> Matrix:
    """What :func:`to_matrix` gives for the table ``values[i, k]`` (metric ``metrics[k]``
    of model ``models[i]``), without a mapping per model; models must be distinct."""
    if not models:
        raise ScoringError("The table has no models; score at least one model")
    if not metrics:
        raise ScoringError(f"Model {models[0]!r} has no metrics")
    rows = sorted(range(len(models)), key=models.__getitem__)
    columns = sorted(range(len(metrics)), key=metrics.__getitem__)
    picked = np.asarray(values, dtype=np.float64)[np.ix_(rows, columns)]
    return _checked(tuple(models[i] for i in rows), tuple(metrics[k] for k in columns), picked)


def _checked(models: tuple[str, ...], metrics: tuple[str, ...], values: FloatArray) -> Matrix:
    if not np.all(np.isfinite(values)):
        i, k = np.argwhere(~np.isfinite(values))[0]
        raise ScoringError(
            f"Metric {metrics[k]!r} of model {models[i]!r} is {values[i, k]}; "
            "every value must be a finite number"
        )
    return Matrix(models, metrics, values)


def per_metric(
    matrix: Matrix, mapping: Mapping[str, float] | None, *, role: str, default: float
) -> FloatArray:
    """A vector over ``matrix.metrics`` from ``mapping`` (absent metrics get ``default``)."""
    vector = np.full(len(matrix.metrics), default, dtype=np.float64)
    for name, value in (mapping or {}).items():
        vector[matrix.column(name, role=f"metric in {role}")] = value
    if not np.all(np.isfinite(vector)):
        raise ScoringError(f"Every value in {role} must be a finite number, got {mapping!r}")
    return vector


def to_goods(
    matrix: Matrix,
    directions: Mapping[str, float] | None,
    offsets: Mapping[str, float] | None,
) -> FloatArray:
    """Each metric as a good: ``offset + direction * value`` (memory: cap - used)."""
    direction = per_metric(matrix, directions, role="directions", default=1.0)
    if not np.all(np.abs(direction) == 1.0):
        raise ScoringError(
            f"Directions must be +1 (higher is better) or -1 (lower is better), got {directions!r}"
        )
    offset = per_metric(matrix, offsets, role="offsets", default=0.0)
    return np.asarray(offset + direction * matrix.values, dtype=np.float64)


def normalised_weights(matrix: Matrix, weights: Mapping[str, float]) -> FloatArray:
    """Weights over ``matrix.metrics``, summing to 1; metrics not named weigh 0."""
    vector = per_metric(matrix, weights, role="weights", default=0.0)
    if np.any(vector < 0):
        raise ScoringError(f"Weights must not be negative, got {dict(weights)!r}")
    total = vector.sum()
    if not total > 0:
        raise ScoringError(
            f"At least one weight must be positive, got {dict(weights)!r}; "
            "the default is perf 4 and every other metric 1"
        )
    return np.asarray(vector / total, dtype=np.float64)
