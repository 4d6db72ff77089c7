"""How far each weight can move before the leader changes.

Only the weights change, never the AMRS, so each model's Dynascore is, up to the common
normalising factor, ``a_i + t * b_i`` in the weight ``t`` of one metric (others fixed):
the leader stays ahead of model ``i`` on one side of the crossing of two lines, and the
range over which it stays ahead of everyone is an interval, found exactly.

>>> table = {"big": {"perf": 90.0, "memory": 12.0}, "small": {"perf": 80.0, "memory": 2.0}}
>>> stability = weight_ranges(table, weights={"perf": 4, "memory": 1},
...                           directions={"memory": -1}, offsets={"memory": 16})
>>> stability.leader
'big'
>>> stability.ranges["memory"]
WeightRange(weight=1.0, low=0.0, high=4.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from scoring._table import Table
from scoring.dynascore import normalise

__all__ = ["LeaderStability", "WeightRange", "weight_ranges"]


@dataclass(frozen=True)
class WeightRange:
    """The weights of one metric, other weights fixed, at which the leader still leads.

    ``weight`` is the current weight, ``low`` and ``high`` bound the range in the same
    units as the weights passed (not normalised); ``high`` may be ``math.inf``. At a bound
    the leader ties another model on Dynascore and the tie-break decides.
    """

    weight: float
    low: float
    high: float


@dataclass(frozen=True)
class LeaderStability:
    """The current leader and, per metric, the range of its weight that keeps it first."""

    leader: str
    ranges: dict[str, WeightRange]


def weight_ranges(
    table: Table,
    *,
    weights: Mapping[str, float],
    perf: str = "perf",
    directions: Mapping[str, float] | None = None,
    offsets: Mapping[str, float] | None = None,
) -> LeaderStability:
    """For each metric, the interval of its weight over which the leader stays the leader.

    Arguments are those of :func:`scoring.dynascore`. Where every other weight is 0 the
    range's low end, 0, stands for "any small positive weight".
    """
    normalised = normalise(table, perf=perf, directions=directions, offsets=offsets)
    raw = normalised.weight_vector(weights, normalised=False)
    leader_name = normalised.rank(weights)[0]
    leader = normalised.models.index(leader_name)
    usable = np.isfinite(normalised.amrs) & (normalised.amrs > 0)
    contribution = np.where(usable, normalised.goods / np.where(usable, normalised.amrs, 1.0), 0)
    ranges: dict[str, WeightRange] = {}
    for k, metric in enumerate(normalised.metrics):
        rest = raw.copy()
        rest[k] = 0.0
        fixed = contribution @ rest
        ahead = fixed[leader] - fixed  # leader's lead at weight 0
        gain = contribution[leader, k] - contribution[:, k]  # its lead's slope in the weight
        low, high = 0.0, math.inf
        rising, falling = gain > 0, gain < 0
        with np.errstate(over="ignore"):  # a tiny slope puts a crossing at infinity
            if np.any(rising):
                low = max(low, float(np.max(-ahead[rising] / gain[rising])))
            if np.any(falling):
                high = min(high, float(np.min(-ahead[falling] / gain[falling])))
        current = float(raw[k])
        ranges[metric] = WeightRange(current, min(low, current), max(high, current))
    return LeaderStability(leader_name, ranges)
