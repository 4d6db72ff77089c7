"""Bootstrap intervals for the leaderboard: a board's resamples kept, each weighting's rows
ranked when a page sends them.

:func:`scoring.resample` resamples the same examples for every ranked model (their
per-example statistics, :mod:`leaderboard.example_statistics`), which no weight changes;
:func:`scoring.weigh` turns them into one weighting's order, floor and ``p_first``; each
row's rank interval and gap to the leader are ranked when a page first sends the row
(:class:`BoardIntervals`), as ranking every resample of 10,000 models for a page of 100
costs five times what the rest of the request does. When a model lacks a file, or the
models answered different examples, there are no intervals (shown as such), never
made-up ones.

What is kept, per task, in the context's cache: the draws (the examples' resampled
counts and each model's resampled perf), which a new model extends by its own column;
the resamples of the latest dataset weights; each weighting's :class:`BoardIntervals`.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from evalboard.core.cache import MISSING, MemoryCache, approximate_size, sampled_size
from evalboard.core.context import Context
from leaderboard.example_statistics import Statistics, Unpaired, constant_statistics
from leaderboard.kept_draws import load_draws, save_draws, worth_saving
from leaderboard.paging import DEFAULT_LIMIT
from leaderboard.table import ModelEntry, TaskTable
from scoring import (
    Draws,
    FloatArray,
    Interval,
    Resamples,
    ScoringError,
    Weighed,
    dataset_shares,
    draw,
    resample,
    weigh,
)

__all__ = [
    "LEVEL",
    "N_RESAMPLES",
    "BoardIntervals",
    "IntervalInputs",
    "RowFigures",
    "board_intervals",
    "has_predictions",
    "interval_inputs",
    "intervals_later",
]

logger = logging.getLogger(__name__)

N_RESAMPLES = 1000
LEVEL = 0.95
SEED = 0


def has_predictions(table: TaskTable, models: list[ModelEntry]) -> bool:
    """Whether every model kept its per-example predictions on every original scoring
    dataset: the bootstrap needs them all."""
    names = {d.name for d in table.originals}
    # One C-level subset check per model: a generator per model and original cost 12 ms
    # of the first request after each new result at 10,000 models.
    return bool(names) and all(map(names.issubset, (m.predictions for m in models)))


@dataclass(frozen=True, eq=False)
class IntervalInputs:
    """What a board's resamples are taken from, whatever the metric weights (made by
    :func:`interval_inputs`, kept per board version and dataset weights by
    ``leaderboard.ranking``). The figures are arrays, digested as bytes: a weighting no
    request asked for before finds its resamples (kept under ``identity``) in
    milliseconds, and the mappings the bootstrap reads are made only when it resamples.
    """

    #: Model key -> its prediction file on each original, in the table's order.
    files: dict[str, tuple[str, ...]]
    #: The models' keys in name order: the rows of ``values`` and ``runs``.
    keys: tuple[str, ...]
    #: The other metrics' names and their figures ``(models, metrics)``.
    metrics: tuple[str, ...]
    values: FloatArray
    #: Each model's throughput per timed run ``(models, runs)``, NaN past its runs (all
    #: NaN: none to resample); None: throughput is not weighed.
    runs: FloatArray | None
    directions: Mapping[str, float]
    offsets: Mapping[str, float]
    #: The majority-class baseline's perf (None: no floor).
    baseline: float | None
    dataset_weights: dict[str, float]
    #: A digest of everything above and the table's facts the resamples depend on.
    identity: str

    @property
    def other_metrics(self) -> dict[str, dict[str, float]]:
        """Model key -> the other metrics' figures, as :func:`scoring.resample` reads them
        (made on each read: only resampling reads them, once)."""
        return {
            key: dict(zip(self.metrics, row, strict=True))
            for key, row in zip(self.keys, self.values.tolist(), strict=True)
        }

    @property
    def repeats(self) -> dict[str, dict[str, list[float]]]:
        """Model key -> ``{"throughput": its runs}``, for the models that have runs (made
        on each read, as :attr:`other_metrics`)."""
        if self.runs is None:
            return {}
        measured = ~np.isnan(self.runs)
        return {
            key: {"throughput": row[kept].tolist()}
            for key, row, kept in zip(self.keys, self.runs, measured, strict=True)
            if kept.any()
        }

    def approximate_size(self) -> int:
        """The files from a sample, the arrays, and each key once."""
        arrays = approximate_size((self.values, self.runs))
        return sampled_size(list(self.files.items())) + arrays + sampled_size(self.keys)


def interval_inputs(
    table: TaskTable,
    models: list[ModelEntry],
    *,
    keys: Sequence[str],
    metrics: Sequence[str],
    values: FloatArray,
    runs: FloatArray | None,
    directions: Mapping[str, float],
    offsets: Mapping[str, float],
    baseline: float | None,
    dataset_weights: Mapping[str, float],
    cache: MemoryCache | None = None,
) -> IntervalInputs:
    """The :class:`IntervalInputs` of ``models`` (each with predictions on every original,
    :func:`has_predictions`), the originals weighed by ``dataset_weights``: ``values`` the
    other ``metrics`` of the models ``keys`` (in name order), ``runs`` their throughput per
    timed run (``leaderboard.table.timed_runs``). Their prediction files are kept in
    ``cache`` under the table's version."""
    originals = table.originals
    files, files_digest = _prediction_files(table, models, cache)
    chosen = {d.name: dataset_weights[d.name] for d in originals}
    values = np.ascontiguousarray(values, dtype=np.float64)
    runs = None if runs is None else np.ascontiguousarray(runs, dtype=np.float64)
    identity = _digest(
        files_digest,
        hashlib.sha256("\0".join(keys).encode()).hexdigest(),
        tuple(metrics),
        _array_digest(values),
        None if runs is None else _array_digest(runs),
        tuple(sorted(directions.items())),
        tuple(sorted(offsets.items())),
        baseline,
        table.majority_label,
        # Shares, not weights: two weightings with the same shares resample alike.
        tuple(sorted(chosen)),
        dataset_shares(chosen),
    )
    return IntervalInputs(
        files=files,
        keys=tuple(keys),
        metrics=tuple(metrics),
        values=values,
        runs=runs,
        directions=directions,
        offsets=offsets,
        baseline=baseline,
        dataset_weights=chosen,
        identity=identity,
    )


def _prediction_files(
    table: TaskTable, models: list[ModelEntry], cache: MemoryCache | None
) -> tuple[dict[str, tuple[str, ...]], str]:
    """Each model's prediction file on each original and their digest, kept in ``cache``
    under the table's version (no weight changes them)."""
    kept = cache if table.version else None  # a table built by hand is not cached
    cache_key = ("prediction-files", table.version)
    found: tuple[dict[str, tuple[str, ...]], str] | None = (
        kept.get(cache_key) if kept is not None else None
    )
    if found is None:
        names = [d.name for d in table.originals]
        # itemgetter picks a model's files in C (a generator per model cost 13 ms at
        # 10,000 models); of one name it gives the file, not a tuple of it.
        pick = itemgetter(*names) if len(names) > 1 else lambda p: tuple(p[n] for n in names)
        files = {m.key: pick(m.predictions) for m in models}
        found = files, _digest(tuple(files.items()))
        if kept is not None:
            size = sampled_size(list(files.items()))
            kept.put(cache_key, found, size=size, within=table.board_key)
    return found


def _draws_size(draws: Draws) -> int:
    """About the bytes of ``draws``: its arrays, and its columns' names and each
    measurement's picks from a sample (walking 10,000 of each cost 100 ms a put)."""
    arrays = approximate_size((draws.counts, draws.perf, draws.estimate))
    return arrays + sampled_size(draws.columns) + sampled_size(list(draws.picks.items()))


def _resamples_size(resamples: Resamples) -> int:
    """About the bytes of ``resamples``: its arrays, and the models' names from a sample
    (walking 10,000 names cost 10 ms a put)."""
    normalised = resamples.normalised
    own = {name: value for name, value in vars(resamples).items() if name != "normalised"}
    # The table's goods, and the values they were made from (as large).
    table = 2 * approximate_size((normalised.goods, normalised.amrs))
    return approximate_size(own) + table + sampled_size(normalised.models)


def _array_digest(array: FloatArray) -> str:
    """An array's shape and bytes, digested (each float exactly, as repr would give it)."""
    return hashlib.sha256(repr(array.shape).encode() + array.tobytes()).hexdigest()


@dataclass(frozen=True)
class RowFigures:
    """One row's bootstrap figures, as the board shows them."""

    perf: Interval
    #: None where the board's resamples could not be taken again to rank this row.
    gap_to_leader: Interval | None
    rank_interval: tuple[int, int] | None
    #: None, like the rank interval, where the resamples could not be taken again.
    p_first: float | None
    #: Perf minus the baseline's (None: no baseline).
    above_baseline: Interval | None


@dataclass(eq=False)
class BoardIntervals:
    """A board's intervals under one weighting (:func:`board_intervals`): what every row
    needs at once from weighing the kept resamples (the order, the floor), and each row's
    rank interval and gap to the leader ranked when a page first asks for it
    (:meth:`prepare`), then kept: a page sent again costs nothing. How often each model
    leads (``p_first``) is counted with the first page ranked, from the same scores.

    Shared by every request for the same board and weights, so the rows are filled under
    a lock. It keeps the resamples' small per-model arrays, not their large ones: those
    come from ``source`` (the kept resamples, or taken again) when a page needs them.
    """

    weighed: Weighed
    source: Callable[[], Resamples | None]
    estimate: FloatArray
    perf_q: FloatArray
    above_q: FloatArray
    base_estimate: float | None
    flagged: np.ndarray[Any, np.dtype[np.bool_]]
    _rows: dict[int, tuple[tuple[int, int], float, float] | None] = field(default_factory=dict)
    #: How many resamples each model leads (None until a page is ranked, or where the
    #: resamples could not be taken again).
    _first_counts: NDArray[np.intp] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def of(
        cls, resamples: Resamples, weighed: Weighed, source: Callable[[], Resamples | None]
    ) -> BoardIntervals:
        return cls(
            weighed=weighed,
            source=source,
            estimate=resamples.estimate,
            perf_q=resamples.perf_q,
            above_q=resamples.above_q,
            base_estimate=resamples.base_estimate,
            flagged=resamples.flagged.astype(bool),
        )

    @property
    def models(self) -> tuple[str, ...]:
        """The models in name order: every position here is one of them."""
        return self.weighed.models

    @property
    def order(self) -> list[int]:
        """Positions best first, as the board ranks them (the floor, then the Dynascore)."""
        return self.weighed.observed.tolist()  # type: ignore[no-any-return]

    def prepare(self, positions: Iterable[int]) -> None:
        """Rank the rows at ``positions`` that are not ranked yet, all in one pass."""
        wanted = [i for i in positions if i not in self._rows]
        if not wanted:
            return
        with self._lock:
            wanted = list(dict.fromkeys(i for i in wanted if i not in self._rows))
            if not wanted:
                return
            resamples = self.source()
            if resamples is None or not self.weighed.fits(resamples):
                self._rows.update(dict.fromkeys(wanted))
                return
            rows = self.weighed.rows(resamples, wanted, firsts=self._first_counts is None)
            if rows.first_counts is not None:
                self._first_counts = rows.first_counts
            low, high = rows.gaps.tolist()
            for j, i in enumerate(wanted):
                self._rows[i] = (rows.ranks[j], low[j], high[j])

    def row(self, position: int) -> RowFigures:
        """The figures of the row at ``position`` (ranked now if no page asked before)."""
        self.prepare([position])
        ranked = self._rows[position]
        point = self.weighed.point
        gap = None
        if ranked is not None:
            gap = Interval(
                float(point[position] - point[self.weighed.leader]), ranked[1], ranked[2]
            )
        above = None
        if self.base_estimate is not None:
            above = Interval(
                float(self.estimate[position] - self.base_estimate),
                float(self.above_q[0, position]),
                float(self.above_q[1, position]),
            )
        return RowFigures(
            perf=Interval(
                float(self.estimate[position]),
                float(self.perf_q[0, position]),
                float(self.perf_q[1, position]),
            ),
            gap_to_leader=gap,
            rank_interval=ranked[0] if ranked is not None else None,
            p_first=None
            if self._first_counts is None
            else float(self._first_counts[position] / self.weighed.n_resamples),
            above_baseline=above,
        )

    def approximate_size(self) -> int:
        """Its own arrays and the rows every page could fill (the resamples' small arrays
        it shares are counted with them)."""
        weighed = self.weighed
        arrays = (weighed.point, weighed.observed, weighed.observed_rank)
        bounds = (weighed.low, weighed.high, weighed.leader_samples, self.flagged)
        # A ranked row: its tuple, two floats and the mapping's slot; and its first count.
        per_row = 200 + np.dtype(np.intp).itemsize
        return approximate_size((*arrays, *bounds)) + per_row * len(weighed.models)


def intervals_later(
    ctx: Context, table: TaskTable, inputs: IntervalInputs, weights: Mapping[str, float]
) -> Hashable | None:
    """Where the board's intervals under metric ``weights`` are left to the background,
    the key of the work making them there; None where they are to be made (or read) now.

    They are left where they are not kept, their resamples are not kept either (weighing
    kept resamples is quick), and the board has at least ``intervals_inline_models``
    models, whose resampling takes seconds at 10,000. The request answers without them;
    asked again once they are made, :func:`board_intervals` finds them kept. Never where
    the cache keeps nothing: they would be made again and again."""
    if len(inputs.keys) < ctx.settings.intervals_inline_models or not ctx.cache.budget_bytes:
        return None
    cache_key = _intervals_key(inputs, weights)
    if ctx.cache.has(cache_key) or ctx.cache.has(_resamples_key(table, inputs)):
        return None
    chosen = dict(weights)
    ctx.background.submit(cache_key, lambda: _made_with_first_page(ctx, table, inputs, chosen))
    return cache_key


def _made_with_first_page(
    ctx: Context, table: TaskTable, inputs: IntervalInputs, weights: Mapping[str, float]
) -> None:
    """The background's work: :func:`_made_intervals`, then the first page's rows ranked
    (and who leads each resample), so that the request that finds the intervals ranks no
    row: the first page is what the API and the task page ask for by default (at 10,000
    models its rank intervals are most of 100 ms)."""
    found = _made_intervals(ctx, table, inputs, weights)
    if found is not None:
        found.prepare(found.order[:DEFAULT_LIMIT])


def _intervals_key(inputs: IntervalInputs, weights: Mapping[str, float]) -> tuple[Any, ...]:
    return ("bootstrap", inputs.identity, tuple(sorted(weights.items())))


def board_intervals(
    ctx: Context, table: TaskTable, inputs: IntervalInputs, weights: Mapping[str, float]
) -> BoardIntervals | None:
    """The board's :class:`BoardIntervals` under metric ``weights``, kept per resamples
    and weights; None when there are none to give (module docstring)."""
    cache_key = _intervals_key(inputs, weights)
    cached = ctx.cache.get(cache_key, MISSING)  # one call: None (no intervals) is cached too
    if cached is MISSING and ctx.background.busy(cache_key):
        # Being made for a request that did not wait: waited for, not made twice at once.
        ctx.background.wait(cache_key)
        cached = ctx.cache.get(cache_key, MISSING)
    if cached is not MISSING:
        return cached  # type: ignore[no-any-return]
    return _made_intervals(ctx, table, inputs, weights)


def _made_intervals(
    ctx: Context, table: TaskTable, inputs: IntervalInputs, weights: Mapping[str, float]
) -> BoardIntervals | None:
    """:func:`board_intervals` made and kept (the background's work: it never waits)."""
    resamples = board_resamples(ctx, table, inputs)
    found = None
    if resamples is not None:
        found = BoardIntervals.of(
            resamples, weigh(resamples, weights), lambda: board_resamples(ctx, table, inputs)
        )
    # Within the board: the lambda holds the table, rows and all.
    size = found.approximate_size() if found else 0
    ctx.cache.put(_intervals_key(inputs, weights), found, size=size, within=table.board_key)
    return found


def board_resamples(ctx: Context, table: TaskTable, inputs: IntervalInputs) -> Resamples | None:
    """The resamples of the board ``inputs`` describe: kept under what they were taken
    from (``inputs.identity``); taken from the kept draws (extended by the models they
    lack) otherwise.
    None when the models did not answer the same examples, or their statistics cannot be
    read."""
    originals = table.originals
    resamples_key = _resamples_key(table, inputs)
    resamples = ctx.cache.get(resamples_key)
    if resamples is not None:
        return resamples  # type: ignore[no-any-return]
    task_key = _task_key(table, inputs)
    draws_key = ("bootstrap-draws", task_key)
    kept_draws = ctx.cache.get(draws_key)
    # A server's start: the draws kept on disk, if any. A cache of 0 bytes keeps nothing
    # derived, there either: every request draws from the statistics (the tests' board
    # "from scratch").
    on_disk = ctx.cache.budget_bytes > 0
    if kept_draws is None and on_disk:
        kept_draws = load_draws(ctx, table.task.id, task_key)
        if kept_draws is not None:
            ctx.cache.put(draws_key, kept_draws, size=_draws_size(kept_draws[2]))
    drawn_files: dict[str, tuple[str, ...]] = {}
    drawn_uids: dict[str, str] = {}
    draws: Draws | None = None
    if kept_draws is not None:
        drawn_files, drawn_uids, draws = kept_draws
    kept = {key for key, f in inputs.files.items() if drawn_files.get(key) == f}
    examples = Statistics(ctx, table, inputs.files, drawn_uids if kept else {})
    try:
        unreadable = _unreadable(examples, [key for key in inputs.files if key not in kept])
        if unreadable is not None:
            model, exc = unreadable
            logger.warning(
                "no intervals for task %s: model %s's prediction files (%s) cannot be read: %s",
                table.task.id,
                model,
                ", ".join(inputs.files[model]),
                exc,
            )
            return None
        if inputs.baseline is not None and len(examples.uids) < len(originals):
            examples[next(iter(inputs.files))]  # the examples' digests, for the floor's
        floor = (
            constant_statistics(ctx, table, examples.uids) if inputs.baseline is not None else None
        )
        arguments: dict[str, Any] = dict(
            metric=table.task.perf_metric,
            dataset_weights=inputs.dataset_weights,
            baseline=floor if floor is not None else inputs.baseline,
            repeats=inputs.repeats,
            n_resamples=N_RESAMPLES,
            seed=SEED,
        )
        if drawn_files != inputs.files:
            draws = draw(examples, **arguments, previous=draws, kept=kept)
            ctx.cache.put(draws_key, (inputs.files, examples.uids, draws), size=_draws_size(draws))
            if on_disk and worth_saving(len(inputs.files), len(inputs.files) - len(kept)):
                save_draws(ctx, table.task.id, task_key, inputs.files, examples.uids, draws)
        resamples = resample(
            examples,
            **arguments,
            table=inputs.other_metrics,
            directions=inputs.directions,
            offsets=inputs.offsets,
            level=LEVEL,
            draws=draws,
        )
    except Unpaired:
        return None
    except (OSError, KeyError, ValueError, ScoringError) as exc:
        logger.warning("no intervals for task %s: %s", table.task.id, exc)
        return None
    size = _resamples_size(resamples)
    # At most a quarter of the budget, so that the draws, the board and its rankings
    # stay: at 10,000 models resamples are 162 MB, draws 114 MB and the board 53 MB.
    if size <= ctx.cache.budget_bytes // 4:
        ctx.cache.put(resamples_key, resamples, size=size)
    return resamples


def _unreadable(examples: Statistics, models: Iterable[str]) -> tuple[str, Exception] | None:
    """The first of ``models`` (those the draws lack, which drawing reads anyway) whose
    statistics cannot be read, and why: named, where the bootstrap's own error would not
    say whose file it was."""
    for model in models:
        try:
            examples[model]
        except (OSError, KeyError, ValueError) as exc:  # Unpaired is the caller's
            return model, exc
    return None


def _task_key(table: TaskTable, inputs: IntervalInputs) -> str:
    """What the bootstrap draws depends on: the examples, not any weight or other metric.
    Each model's columns depend on its own examples only: the draws are kept per task,
    with the files drawn and their examples' digests, so weights no request asked for
    before cost arithmetic, and a board that gains or re-runs a model reads and sums that
    model's statistics alone."""
    return _digest(
        table.task.id,
        table.task.perf_metric,
        tuple(table.task.output.labels or ()),
        tuple(d.sha256 for d in table.originals),
        inputs.baseline is not None,
        N_RESAMPLES,
    )


def _resamples_key(table: TaskTable, inputs: IntervalInputs) -> tuple[str, str, str]:
    """Nor do the resamples depend on the metric weights: kept under what they were taken
    from, one entry each, so that a viewer trying other dataset weights does not make the
    owner's (or another viewer's) resample again; the least recently used go first."""
    return ("bootstrap-resamples", _task_key(table, inputs), inputs.identity)


def _digest(*parts: Any) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()
