"""One weighting of a bootstrap's resamples: the board's order, who leads, and each row's
rank interval, ranking only the models that can pass that row.

:class:`~scoring.bootstrap.Resamples` hold every resample's goods and AMRS, which do not
depend on the metric weights; a weighting turns them into resampled Dynascores and ranks
each resample (the baseline floor first, then the Dynascore and its tie-breaks, as
:meth:`scoring.NormalisedTable.rank`). Ranking every resample of 10,000 models is ten
million sorted cells, half a second here, while a page shows a hundred rows. So
:func:`weigh` makes one pass that keeps what every row needs at once and each model's
lowest and highest resampled Dynascore, and :meth:`Weighed.rows` ranks, for the rows
asked, only the models whose range meets theirs: a model whose lowest score is above a
row's highest is ahead of it in every resample (counted, not ranked), one whose highest
is below the row's lowest never is. The ranks are the ones a full ranking gives: the
counted models are strictly ahead or behind in every resample, and the order among the
ranked ones is the same total order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from scoring.dynascore import default_weights, scores_batch
from scoring.floor import rank_intervals
from scoring.registry import FloatArray

if TYPE_CHECKING:
    from collections.abc import Mapping

    from scoring.bootstrap import Resamples

__all__ = ["RowIntervals", "Weighed", "weigh"]

_STEP_CELLS = 250_000  # resampled scores made at once: their temporaries fit a CPU cache


@dataclass(frozen=True, eq=False)
class RowIntervals:
    """Some rows' figures that need the ranked resamples, aligned with the positions
    asked of :meth:`Weighed.rows`."""

    #: [best, worst] rank at the level, always holding the observed rank.
    ranks: list[tuple[int, int]]
    #: ``(2, rows)``: the low and high ends of the Dynascore minus the leader's (paired).
    gaps: FloatArray
    #: ``(2, rows)``: the low and high ends of the Dynascore.
    scores: FloatArray


@dataclass(frozen=True, eq=False)
class Weighed:
    """One weighting of some :class:`~scoring.bootstrap.Resamples` (:func:`weigh`): the
    board's order on the full data, how often each model leads, and the bounds of each
    model's resampled Dynascore, from which :meth:`rows` ranks what a page needs.

    It holds none of the resamples' large arrays: :meth:`rows` is given them again.
    """

    #: The resamples' models (name order): every array here is aligned with them.
    models: tuple[str, ...]
    weights: FloatArray
    n_resamples: int
    level: float
    #: The Dynascore on the full data, and the order it gives (positions, best first:
    #: the floor first, then the Dynascore and its tie-breaks) with each model's rank.
    point: FloatArray
    observed: NDArray[np.intp]
    observed_rank: NDArray[np.intp]
    #: How many resamples each model leads.
    first_counts: NDArray[np.intp]
    #: Each model's lowest and highest resampled Dynascore (NaN where one is NaN).
    low: FloatArray
    high: FloatArray
    #: The leader's resampled Dynascore, ``(n_resamples,)``: gaps are paired with it.
    leader_samples: FloatArray

    @property
    def leader(self) -> int:
        return int(self.observed[0])

    def fits(self, resamples: Resamples) -> bool:
        """Whether ``resamples`` are those this was weighed from (by their models and
        size; that they are the same draws is the caller's to know)."""
        return (
            resamples.normalised.models == self.models
            and resamples.n_resamples == self.n_resamples
            and resamples.level == self.level
        )

    def rows(self, resamples: Resamples, positions: Sequence[int]) -> RowIntervals:
        """The rank intervals, gaps to the leader and Dynascore intervals of the models at
        ``positions``, ranking in each resample only the models whose resampled scores
        can meet theirs (module docstring)."""
        if not self.fits(resamples):
            raise ValueError("These resamples are not the ones this weighting was made from")
        asked = np.asarray(positions, dtype=np.intp)
        ranks = np.empty((self.n_resamples, len(asked)), dtype=np.intp)
        samples = np.empty((self.n_resamples, len(asked)))
        flagged = resamples.flagged.astype(bool)
        ahead = 0  # the floor: every model that clears the baseline before any that does not
        for group in (~flagged, flagged):
            mine = group[asked]
            members = np.flatnonzero(group)
            if mine.any():
                rows = asked[mine]
                ranked, above = self._contenders(members, rows)
                scores = _scores(resamples, self.weights, ranked)
                at = np.searchsorted(ranked, rows)
                within = _counted_ranks(scores, at) if len(at) * 8 < len(ranked) else None
                if within is None:  # many rows, or ties: rank every contender
                    within = _ranks(resamples, ranked, scores)[:, at]
                ranks[:, mine] = ahead + above + within
                samples[:, mine] = scores[:, at]
            ahead += len(members)
        tail = (1 - self.level) / 2
        gaps = samples - self.leader_samples[:, None]
        return RowIntervals(
            ranks=rank_intervals(ranks, observed=self.observed_rank[asked], level=self.level),
            gaps=np.quantile(gaps, [tail, 1 - tail], axis=0, overwrite_input=True),
            scores=np.quantile(samples, [tail, 1 - tail], axis=0, overwrite_input=True),
        )

    def _contenders(
        self, members: NDArray[np.intp], rows: NDArray[np.intp]
    ) -> tuple[NDArray[np.intp], int]:
        """Of one floor group's ``members``, those to rank for ``rows`` (theirs among them,
        in position order), and how many others are ahead of every row in every resample."""
        low, high = self.low[members], self.high[members]
        if np.isnan(low).any() or np.isnan(high).any():
            return members, 0  # NaN orders by the tie-breaks alone: rank them all
        floor, ceiling = self.low[rows].min(), self.high[rows].max()
        meets = (high >= floor) & (low <= ceiling)
        return members[meets], int(np.count_nonzero(low > ceiling))


def weigh(resamples: Resamples, weights: Mapping[str, float] | None = None) -> Weighed:
    """Weigh ``resamples`` with metric ``weights`` (default:
    :func:`scoring.default_weights`): the order on the full data, how often each model
    leads, and each model's resampled Dynascore bounds, in one pass over the resamples."""
    normalised = resamples.normalised
    if weights is None:
        weights = default_weights(normalised.metrics, perf=normalised.perf)
    w = normalised.weight_vector(weights)
    count = len(normalised.models)
    arange = np.arange(count)
    flagged = resamples.flagged
    # The first of each resample is among the models that clear the baseline (all, if
    # none does).
    top = flagged == 0 if not flagged.all() else np.ones(count, dtype=bool)
    low, high, first = _sweep(resamples, w, top)
    point = normalised.scores(weights)
    observed = np.lexsort([arange, *normalised.tiebreak_keys()[1:], -point, flagged])
    observed_rank = np.empty(count, dtype=np.intp)
    observed_rank[observed] = arange + 1
    leader = int(observed[0])
    if first is None:
        first = _firsts(resamples, w, np.flatnonzero(top), low, high)
    return Weighed(
        models=normalised.models,
        weights=w,
        n_resamples=resamples.n_resamples,
        level=resamples.level,
        point=point,
        observed=observed,
        observed_rank=observed_rank,
        first_counts=np.bincount(first, minlength=count),
        low=low,
        high=high,
        leader_samples=_scores(resamples, w, np.array([leader]))[:, 0],
    )


def _sweep(
    resamples: Resamples, w: FloatArray, top: NDArray[np.bool_]
) -> tuple[FloatArray, FloatArray, NDArray[np.intp] | None]:
    """One pass over every resample's Dynascores: each model's lowest and highest, and
    the first of each resample among the ``top`` models (those that clear the baseline).

    Summed here as one matrix product for the metrics no resample changes (BLAS), where
    :func:`scoring.scores_batch` divides term by term, so the last bits may differ: the
    bounds are widened by a margin far above any rounding (contenders are then a
    superset, and ranked on exact scores), and a first is given only where it leads the
    next by more than twice the margin (None where any does not: a near tie, decided on
    exact scores by the caller). NaN bounds where a good or an AMRS is not finite (then
    every model of a group is ranked, :meth:`Weighed._contenders`).
    """
    count = len(resamples.normalised.models)
    amrs = resamples.amrs
    usable = np.isfinite(amrs) & (amrs > 0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # weight / AMRS per resample and metric; 0 where the metric adds nothing
        factors = np.where(usable & (w != 0), w / np.where(usable, amrs, 1.0), 0.0)
    if not (np.isfinite(factors).all() and resamples.finite):
        nan = np.full(count, np.nan)
        return nan, nan.copy(), None
    # The largest magnitude a sum of terms reaches bounds its rounding.
    margin = 1e-9 * float((np.abs(factors) @ resamples.magnitudes).max(initial=0.0)) + 1e-300
    varying = [k for k, c in enumerate(resamples.columns) if c.ndim == 2]
    fixed = [k for k, c in enumerate(resamples.columns) if c.ndim == 1]
    goods = np.stack([resamples.columns[k] for k in fixed], axis=-1) if fixed else None
    low, high = np.full(count, np.inf), np.full(count, -np.inf)
    first = np.empty(resamples.n_resamples, dtype=np.intp)
    sure = True
    others = None if top.all() else ~top
    step = max(1, _STEP_CELLS // max(1, count))
    for start in range(0, resamples.n_resamples, step):
        stop = min(start + step, resamples.n_resamples)
        total = (
            factors[start:stop, fixed] @ goods.T
            if goods is not None
            else np.zeros((stop - start, count))
        )
        for k in varying:
            total += factors[start:stop, k, None] * resamples.columns[k][start:stop]
        np.minimum(low, total.min(axis=0), out=low)
        np.maximum(high, total.max(axis=0), out=high)
        if others is not None:
            total[:, others] = -np.inf
        best = total.argmax(axis=-1)
        leading = total[np.arange(stop - start), best]
        total[np.arange(stop - start), best] = -np.inf
        sure = sure and bool(np.all(leading - total.max(axis=-1) > 2 * margin))
        first[start:stop] = best
    return low - margin, high + margin, first if sure else None


def _firsts(
    resamples: Resamples,
    w: FloatArray,
    top: NDArray[np.intp],
    low: FloatArray,
    high: FloatArray,
) -> NDArray[np.intp]:
    """The first of each resample among the ``top`` models, on exact scores: of those
    whose highest score reaches the best lowest one, ties by the tie-breaks."""
    if np.isnan(low[top]).any() or np.isnan(high[top]).any():
        candidates = top
    else:
        candidates = top[high[top] >= low[top].max()]
    scores = _scores(resamples, w, candidates)
    best = np.argmax(scores, axis=-1)
    if np.isnan(scores).any() or np.any(
        np.count_nonzero(scores == scores[np.arange(len(scores)), best, None], axis=-1) > 1
    ):  # a tie for first: the tie-breaks decide
        best = _orders_of(resamples, candidates, scores)[:, 0]
    found: NDArray[np.intp] = candidates[best]
    return found


def _chunks(resamples: Resamples, w: FloatArray, columns: Any) -> Any:
    """The resampled Dynascores of ``columns`` (an index array or a slice of the
    models), some resamples at a time: ``(resamples, columns)`` blocks."""
    # np.take, not fancy indexing: a third of the time for 3,000 of 10,000 columns.
    picked = [
        c[..., columns] if isinstance(columns, slice) else np.take(c, columns, axis=-1)
        for c in resamples.columns
    ]
    width = picked[0].shape[-1] if picked else 0
    step = max(1, _STEP_CELLS // max(1, width * len(picked)))
    for start in range(0, resamples.n_resamples, step):
        stop = start + step
        yield scores_batch(
            [c if c.ndim == 1 else c[start:stop] for c in picked], resamples.amrs[start:stop], w
        )


def _scores(resamples: Resamples, w: FloatArray, columns: NDArray[np.intp]) -> FloatArray:
    """``(n_resamples, len(columns))``: the resampled Dynascores of the models at
    ``columns`` (all of them: no copy of the resamples' columns)."""
    whole = len(columns) == len(resamples.normalised.models)
    found = np.empty((resamples.n_resamples, len(columns)))

    start = 0
    for block in _chunks(resamples, w, slice(None) if whole else columns):
        found[start : start + len(block)] = block
        start += len(block)
    return found


def _orders_of(
    resamples: Resamples, columns: NDArray[np.intp], scores: FloatArray
) -> NDArray[np.intp]:
    """Each resample's order of the models at ``columns`` (one floor group, positions
    into ``columns``): by Dynascore, ties by the board's tie-breaks."""

    def keys() -> list[NDArray[Any]]:
        # Ties are rare: only then every resample's goods of these models at once.
        picked = [c[columns] if c.ndim == 1 else c[:, columns] for c in resamples.columns]
        goods = _goods(picked, resamples.n_resamples)
        tiebreaks = replace(resamples.normalised, goods=goods).tiebreak_keys()[1:]
        return [np.broadcast_to(columns, scores.shape), *tiebreaks, -scores]

    return _orders(scores, keys)


def _ranks(resamples: Resamples, columns: NDArray[np.intp], scores: FloatArray) -> NDArray[np.intp]:
    """``(n_resamples, len(columns))``: each model's rank among ``columns`` (1 is best)."""
    orders = _orders_of(resamples, columns, scores)
    ranks = np.empty_like(orders)
    np.put_along_axis(
        ranks, orders, np.broadcast_to(np.arange(1, len(columns) + 1), orders.shape), axis=-1
    )
    return ranks


def _counted_ranks(scores: FloatArray, at: NDArray[np.intp]) -> NDArray[np.intp] | None:
    """``(n_resamples, len(at))``: the rank among ``scores``' models of those at ``at``,
    by counting in each resample the scores above theirs (a few rows among thousands of
    contenders: cheaper than sorting them all with their tie-breaks). None where two
    scores of a resample tie with one of these rows' (or one is NaN): the tie-breaks
    decide then, not the count."""
    if np.isnan(scores).any():
        return None
    count, width = scores.shape
    # Every resample's scores sorted by one call, then each row's score looked up in its
    # resample: 4.5x placing every score among the sorted rows' (1,000 x 2,950, 100 rows).
    ordered = np.sort(scores, axis=-1)
    rows = scores[:, at]
    after = np.empty(rows.shape, dtype=np.intp)  # how many scores are at most each row's
    for r in range(count):
        after[r] = np.searchsorted(ordered[r], rows[r], side="right")
    # A row's own score is the last at most it; one more equal to it before is a tie.
    before = np.take_along_axis(ordered, np.maximum(after - 2, 0), axis=-1)
    if np.any((after >= 2) & (before == rows)):
        return None
    found: NDArray[np.intp] = width - after + 1
    return found


def _orders(scores: FloatArray, keys: Callable[[], list[NDArray[Any]]]) -> NDArray[np.intp]:
    """Each resample's order of one floor group's models, what
    ``np.lexsort(keys(), axis=-1)`` gives (the Dynascore, then its tie-breaks): where no
    two scores of a resample tie, the score alone decides, so the sort per tie-break key
    (most of a bootstrap's time) is done only where they do."""
    # Any sort: where two scores tie, the keys decide below.
    order = np.argsort(-scores, axis=-1)
    ranked = np.take_along_axis(scores, order, axis=-1)
    if np.isnan(scores).any() or np.any(ranked[..., 1:] == ranked[..., :-1]):
        found: NDArray[np.intp] = np.lexsort(keys(), axis=-1)
        return found
    return order


def _goods(columns: Sequence[FloatArray], n_resamples: int) -> FloatArray:
    """``(n_resamples, models, metrics)``: every resample's goods, from their columns."""
    return np.stack([np.broadcast_to(c, (n_resamples, c.shape[-1])) for c in columns], axis=-1)
