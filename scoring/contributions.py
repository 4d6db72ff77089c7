"""What each metric adds to each model's Dynascore, and when one term swamps the rest.

A model's Dynascore is a sum of terms ``w_M * good_M / AMRS(M)``. When a metric's AMRS is
tiny (small models differing by a few MiB of memory, say), its term is huge and nearly the
same for every model: the scores then sit around a large common value and tell little.
:func:`dominant_term` finds such a metric so the board can say so.

>>> from scoring.dynascore import normalise
>>> table = normalise({"a": {"perf": 60.0, "memory": 1.00}, "b": {"perf": 70.0, "memory": 1.01}},
...                   directions={"memory": -1}, offsets={"memory": 16})
>>> terms = contributions(table, {"perf": 1, "memory": 1})
>>> {m: round(t["memory"]) for m, t in terms.items()}
{'a': 7500, 'b': 7495}
>>> dominant_term(terms, perf="perf")
('memory', 1.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from scoring.dynascore import NormalisedTable
from scoring.registry import FloatArray

__all__ = [
    "DOMINANCE_SHARE",
    "contribution_terms",
    "contributions",
    "dominant_term",
    "dominant_term_array",
]

DOMINANCE_SHARE = 0.5
"""A metric other than perf giving more than this share of every model's score dominates."""


def contributions(
    table: NormalisedTable, weights: Mapping[str, float]
) -> dict[str, dict[str, float]]:
    """model -> metric -> its term in the Dynascore (the terms sum to the score)."""
    terms = contribution_terms(table, weights)
    return {
        model: {metric: float(terms[i, k]) for k, metric in enumerate(table.metrics)}
        for i, model in enumerate(table.models)
    }


def contribution_terms(table: NormalisedTable, weights: Mapping[str, float]) -> FloatArray:
    """:func:`contributions` as an array aligned with the table's models and metrics."""
    w = table.weight_vector(weights)
    usable = np.isfinite(table.amrs) & (table.amrs > 0)
    safe = np.where(usable, table.amrs, 1.0)
    terms: FloatArray = np.where(usable & (w != 0), w * table.goods / safe, 0.0)
    return terms


def dominant_term(
    terms: Mapping[str, Mapping[str, float]], *, perf: str = "perf"
) -> tuple[str, float] | None:
    """The metric (not perf) whose term is above :data:`DOMINANCE_SHARE` of every model's
    score, with its smallest share (rounded to 2 digits); None when no metric is.

    Perf dominating is what the default weights ask for, so it is never reported; nor is
    anything when a score is not positive (shares are then meaningless).
    """
    if not terms:
        return None
    metrics = list(next(iter(terms.values())).keys())
    rows = np.array([[row[metric] for metric in metrics] for row in terms.values()])
    return dominant_term_array(metrics, rows, perf=perf)


def dominant_term_array(
    metrics: Sequence[str], terms: FloatArray, *, perf: str = "perf"
) -> tuple[str, float] | None:
    """:func:`dominant_term` of ``terms[i, k]``, model ``i``'s term of ``metrics[k]``."""
    if not len(terms):
        return None
    # Each score summed term by term in metric order, as sum() over a row adds them.
    total = np.zeros(len(terms))
    for k in range(len(metrics)):
        total = total + terms[:, k]
    for metric in sorted(m for m in metrics if m != perf):
        if not np.all(total > 0):
            return None
        smallest = float(np.min(terms[:, metrics.index(metric)] / total))
        if smallest > DOMINANCE_SHARE:
            return metric, round(smallest, 2)
    return None
