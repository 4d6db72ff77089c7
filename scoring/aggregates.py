"""Second opinions on a table: Pareto fronts, mean z-score and HELM's mean win rate.

Each works on goods (after direction: higher is better), so memory is read the right way
round; offsets do not matter to any of them.

>>> table = {
...     "a": {"perf": 70.0, "memory": 2.0},
...     "b": {"perf": 80.0, "memory": 8.0},
...     "c": {"perf": 75.0, "memory": 9.0},
... }
>>> pareto_fronts(table, directions={"memory": -1})
{'memory': ['b', 'a']}
>>> mean_win_rate(table, directions={"memory": -1})
{'a': 0.5, 'b': 0.75, 'c': 0.25}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from scoring._table import Table, per_metric, to_goods, to_matrix
from scoring.registry import FloatArray, ScoringError

__all__ = ["mean_win_rate", "mean_z_score", "pareto_front", "pareto_fronts", "pareto_mask"]

_ROWS_AT_ONCE = 256


def _columns(
    table: Table, directions: Mapping[str, float] | None, metrics: Sequence[str] | None
) -> tuple[tuple[str, ...], tuple[str, ...], FloatArray]:
    matrix = to_matrix(table)
    goods = to_goods(matrix, directions, None)
    names = tuple(metrics) if metrics is not None else matrix.metrics
    if not names:
        raise ScoringError("Name at least one metric")
    columns = [matrix.column(name) for name in names]
    return matrix.models, names, goods[:, columns]


def pareto_front(
    table: Table,
    *,
    metrics: Sequence[str] | None = None,
    directions: Mapping[str, float] | None = None,
) -> list[str]:
    """The models no other model beats on one of ``metrics`` without losing on another.

    Sorted by the first metric's good, best first, then by name. Models with identical
    goods are both on the front.

    >>> pareto_front({"x": {"perf": 1.0, "speed": 1.0}, "y": {"perf": 1.0, "speed": 2.0}})
    ['y']
    """
    models, _, goods = _columns(table, directions, metrics)
    front = np.flatnonzero(pareto_mask(goods))
    return [models[i] for i in sorted(front, key=lambda i: (-goods[i, 0], models[i]))]


def pareto_mask(goods: FloatArray) -> NDArray[np.bool_]:
    """Which rows of ``goods`` (``(models, metrics)``, higher is better: after direction)
    are on the Pareto front: beaten by no row at least as good everywhere and better
    somewhere. The array form of :func:`pareto_front`, for callers that hold the figures
    as arrays (a board's 100,000 models: no table of mappings to build and check)."""
    if goods.ndim == 2 and goods.shape[1] == 2 and np.isfinite(goods).all():
        return _front_of_two(goods)
    on_front = np.empty(len(goods), dtype=bool)
    for start in range(0, len(goods), _ROWS_AT_ONCE):
        rows = goods[start : start + _ROWS_AT_ONCE, None, :]
        dominates = np.all(goods >= rows, axis=-1) & np.any(goods > rows, axis=-1)
        on_front[start : start + _ROWS_AT_ONCE] = ~np.any(dominates, axis=-1)
    return on_front


def _front_of_two(goods: FloatArray) -> NDArray[np.bool_]:
    """Which rows of two finite columns of goods are on the front, by one sweep (a sort,
    not every pair compared: at 10,000 models 2 ms against 0.4 s). A model is beaten
    where another has a greater first good and at least its second, or the same first
    and a greater second: after sorting by the first good, best first, it is on the front
    where its second is its group's best (the models of equal first) and above every
    second of the groups before."""
    first, second = goods[:, 0], goods[:, 1]
    order = np.lexsort((-second, -first))
    first, second = first[order], second[order]
    starts = np.flatnonzero(np.r_[True, first[1:] != first[:-1]])
    group = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(first)]))
    best_in_group = second[starts]  # each group's sorted, best second first
    best_before = np.r_[-np.inf, np.maximum.accumulate(best_in_group)[:-1]]
    on_front = np.empty(len(order), dtype=bool)
    on_front[order] = (second == best_in_group[group]) & (second > best_before[group])
    return on_front


def pareto_fronts(
    table: Table, *, perf: str = "perf", directions: Mapping[str, float] | None = None
) -> dict[str, list[str]]:
    """For each metric other than ``perf``, the Pareto front of perf against it."""
    metrics = to_matrix(table).metrics
    return {
        metric: pareto_front(table, metrics=[perf, metric], directions=directions)
        for metric in metrics
        if metric != perf
    }


def mean_z_score(
    table: Table,
    *,
    directions: Mapping[str, float] | None = None,
    weights: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """The weighted mean over metrics of each model's z-score (population std).

    A metric on which all models are equal gives everyone 0. ``weights`` default to equal.

    >>> mean_z_score({"a": {"perf": 1.0}, "b": {"perf": 3.0}})
    {'a': -1.0, 'b': 1.0}
    """
    matrix = to_matrix(table)
    goods = to_goods(matrix, directions, None)
    spread = goods.std(axis=0)
    z = np.divide(
        goods - goods.mean(axis=0),
        spread,
        out=np.zeros_like(goods),
        where=spread > 0,
    )
    w = per_metric(
        matrix,
        weights if weights is not None else dict.fromkeys(matrix.metrics, 1.0),
        role="weights",
        default=0.0,
    )
    if np.any(w < 0) or not w.sum() > 0:
        raise ScoringError(f"Weights must be >= 0 with a positive sum, got {weights!r}")
    return dict(zip(matrix.models, (z @ (w / w.sum())).tolist(), strict=True))


def mean_win_rate(
    table: Table,
    *,
    directions: Mapping[str, float] | None = None,
    metrics: Sequence[str] | None = None,
) -> dict[str, float]:
    """HELM's mean win rate: per metric, the share of other models a model beats (a tie
    counts half), averaged over ``metrics`` (default all). NaN with a single model."""
    models, _, goods = _columns(table, directions, metrics)
    if len(models) < 2:
        return dict.fromkeys(models, float("nan"))
    ordered = np.sort(goods, axis=0)
    rates = np.empty_like(goods)
    for k in range(goods.shape[1]):
        below = np.searchsorted(ordered[:, k], goods[:, k], side="left")
        not_above = np.searchsorted(ordered[:, k], goods[:, k], side="right")
        rates[:, k] = (below + (not_above - below - 1) / 2) / (len(models) - 1)
    return dict(zip(models, rates.mean(axis=1).tolist(), strict=True))
