"""Percentile intervals over resamples: the one rule for where a bootstrap interval ends.

Each column's ends are numpy's default ("linear", Hyndman and Fan's 7th) quantiles
``np.quantile(samples, [tail, 1 - tail], axis=0)`` to the last bit (a test holds them to
it), from one sort per column: numpy partitions along the resamples' axis, across the
columns' memory, which at 1,000 resamples of 10,000 models costs 170 ms an interval where
copying the columns out and sorting each costs 70 ms (a new dataset weighting takes two).

>>> import numpy as np
>>> samples = np.arange(1.0, 101.0)[:, None]  # one column: 1, 2, ..., 100
>>> ends(samples, level=0.9).ravel().tolist()
[5.95, 95.05]
"""

from __future__ import annotations

import numpy as np

from scoring.parallel import over_rows
from scoring.registry import FloatArray

__all__ = ["ends"]


def ends(samples: FloatArray, *, level: float) -> FloatArray:
    """``(2, columns)``: the low and high ends of each column's ``level`` interval over
    the rows of ``samples`` ``(resamples, columns)``; NaN where a column holds NaN. The
    columns are split over the cores (:func:`scoring.parallel.over_rows`)."""
    n = samples.shape[0]
    tail = (1 - level) / 2
    q = np.array([tail, 1 - tail])
    virtual = (n - 1) * q  # where numpy's linear method looks, as it computes it
    before = np.floor(virtual)
    after = before + 1
    above, below = virtual >= n - 1, virtual < 0
    before[above], after[above] = -1, -1
    before[below], after[below] = 0, 0
    gamma = virtual - before
    low_at, high_at = before.astype(np.intp), after.astype(np.intp)
    t = gamma[:, None]
    found: FloatArray = np.empty((2, samples.shape[1]))

    def part(columns: slice) -> None:
        ordered = np.ascontiguousarray(samples[:, columns].T)  # each column's resamples
        ordered.sort(axis=-1)  # NaN sorts last
        a, b = ordered[:, low_at].T, ordered[:, high_at].T  # (2, columns)
        mine = found[:, columns]
        with np.errstate(invalid="ignore"):  # inf - inf: NaN, as numpy gives
            difference = b - a
            np.add(a, difference * t, out=mine)
            np.subtract(b, difference * (1 - t), out=mine, where=np.broadcast_to(t >= 0.5, a.shape))
        mine[:, np.isnan(ordered[:, -1])] = np.nan

    over_rows(samples.shape[1], part, cells_per_row=n)
    return found
