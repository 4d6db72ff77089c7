"""From stored results to the leaderboard's table.

Each model's row (:mod:`leaderboard.entry`, stored by :mod:`leaderboard.aggregates`)
averages its results' figures over the task's scoring datasets with the dataset weights,
as the evaluator's own summary does (:func:`evaluator.scorecard.summarize`): perf,
throughput, memory and latency over the originals, fairness and robustness over their
copies. A model is ranked once it has a finished result on every scoring dataset; until
then it is pending.

The majority-class baseline predicts, on every scoring dataset, the label most frequent
across those datasets; it has a perf and nothing else, and is shown, not ranked. It is
the floor of :mod:`scoring.floor`.

Hidden sets of a private phase (:mod:`leaderboard.phases`) are not scoring datasets here
until the owner reveals the phase to the public.

A viewer may weigh the datasets otherwise (:meth:`TaskTable.reweighted`): every average,
the baseline's included, is then taken again with those weights; a perturbed copy
follows its original's weight. Hidden sets then weigh 0: they count on the owner's
weighting only, so that no two weightings tell a model's score on them.
"""

from __future__ import annotations

import logging
import sys
from collections import Counter
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from datasets_registry import TaskSpec, get_task, list_datasets, read_examples, scoring_datasets
from evalboard.core.cache import MISSING, MemoryCache, approximate_size, read_only
from evalboard.core.context import Context
from evalboard.core.states import Access
from evalboard.core.tables import Dataset, Task
from evaluator import summarize
from leaderboard.aggregates import load_board, source_digest
from leaderboard.entry import (
    ModelEntry,
    board_metrics,
    counted_arrays,
    figure_arrays_of,
    stored_card,
    summary_status,
)
from leaderboard.phases import shown_phase, withheld_dataset_ids
from scoring import (
    METRICS,
    FloatArray,
    InvalidWeightsError,
    check_weights,
    compute,
    weighted_mean,
    weighted_means,
)

__all__ = [
    "METRIC_COLUMN",
    "ModelEntry",
    "RankedFigures",
    "TaskTable",
    "load_table",
    "stored_card",
    "summary_status",
    "own_timed_runs",
    "timed_runs",
    "timed_runs_kept",
]

logger = logging.getLogger(__name__)

#: Each metric's column in :class:`RankedFigures` (its place in ``METRICS``).
METRIC_COLUMN = {name: k for k, name in enumerate(METRICS)}


@dataclass
class TaskTable:
    """Everything the leaderboard, its pages and its CLI show for one task."""

    task: TaskSpec
    default_weights: dict[str, float]
    owner_id: int | None
    datasets: list[Dataset]
    scoring: list[Dataset]
    models: list[ModelEntry]
    #: The majority-class baseline's perf on each original scoring dataset.
    majority_by_dataset: dict[str, float] | None
    #: The label the majority-class baseline answers (None: not a classification task).
    majority_label: str | None = None
    #: Original scoring dataset -> its weight in the averages (the owner's unless a
    #: viewer chose others).
    dataset_weights: dict[str, float] = field(default_factory=dict)
    #: The phase the board shows ("public", with the phases revealed to the public).
    phase: str = "public"
    #: Hidden sets of private phases left out of ``scoring`` (``leaderboard.phases``).
    withheld_sets: int = 0
    #: A digest of everything the table was read from (its rows, datasets and owner's
    #: weights), so what is derived from it can be cached under it; "" for a table built
    #: by hand, which nothing caches.
    version: str = ""
    #: The cache key of the board rows the table was read from
    #: (:attr:`leaderboard.aggregates.Board.cache_key`): what the cache keeps that holds
    #: the table's rows is kept within it; None for a table built by hand.
    board_key: Hashable = None

    @property
    def weighable_datasets(self) -> list[str]:
        """The original scoring datasets a viewer may weigh: hidden sets are never named,
        and a viewer's weights leave them out (:attr:`hidden_left_out`)."""
        return [d.name for d in self.originals if d.access != Access.HIDDEN]

    @property
    def hidden_left_out(self) -> list[str]:
        """The hidden original sets a viewer's dataset weights leave out (weigh 0): kept at
        the owner's weight, two weightings would solve for every model's score on them and
        for their weight, which only the task's owner may see. They count on the owner's
        weighting alone."""
        return [
            d.name
            for d in self.originals
            if d.access == Access.HIDDEN and self.dataset_weights.get(d.name, 0.0) > 0
        ]

    @property
    def majority_perf(self) -> float | None:
        """The baseline's perf averaged with :attr:`dataset_weights`."""
        return _weighted_mean(self.majority_by_dataset, self.dataset_weights)

    def reweighted(
        self, weights: Mapping[str, float] | None, *, cache: MemoryCache | None = None
    ) -> TaskTable:
        """This table with the original scoring datasets weighed by ``weights`` (names not
        given keep the owner's weight, hidden sets weigh 0); None gives the table itself.

        With a ``cache``, a versioned table keeps its rows' figures per outcome as arrays
        (:class:`_Counted`), so weights no request asked for before cost arithmetic, not
        one evaluator summary per row; the averages are the same to the last bit.

        Raises:
            scoring.InvalidWeightsError: an unknown dataset, a weight that is not a finite
                number >= 0, or every dataset at 0.
        """
        if weights is None:
            return self
        figures = self.ranked_figures(weights, cache=cache)
        models = list(self.models)
        for i, r in enumerate(figures.rows):
            models[r] = figures.entry(i)
        merged = figures.dataset_weights
        version = source_digest(self.version, sorted(merged.items())) if self.version else ""
        return replace(self, models=models, dataset_weights=merged, version=version)

    def ranked_figures(
        self, weights: Mapping[str, float] | None, *, cache: MemoryCache | None = None
    ) -> RankedFigures:
        """The ranked rows' averages with the datasets weighed by ``weights`` (as for
        :meth:`reweighted`; None: the table's own), as arrays: what ranking 10,000 rows
        needs, without a new entry per row (:meth:`RankedFigures.entry` makes one).

        With a ``cache``, a versioned table's own figures are kept under its version, so
        new metric weights rank them without reading every row's metrics again.

        Raises:
            scoring.InvalidWeightsError: as :meth:`reweighted`.
        """
        if weights is None:
            return _own_figures(self, cache)
        chosen = check_weights(weights, known=self.weighable_datasets, what="dataset", partial=True)
        left_out = dict.fromkeys(self.hidden_left_out, 0.0)
        merged = {**self.dataset_weights, **chosen, **left_out}
        if not sum(merged.values()) > 0:
            raise InvalidWeightsError(
                f"Every dataset you may weigh would weigh 0 with {_text(chosen)}; give at least "
                "one a weight above 0"
            )
        counted = _counted(self, cache) if cache is not None and self.version else None
        if counted is None:
            rows = [r for r, m in enumerate(self.models) if m.complete]
            entries = [_reaveraged(self.models[r], merged) for r in rows]
            return RankedFigures.of(rows, entries, merged, self.majority_by_dataset)
        means = counted.means(merged)
        return RankedFigures(
            counted.rows,
            [self.models[r] for r in counted.rows],
            merged,
            self.majority_by_dataset,
            means,
            np.isnan(means),
            fresh=True,
        )

    @property
    def ranked(self) -> list[ModelEntry]:
        return [m for m in self.models if m.complete]

    @property
    def originals(self) -> list[Dataset]:
        return [d for d in self.scoring if d.perturbation is None]

    def entry(self, submission_id: int) -> ModelEntry | None:
        return next((m for m in self.models if m.submission_id == submission_id), None)


def _text(weights: Mapping[str, float]) -> str:
    return ",".join(f"{k}:{v:g}" for k, v in weights.items())


def _weighted_mean(
    values: Mapping[str, float] | None, weights: Mapping[str, float]
) -> float | None:
    if not values:
        return None
    return weighted_mean((value, weights.get(name, 0.0)) for name, value in values.items())


def _reaveraged(entry: ModelEntry, weights: Mapping[str, float]) -> ModelEntry:
    # A perturbed copy follows its original's weight. The outcomes themselves keep the
    # owner's weights: copying 30,000 of them cost more than the averages.
    outcomes = entry.outcomes
    chosen = {o.dataset: weights.get(o.derived_from or o.dataset, o.weight) for o in outcomes}
    return replace(entry, metrics=board_metrics(summarize(outcomes, weights=chosen)))


@dataclass(frozen=True, eq=False)
class _Counted:
    """A board's complete rows as arrays: re-weighing its datasets is arithmetic.

    ``figures[r, j, k]``: metric ``k`` of row ``r``'s ``j``-th outcome, NaN where it does
    not count (or the row has fewer outcomes); ``key_of[r, j]``: which weight name it
    looks up (``keys``), -1 for padding; ``own``: its own weight, for a name the weights
    leave out. The sums run in outcome order, each figure by its share of the weight, as
    :func:`scoring.weighted_mean` adds.
    """

    #: Where they stand in the table's models. Not the entries themselves: the cache would
    #: measure (and count again) every entry, which the board's cache already holds.
    rows: list[int]
    keys: list[str]
    key_of: np.ndarray
    own: np.ndarray
    figures: np.ndarray

    def __post_init__(self) -> None:
        read_only(self.key_of, self.own, self.figures)  # kept per version, shared

    def approximate_size(self) -> int:
        """About its bytes: the arrays, and each row's position as an int (walking 10,000
        of them at every put cost tens of milliseconds)."""
        arrays = approximate_size((self.key_of, self.own, self.figures)) + sys.getsizeof(vars(self))
        positions = sys.getsizeof(self.rows) + len(self.rows) * sys.getsizeof(len(self.rows))
        return arrays + positions + approximate_size(self.keys)

    def means(self, weights: Mapping[str, float]) -> FloatArray:
        """Each row's averages with ``weights`` (rows x ``METRICS``), NaN where no figure
        counted: the summary's None."""
        return weighted_means(self.figures, _chosen(self.keys, self.key_of, self.own, weights))


def _chosen(
    keys: list[str], key_of: NDArray[np.intp], own: FloatArray, weights: Mapping[str, float]
) -> FloatArray:
    """Each outcome's weight: the one ``weights`` give its name (``keys[key_of]``), its
    ``own`` where they give none (and 0 for padding, ``key_of`` past the keys)."""
    known = np.array([k in weights for k in keys] + [False])
    given = np.array([weights.get(k, 0.0) for k in keys] + [0.0])
    chosen: FloatArray = np.where(known[key_of], given[key_of], own)
    return chosen


@dataclass(frozen=True, eq=False)
class _Timed:
    """A board's complete rows' timed runs on the originals as arrays, so that their
    throughput per run under new dataset weights is arithmetic (a row's run j: run j of
    each of its originals, averaged with the dataset weights).

    ``runs[r, j, i]``: run ``i`` of row ``r``'s ``j``-th timed original, NaN past the
    row's count of runs (the fewest any of its originals has), for padding, and for a row
    without runs to resample (none timed, or an original timed fewer than twice);
    ``key_of`` and ``own`` as :class:`_Counted`'s.
    """

    rows: list[int]
    keys: list[str]
    key_of: NDArray[np.intp]
    own: FloatArray
    runs: FloatArray

    def __post_init__(self) -> None:
        read_only(self.key_of, self.own, self.runs)  # kept per version, shared

    @classmethod
    def of(cls, rows: list[int], entries: Sequence[ModelEntry]) -> _Timed:
        # Every row's originals in one flat list, read in list comprehensions and written
        # with a few array operations: a loop per row and original cost 30-50 ms of the
        # first request after each new result at 10,000 rows.
        timed = [m.details.timed for m in entries]
        widths = np.array([len(t) for t in timed], dtype=np.intp)
        flat = [original for t in timed for original in t]
        names = [name for name, _, _ in flat]
        keys = sorted(set(names))
        index = {k: i for i, k in enumerate(keys)}
        lengths = np.array([len(r) for _, _, r in flat], dtype=np.intp)
        width, most = int(widths.max(initial=0)), int(lengths.max(initial=0))
        key_of = np.full((len(entries), width), len(keys), dtype=np.intp)
        own = np.zeros((len(entries), width))
        runs = np.full((len(entries), width, most), np.nan)
        if not flat:
            return cls(rows, keys, key_of, own, runs)
        starts = np.cumsum(widths) - widths
        row = np.repeat(np.arange(len(timed)), widths)
        column = np.arange(len(flat)) - starts[row]
        counts = np.zeros(len(timed), dtype=np.intp)  # the fewest runs of a row's originals
        some = widths > 0
        counts[some] = np.minimum.reduceat(lengths, starts[some])
        # A row with an original of fewer than two runs has none.
        kept = np.flatnonzero(counts[row] >= 2)
        at = (row[kept], column[kept])
        key_of[at] = np.array([index[name] for name in names], dtype=np.intp)[kept]
        own[at] = np.array([weight for _, weight, _ in flat], dtype=np.float64)[kept]
        if lengths.min() == most:  # as on most boards: every original timed alike
            runs[at] = np.array([r for _, _, r in flat], dtype=np.float64)[kept]
        else:
            for i in kept.tolist():
                count = int(counts[row[i]])
                runs[row[i], column[i], :count] = flat[i][2][:count]
        return cls(rows, keys, key_of, own, runs)

    def approximate_size(self) -> int:
        arrays = approximate_size((self.key_of, self.own, self.runs))
        return arrays + sys.getsizeof(self.rows) + len(self.rows) * sys.getsizeof(len(self.rows))

    def means(self, weights: Mapping[str, float]) -> FloatArray:
        """``(rows, runs)``: each row's throughput per run averaged over its originals with
        ``weights``, NaN past its runs (all NaN: none to resample)."""
        return weighted_means(self.runs, _chosen(self.keys, self.key_of, self.own, weights))


def timed_runs(
    table: TaskTable, figures: RankedFigures, cache: MemoryCache | None = None
) -> FloatArray:
    """Each of ``figures``' rows' throughput per timed run under its dataset weights,
    ``(rows, runs)``, NaN past a row's runs (all NaN: fewer than two on an original, or
    no weight on any): run j of each original averaged with the figures' dataset weights,
    at a new weighting's cost of arithmetic, with the rows' arrays kept in ``cache`` under
    the table's version. The rule for one row is ``throughput_runs`` in
    ``tests/helpers/entries.py``, which the tests hold this to."""
    if cache is None or not table.version:  # a table built by hand is not cached
        return _Timed.of(figures.rows, figures.entries).means(figures.dataset_weights)

    def made() -> tuple[_Timed, int]:
        timed = _Timed.of(figures.rows, figures.entries)
        return timed, timed.approximate_size()

    # Made once by requests that ask at once (every page of a new version does: at
    # 100,000 rows eight requests each made it, 2.5 s each, where one took 0.3 s).
    found = cache.made_once(
        _timed_key(table), made, within=table.board_key, usable=lambda kept: _fits(kept, figures)
    )
    return found.means(figures.dataset_weights)


def timed_runs_kept(table: TaskTable, figures: RankedFigures, cache: MemoryCache | None) -> bool:
    """Whether :func:`timed_runs` finds the rows' arrays kept (made for another request)."""
    if cache is None or not table.version:
        return False
    kept: _Timed | None = cache.get(_timed_key(table))
    return kept is not None and _fits(kept, figures)


def _timed_key(table: TaskTable) -> tuple[str, str]:
    return ("timed", table.version)


def _fits(kept: _Timed, figures: RankedFigures) -> bool:
    return kept.rows == figures.rows


def own_timed_runs(figures: RankedFigures, rows: Sequence[int]) -> FloatArray:
    """:func:`timed_runs` of ``figures``' rows at ``rows`` alone, in that order (a row's
    runs do not depend on the others': the same figures, with fewer NaN columns)."""
    return _Timed.of([figures.rows[r] for r in rows], [figures.entries[r] for r in rows]).means(
        figures.dataset_weights
    )


@dataclass(frozen=True, eq=False)
class RankedFigures:
    """A table's ranked rows (``entries``, at ``rows`` of its models) with their averages
    under ``dataset_weights`` as arrays: ``values[i, k]`` is metric ``k`` of
    ``scoring.METRICS`` of row ``i``, ``missing[i, k]`` where the row has none (None).

    ``fresh``: the values are newer than the entries' own metrics (re-weighed from the
    kept arrays); :meth:`entry` then gives the entry as :meth:`TaskTable.reweighted` does.
    """

    rows: list[int]
    entries: list[ModelEntry]
    dataset_weights: dict[str, float]
    majority_by_dataset: dict[str, float] | None
    values: FloatArray
    missing: NDArray[np.bool_]
    fresh: bool = False

    def __post_init__(self) -> None:
        read_only(self.values, self.missing)  # kept with the rankings, shared

    @classmethod
    def of(
        cls,
        rows: list[int],
        entries: list[ModelEntry],
        dataset_weights: dict[str, float],
        majority_by_dataset: dict[str, float] | None,
    ) -> RankedFigures:
        """The figures the entries hold."""
        values, missing = figure_arrays_of(entries)
        return cls(rows, entries, dataset_weights, majority_by_dataset, values, missing)

    @property
    def majority_perf(self) -> float | None:
        """The baseline's perf averaged with :attr:`dataset_weights`."""
        return _weighted_mean(self.majority_by_dataset, self.dataset_weights)

    def approximate_size(self) -> int:
        """About how much memory it holds of its own, for the cache's byte budget: its
        arrays and lists. The entries are the board's (``leaderboard.aggregates``, counted
        there)."""
        lists = sys.getsizeof(self.rows) + sys.getsizeof(self.entries)
        return approximate_size((self.values, self.missing)) + lists

    def metrics(self, i: int) -> dict[str, float | None]:
        """Row ``i``'s metrics, as its entry holds them once re-weighed."""
        if not self.fresh:
            return self.entries[i].metrics
        # NaN (no figure counted) is None, as the summary gives it.
        return {
            n: v if v == v else None for n, v in zip(METRICS, self.values[i].tolist(), strict=True)
        }

    def value(self, i: int, name: str) -> float | None:
        """Row ``i``'s metric ``name`` (None: it has none), without building its mapping."""
        if not self.fresh:
            return self.entries[i].metrics.get(name)
        k = METRIC_COLUMN[name]
        return None if self.missing[i, k] else float(self.values[i, k])

    def entry(self, i: int) -> ModelEntry:
        """Row ``i``'s entry with these averages."""
        if not self.fresh:
            return self.entries[i]
        # A shallow copy with new averages: what dataclasses.replace gives, without
        # running __init__ (10,000 times for TaskTable.reweighted).
        entry = object.__new__(ModelEntry)
        entry.__dict__.update(self.entries[i].__dict__)
        entry.metrics = self.metrics(i)
        entry.packed = None  # its own metrics: packed anew where read
        return entry


def _own_figures(table: TaskTable, cache: MemoryCache | None) -> RankedFigures:
    """The :class:`RankedFigures` of the table's own averages, kept in ``cache`` under its
    version."""
    kept = cache if table.version else None  # a table built by hand is not cached
    cache_key = ("own-figures", table.version)
    found: RankedFigures | None = kept.get(cache_key) if kept is not None else None
    if found is None:
        rows = [r for r, m in enumerate(table.models) if m.complete]
        entries = [table.models[r] for r in rows]
        found = RankedFigures.of(rows, entries, table.dataset_weights, table.majority_by_dataset)
        if kept is not None:
            kept.put(cache_key, found, size=found.approximate_size(), within=table.board_key)
    return found


def _counted(table: TaskTable, cache: MemoryCache) -> _Counted | None:
    """The table's :class:`_Counted`, kept in ``cache`` under its version."""
    cache_key = ("counted", table.version)
    cached = cache.get(cache_key, MISSING)
    if cached is not MISSING:
        return cached  # type: ignore[no-any-return]
    rows = [r for r, m in enumerate(table.models) if m.complete]
    details = [table.models[r].details for r in rows]
    found: _Counted | None = None
    if all(d.counted_names is not None for d in details):
        # Rows grouped by their outcomes' names (most boards: one group), each group's
        # packed figures joined and read at once: a loop per row took 80 ms of the first
        # request for new dataset weights after each new result at 10,000 rows.
        groups: dict[tuple[str, ...], list[int]] = {}
        for i, d in enumerate(details):
            groups.setdefault(d.counted_names or (), []).append(i)
        keys = sorted({k for names in groups for k in names})
        index = {k: i for i, k in enumerate(keys)}
        width = max(map(len, groups), default=0)
        key_of = np.full((len(rows), width), len(keys), dtype=np.intp)
        own = np.zeros((len(rows), width))
        figures = np.full((len(rows), width, len(METRICS)), np.nan)
        for names, members in groups.items():
            at, n = np.array(members, dtype=np.intp), len(names)
            if not n:  # no outcome counts: its padding stays
                continue
            key_of[at, :n] = [index[k] for k in names]
            grouped = [details[i] for i in members]
            own[at, :n] = np.array([d.counted_weights for d in grouped]).reshape(-1, n)
            figures[at, :n] = counted_arrays(grouped)
        found = _Counted(rows, keys, key_of, own, figures)
    cache.put(cache_key, found, size=found.approximate_size() if found is not None else 0)
    return found


def _majority_by_dataset(
    ctx: Context, task: TaskSpec, originals: list[Dataset]
) -> tuple[str, dict[str, float]] | None:
    if task.output.type != "multiclass" or not originals:
        return None
    cache_key = ("majority", task.perf_metric, tuple((d.name, d.sha256) for d in originals))
    cached = ctx.cache.get(cache_key, MISSING)  # one call: None (no majority) is cached too
    if cached is not MISSING:
        return cached  # type: ignore[no-any-return]
    golds = {d.name: [str(task.gold(e)) for e in read_examples(ctx, d)] for d in originals}
    counts = Counter(label for labels in golds.values() for label in labels)
    # Ties go to the label listed first in the task spec.
    majority = max(task.output.labels, key=lambda label: counts[label])
    perf = {
        name: compute(task.perf_metric, [majority] * len(labels), labels, labels=task.output.labels)
        for name, labels in golds.items()
    }
    ctx.cache.put(cache_key, (majority, perf))
    return majority, perf


def load_table(ctx: Context, task_id: str) -> TaskTable:
    """The task's models with their averaged metrics, ready for :mod:`leaderboard.ranking`."""
    spec = get_task(ctx, task_id)
    datasets = list_datasets(ctx, task_id)
    withheld = withheld_dataset_ids(ctx, task_id, datasets)
    scoring = [d for d in scoring_datasets(datasets) if d.id not in withheld]
    with ctx.db.session() as session:
        task = session.get(Task, task_id)
        assert task is not None
        default_weights = {k: float(v) for k, v in task.default_weights.items()}
        owner_id = task.owner_id
    board = load_board(ctx, task_id, datasets=datasets, scoring=scoring)
    originals = [d for d in scoring if d.perturbation is None]
    majority = _majority_by_dataset(ctx, spec, originals)
    phase = shown_phase(ctx, task_id)
    withheld_sets = sum(1 for d in datasets if d.id in withheld and d.perturbation is None)
    return TaskTable(
        task=spec,
        default_weights=default_weights,
        owner_id=owner_id,
        datasets=datasets,
        scoring=scoring,
        models=board.models,
        majority_by_dataset=majority[1] if majority else None,
        majority_label=majority[0] if majority else None,
        dataset_weights={d.name: float(d.weight) for d in originals},
        phase=phase,
        withheld_sets=withheld_sets,
        # The phase's words too: a phase revealed onto the board counts the same sets as
        # before it opened, but the board says so.
        version=source_digest(
            board.version, [sorted(default_weights.items()), owner_id, phase, withheld_sets]
        ),
        board_key=board.cache_key,
    )
