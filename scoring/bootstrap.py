"""Bootstrap intervals for perf and the Dynascore, and how likely each model is to lead.

Examples are resampled with replacement within each dataset, with the *same* resample
for every model (the models answered the same examples, so their scores are paired);
perf is recomputed from each resample and the Dynascore after it, AMRS included. The
other metrics (throughput, memory, fairness, robustness) are measurements of the run,
not of the examples: they stay at their values, unless ``repeats`` gives a metric's
repeated measurements (timed passes), which are then resampled too and their median
used. Intervals are percentile intervals; the estimate is the value on the full data. A
seed makes the result reproducible.

Each resample ranks the models as the board does (Dynascore, then the baseline floor of
:mod:`scoring.floor`), which gives every model a rank interval and the share of resamples
it leads (``p_first``). The Dynascore's own interval mostly moves the AMRS-scaled common
term that every model shares; the paired difference to the leader (``gap_to_leader``)
cancels it, and is the interval worth showing.

Input is per-example statistics (see :func:`scoring.statistics`): for a mean metric
(accuracy, SQuAD F1) simply the per-example scores in [0, 1]; for macro-F1 the per-class
confusion indicators, which resampling sums before macro-F1 is taken, so the metric is
recomputed on every resample rather than averaged.

>>> import numpy as np
>>> rng = np.random.default_rng(1)
>>> examples = {"strong": {"test": (rng.random(500) < 0.8).astype(float)},
...             "weak": {"test": (rng.random(500) < 0.6).astype(float)}}
>>> result = bootstrap(examples, metric="accuracy", n_resamples=200, seed=7)
>>> interval = result.perf["strong"]
>>> interval.low < interval.estimate < interval.high
True
>>> result.p_first
{'strong': 1.0, 'weak': 0.0}
>>> result.rank_interval
{'strong': (1, 1), 'weak': (2, 2)}
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TypedDict, Unpack

import numpy as np
from numpy.typing import ArrayLike, NDArray

from scoring import percentiles
from scoring._table import Table, per_metric
from scoring.dynascore import (
    NormalisedTable,
    amrs_columns,
    normalise,
)
from scoring.floor import not_above_baselines
from scoring.parallel import over_rows
from scoring.registry import FloatArray, ScoringError, get_metric
from scoring.weighing import weigh

__all__ = [
    "BootstrapResult",
    "Draws",
    "Interval",
    "Resamples",
    "bootstrap",
    "dataset_shares",
    "draw",
    "resample",
]

_CHUNK_CELLS = 4_000_000  # resample counts held at once: rows x examples
_CHECK_CELLS = 1_000_000  # statistics checked at once: their temporaries reuse one buffer
_STEP_CELLS = 250_000  # goods of the resamples ranked at once: their temporaries fit a CPU cache
_BASELINE = "\x00baseline"  # the baseline's column, never a model name


@dataclass(frozen=True)
class Interval:
    """A point estimate with its bootstrap interval."""

    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class BootstrapResult:
    """Per model: perf and Dynascore intervals, and the share of resamples it ranks first."""

    perf: dict[str, Interval]
    dynascore: dict[str, Interval]
    p_first: dict[str, float]
    p_first_perf: dict[str, float]
    n_resamples: int
    level: float
    seed: int
    #: Models best first, as the board ranks them (Dynascore, then the baseline floor).
    order: list[str] = field(default_factory=list)
    #: [best, worst] rank at ``level``, always holding the observed rank.
    rank_interval: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: Dynascore minus the leader's, paired within each resample (the leader: 0, 0, 0).
    gap_to_leader: dict[str, Interval] = field(default_factory=dict)
    #: Whether the perf interval fails to clear the baseline (see :mod:`scoring.floor`).
    not_above_baseline: dict[str, bool] = field(default_factory=dict)
    #: Perf minus the baseline's, paired within each resample (empty with no baseline).
    above_baseline: dict[str, Interval] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Draws:
    """What a seeded bootstrap draws before anything is weighed (:func:`draw`): how often
    each resample draws each example, each dataset's perf (the metric's reduce of the
    resampled statistics) in every resample and on the full data, for every column (the
    models by name, then the baseline's labels), and the picks of each repeated
    measurement.

    Nothing here depends on the dataset or metric weights, nor on the other metrics'
    values: :func:`bootstrap` given them computes what drawing again with the same seed
    gives, to the last bit, at the cost of its arithmetic (the resampled sums are most of
    a bootstrap's time). Nor does a column depend on the other columns: the examples'
    draws come from the seed alone and each measurement's picks from the seed and its
    model's and metric's names, so draws for a board with one more model take the kept
    columns as they are (``draw(..., previous=, kept=)``).
    """

    #: The perf metric whose reduce made ``perf`` and ``estimate``.
    metric: str
    datasets: tuple[str, ...]
    columns: tuple[str, ...]
    n_resamples: int
    seed: int
    #: Per dataset: ``(n_resamples, examples)``, how often each resample draws each example.
    counts: tuple[NDArray[np.unsignedinteger], ...]
    #: Per dataset: ``(n_resamples, columns)`` resampled perf; ``(columns,)`` on the full data.
    perf: tuple[FloatArray, ...]
    estimate: tuple[FloatArray, ...]
    #: Per repeated measurement, by (model, metric): ``(n_resamples, size)`` positions drawn.
    picks: Mapping[tuple[str, str], NDArray[np.integer]]
    #: Whether every statistic is a whole number (0/1 indicators: accuracy, macro-F1's
    #: counts), so that sums over resampled counts are exact however they are blocked:
    #: only then are columns copied into other draws (fractional statistics summed for
    #: another set of columns may round otherwise in the last bit).
    whole: bool = False

    def fits(
        self,
        metric: str,
        columns: Sequence[str],
        datasets: Sequence[str],
        sizes: Mapping[tuple[str, str], int],
        *,
        n: int,
        seed: int,
    ) -> bool:
        """Whether these are the draws of a bootstrap of ``metric`` over ``columns`` on
        ``datasets`` with repeated measurements of ``sizes`` (the examples themselves are
        the caller's to keep the same)."""
        return (
            self._drawn_alike(metric, datasets, n=n, seed=seed)
            and self.columns == tuple(columns)
            and all(
                key in self.picks and self.picks[key].shape[1] == size
                for key, size in sizes.items()
            )
        )

    def _drawn_alike(self, metric: str, datasets: Sequence[str], *, n: int, seed: int) -> bool:
        return (self.metric, self.datasets, self.n_resamples, self.seed) == (
            metric,
            tuple(datasets),
            n,
            seed,
        )


def _stack(
    examples: Mapping[str, Mapping[str, ArrayLike]], models: list[str], dataset: str
) -> FloatArray:
    """One dataset's statistics of every model as an ``(n, models, s)`` array."""
    arrays = []
    for model in models:
        if dataset not in examples[model]:
            raise ScoringError(f"Model {model!r} has no examples of dataset {dataset!r}")
        array = np.asarray(examples[model][dataset], dtype=np.float64)
        arrays.append(array[:, None] if array.ndim == 1 else array)
    shapes = {a.shape for a in arrays}
    if len(shapes) != 1 or arrays[0].ndim != 2 or arrays[0].shape[0] == 0:
        raise ScoringError(
            f"Dataset {dataset!r}: every model needs statistics for the same non-empty list "
            f"of examples, got shapes {sorted(shapes)}"
        )
    stacked = np.stack(arrays, axis=1)  # once: 10,000 models' macro-F1 counts are 360 MB
    if not all(np.isfinite(part).all() for part in _parts(stacked)):
        raise ScoringError(f"Dataset {dataset!r} has non-finite per-example statistics")
    return stacked


def _parts(array: FloatArray) -> Iterator[FloatArray]:
    """``array`` a few examples at a time, so that what a check makes of each stays small
    (a copy of 10,000 models' statistics costs more in fresh memory than in arithmetic)."""
    step = max(1, _CHECK_CELLS // max(1, array[:1].size))
    for start in range(0, len(array), step):
        yield array[start : start + step]


def _whole(array: FloatArray) -> bool:
    """Whether every value is a whole number."""
    return all(np.array_equal(part, np.round(part)) for part in _parts(array))


@dataclass(frozen=True, eq=False)
class Resamples:
    """What a bootstrap computes before the metric weights (:func:`resample`): in every
    resample each model's goods (perf from the draws with the dataset shares, the repeated
    measurements' medians, the other metrics as they are) and their AMRS, and what follows
    from perf alone: its intervals, the floor's flags and the best perf of each resample.

    :func:`bootstrap` given them weighs and ranks the resamples, to the last bit what
    resampling again gives; most of its time is here (AMRS sorts every resample by perf).
    """

    #: The table on the full data, perf included: its models are the resamples'.
    normalised: NormalisedTable
    #: Each dataset's share of the weight, in name order (:func:`dataset_shares`).
    shares: tuple[float, ...]
    n_resamples: int
    level: float
    seed: int
    #: Perf on the full data, and the baseline's (None: no baseline).
    estimate: FloatArray
    base_estimate: float | None
    #: Each metric's goods in every resample: ``(n_resamples, models)`` for perf and the
    #: repeated measurements, ``(models,)`` for a metric no resample changes (a tenth of the
    #: memory at 10,000 models, where a full ``(n_resamples, models, metrics)`` is 400 MB).
    columns: tuple[FloatArray, ...]
    #: ``(n_resamples, metrics)``: the AMRS of each resample.
    amrs: FloatArray
    #: ``(2, models)``: the low and high ends of perf and of perf minus the baseline's.
    perf_q: FloatArray
    above_q: FloatArray
    flagged: NDArray[np.intp]
    first_perf_counts: NDArray[np.intp]

    @cached_property
    def term_bounds(self) -> FloatArray:
        """``(2, metrics, models)``: each model's lowest and highest term ``good / AMRS``
        of each metric over every resample (0 where the resample's AMRS is unusable: that
        term adds nothing), as :func:`scoring.scores_batch` divides them; NaN everywhere
        where a good or a term is not finite.

        Any metric weights bound each model's resampled Dynascores by them, the terms'
        extremes summed (:func:`scoring.weigh`): at 10,000 models as tight as the scores'
        own extremes to 2% of the contenders they let through, and no weighting sweeps
        every resample's scores (50 ms a weighting there).
        """
        usable = np.isfinite(self.amrs) & (self.amrs > 0)
        bounds = np.empty((2, len(self.columns), len(self.normalised.models)))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            for k, column in enumerate(self.columns):
                bounds[:, k] = _term_extremes(column, self.amrs[:, k], usable[:, k])
        if not np.isfinite(bounds).all():
            bounds[...] = np.nan
        return bounds

    def fits(
        self,
        models: Iterable[str],
        dataset_weights: Mapping[str, float],
        *,
        n: int,
        level: float,
        seed: int,
    ) -> bool:
        """Whether these are the resamples of ``models`` with ``dataset_weights`` (that
        the examples and the other arguments are the same is for the caller to know, as
        for :class:`Draws`)."""
        return (
            self.normalised.models == tuple(sorted(models))
            and self.shares == dataset_shares(dataset_weights)
            and (self.n_resamples, self.level, self.seed) == (n, level, seed)
        )


def _term_extremes(
    goods: FloatArray, amrs: FloatArray, usable: NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray]:
    """Each model's lowest and highest ``goods / amrs`` over the resamples (0 where the
    AMRS is unusable) of one metric: its goods ``(n_resamples, models)`` or ``(models,)``."""
    if not usable.any():
        zeros = np.zeros(goods.shape[-1])
        return zeros, zeros.copy()
    if goods.ndim == 1:  # the same goods in every resample: divided by the AMRS's ends
        ends = goods / np.array([amrs[usable].min(), amrs[usable].max()])[:, None]
        low, high = ends.min(axis=0), ends.max(axis=0)
    else:  # a few resamples at a time: their terms stay in a CPU cache
        safe = np.where(usable, amrs, 1.0)
        low, high = np.full(goods.shape[1], np.inf), np.full(goods.shape[1], -np.inf)
        step = max(1, _STEP_CELLS // max(1, goods.shape[1]))
        for start in range(0, len(goods), step):
            stop = start + step
            terms = goods[start:stop] / safe[start:stop, None]
            np.copyto(terms, 0.0, where=~usable[start:stop, None])
            np.minimum(low, terms.min(axis=0), out=low)
            np.maximum(high, terms.max(axis=0), out=high)
        return low, high
    if not usable.all():
        low, high = np.minimum(low, 0.0), np.maximum(high, 0.0)
    return low, high


def dataset_shares(dataset_weights: Mapping[str, float]) -> tuple[float, ...]:
    """Each dataset's share of the weight, in name order: all that resampling reads of
    the dataset weights (two weightings with the same shares resample alike).

    >>> dataset_shares({"r2": 1.0, "r1": 3.0})
    (0.75, 0.25)
    """
    total = sum(dataset_weights.values())
    return tuple(dataset_weights[d] / total for d in sorted(dataset_weights))


class _Options(TypedDict, total=False):
    """The arguments :func:`bootstrap` passes on to :func:`resample`."""

    metric: str
    table: Table | None
    perf: str
    directions: Mapping[str, float] | None
    offsets: Mapping[str, float] | None
    dataset_weights: Mapping[str, float] | None
    baseline: Sequence[Mapping[str, ArrayLike]] | float | None
    repeats: Mapping[str, Mapping[str, ArrayLike]] | None
    n_resamples: int
    level: float
    seed: int
    draws: Draws | None


def bootstrap(
    examples: Mapping[str, Mapping[str, ArrayLike]],
    *,
    weights: Mapping[str, float] | None = None,
    resamples: Resamples | None = None,
    **options: Unpack[_Options],
) -> BootstrapResult:
    """Seeded bootstrap intervals for perf and the Dynascore.

    Args:
        examples, options: the examples and how to resample them, as for :func:`resample`.
        weights: as for :func:`scoring.dynascore`; default: :func:`scoring.default_weights`.
        resamples: what :func:`resample` computed for the same arguments (computed again
            when they do not fit).
    """
    resamples = resample(examples, resamples=resamples, **options)
    weighed = weigh(resamples, weights)
    models = list(resamples.normalised.models)
    n_resamples = resamples.n_resamples
    everyone = weighed.rows(resamples, range(len(models)), firsts=True)
    assert everyone.first_counts is not None  # asked for
    point, leader, flagged = weighed.point, weighed.leader, resamples.flagged
    return BootstrapResult(
        perf=_intervals(models, resamples.estimate, resamples.perf_q),
        dynascore=_intervals(models, point, everyone.scores),
        p_first=dict(zip(models, (everyone.first_counts / n_resamples).tolist(), strict=True)),
        p_first_perf=dict(
            zip(models, (resamples.first_perf_counts / n_resamples).tolist(), strict=True)
        ),
        n_resamples=n_resamples,
        level=resamples.level,
        seed=resamples.seed,
        order=[models[i] for i in weighed.observed],
        rank_interval=dict(zip(models, everyone.ranks, strict=True)),
        gap_to_leader=_intervals(models, point - point[leader], everyone.gaps),
        not_above_baseline=dict(zip(models, flagged.astype(bool).tolist(), strict=True)),
        above_baseline={}
        if resamples.base_estimate is None
        else _intervals(models, resamples.estimate - resamples.base_estimate, resamples.above_q),
    )


def _intervals(
    models: Sequence[str], estimates: FloatArray, ends: FloatArray
) -> dict[str, Interval]:
    """Each model's estimate with the low and high ``ends`` ``(2, models)`` of its interval."""
    low, high = ends.tolist()
    return {
        m: Interval(e, lo, hi)
        for m, e, lo, hi in zip(models, estimates.tolist(), low, high, strict=True)
    }


def resample(
    examples: Mapping[str, Mapping[str, ArrayLike]],
    *,
    metric: str = "accuracy",
    table: Table | None = None,
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
    dataset_weights: Mapping[str, float] | None = None,
    baseline: Sequence[Mapping[str, ArrayLike]] | float | None = None,
    repeats: Mapping[str, Mapping[str, ArrayLike]] | None = None,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    draws: Draws | None = None,
    resamples: Resamples | None = None,
) -> Resamples:
    """What :func:`bootstrap` with these arguments computes before the metric weights:
    pass it as ``resamples`` to bootstrap other weights without resampling again.

    Args:
        examples: model -> dataset -> per-example statistics of the perf metric, an
            ``(n,)`` or ``(n, s)`` array, the same examples in the same order for every
            model.
        metric: the perf metric, whose reduce turns summed statistics into its value.
        table: model -> the other metrics (already averaged over datasets); ``perf`` in
            it, if present, is replaced by the value computed from ``examples``.
        perf, directions, offsets: as for :func:`scoring.dynascore`.
        dataset_weights: dataset -> weight; default: every dataset of the first model,
            equally.
        baseline: the majority-class baseline: for each label, dataset -> the per-example
            statistics of answering that label everywhere (resampled with the models', so
            the comparison is paired; in each resample the baseline is the best of them,
            the resample's majority class), or just the baseline's perf. A model whose
            ``perf - baseline`` interval does not reach above 0 is flagged and ranked
            after the others in every resample.
        repeats: model -> metric of ``table`` -> its repeated measurements; each
            resample draws them with replacement and takes the median.
        n_resamples: how many resamples.
        level: the intervals' coverage, e.g. 0.95.
        seed: seeds numpy's default generator.
        draws: what :func:`draw` drew for the same examples of each column they have
            (a model of the same name answered the same); what they lack (other models,
            other measurements, other resamples or seed) is drawn here.
        resamples: what this computed for the same arguments but the dataset weights,
            returned as it is where the models, the dataset shares, the resamples, level
            and seed are the same.
    """
    get_metric(metric)  # an unknown metric is refused before anything is drawn
    if n_resamples < 1 or not 0 < level < 1:
        raise ScoringError(f"Need n_resamples >= 1 and 0 < level < 1, got {n_resamples}, {level}")
    models, datasets, dataset_w, columns, source = _layout(examples, dataset_weights, baseline)
    if resamples is not None and resamples.fits(
        models, dataset_w, n=n_resamples, level=level, seed=seed
    ):
        return resamples
    paired = len(columns) > len(models)
    shares = dataset_shares(dataset_w)
    sizes = _repeat_sizes(repeats)
    if draws is None or not draws.fits(metric, columns, datasets, sizes, n=n_resamples, seed=seed):
        draws = _draw(
            source,
            columns,
            datasets,
            metric,
            sizes,
            n_resamples=n_resamples,
            seed=seed,
            previous=draws,
            kept=draws.columns if draws is not None else (),
        )
    estimate = np.zeros(len(columns))
    for share, full in zip(shares, draws.estimate, strict=True):
        estimate += share * full
    base_estimate: float | None = (
        float(estimate[len(models) :].max())
        if paired
        else (float(baseline) if isinstance(baseline, (int, float)) else None)
    )
    estimate = estimate[: len(models)]

    rows: dict[str, dict[str, float]] = {m: {} for m in models}
    if table is not None:
        if set(table) != set(models):
            raise ScoringError(
                f"The table's models {sorted(table)} are not the examples' models {models}"
            )
        rows = {m: {k: v for k, v in table[m].items() if k != perf} for m in models}
    for i, model in enumerate(models):
        rows[model][perf] = float(estimate[i])
    normalised = normalise(rows, perf=perf, directions=directions, offsets=offsets)
    perf_col = normalised.metrics.index(perf)
    direction = (directions or {}).get(perf, 1.0)
    offset = (offsets or {}).get(perf, 0.0)

    repeated = _repeats(repeats, normalised.models, normalised.metrics, perf)
    direction_of = per_metric(normalised._matrix, directions, role="directions", default=1.0)
    offset_of = per_metric(normalised._matrix, offsets, role="offsets", default=0.0)
    groups = _grouped(repeated, normalised, draws.picks)
    perf_samples = np.empty((n_resamples, len(models)))
    above_samples = np.empty((n_resamples, len(models)))  # perf minus the baseline's
    resampled = {perf_col, *(int(k) for _, ks, _, _ in groups for k in ks)}
    metric_columns = [
        np.empty((n_resamples, len(models)))
        if k in resampled
        else np.ascontiguousarray(normalised.goods[:, k])
        for k in range(len(normalised.metrics))
    ]
    for k in resampled - {perf_col}:  # the models measured once keep their goods
        metric_columns[k][...] = normalised.goods[:, k]
    # Each repeated metric's (model, measurement) pairs, to write its goods a metric at a time.
    into = [
        [(int(k), np.flatnonzero(ks == k), at[ks == k]) for k in np.unique(ks)]
        for at, ks, _, _ in groups
    ]
    amrs_samples = np.empty((n_resamples, len(normalised.metrics)))
    # A metric's goods of the resamples taken at once fit a CPU cache; the resamples are
    # split over the cores, each part writing its own rows (scoring.parallel).
    step = max(1, _STEP_CELLS // len(models))

    def fill(rows: slice) -> None:
        for start in range(rows.start, rows.stop, step):
            stop = min(start + step, rows.stop)
            boot = np.zeros((stop - start, len(columns)))
            for share, dataset_perf in zip(shares, draws.perf, strict=True):
                boot += share * dataset_perf[start:stop]
            if paired:  # the best constant answer of this resample
                best = boot[:, len(models) :].max(axis=1, keepdims=True)
                boot = boot[:, : len(models)]
                above_samples[start:stop] = boot - best
            else:
                above_samples[start:stop] = boot - (base_estimate or 0.0)
            metric_columns[perf_col][start:stop] = offset + direction * boot
            for (_, ks, measured, picks), parts in zip(groups, into, strict=True):
                # One flat gather: a quarter of take_along_axis's time (10,000 models' runs).
                first_run = (np.arange(len(measured)) * measured.shape[1])[:, None, None]
                drawn = np.take(measured.reshape(-1), picks[:, start:stop] + first_run)
                goods = offset_of[ks] + direction_of[ks] * _medians(drawn).T
                for k, pairs, models_at in parts:
                    metric_columns[k][start:stop, models_at] = goods[:, pairs]
            perf_samples[start:stop] = boot
            amrs_samples[start:stop] = amrs_columns(
                [column[start:stop] if column.ndim == 2 else column for column in metric_columns],
                perf_col,
            )

    over_rows(n_resamples, fill, cells_per_row=len(columns) * len(normalised.metrics))

    # The floor compares each model with the baseline on the same resample (paired): a
    # model answering the majority label everywhere is level with it in every resample.
    above_q = percentiles.ends(above_samples, level=level)
    flagged = not_above_baselines(
        above_q[1], baseline=None if base_estimate is None else 0.0
    ).astype(np.intp)
    perf_goods = metric_columns[perf_col]
    ids = np.broadcast_to(np.arange(len(models)), perf_goods.shape)
    # The best perf of each resample, ties to the first model by name (argmax's first).
    first_perf = (
        np.lexsort([ids, -perf_goods], axis=-1)[:, 0]
        if np.isnan(perf_goods).any()
        else np.argmax(perf_goods, axis=-1)
    )
    return Resamples(
        shares=shares,
        n_resamples=n_resamples,
        level=level,
        seed=seed,
        normalised=normalised,
        estimate=estimate,
        base_estimate=base_estimate,
        columns=tuple(metric_columns),
        amrs=amrs_samples,
        perf_q=percentiles.ends(perf_samples, level=level),
        above_q=above_q,
        flagged=flagged,
        first_perf_counts=np.bincount(first_perf, minlength=len(models)),
    )


def draw(
    examples: Mapping[str, Mapping[str, ArrayLike]],
    *,
    metric: str = "accuracy",
    dataset_weights: Mapping[str, float] | None = None,
    baseline: Sequence[Mapping[str, ArrayLike]] | float | None = None,
    repeats: Mapping[str, Mapping[str, ArrayLike]] | None = None,
    n_resamples: int = 1000,
    seed: int = 0,
    previous: Draws | None = None,
    kept: Collection[str] = (),
) -> Draws:
    """What :func:`bootstrap` with these arguments draws (only which datasets
    ``dataset_weights`` names counts, not their weights; only how many measurements each
    of ``repeats`` has): pass it as ``draws`` to bootstrap other weights without drawing
    again.

    Args:
        previous, kept: draws of the same metric, datasets, resamples and seed for other
            columns: those named in ``kept`` (whose statistics and measurements the caller
            knows to be the same) are taken from them, not drawn again; the result is what
            drawing every column gives, to the last bit.
    """
    _, datasets, _, columns, source = _layout(examples, dataset_weights, baseline)
    return _draw(
        source,
        columns,
        datasets,
        metric,
        _repeat_sizes(repeats),
        n_resamples=n_resamples,
        seed=seed,
        previous=previous,
        kept=kept,
    )


def _layout(
    examples: Mapping[str, Mapping[str, ArrayLike]],
    dataset_weights: Mapping[str, float] | None,
    baseline: Sequence[Mapping[str, ArrayLike]] | float | None,
) -> tuple[
    list[str], list[str], dict[str, float], list[str], Mapping[str, Mapping[str, ArrayLike]]
]:
    """The models, the datasets, their weights, the columns resampled (the models, then
    the baseline's labels) and each column's statistics. A model's statistics are looked
    up only where a column is drawn: ``examples`` may read them on demand."""
    if not examples:
        raise ScoringError("No examples to resample; pass at least one model")
    models = sorted(examples)
    dataset_w = (
        dict(dataset_weights)
        if dataset_weights is not None
        else dict.fromkeys(examples[models[0]], 1.0)
    )
    datasets = sorted(dataset_w)
    if not datasets or any(w < 0 for w in dataset_w.values()) or not sum(dataset_w.values()) > 0:
        raise ScoringError(f"Dataset weights must be >= 0 with a positive sum, got {dataset_w}")
    alternatives: list[Mapping[str, ArrayLike]] = (
        [] if baseline is None or isinstance(baseline, (int, float)) else list(baseline)
    )
    base_names = [f"{_BASELINE}{i}" for i in range(len(alternatives))]
    source = _Columns(examples, dict(zip(base_names, alternatives, strict=True)))
    return models, datasets, dataset_w, [*models, *base_names], source


class _Columns(Mapping[str, Mapping[str, ArrayLike]]):
    """The models' statistics, then the baseline's: a model's looked up only when its
    column is drawn (``examples`` may read them on demand)."""

    def __init__(
        self,
        examples: Mapping[str, Mapping[str, ArrayLike]],
        baseline: dict[str, Mapping[str, ArrayLike]],
    ) -> None:
        self._examples, self._baseline = examples, baseline

    def __getitem__(self, column: str) -> Mapping[str, ArrayLike]:
        found = self._baseline.get(column)
        return self._examples[column] if found is None else found

    def __iter__(self) -> Iterator[str]:
        yield from self._examples
        yield from self._baseline

    def __len__(self) -> int:
        return len(self._examples) + len(self._baseline)


def _draw(
    source: Mapping[str, Mapping[str, ArrayLike]],
    columns: list[str],
    datasets: list[str],
    metric: str,
    sizes: Mapping[tuple[str, str], int],
    *,
    n_resamples: int,
    seed: int,
    previous: Draws | None = None,
    kept: Collection[str] = (),
) -> Draws:
    """The seeded draws: the examples' counts (``previous``'s where drawn alike), each
    column's perf from them (``previous``'s ``kept`` columns copied; the baseline's few
    columns are always summed again), each repeated measurement's picks."""
    reduce = get_metric(metric).reduce
    if previous is None or not previous._drawn_alike(metric, datasets, n=n_resamples, seed=seed):
        previous = None
    old = {name: i for i, name in enumerate(previous.columns)} if previous else {}
    copied = [i for i, name in enumerate(columns) if name in old and name in kept]
    taken = set(copied)  # a set made once: 10,000 columns
    fresh = [i for i in range(len(columns)) if i not in taken]
    # Every column copied: the first one's statistics still say each dataset's length.
    stacked = [_stack(source, [columns[i] for i in fresh or [0]], d) for d in datasets]
    whole = all(_whole(x) for x in stacked)
    if copied and not (whole and previous is not None and previous.whole):
        # Fractional statistics: every column summed again (the counts kept all the same).
        copied, fresh = [], list(range(len(columns)))
        stacked = [_stack(source, columns, d) for d in datasets]
        whole = False
    counts = (
        previous.counts
        if previous is not None
        else _counts([len(x) for x in stacked], n_resamples=n_resamples, seed=seed)
    )
    perf, estimate = [], []
    for d, (drawn, x) in enumerate(zip(counts, stacked, strict=True)):
        n = drawn.shape[1]
        if len(x) != n:
            raise ScoringError(
                f"Dataset {datasets[d]!r}: {len(x)} examples, where the kept draws have {n}"
            )
        resampled = np.empty((n_resamples, len(columns)))
        full = np.empty(len(columns))
        if previous is not None:
            at = [old[columns[i]] for i in copied]
            resampled[:, copied] = previous.perf[d][:, at]
            full[copied] = previous.estimate[d][at]
        if fresh:
            # Resamples summed at once: their counts and their sums both bounded (the sums
            # of 1,000 resamples of 10,000 models' macro-F1 counts would be 720 MB).
            flat = x.reshape(n, -1)
            chunk = max(1, _CHUNK_CELLS // max(n, flat.shape[1]))
            every_column = len(fresh) == len(columns)
            for start in range(0, n_resamples, chunk):
                block = drawn[start : start + chunk].astype(np.float64)
                sums = (block @ flat).reshape(len(block), len(fresh), -1)
                if every_column:
                    resampled[start : start + chunk] = reduce(sums, n)
                else:
                    resampled[start : start + chunk, fresh] = reduce(sums, n)
            full[fresh] = reduce(x.sum(axis=0), n)
        perf.append(resampled)
        estimate.append(full)
    kept_picks = previous.picks if previous is not None else {}
    picks = {
        key: (
            kept_picks[key]  # positions: the same for any values of the same size
            if key in kept_picks and kept_picks[key].shape[1] == size
            else _picks(key, size, n_resamples=n_resamples, seed=seed)
        )
        for key, size in sizes.items()
    }
    return Draws(
        metric=metric,
        datasets=tuple(datasets),
        columns=tuple(columns),
        n_resamples=n_resamples,
        seed=seed,
        counts=tuple(counts),
        perf=tuple(perf),
        estimate=tuple(estimate),
        picks=picks,
        whole=whole,
    )


def _counts(
    lengths: Sequence[int], *, n_resamples: int, seed: int
) -> list[NDArray[np.unsignedinteger]]:
    """How often each resample draws each example of each dataset: from the seed alone,
    per chunk of resamples each dataset in turn."""
    rng = np.random.default_rng(seed)
    # A count is at most the dataset's length: the smallest type that holds it.
    found = [np.empty((n_resamples, n), dtype=np.min_scalar_type(n)) for n in lengths]
    chunk = max(1, _CHUNK_CELLS // max(lengths))
    for start in range(0, n_resamples, chunk):
        c = min(chunk, n_resamples - start)
        for counts, n in zip(found, lengths, strict=True):
            drawn = rng.integers(0, n, size=(c, n)) + (np.arange(c) * n)[:, None]
            counts[start : start + c] = np.bincount(drawn.ravel(), minlength=c * n).reshape(c, n)
    return found


def _picks(key: tuple[str, str], size: int, *, n_resamples: int, seed: int) -> NDArray[np.integer]:
    """One repeated measurement's picks, ``(n_resamples, size)``: from the seed and the
    model's and metric's names, so they stay the same when another model joins the board."""
    words = [int.from_bytes(hashlib.blake2b(name.encode()).digest()[:16], "big") for name in key]
    rng = np.random.default_rng([seed, *words])
    # Positions into a handful of measurements: one byte each where they fit.
    return rng.integers(0, size, size=(n_resamples, size), dtype=np.min_scalar_type(size - 1))


def _medians(drawn: FloatArray) -> FloatArray:
    """``np.median(drawn, axis=-1)`` of finite values; for three (the usual timed runs)
    the middle one by comparisons, the same value at a third of the time."""
    if drawn.shape[-1] != 3:
        return np.median(drawn, axis=-1)
    a, b, c = drawn[..., 0], drawn[..., 1], drawn[..., 2]
    middle: FloatArray = np.maximum(np.minimum(a, b), np.minimum(np.maximum(a, b), c))
    return middle


def _grouped(
    repeated: Mapping[tuple[int, int], FloatArray],
    normalised: NormalisedTable,
    picks: Mapping[tuple[str, str], NDArray[np.integer]],
) -> list[tuple[NDArray[np.intp], NDArray[np.intp], FloatArray, NDArray[np.integer]]]:
    """The repeated measurements by how many there are, so that a resample takes the
    medians of 1,000 models at once: per size, the (model, metric) positions, the
    measurements ``(m, size)`` and their picks ``(m, n_resamples, size)``."""
    by_size: dict[int, list[tuple[tuple[int, int], FloatArray, NDArray[np.integer]]]] = {}
    for (i, k), values in repeated.items():
        drawn = picks[normalised.models[i], normalised.metrics[k]]
        by_size.setdefault(len(values), []).append(((i, k), values, drawn))
    return [
        (
            np.array([i for (i, _), _, _ in group], dtype=np.intp),
            np.array([k for (_, k), _, _ in group], dtype=np.intp),
            np.stack([values for _, values, _ in group]),
            np.stack([drawn for _, _, drawn in group]),
        )
        for group in by_size.values()
    ]


def _repeat_sizes(
    repeats: Mapping[str, Mapping[str, ArrayLike]] | None,
) -> dict[tuple[str, str], int]:
    """(model, metric) -> how many measurements a bootstrap resamples (two or more)."""
    return {
        (model, metric): size
        for model, measured in (repeats or {}).items()
        for metric, values in measured.items()
        if (size := len(np.asarray(values).ravel())) >= 2
    }


def _repeats(
    repeats: Mapping[str, Mapping[str, ArrayLike]] | None,
    models: tuple[str, ...],
    metrics: tuple[str, ...],
    perf: str,
) -> dict[tuple[int, int], FloatArray]:
    """(model index, metric index) -> the repeated measurements to resample (two or more)."""
    found: dict[tuple[int, int], FloatArray] = {}
    # Positions by name: models.index() per model made this quadratic in the board's size.
    position = {model: i for i, model in enumerate(models)}
    column = {metric: k for k, metric in enumerate(metrics)}
    for model, measured in (repeats or {}).items():
        if model not in position:
            raise ScoringError(f"Repeats name model {model!r}, which has no examples")
        for metric, values in measured.items():
            if metric == perf or metric not in column:
                raise ScoringError(
                    f"Repeats of {metric!r} for {model!r}: only other metrics of the table "
                    f"({', '.join(m for m in metrics if m != perf)}) are measured repeatedly"
                )
            array = np.asarray(values, dtype=np.float64).ravel()
            if not np.all(np.isfinite(array)):
                raise ScoringError(f"Repeats of {metric!r} for {model!r} are not all finite")
            if len(array) >= 2:
                found[position[model], column[metric]] = array
    return found
