"""The Dynascore (Dynaboard, Ma et al. 2021, section 5), and the ranking it gives.

1. Each metric is averaged over the task's scoring datasets with the dataset weights
   (:func:`average_datasets`).
2. Each metric becomes a good, ``offset + direction * value``: memory is
   ``memory_cap_gib - memory_gib`` (direction -1, offset the cap); the rest are as is.
3. Models are sorted by perf (exact ties by name). For each metric M, AMRS(M, perf) is the
   mean over adjacent pairs of ``|dM| / dperf``, skipping pairs whose perf gap is not above
   ``1e-4 * max |perf|``. AMRS(perf, perf) is 1.
4. With the weights normalised to sum 1, ``Dynascore(x) = sum_M w_M * M(x) / AMRS(M)``,
   summed in metric-name order. A metric whose AMRS is zero or undefined (all models
   equal on it, all equal in perf, a single model) contributes 0, as does one whose
   AMRS overflows (perf gaps near the smallest float).

This follows ``ScoreModel.dynascore`` in facebookresearch/dynabench, with three choices
where it is silent or fragile: exact perf ties are ordered by model name (it used an
unstable sort); the cutoff is taken on ``max |perf|`` and a pair needs a gap above zero
(it could divide by zero when perf was all zero); undefined or zero AMRS contributes 0
(it gave NaN or infinity). ``leaderboard/static/dynascore.js`` is the same formula for
the browser, and a test holds the two to 1e-9.

>>> table = {
...     "a": {"perf": 70.0, "memory": 4.0},
...     "b": {"perf": 80.0, "memory": 8.0},
...     "c": {"perf": 90.0, "memory": 2.0},
... }
>>> dynascore(table, weights={"perf": 1, "memory": 1},
...           directions={"memory": -1}, offsets={"memory": 16})
{'a': 47.0, 'b': 48.0, 'c': 59.0}
>>> rank(table, weights={"perf": 1, "memory": 1},
...      directions={"memory": -1}, offsets={"memory": 16})
['c', 'b', 'a']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from scoring._table import (
    Matrix,
    Table,
    array_matrix,
    normalised_weights,
    per_metric,
    to_goods,
    to_matrix,
)
from scoring.registry import FloatArray, ScoringError

__all__ = [
    "AMRS_CUTOFF",
    "DEFAULT_PERF_WEIGHT",
    "NormalisedTable",
    "average_datasets",
    "default_weights",
    "dynascore",
    "normalise",
    "normalise_array",
    "order",
    "rank",
    "weighted_mean",
    "weighted_means",
]

AMRS_CUTOFF = 1e-4
"""Adjacent pairs closer in perf than this fraction of ``max |perf|`` are skipped."""

DEFAULT_PERF_WEIGHT = 4.0
"""Dynaboard's default: perf weighs 4, every other metric 1."""


def default_weights(metrics: Iterable[str], *, perf: str = "perf") -> dict[str, float]:
    """Dynaboard's default weights: ``perf`` 4, every other metric 1.

    >>> default_weights(["perf", "throughput", "memory"])
    {'perf': 4.0, 'throughput': 1.0, 'memory': 1.0}
    """
    return {m: DEFAULT_PERF_WEIGHT if m == perf else 1.0 for m in metrics}


def weighted_mean(
    values: Iterable[tuple[float | None, float]],
) -> float | None:
    """The weighted mean of ``(value, weight)`` pairs, skipping missing values; None when
    no weight is left. The one dataset average, for :func:`average_datasets`, the
    evaluator's summary and the leaderboard's figures alike (``leaderboard.table`` adds
    the same way over arrays).

    Each value is weighed by its share of the weight, ``w / sum(w)``, as the bootstrap
    weighs each dataset's perf (:func:`scoring.dataset_shares`): so weights with the same
    shares give the same mean to the last bit, and one dataset's mean is its value, not
    ``w * value / w`` a rounding away (a board's intervals are kept per figures: a
    weighting that changes nothing must not make them again).

    >>> weighted_mean([(60.0, 2.0), (90.0, 1.0), (None, 5.0)])
    70.0
    >>> weighted_mean([(3.3475247524752474, 0.61)])
    3.3475247524752474
    """
    present = [(value, w) for value, w in values if value is not None]
    weight = 0.0
    for _, w in present:
        weight += w
    if not weight > 0:
        return None
    total = 0.0
    for value, w in present:
        total += w / weight * value
    return total


def weighted_means(values: FloatArray, weights: FloatArray) -> FloatArray:
    """:func:`weighted_mean` of many rows at once, to the last bit: ``values[r, j, ...]``
    is row ``r``'s ``j``-th value (NaN: missing, skipped), ``weights[r, j]`` its weight;
    returns ``[r, ...]``, NaN where no weight is left. Re-weighing 10,000 rows' datasets
    is then arithmetic, not a call per row.

    >>> weighted_means(np.array([[60.0, 90.0, np.nan]]), np.array([[2.0, 1.0, 5.0]]))
    array([70.])
    """
    present = ~np.isnan(values)
    w = weights.reshape(*weights.shape, *(1,) * (values.ndim - 2))
    weight = np.zeros(values.shape[:1] + values.shape[2:])
    for j in range(values.shape[1]):
        weight += np.where(present[:, j], w[:, j], 0.0)  # adding 0.0 changes no sum
    some = weight > 0
    safe = np.where(some, weight, 1.0)
    total = np.zeros_like(weight)
    for j in range(values.shape[1]):
        total += np.where(present[:, j], w[:, j] / safe * values[:, j], 0.0)
    means: FloatArray = np.where(some, total, np.nan)
    return means


def average_datasets(
    results: Mapping[str, Mapping[str, Mapping[str, float]]],
    *,
    dataset_weights: Mapping[str, float] | None = None,
) -> dict[str, dict[str, float]]:
    """Step 1: each model's metrics averaged over the scoring datasets with their weights.

    Args:
        results: model -> dataset -> metric -> value.
        dataset_weights: dataset -> weight (normalised here); datasets not named are not
            scoring datasets and are ignored. Default: the first model's datasets, equal.

    >>> average_datasets({"m": {"r1": {"perf": 60.0}, "r2": {"perf": 90.0}}},
    ...                  dataset_weights={"r1": 2, "r2": 1})
    {'m': {'perf': 70.0}}
    """
    if not results:
        raise ScoringError("No results to average; score at least one model")
    first = next(iter(results.values()))
    weights = dict(dataset_weights) if dataset_weights is not None else dict.fromkeys(first, 1.0)
    datasets = sorted(weights)
    total = sum(weights.values())
    if not datasets or any(not np.isfinite(w) or w < 0 for w in weights.values()) or total <= 0:
        raise ScoringError(f"Dataset weights must be >= 0 with a positive sum, got {weights!r}")
    averaged: dict[str, dict[str, float]] = {}
    for model, per_dataset in results.items():
        missing = [d for d in datasets if d not in per_dataset]
        if missing:
            raise ScoringError(
                f"Model {model!r} has no results on {', '.join(missing)}; a model is ranked "
                "only once it has results on every scoring dataset"
            )
        metrics = per_dataset[datasets[0]].keys()
        if any(per_dataset[d].keys() != metrics for d in datasets):
            raise ScoringError(f"Model {model!r} does not have the same metrics on every dataset")
        averaged[model] = {}
        for metric in metrics:
            mean = weighted_mean((per_dataset[d][metric], weights[d]) for d in datasets)
            assert mean is not None  # the weights sum above 0, checked above
            averaged[model][metric] = mean
    return averaged


def amrs_batch(goods: FloatArray, perf_col: int) -> FloatArray:
    """AMRS of every metric against perf: goods ``(..., models, metrics)`` -> ``(..., metrics)``.

    Models must be in name order (exact perf ties then sort by name); NaN where undefined.
    Leading axes are independent tables (bootstrap resamples): see :func:`amrs_columns`.
    """
    models, metrics = goods.shape[-2:]
    tables = goods.reshape(-1, models, metrics)
    columns = [np.ascontiguousarray(tables[..., k]) for k in range(metrics)]
    return amrs_columns(columns, perf_col).reshape(*goods.shape[:-2], metrics)


def amrs_columns(columns: Sequence[FloatArray], perf_col: int) -> FloatArray:
    """AMRS of every metric against perf, for tables given a metric at a time: ``columns[k]``
    holds metric ``k``'s goods ``(tables, models)``, or ``(models,)`` where every table has
    the same (a bootstrap resamples perf, not memory); ``columns[perf_col]`` is
    ``(tables, models)``. Returns ``(tables, metrics)``.

    A metric at a time, each table's goods side by side: a bootstrap takes this of 1,000
    resamples of 10,000 models, and each step reads its memory in order.
    """
    perf = columns[perf_col]
    tables, models = perf.shape
    order, ranked = _perf_order(perf)
    flat = (order + models * np.arange(tables)[:, None]).ravel()  # into the flat tables
    gaps = np.diff(ranked, axis=-1)
    kept = gaps > AMRS_CUTOFF * np.max(np.abs(perf), axis=-1, keepdims=True)
    count = kept.sum(axis=-1)
    amrs = np.full((tables, len(columns)), np.nan)
    ratios = np.empty((tables, max(0, models - 1)))
    for k, column in enumerate(columns):
        if k == perf_col:
            continue
        # Rows of one flat table, not take_along_axis's gather: a third of the time.
        ordered = np.take(column.ravel(), flat if column.ndim == 2 else order)
        ordered = ordered.reshape(tables, models)
        np.subtract(ordered[:, 1:], ordered[:, :-1], out=ratios)
        np.abs(ratios, out=ratios)
        with np.errstate(over="ignore"):  # gaps near the smallest float: AMRS inf, unusable
            np.divide(ratios, gaps, out=ratios, where=kept)
        sums = ratios.sum(axis=-1, where=kept)  # the pairs not kept add nothing
        np.divide(sums, count, out=amrs[:, k], where=count > 0)
    amrs[:, perf_col] = 1.0
    return amrs


def _perf_order(perf: FloatArray) -> tuple[NDArray[np.intp], FloatArray]:
    """Each table's models by perf, ``(tables, models)`` positions: where models tie in
    perf, the first of the tie is the lowest position and the last the highest, as a
    stable sort puts them; the order between (pairs of a tie, never counted) is any. And
    the perf in that order (what is swapped within a tie is equal).

    So the AMRS is that of the stable order, bit for bit, at a quarter of its sort: a
    bootstrap sorts 1,000 resamples of 10,000 models (numpy's stable sort 0.55 s, its
    unstable one 0.14 s), and perf ties are common (a perf is counts over examples).
    """
    tables, models = perf.shape
    order: NDArray[np.intp] = np.argsort(perf, axis=-1)
    rows = models * np.arange(tables)[:, None]
    ranked = np.take(perf.reshape(-1), (order + rows).reshape(-1)).reshape(tables, models)
    tied = ranked[:, 1:] == ranked[:, :-1]  # NaN ties nothing: its pairs are not counted
    if not tied.any():
        return order, ranked
    # Each run of equal perf: its start and end in the flat order, then its lowest and
    # highest position swapped to them.
    starts_mask = np.ones((tables, models), dtype=bool)
    starts_mask[:, 1:] = ~tied
    starts = np.flatnonzero(starts_mask)
    ends = np.append(starts[1:], tables * models) - 1
    sizes = np.diff(np.append(starts, tables * models))
    flat = order.reshape(-1)
    for pick, at in ((np.minimum, starts), (np.maximum, ends)):
        # Swapped into place, so the order stays a permutation.
        wanted = np.flatnonzero(flat == np.repeat(pick.reduceat(flat, starts), sizes))
        flat[wanted], flat[at] = flat[at], flat[wanted]
    return order, ranked


def scores_batch(
    columns: Sequence[FloatArray], amrs: FloatArray, weights: FloatArray
) -> FloatArray:
    """``sum_M w_M * M / AMRS(M)`` per model, in metric order; unusable AMRS adds 0.

    ``columns[k]`` holds metric ``k``'s goods, ``(..., models)`` like ``amrs``'s leading
    axes, or ``(models,)`` where every table has the same (a bootstrap keeps the metrics it
    does not resample once, not once per resample).
    """
    usable = np.isfinite(amrs) & (amrs > 0)
    safe = np.where(usable, amrs, 1.0)
    total = np.zeros(np.broadcast_shapes((*amrs.shape[:-1], 1), *(c.shape for c in columns)))
    for k, weight in enumerate(weights):
        if weight == 0:  # also keeps 0 * inf out, should a good / AMRS overflow
            continue
        # In place, and the unusable zeroed only where there are any: the same operations
        # on each value as ``total + np.where(usable, weight * (good / amrs), 0)``.
        term = np.empty(total.shape)
        with np.errstate(over="ignore"):
            np.divide(columns[k], safe[..., k, None], out=term)
            np.multiply(term, weight, out=term)
        if not usable[..., k].all():
            np.copyto(term, 0.0, where=~usable[..., k, None])
        total += term
    return total


@dataclass(frozen=True, eq=False)
class NormalisedTable:
    """A table turned into goods with its AMRS: re-weighting it re-ranks in microseconds.

    Nothing here depends on the weights, so a page moving a slider (or a benchmark
    re-ranking 10,000 submissions) only calls :meth:`scores` or :meth:`rank` again.
    """

    models: tuple[str, ...]
    metrics: tuple[str, ...]
    perf: str
    goods: FloatArray
    amrs: FloatArray
    _matrix: Matrix

    @property
    def nbytes(self) -> int:
        """The bytes of its arrays: the goods, their AMRS and the table they came from."""
        return self.goods.nbytes + self.amrs.nbytes + self._matrix.values.nbytes

    @property
    def amrs_by_metric(self) -> dict[str, float]:
        """AMRS per metric (NaN where undefined; such a metric contributes 0)."""
        return dict(zip(self.metrics, self.amrs.tolist(), strict=True))

    def weight_vector(self, weights: Mapping[str, float], *, normalised: bool = True) -> FloatArray:
        """``weights`` as a vector aligned with :attr:`metrics` (unnamed metrics weigh 0),
        checked, and normalised to sum 1 unless ``normalised`` is false."""
        vector = normalised_weights(self._matrix, weights)
        if normalised:
            return vector
        return per_metric(self._matrix, weights, role="weights", default=0.0)

    def scores(self, weights: Mapping[str, float]) -> FloatArray:
        """Dynascores aligned with :attr:`models`; unnamed metrics weigh 0."""
        return scores_batch(list(self.goods.T), self.amrs, self.weight_vector(weights))

    def rank(self, weights: Mapping[str, float]) -> list[str]:
        """Models from best to worst.

        Ties in the Dynascore go to the better perf, then the better goods in metric-name
        order, then the model name: a model at least as good on every metric is never
        ranked below another.
        """
        return [self.models[i] for i in self.rank_indices(weights)]

    def rank_indices(self, weights: Mapping[str, float]) -> NDArray[np.intp]:
        """:meth:`rank` as positions in :attr:`models`."""
        scores = self.scores(weights)
        order = np.argsort(-scores, kind="stable")  # models are in name order
        ranked = scores[order]
        if np.any(ranked[1:] == ranked[:-1]):  # rare, so the full tie-break only then
            order = np.lexsort([*self.tiebreak_keys(), -scores])
        return order

    def tiebreak_keys(self) -> list[NDArray[np.float64] | NDArray[np.intp]]:
        """``np.lexsort`` keys, least significant first: name, the other goods in reverse
        name order, perf (append the negated scores as the most significant)."""
        perf_col = self.metrics.index(self.perf)
        others = [k for k in range(len(self.metrics)) if k != perf_col]
        return [
            np.arange(len(self.models)),
            *(-self.goods[..., k] for k in reversed(others)),
            -self.goods[..., perf_col],
        ]


def normalise(
    table: Table,
    *,
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
) -> NormalisedTable:
    """Steps 2 and 3: goods and their AMRS, ready for any weights."""
    return _normalised(to_matrix(table), perf=perf, directions=directions, offsets=offsets)


def normalise_array(
    models: Sequence[str],
    metrics: Sequence[str],
    values: FloatArray,
    *,
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
) -> NormalisedTable:
    """:func:`normalise` of the table ``values[i, k]`` (metric ``metrics[k]`` of model
    ``models[i]``): 10,000 rows without a mapping each. Models must be distinct."""
    return _normalised(
        array_matrix(models, metrics, values), perf=perf, directions=directions, offsets=offsets
    )


def _normalised(
    matrix: Matrix,
    *,
    perf: str,
    directions: Mapping[str, float] | None,
    offsets: Mapping[str, float] | None,
) -> NormalisedTable:
    perf_col = matrix.column(perf, role="perf metric")
    goods = to_goods(matrix, directions, offsets)
    return NormalisedTable(
        matrix.models, matrix.metrics, perf, goods, amrs_batch(goods, perf_col), matrix
    )


def dynascore(
    table: Table,
    *,
    weights: Mapping[str, float],
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each model's Dynascore.

    Args:
        table: model -> metric -> value (already averaged over datasets).
        weights: metric -> weight >= 0, normalised here; metrics not named weigh 0.
        perf: the perf metric's name in ``table``.
        directions: metric -> +1 (higher is better, the default) or -1.
        offsets: metric -> offset (default 0): the good is ``offset + direction * value``.

    Raises:
        ScoringError: for an empty or ragged table, a non-finite value, weights naming
            unknown metrics, negative weights or weights summing to 0.
    """
    normalised = normalise(table, perf=perf, directions=directions, offsets=offsets)
    return dict(zip(normalised.models, normalised.scores(weights).tolist(), strict=True))


def rank(
    table: Table,
    *,
    weights: Mapping[str, float],
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
) -> list[str]:
    """Models ordered by Dynascore, best first (ties: see :meth:`NormalisedTable.rank`)."""
    normalised = normalise(table, perf=perf, directions=directions, offsets=offsets)
    return normalised.rank(weights)


def order(scores: Mapping[str, float]) -> list[str]:
    """Models by score, highest first, ties by name, NaN last.

    >>> order({"b": 1.0, "a": 1.0, "c": 2.0, "d": float("nan")})
    ['c', 'a', 'b', 'd']
    """
    return sorted(scores, key=lambda m: (np.isnan(scores[m]), -scores[m], m))
