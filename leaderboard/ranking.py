"""The leaderboard: rows of a :class:`~leaderboard.table.TaskTable` ranked by Dynascore.

The API, the pages, the CSV download and ``evalboard leaderboard`` all print what
:func:`build_leaderboard` returns, so they cannot disagree. The browser re-ranks with
``static/dynascore.js`` from the same table, directions and offsets. Every metric's
label, unit, direction and offset come from :data:`scoring.METRICS`.
"""

from __future__ import annotations

import csv
import io
import math
import sys
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalboard.core.cache import (
    MISSING,
    MemoryCache,
    approximate_size,
    read_only,
    sampled_size,
)
from evalboard.core.context import Context
from evalboard.core.heap import keep_long_lived
from evaluator import CONTENDED_SHARE
from leaderboard.intervals import (
    BoardIntervals,
    IntervalInputs,
    board_intervals,
    has_predictions,
    interval_inputs,
    intervals_later,
)
from leaderboard.paging import BoardQuery
from leaderboard.schemas import (
    IntervalPublic,
    LeaderboardPublic,
    MetricPublic,
    PendingPublic,
    RowPublic,
)
from leaderboard.table import (
    METRIC_COLUMN,
    ModelEntry,
    RankedFigures,
    TaskTable,
    own_timed_runs,
    timed_runs,
    timed_runs_kept,
)
from scoring import (
    METRICS,
    WEIGHABLE_METRICS,
    FloatArray,
    NormalisedTable,
    check_weights,
    contribution_terms,
    dominant_term_array,
    fill_missing_array,
    floor_indices,
    goods_transform,
    normalise_array,
    not_above_baselines,
    rankable_present,
)
from scoring import parse_weights as scoring_parse_weights

__all__ = [
    "Scatter",
    "Standing",
    "build_leaderboard",
    "model_standing",
    "parse_dataset_weights",
    "parse_weights",
    "to_csv",
    "weighable_metrics",
]


def parse_weights(text: str | None) -> dict[str, float] | None:
    """``perf:4,throughput:1`` (or ``perf=4,...``) -> a dict; None or empty -> None.

    The one reading of metric weights (:func:`scoring.parse_weights`), for the API, the
    pages and the CLI alike.

    >>> parse_weights("perf:4, memory=1")
    {'perf': 4.0, 'memory': 1.0}
    """
    return scoring_parse_weights(text, known=WEIGHABLE_METRICS, what="metric")


def parse_dataset_weights(table: TaskTable, text: str | None) -> dict[str, float] | None:
    """``r1-test:1,round-2:0.5`` -> a dict over the task's original scoring datasets."""
    return scoring_parse_weights(text, known=table.weighable_datasets, what="dataset", partial=True)


def weighable_metrics(table: TaskTable) -> list[str]:
    """The weighable metrics the ranked models can be ranked by (perf always): every one
    has a value, or the metric ranks a missing value as the worst (``scoring.rankable``).
    A predictions-only row lacks what only a run measures and does not take those metrics
    away from the board: it ranks as the worst there (``scoring.fill_missing``)."""
    return _weighable(table.ranked_figures(None))


def _weighable(figures: RankedFigures, rows: _Rows | None = None) -> list[str]:
    """:func:`weighable_metrics` of the ranked rows' ``figures``."""
    entries = figures.entries
    run = (rows or _Rows.of(entries)).run
    has = ~figures.missing[run]
    present = [
        name
        for name in WEIGHABLE_METRICS
        if name == "perf" or (bool(entries) and rankable_present(name, has[:, METRIC_COLUMN[name]]))
    ]
    if entries and not has[:, METRIC_COLUMN["perf"]].all():
        present.remove("perf")
    return present


@dataclass(frozen=True, eq=False)
class _Rows:
    """What ranking needs of a table's ranked rows whatever the weights, kept per table
    version (:func:`_ranked_rows`): their keys in name order (as ``scoring.normalise``
    lays out a table, ties going by name), each key's position there (``index``) and row
    of the figures (``at``), the names, the predictions-only rows (``may_lack``, in the
    figures' order) and those a run measured (``run``; all when none was)."""

    keys: tuple[str, ...]
    index: dict[str, int]
    at: NDArray[np.intp]
    names: dict[str, str]
    may_lack: NDArray[np.bool_]
    run: NDArray[np.intp]

    def __post_init__(self) -> None:
        read_only(self.at, self.may_lack, self.run)  # kept per version, shared

    def approximate_size(self) -> int:
        """About its bytes: the names from a sample, each key once, each position an int
        (walking every key, name and position cost 100 ms a put at 10,000 rows)."""
        arrays = approximate_size((self.at, self.may_lack, self.run))
        mappings = sys.getsizeof(vars(self)) + sys.getsizeof(self.index) + sys.getsizeof(self.names)
        positions = len(self.index) * sys.getsizeof(len(self.index))
        return (
            arrays
            + mappings
            + positions
            + sampled_size(self.keys)
            + sampled_size(list(self.names.values()))
        )

    @classmethod
    def of(cls, entries: list[ModelEntry]) -> _Rows:
        # Made at every new version (a new result): map and zip build the mappings in C,
        # where a comprehension's step per key cost 120 ms at 100,000 rows.
        every_key = [m.key for m in entries]
        at = sorted(range(len(entries)), key=every_key.__getitem__)
        keys = tuple(map(every_key.__getitem__, at))
        names = map([m.name for m in entries].__getitem__, at)
        may_lack = np.array([m.predictions_only for m in entries], dtype=bool)
        run = np.flatnonzero(~may_lack) if not may_lack.all() else np.arange(len(entries))
        return cls(
            keys=keys,
            index=dict(zip(keys, range(len(keys)), strict=True)),
            at=np.array(at, dtype=np.intp),
            names=dict(zip(keys, names, strict=True)),
            may_lack=may_lack,
            run=run,
        )


def _ranked_rows(ctx: Context, table: TaskTable, entries: list[ModelEntry]) -> _Rows:
    """:meth:`_Rows.of` the table's ranked ``entries``, kept in ``ctx.cache`` under the
    table's version (the same version, the same rows) so that new weights do not sort and
    map 10,000 keys again."""
    if ctx is None or not table.version:
        return _Rows.of(entries)

    def made() -> tuple[_Rows, int]:
        rows = _Rows.of(entries)
        return rows, rows.approximate_size()

    return ctx.cache.made_once(("ranked-rows", table.version), made, within=table.board_key)


def _normalised(
    ctx: Context,
    table: TaskTable,
    figures: RankedFigures,
    metrics: list[str],
    found: _Ranking,
    transform: tuple[Mapping[str, float], Mapping[str, float]],
) -> NormalisedTable:
    """The ranked rows' goods and their AMRS (:func:`scoring.normalise_array` of
    ``found``'s grid, with the ``transform``'s directions and offsets), which no metric
    weight changes: kept in ``ctx.cache`` under the table's version, dataset weights and
    weighable metrics, as the interval inputs are, so that new metric weights only weigh
    them (normalising 10,000 rows again took 4 ms of each such request)."""
    directions, offsets = transform

    def normalised() -> NormalisedTable:
        return normalise_array(
            found.keys, metrics, found.grid, directions=directions, offsets=offsets
        )

    if ctx is None or not table.version:
        return normalised()

    def made() -> tuple[NormalisedTable, int]:
        kept = normalised()
        read_only(kept.goods, kept.amrs)  # shared by every request that weighs them
        return kept, kept.nbytes + sys.getsizeof(kept.models)

    key = _weighing_key("normalised", table, figures, metrics)
    return ctx.cache.made_once(key, made, within=table.board_key)


def _weighing_key(
    kind: str, table: TaskTable, figures: RankedFigures, metrics: list[str]
) -> tuple[Hashable, ...]:
    """The cache key of what the table's version, its dataset weights and the weighable
    ``metrics`` decide, and no metric weight changes."""
    return (kind, table.version, tuple(sorted(figures.dataset_weights.items())), tuple(metrics))


def _usable_weights(
    table: TaskTable,
    requested: Mapping[str, float] | None,
    figures: RankedFigures,
    metrics: list[str],
) -> dict[str, float]:
    """The requested weights (None: the owner's), through the one weight check, with at
    least one of the board's ``metrics`` weighing above 0 when a model is ranked (one of
    ``figures``' rows)."""
    weights = requested if requested is not None else table.default_weights
    usable = metrics if figures.entries else None
    return check_weights(weights, known=WEIGHABLE_METRICS, usable=usable)


@dataclass
class _Ranking:
    """What ranking a table gives for one set of weights, before any page is cut: kept in
    the context's cache under the table's version and the weights.

    The ranked rows are held as arrays in name order (``keys``, as ``scoring.normalise``
    lays them out), so ranking 10,000 of them builds no mapping per row; a row's entry,
    figures and contributions are made for the rows a page sends.
    """

    table: TaskTable
    figures: RankedFigures
    requested: dict[str, float]
    metrics: list[str]
    used: dict[str, float]
    #: Ranked keys in name order; ``index``: key -> its position there, ``at``: the row
    #: of ``figures`` it is.
    keys: tuple[str, ...] = ()
    index: dict[str, int] = field(default_factory=dict)
    at: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    names: dict[str, str] = field(default_factory=dict)
    #: ``grid[i, k]``: metric ``metrics[k]`` of row ``i`` as ranked (a missing one filled).
    grid: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    scores: FloatArray = field(default_factory=lambda: np.zeros(0))
    #: ``terms[i, k]``: what metric ``term_metrics[k]`` adds to row ``i``'s Dynascore.
    terms: FloatArray = field(default_factory=lambda: np.zeros((0, 0)))
    term_metrics: tuple[str, ...] = ()
    amrs: dict[str, float | None] = field(default_factory=dict)
    #: The intervals, when the table's predictions give them: a row's are ranked when a
    #: page first sends it.
    boot: BoardIntervals | None = None
    #: The key of the background work making the intervals, while it does
    #: (:func:`leaderboard.intervals.intervals_later`): the floor is the point
    #: estimates' meanwhile, and the ranking serves only until that work ends.
    intervals_work: Hashable | None = None
    flagged: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    order: list[str] = field(default_factory=list)
    #: ``positions[i]``: row ``i``'s rank.
    positions: NDArray[np.intp] = field(default_factory=lambda: np.zeros(0, dtype=np.intp))
    warnings: list[str] = field(default_factory=list)
    shown_metrics: list[MetricPublic] = field(default_factory=list)
    pending: list[PendingPublic] = field(default_factory=list)
    #: The derived-data cache it was ranked with: the rows' timed runs are kept there.
    cache: MemoryCache | None = None
    #: Each row's slowest and fastest timed run, made when a page first asks; or some
    #: rows' alone (position -> the two, None: no runs), made for a page.
    _spread: tuple[FloatArray, FloatArray] | None = None
    _row_spread: dict[int, tuple[float, float] | None] = field(default_factory=dict)
    #: The rows' positions in ``keys`` in rank order, their keys and names: made when a
    #: chart first asks, shared by its charts (read-only).
    _in_order: tuple[NDArray[np.intp], list[str], list[str]] | None = None

    @property
    def intervals_pending(self) -> bool:
        return self.intervals_work is not None

    def prepare_spreads(self, positions: Iterable[int]) -> None:
        """The throughput spreads (:meth:`throughput_spread`) of the rows at ``positions``
        in ``keys``, for a page: from every row's runs where those are kept or the rows
        asked are many, else from the asked rows' own runs (a new version's first page:
        every row's arrays took 0.2 s at 100,000 rows, a page's own rows milliseconds)."""
        if self._spread is not None:
            return
        asked = [i for i in positions if i not in self._row_spread]
        if not asked:
            return
        # The rows' own stay few (those of a page or two): within the bytes counted for them.
        many = (len(asked) + len(self._row_spread)) * _OWN_SPREADS_SHARE >= len(self.keys)
        if many or timed_runs_kept(self.table, self.figures, self.cache):
            self._whole_spread()
            return
        runs = own_timed_runs(self.figures, [int(self.at[i]) for i in asked])
        for i, low, high in zip(asked, *_extremes(runs), strict=True):
            self._row_spread[i] = None if math.isnan(low) else (float(low), float(high))

    def throughput_spread(self, i: int) -> tuple[float, float] | None:
        """Row ``i``'s slowest and fastest timed run under the ranking's dataset weights
        (None: fewer than two runs), from every
        row's runs at once (``leaderboard.table.timed_runs``, kept per version): walking
        each row's own cost 6 ms a page of 100, 0.6 s a whole board of 10,000; or as
        :meth:`prepare_spreads` made it for a page."""
        if i in self._row_spread:
            return self._row_spread[i]
        low, high = self._whole_spread()
        if math.isnan(low[i]):
            return None
        return float(low[i]), float(high[i])

    def _whole_spread(self) -> tuple[FloatArray, FloatArray]:
        if self._spread is None:
            self._spread = _extremes(timed_runs(self.table, self.figures, self.cache)[self.at])
        return self._spread

    def entry(self, key: str) -> ModelEntry:
        """The row's entry as ranked (its averages with the ranking's dataset weights)."""
        return self.figures.entry(int(self.at[self.index[key]]))

    def value(self, key: str, name: str) -> float | None:
        """The row's Dynascore (``name`` "dynascore") or metric ``name`` (None: it has none)."""
        i = self.index[key]
        if name == "dynascore":
            return float(self.scores[i])
        return self.figures.value(int(self.at[i]), name)

    def scatter(self, metric: str) -> Scatter:
        """Every ranked row's perf and ``metric``, those that have ``metric``."""
        if self._in_order is None:
            positions = np.fromiter(
                (self.index[key] for key in self.order), dtype=np.intp, count=len(self.order)
            )
            self._in_order = (positions, self.order, [self.names[key] for key in self.order])
        positions, keys, names = self._in_order
        rows = self.at[positions]
        values, missing = self.figures.values, self.figures.missing
        perf, other = METRIC_COLUMN["perf"], METRIC_COLUMN[metric]
        has = ~missing[rows, other]
        if not has.all():  # only those with the figure
            rows, kept = rows[has], np.flatnonzero(has).tolist()
            keys, names = [keys[i] for i in kept], [names[i] for i in kept]
        return Scatter(
            metric=metric,
            keys=keys,
            names=names,
            perf=np.where(missing[rows, perf], 0.0, values[rows, perf]),
            values=values[rows, other],
        )

    @property
    def arrays(self) -> tuple[NDArray[Any], ...]:
        """The arrays it holds of its own (the figures' are theirs)."""
        return (self.at, self.grid, self.scores, self.terms, self.flagged, self.positions)

    def approximate_size(self) -> int:
        """About how much memory it holds of its own, for the cache's byte budget: its
        arrays, and a sample of its per-row mappings measured and scaled (walking 10,000
        rows would cost more than ranking them). The rows' entries are the board's
        (``leaderboard.aggregates``, counted there)."""
        arrays = (self.figures.values, self.figures.missing, *self.arrays)
        # The keys and names are the entries' strings; the mappings and lists are new.
        per_row = sum(map(sys.getsizeof, (self.keys, self.index, self.names, self.order)))
        boot = self.boot.approximate_size() if self.boot is not None else 0
        # Made after it is kept: the throughput spread, the charts' rank order.
        later = (2 * np.dtype(np.float64).itemsize + 3 * 8) * len(self.keys)
        return approximate_size(arrays) + per_row + boot + later


#: A page's rows' throughput spreads come from their own runs while it asks for fewer
#: than one row in this many of the board's; from every row's (kept per version) else.
_OWN_SPREADS_SHARE = 20


def _extremes(runs: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each row's least and greatest run, NaN past its runs left out (all NaN: none)."""
    if runs.shape[1] == 0:  # no row has runs
        nothing = np.full(len(runs), np.nan)
        return nothing, nothing
    return np.fmin.reduce(runs, axis=1), np.fmax.reduce(runs, axis=1)


def build_leaderboard(
    ctx: Context,
    table: TaskTable,
    weights: Mapping[str, float] | None = None,
    *,
    dataset_weights: Mapping[str, float] | None = None,
    intervals: bool = True,
    wait_for_intervals: bool = True,
    query: BoardQuery | None = None,
    keep: Callable[[ModelEntry], bool] | None = None,
) -> LeaderboardPublic:
    """Rank the complete models: by Dynascore, after the baseline floor
    (:mod:`scoring.floor`); baselines ranked with them, the majority row not ranked.

    The ranking of a versioned table (:attr:`TaskTable.version`) is kept in ``ctx.cache``
    under its version and the weights, so the next page, search or filter of the same
    board only cuts its rows.

    Args:
        weights: metric -> weight; None: the task owner's.
        dataset_weights: original scoring dataset -> weight; None: the owner's.
        intervals: bootstrap the intervals, ``rank_interval`` and ``p_first``.
        wait_for_intervals: False: where the intervals take long to make
            (:func:`leaderboard.intervals.intervals_later`), answer without them,
            ``intervals_pending``, while the background makes them.
        query: which ranked rows to send (every model is ranked all the same); None: all.
        keep: which models may be sent at all (a card filter, ``leaderboard.cards``): the
            others are ranked, but neither sent nor counted in ``total``.
    """
    ranking = _kept_ranking(
        ctx,
        table,
        weights,
        dataset_weights=dataset_weights,
        intervals=intervals,
        wait_for_intervals=wait_for_intervals,
    )
    return _board(ranking, query or BoardQuery(), keep)


def _kept_ranking(
    ctx: Context,
    table: TaskTable,
    weights: Mapping[str, float] | None,
    *,
    dataset_weights: Mapping[str, float] | None,
    intervals: bool,
    wait_for_intervals: bool,
) -> _Ranking:
    """The ranking of ``table`` with these weights: the one kept under its version and
    the weights, or ranked and kept (:func:`build_leaderboard`)."""
    cache_key = (
        "ranking",
        table.version,
        None if weights is None else tuple(sorted(weights.items())),
        None if dataset_weights is None else tuple(sorted(dataset_weights.items())),
        intervals,
    )

    def ranked() -> _Ranking:
        ranking = _rank(
            ctx,
            table,
            weights,
            dataset_weights=dataset_weights,
            intervals=intervals,
            wait_for_intervals=wait_for_intervals,
        )
        read_only(*ranking.arrays)  # every page of it is cut from these, shared
        return ranking

    if not table.version:  # a table of no version is not kept
        return ranked()
    ranking = _kept(ctx, cache_key, wait_for_intervals=wait_for_intervals)
    if ranking is not None:
        return ranking
    # Requests that miss the same ranking at once (after a restart or a new result) rank
    # it once: the others wait, and find it kept. Those that wait for the intervals (a
    # download, a model's page) queue apart: the board's page must not wait behind them.
    with ctx.cache.one_at_a_time((cache_key, wait_for_intervals)):
        ranking = _kept(ctx, cache_key, wait_for_intervals=wait_for_intervals)
        if ranking is None:
            ranking = ranked()
            ctx.cache.put(
                cache_key, ranking, size=ranking.approximate_size(), within=table.board_key
            )
            keep_long_lived()
    return ranking


def _kept(ctx: Context, cache_key: Hashable, *, wait_for_intervals: bool) -> _Ranking | None:
    """The ranking kept under ``cache_key``, unless it still waits for its intervals and
    the caller waits for them or their work has ended (then it is ranked again: with the
    intervals kept meanwhile, or their work asked for again)."""
    ranking: _Ranking | None = ctx.cache.get(cache_key)
    if ranking is not None and ranking.intervals_pending:
        # Kept while its intervals are being made, so that asking again costs a page.
        if wait_for_intervals or not ctx.background.busy(ranking.intervals_work):
            return None
    return ranking


@dataclass(frozen=True)
class Scatter:
    """Every ranked model that has a figure for ``metric``, in rank order: its perf (0
    where it has none, as the worst) and that figure, for a chart of the whole board."""

    metric: str
    keys: list[str]
    names: list[str]
    perf: FloatArray
    values: FloatArray


@dataclass(frozen=True)
class Standing:
    """One model's place on a board, for its page: the board as :func:`build_leaderboard`
    gives it with the model's row alone (and the baseline's), how many models are ranked,
    and every ranked model's perf against throughput and memory."""

    board: LeaderboardPublic
    #: The model's row; None: not ranked (incomplete).
    row: RowPublic | None
    ranked: int
    scatters: dict[str, Scatter]


def model_standing(
    ctx: Context,
    table: TaskTable,
    submission_id: int,
    weights: Mapping[str, float] | None = None,
    *,
    dataset_weights: Mapping[str, float] | None = None,
) -> Standing:
    """Where submission ``submission_id`` stands on ``table`` ranked with these weights
    (the same ranking as the board's, intervals waited for): only its row is built, the
    rest read from the ranking's arrays (a 10,000-model board's rows cost a second)."""
    ranking = _kept_ranking(
        ctx,
        table,
        weights,
        dataset_weights=dataset_weights,
        intervals=True,
        wait_for_intervals=True,
    )
    entry = table.entry(submission_id)
    board = _board(ranking, BoardQuery(), only=entry.key if entry is not None else "")
    shown = {m.name for m in board.metrics}
    return Standing(
        board=board,
        row=next((r for r in board.rows if r.submission_id == submission_id), None),
        ranked=len(ranking.order),
        scatters={m: ranking.scatter(m) for m in ("throughput", "memory") if m in shown},
    )


def _rank(
    ctx: Context,
    table: TaskTable,
    weights: Mapping[str, float] | None,
    *,
    dataset_weights: Mapping[str, float] | None,
    intervals: bool,
    wait_for_intervals: bool = True,
) -> _Ranking:
    figures = table.ranked_figures(dataset_weights, cache=ctx.cache if ctx is not None else None)
    layout = _ranked_rows(ctx, table, figures.entries)
    metrics = _weighable(figures, layout)
    requested = _usable_weights(table, weights, figures, metrics)
    used = {k: v for k, v in requested.items() if k in metrics}
    directions, offsets = goods_transform(metrics, memory_cap_gib=table.task.memory_cap_gib)
    ranked = figures.entries
    baseline = figures.majority_perf
    found = _Ranking(
        table=table,
        figures=figures,
        requested=requested,
        metrics=metrics,
        used=used,
        cache=ctx.cache if ctx is not None else None,
    )
    measured = {name for name, k in METRIC_COLUMN.items() if not figures.missing[:, k].all()}
    found.shown_metrics = [
        MetricPublic(
            name=name,
            label=metric.label,
            unit=metric.unit,
            direction=metric.direction,
            weighable=name in metrics,
            offset=metric.offset(memory_cap_gib=table.task.memory_cap_gib),
            measured=metric.measured,
            caveat=metric.caveat,
        )
        for name, metric in METRICS.items()
        if name in metrics or name in measured
    ]
    found.pending = [
        PendingPublic(submission_id=m.submission_id, name=m.name, user=m.user, status=m.status)
        for m in table.models
        if not m.complete
    ]
    if not ranked:
        return found
    # A missing figure ranks as the board's worst (scoring.fill_missing, the one rule).
    columns = [METRIC_COLUMN[name] for name in metrics]
    filled = fill_missing_array(
        [m.key for m in ranked],
        metrics,
        figures.values[:, columns],
        figures.missing[:, columns],
        may_lack=layout.may_lack,
    )
    found.keys, found.index, found.at = layout.keys, layout.index, layout.at
    found.names = layout.names
    found.grid = filled[found.at]
    normalised = _normalised(ctx, table, figures, metrics, found, (directions, offsets))
    found.scores = normalised.scores(used)
    found.terms = contribution_terms(normalised, used)
    found.term_metrics = normalised.metrics
    found.amrs = {
        k: (v if math.isfinite(v) else None) for k, v in normalised.amrs_by_metric.items()
    }
    inputs = (
        _interval_inputs(ctx, table, figures, metrics, found, directions, offsets)
        if intervals and "perf" in metrics
        else None
    )
    if inputs is not None and not wait_for_intervals:
        found.intervals_work = intervals_later(ctx, table, inputs, used)
    if inputs is not None and not found.intervals_pending:
        found.boot = board_intervals(ctx, table, inputs, used)
    if found.boot is not None:
        if found.boot.models != found.keys:  # both the ranked keys in name order
            raise AssertionError("the intervals' models are not the ranking's")
        found.flagged = found.boot.flagged
        order = found.boot.weighed.observed
        found.order = [found.keys[i] for i in found.boot.order]
    else:
        found.flagged = (
            not_above_baselines(found.grid[:, metrics.index("perf")], baseline=baseline)
            if "perf" in metrics
            else np.zeros(len(found.keys), dtype=bool)
        )
        order = floor_indices(normalised.rank_indices(used), found.flagged)
        found.order = list(map(found.keys.__getitem__, order.tolist()))
    found.positions = np.empty(len(order), dtype=np.intp)
    found.positions[order] = np.arange(1, len(order) + 1)
    found.warnings = _warnings(found.term_metrics, found.terms)
    return found


def _interval_inputs(
    ctx: Context,
    table: TaskTable,
    figures: RankedFigures,
    metrics: list[str],
    found: _Ranking,
    directions: Mapping[str, float],
    offsets: Mapping[str, float],
) -> IntervalInputs | None:
    """What the board's bootstrap is taken from (None: a ranked model lacks predictions),
    kept under the table's version, dataset weights and weighable metrics, which decide
    it: new metric weights read it, not 10,000 rows' runs and figures."""
    cache_key = _weighing_key("interval-inputs", table, figures, metrics)
    kept = ctx.cache if table.version else None  # a table built by hand is not cached
    if kept is not None:
        cached = kept.get(cache_key, MISSING)
        if cached is not MISSING:
            return cached  # type: ignore[no-any-return]
    ranked = figures.entries
    inputs = None
    if _has_predictions(table, ranked, kept):
        # The rows in name order, as the ranking's keys (found.at: each key's figures row).
        runs = timed_runs(table, figures, kept)[found.at] if "throughput" in metrics else None
        others = [k for k, name in enumerate(metrics) if name != "perf"]
        inputs = interval_inputs(
            table,
            ranked,
            keys=found.keys,
            metrics=[metrics[k] for k in others],
            values=found.grid[:, others],
            runs=runs,
            directions=directions,
            offsets=offsets,
            baseline=figures.majority_perf,
            dataset_weights=figures.dataset_weights,
            cache=kept,
        )
    if kept is not None:
        kept.put(cache_key, inputs, size=inputs.approximate_size() if inputs else 0)
    return inputs


def _has_predictions(table: TaskTable, ranked: list[ModelEntry], kept: MemoryCache | None) -> bool:
    """:func:`has_predictions` of the table's ranked models, kept under its version (which
    decides them): checking 10,000 rows cost 20 ms of each weighting not asked before."""
    cache_key = ("has-predictions", table.version)
    found = kept.get(cache_key) if kept is not None else None
    if found is None:
        found = has_predictions(table, ranked)
        if kept is not None:
            kept.put(cache_key, found, size=64, within=table.board_key)
    return bool(found)


def _board(
    ranking: _Ranking,
    query: BoardQuery,
    keep: Callable[[ModelEntry], bool] | None = None,
    *,
    only: str | None = None,
) -> LeaderboardPublic:
    """One page of ``ranking``, as the API sends it; ``only``: the row of that key alone
    (none where it is not ranked), without walking the others."""
    table, figures = ranking.table, ranking.figures
    baseline = figures.majority_perf
    total = 0
    rows: list[RowPublic] = []
    if ranking.keys:
        if only is not None:
            order = [only] if only in ranking.index else []
        elif keep is None:
            order = ranking.order
        else:
            entries = figures.entries
            order = [k for k in ranking.order if keep(entries[ranking.at[ranking.index[k]]])]
        total, page = query.select(order, names=ranking.names, value=ranking.value)
        if ranking.boot is not None:  # the page's rank intervals, ranked in one pass
            ranking.boot.prepare(ranking.index[key] for key in page)
        ranking.prepare_spreads(ranking.index[key] for key in page)
        for key in page:
            rows.append(_page_row(ranking, key))
    if baseline is not None and query.offset == 0 and not query.q:  # on the first page
        rows.append(
            RowPublic(
                rank=None,
                key="majority",
                submission_id=None,
                name="majority-class baseline",
                user=None,
                kind="majority",
                metrics={"perf": baseline},
                dynascore=None,
            )
        )
    return LeaderboardPublic(
        task=table.task.id,
        perf_metric=table.task.perf_metric,
        weights={k: float(v) for k, v in ranking.requested.items()},
        metrics=[m.model_copy() for m in ranking.shown_metrics],
        rows=rows,
        total=total,
        pending=[p.model_copy() for p in ranking.pending],
        intervals_pending=ranking.intervals_pending,
        amrs=dict(ranking.amrs),
        dataset_weights={name: figures.dataset_weights[name] for name in table.weighable_datasets},
        baseline_perf=baseline,
        warnings=list(ranking.warnings),
        phase=table.phase,
        withheld_sets=table.withheld_sets,
        hidden_sets_left_out=sum(
            figures.dataset_weights.get(name) == 0 for name in table.hidden_left_out
        ),
    )


def _page_row(ranking: _Ranking, key: str) -> RowPublic:
    entry, boot, i = ranking.entry(key), ranking.boot, ranking.index[key]
    terms = dict(zip(ranking.term_metrics, ranking.terms[i].tolist(), strict=True))
    row = _row(entry, int(ranking.positions[i]), float(ranking.scores[i]), terms)
    row.ranked_as_worst = [
        name for name in ranking.metrics if ranking.used.get(name) and row.metrics.get(name) is None
    ]
    spread = ranking.throughput_spread(i)
    if spread is not None:
        row.spread = {"throughput": IntervalPublic(low=spread[0], high=spread[1])}
    share = entry.busiest_load()
    if share is not None and share > CONTENDED_SHARE:
        row.contended = True
        row.load_note = (
            f"measured while other processes used {share:.0%} of the worker's CPU: "
            "throughput and latency may be low"
        )
    figures = boot.row(i) if boot is not None else None
    if ranking.flagged[i]:
        row.not_above_baseline = True
        above = figures.above_baseline if figures is not None else None
        row.reason = _reason(
            float(ranking.grid[i, ranking.metrics.index("perf")]),
            ranking.figures.majority_perf,
            above.high if above is not None else None,
        )
    if figures is not None:
        row.intervals = {"perf": IntervalPublic(low=figures.perf.low, high=figures.perf.high)}
        if figures.gap_to_leader is not None:
            gap = figures.gap_to_leader
            row.intervals["gap_to_leader"] = IntervalPublic(low=gap.low, high=gap.high)
        row.p_first = figures.p_first
        row.rank_interval = figures.rank_interval
    return row


def _reason(perf: float, baseline: float | None, above_high: float | None) -> str:
    why = (
        f"its perf ({perf:.2f}) does not clear the majority-class baseline's "
        f"({baseline or 0.0:.2f})"
    )
    if above_high is not None:
        why += f": the 95% paired bootstrap puts it at most {above_high:+.2f} points above"
    return f"not above baseline: {why}; ranked after every model that clears it"


def _warnings(metrics: Sequence[str], terms: FloatArray) -> list[str]:
    found = dominant_term_array(metrics, terms)
    if found is None:
        return []
    metric, share = found
    label = METRICS[metric].label if metric in METRICS else metric
    return [
        f"{label} gives {share:.0%} or more of every model's Dynascore: its AMRS rate makes "
        "small differences between models count a lot, so the scores sit near a common "
        "value. Compare the gaps to the leader, not the scores, or lower its weight."
    ]


def _row(
    entry: ModelEntry, rank: int, score: float, contributions: Mapping[str, float]
) -> RowPublic:
    return RowPublic(
        rank=rank,
        key=entry.key,
        submission_id=entry.submission_id,
        name=entry.name,
        user=entry.user,
        kind="baseline" if entry.is_baseline else "model",
        metrics=dict(entry.metrics),
        dynascore=score,
        runtime=entry.runtime,
        license=entry.card.license,
        params=entry.card.params,
        published=entry.published,
        contributions=dict(contributions),
        methods=dict(entry.methods),
        predictions_only=entry.predictions_only,
    )


def to_csv(board: LeaderboardPublic) -> str:
    """The whole table as CSV: one row per model, intervals as ``_low``/``_high`` columns,
    how a figure was obtained as ``<metric>_method`` where its metric says."""
    names = [m.name for m in board.metrics]
    methods = [name for name in names if METRICS[name].method_field]
    header = [
        "rank",
        "name",
        "user",
        "kind",
        "submission_id",
        "dynascore",
        "gap_to_leader_low",
        "gap_to_leader_high",
        "rank_best",
        "rank_worst",
        "p_first",
        "not_above_baseline",
        "predictions_only",
        *names,
        *(f"{name}_method" for name in methods),
        "perf_low",
        "perf_high",
    ]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    for row in board.rows:
        ds = row.intervals.get("gap_to_leader")
        best, worst = row.rank_interval or ("", "")
        perf = row.intervals.get("perf")
        writer.writerow(
            [
                row.rank if row.rank is not None else "",
                _text(row.name),
                _text(row.user or ""),
                _text(row.kind),
                row.submission_id if row.submission_id is not None else "",
                _fmt(row.dynascore),
                _fmt(ds.low if ds else None),
                _fmt(ds.high if ds else None),
                best,
                worst,
                _fmt(row.p_first),
                "yes" if row.not_above_baseline else "",
                "yes" if row.predictions_only else "",
                *(_fmt(row.metrics.get(n)) for n in names),
                *(_text(row.methods.get(n, "")) for n in methods),
                _fmt(perf.low if perf else None),
                _fmt(perf.high if perf else None),
            ]
        )
    return out.getvalue()


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"


#: What makes a spreadsheet read a cell as a formula (OWASP's CSV injection list).
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _text(value: str) -> str:
    """A text cell a spreadsheet shows as text: one that would start a formula (a name
    such as ``=HYPERLINK(...)``) gets a leading ``'``. Only text cells: the numbers are
    written by :func:`_fmt` and a negative one (``-0.5``) is a number to a spreadsheet,
    which a quote would turn into text for every reader of the file."""
    return f"'{value}" if value.startswith(_FORMULA_STARTS) else value
