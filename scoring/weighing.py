"""One weighting of a bootstrap's resamples: the board's order, who leads, and each row's
rank interval, ranking only the models that can pass that row.

:class:`~scoring.bootstrap.Resamples` hold every resample's goods and AMRS, which do not
depend on the metric weights; a weighting turns them into resampled Dynascores and ranks
each resample (the baseline floor first, then the Dynascore and its tie-breaks, as
:meth:`scoring.NormalisedTable.rank`). Ranking every resample of 10,000 models is ten
million sorted cells, half a second here, while a page shows a hundred rows. So
:func:`weigh` bounds each model's resampled Dynascores from below and above (its terms'
extremes over the resamples, kept with them, weighted and summed: no pass over the
resamples), and :meth:`Weighed.rows` ranks, for the rows asked, only the models whose
range meets theirs: a model whose lowest score is above a row's highest is ahead of it in
every resample (counted, not ranked), one whose highest is below the row's lowest never
is. The ranks are the ones a full ranking gives: the counted models are strictly ahead or
behind in every resample, and the order among the ranked ones is the same total order.
Who leads each resample is found the same way, among the models that can reach the top.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from scoring import percentiles
from scoring.dynascore import default_weights, scores_batch
from scoring.floor import rank_intervals
from scoring.parallel import over_rows
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
    #: How many resamples each model (all of them, in name order) leads, where asked.
    first_counts: NDArray[np.intp] | None = None


@dataclass(frozen=True, eq=False)
class Weighed:
    """One weighting of some :class:`~scoring.bootstrap.Resamples` (:func:`weigh`): the
    board's order on the full data and the bounds of each model's resampled Dynascore,
    from which :meth:`rows` ranks what a page needs (and how often each model leads).

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

    def rows(
        self, resamples: Resamples, positions: Sequence[int], *, firsts: bool = False
    ) -> RowIntervals:
        """The rank intervals, gaps to the leader and Dynascore intervals of the models at
        ``positions``, ranking in each resample only the models whose resampled scores
        can meet theirs (module docstring); with ``firsts``, how often each model leads
        too, from the same exact scores where the rows' contenders hold every model that
        can lead (a board's first page: at 10,000 models that halves its cost)."""
        if not self.fits(resamples):
            raise ValueError("These resamples are not the ones this weighting was made from")
        asked = np.asarray(positions, dtype=np.intp)
        ranks = np.empty((self.n_resamples, len(asked)), dtype=np.intp)
        samples = np.empty((self.n_resamples, len(asked)))
        flagged = resamples.flagged.astype(bool)
        # The first of each resample is among the models that clear the baseline (all, if
        # none does).
        groups = (~flagged, flagged)
        top_group = int(flagged.all())
        top = np.flatnonzero(groups[top_group])
        first = None
        ahead = 0  # the floor: every model that clears the baseline before any that does not
        for index, group in enumerate(groups):
            mine = group[asked]
            members = np.flatnonzero(group)
            if mine.any():
                rows = asked[mine]
                ranked, above = self._contenders(members, rows)
                scores = _scores(resamples, self.weights, ranked)
                if firsts and index == top_group:
                    first = self._firsts(resamples, top, scored=(ranked, scores))
                at = np.searchsorted(ranked, rows)
                within = _counted_ranks(scores, at) if len(at) * 8 < len(ranked) else None
                if within is None:  # many rows, or ties: rank every contender
                    within = _ranks(resamples, ranked, scores)[:, at]
                ranks[:, mine] = ahead + above + within
                samples[:, mine] = scores[:, at]
            ahead += len(members)
        if firsts and first is None:
            first = self._firsts(resamples, top)
        gaps = samples - self.leader_samples[:, None]
        return RowIntervals(
            ranks=rank_intervals(ranks, observed=self.observed_rank[asked], level=self.level),
            gaps=percentiles.ends(gaps, level=self.level),
            scores=percentiles.ends(samples, level=self.level),
            first_counts=None if first is None else np.bincount(first, minlength=len(self.models)),
        )

    def _firsts(
        self,
        resamples: Resamples,
        top: NDArray[np.intp],
        scored: tuple[NDArray[np.intp], FloatArray] | None = None,
    ) -> NDArray[np.intp]:
        """The first of each resample among the ``top`` models, on exact scores: of those
        whose highest score reaches the best lowest one, ties by the tie-breaks. Where
        ``scored`` (models in position order, and their scores) holds them all, its scores
        are searched as they are: whoever else it holds is below one of them in every
        resample, so never first nor tied (no copy of the candidates' columns)."""
        low, high = self.low[top], self.high[top]
        candidates = top if np.isnan(low).any() or np.isnan(high).any() else top[high >= low.max()]
        if scored is not None and np.isin(candidates, scored[0]).all():
            candidates, own = scored
        else:
            own = _scores(resamples, self.weights, candidates)
        best = np.empty(len(own), dtype=np.intp)
        tied: list[bool] = []

        def lead(part: slice) -> None:
            mine = own[part]
            best[part] = np.argmax(mine, axis=-1)
            tops = mine[np.arange(len(mine)), best[part], None]
            many = np.count_nonzero(mine == tops, axis=-1) > 1
            tied.append(bool(np.isnan(mine).any() or many.any()))

        over_rows(len(own), lead, cells_per_row=own.shape[-1])
        if any(tied):  # a tie for first: the tie-breaks decide, among the candidates
            return candidates[_orders_of(resamples, candidates, own)[:, 0]]
        found: NDArray[np.intp] = candidates[best]
        return found

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
    :func:`scoring.default_weights`): the order on the full data and each model's
    resampled Dynascore bounds (:meth:`Weighed.rows` ranks the rows and finds who leads)."""
    normalised = resamples.normalised
    if weights is None:
        weights = default_weights(normalised.metrics, perf=normalised.perf)
    w = normalised.weight_vector(weights)
    count = len(normalised.models)
    arange = np.arange(count)
    flagged = resamples.flagged
    low, high = _bounds(resamples, w)
    point = normalised.scores(weights)
    observed = np.lexsort([arange, *normalised.tiebreak_keys()[1:], -point, flagged])
    observed_rank = np.empty(count, dtype=np.intp)
    observed_rank[observed] = arange + 1
    leader = int(observed[0])
    return Weighed(
        models=normalised.models,
        weights=w,
        n_resamples=resamples.n_resamples,
        level=resamples.level,
        point=point,
        observed=observed,
        observed_rank=observed_rank,
        low=low,
        high=high,
        leader_samples=_scores(resamples, w, np.array([leader]))[:, 0],
    )


def _bounds(resamples: Resamples, w: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Each model's lowest and highest resampled Dynascore under metric weights ``w``, or
    below and above them: its terms' extremes (:attr:`Resamples.term_bounds`) weighted
    and summed, widened by a margin far above the rounding of any sum of those terms (so
    the exact scores, summed in another order, lie within). NaN where a term is not
    finite (then every model of a group is ranked, :meth:`Weighed._contenders`)."""
    terms = resamples.term_bounds
    used = w != 0  # a term of weight 0 adds nothing, whatever its value (scores_batch)
    # (2, metrics, models); no weight is negative (scoring.normalised_weights), so the
    # lowest terms make the lowest sum.
    weighted = np.where(used[:, None], w[:, None] * terms, 0.0)
    low, high = weighted.sum(axis=1)
    margin = 1e-9 * float(np.abs(weighted).sum(axis=1).max(initial=0.0)) + 1e-300
    return low - margin, high + margin


def _chunks(resamples: Resamples, w: FloatArray, columns: Any, rows: slice) -> Any:
    """The resampled Dynascores of ``columns`` (an index array or a slice of the
    models) in the resamples at ``rows``, some at a time: ``(resamples, columns)`` blocks."""

    def pick(column: FloatArray) -> FloatArray:
        # np.take, not fancy indexing: a third of the time for 3,000 of 10,000 columns.
        return column[..., columns] if isinstance(columns, slice) else column.take(columns, -1)

    fixed = {k: pick(c) for k, c in enumerate(resamples.columns) if c.ndim == 1}
    everyone = len(resamples.normalised.models)
    width = len(range(everyone)[columns]) if isinstance(columns, slice) else len(columns)
    step = max(1, _STEP_CELLS // max(1, width * len(resamples.columns)))
    for start in range(rows.start, rows.stop, step):
        stop = min(start + step, rows.stop)
        # Each block's columns picked as it is scored: they stay in a CPU cache.
        picked = [
            fixed[k] if k in fixed else pick(column[start:stop])
            for k, column in enumerate(resamples.columns)
        ]
        yield scores_batch(picked, resamples.amrs[start:stop], w)


def _scores(resamples: Resamples, w: FloatArray, columns: NDArray[np.intp]) -> FloatArray:
    """``(n_resamples, len(columns))``: the resampled Dynascores of the models at
    ``columns`` (all of them: no copy of the resamples' columns), the resamples split
    over the cores (:func:`scoring.parallel.over_rows`)."""
    whole = len(columns) == len(resamples.normalised.models)
    found = np.empty((resamples.n_resamples, len(columns)))
    picked = slice(None) if whole else columns

    def fill(rows: slice) -> None:
        start = rows.start
        for block in _chunks(resamples, w, picked, rows):
            found[start : start + len(block)] = block
            start += len(block)

    over_rows(len(found), fill, cells_per_row=len(columns) * len(resamples.columns))
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
    decide then, not the count.

    Counted in single precision, half the sort of double here (1,000 x 3,000 scores: 30
    against 59 ms), and exact all the same: rounding keeps order (``a <= b`` gives
    ``single(a) <= single(b)``), so a score whose single is below a row's is below it and
    one whose single is above is above; only where another score's single equals the
    row's are that row's scores compared in double."""
    width = scores.shape[-1]
    ordered = np.empty(scores.shape, dtype=np.float32)
    rows = scores[:, at]
    singles = rows.astype(np.float32)
    after = np.empty(singles.shape, dtype=np.intp)

    def count(part: slice) -> None:
        ordered[part] = scores[part]
        ordered[part].sort(axis=-1)
        after[part] = _at_most(ordered[part], singles[part])

    over_rows(len(scores), count, cells_per_row=width)
    if np.isnan(ordered[:, -1]).any():  # NaN sorts last
        return None
    unsure = np.nonzero(_shared(ordered, after, singles))
    if len(unsure[0]) * _UNSURE_SHARE > after.size:  # many near-ties: count in double
        return _counted_in_double(scores, rows)
    for start in range(0, len(unsure[0]), _UNSURE_AT_ONCE):
        r, j = (part[start : start + _UNSURE_AT_ONCE] for part in unsure)
        theirs, mine = scores[r], rows[r, j][:, None]
        if np.any(np.count_nonzero(theirs == mine, axis=-1) > 1):
            return None
        after[r, j] = np.count_nonzero(theirs <= mine, axis=-1)
    found: NDArray[np.intp] = width - after + 1
    return found


#: Beyond one unsure row in this many, the whole count is made in double.
_UNSURE_SHARE = 20
#: Unsure rows compared at once (each copies its resample's scores).
_UNSURE_AT_ONCE = 256


def _at_most(ordered: NDArray[Any], rows: NDArray[Any]) -> NDArray[np.intp]:
    """How many of each resample's ``ordered`` scores are at most each of its ``rows``'
    (the array's own method per resample: no wrapper per call)."""
    return np.array([o.searchsorted(r, side="right") for o, r in zip(ordered, rows, strict=True)])


def _shared(
    ordered: NDArray[Any], after: NDArray[np.intp], rows: NDArray[Any]
) -> NDArray[np.bool_]:
    """Where another of ``ordered``'s scores equals a row's (``after``: :func:`_at_most`):
    a row's own score is the last at most it, so one more equal to it comes just before."""
    before = np.take_along_axis(ordered, np.maximum(after - 2, 0), axis=-1)
    found: NDArray[np.bool_] = (after >= 2) & (before == rows)
    return found


def _counted_in_double(scores: FloatArray, rows: FloatArray) -> NDArray[np.intp] | None:
    """:func:`_counted_ranks` for ``rows`` (``scores``' own), every score sorted in double."""
    ordered = np.sort(scores, axis=-1)
    after = _at_most(ordered, rows)
    if _shared(ordered, after, rows).any():
        return None
    found: NDArray[np.intp] = scores.shape[-1] - after + 1
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
