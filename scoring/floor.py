"""Evalboard's rules on top of the Dynascore: the baseline floor and rank intervals.

The Dynascore alone lets a model that always answers the same label rank high: its
predictions never change under perturbation (fairness and robustness 100) and it is fast.
So a model whose perf interval does not clear the majority-class baseline's perf is
flagged ``not_above_baseline`` and ranked after every model that does clear it; inside
each group the Dynascore decides, as before. The Dynascore itself is untouched.

>>> not_above_baseline(high=33.4, baseline=33.4)
True
>>> floor_order(["const", "bow", "vader"], flagged={"const"})
['bow', 'vader', 'const']
>>> import numpy as np
>>> rank_interval(np.array([1, 1, 2, 1, 3]), observed=1, level=0.95)
(1, 3)
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "BASELINE_TOLERANCE",
    "floor_indices",
    "floor_order",
    "not_above_baseline",
    "not_above_baselines",
    "rank_interval",
    "rank_intervals",
]

BASELINE_TOLERANCE = 1e-9
"""Perf (x100) within this of the baseline's does not clear it: rounding is not skill."""


def not_above_baseline(*, high: float, baseline: float | None) -> bool:
    """Whether a perf interval's upper bound ``high`` fails to clear ``baseline``.

    With no baseline (a QA task, say) nothing is flagged. Without an interval, pass the
    point estimate as ``high``.
    """
    return bool(not_above_baselines(np.asarray(high), baseline=baseline))


def not_above_baselines(highs: NDArray[np.float64], *, baseline: float | None) -> NDArray[np.bool_]:
    """:func:`not_above_baseline` of each upper bound in ``highs``."""
    if baseline is None:
        return np.zeros(highs.shape, dtype=bool)
    flagged: NDArray[np.bool_] = highs <= baseline + BASELINE_TOLERANCE
    return flagged


def floor_indices(order: NDArray[np.intp], flagged: NDArray[np.bool_]) -> NDArray[np.intp]:
    """:func:`floor_order` of positions: ``order`` (best first) with every position that
    ``flagged`` marks moved after the others."""
    moved = flagged[order]
    return np.concatenate([order[~moved], order[moved]])


def floor_order(order: Sequence[str], flagged: Collection[str]) -> list[str]:
    """``order`` (best first) with every flagged model moved after every other one,
    each group keeping its own order (the rule is :func:`floor_indices`')."""
    names = list(order)
    moved = np.fromiter((m in flagged for m in names), dtype=bool, count=len(names))
    return [names[i] for i in floor_indices(np.arange(len(names)), moved)]


def rank_interval(samples: NDArray[np.integer], *, observed: int, level: float) -> tuple[int, int]:
    """[best, worst] rank over the resamples' ranks (1 is best), at ``level`` coverage.

    The percentile interval of the resampled ranks (lower and upper ranks taken as whole
    ranks), widened where needed to include the ``observed`` rank: the rank shown in the
    table must lie in the interval shown beside it.
    """
    (found,) = rank_intervals(samples[:, None], observed=np.array([observed]), level=level)
    return found


def rank_intervals(
    samples: NDArray[np.integer], *, observed: NDArray[np.integer], level: float
) -> list[tuple[int, int]]:
    """:func:`rank_interval` of every column of ``(resamples, models)`` ranks at once."""
    tail = (1 - level) / 2
    # np.quantile's "lower" and "higher" ranks (the same order statistics), from one
    # partition instead of one per end: 10,000 models' ranks are 10 million numbers.
    n = len(samples)
    low, high = int(np.floor((n - 1) * tail)), int(np.ceil((n - 1) * (1 - tail)))
    ends = np.partition(samples, [low, high], axis=0)
    best = np.minimum(ends[low], observed)
    worst = np.maximum(ends[high], observed)
    return list(zip(best.tolist(), worst.tolist(), strict=True))
