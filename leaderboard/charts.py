"""plotly figures for the model and drift pages, as plain ``{"data", "layout"}`` dicts.

The page hands them to ``Plotly.newPlot``; building dicts keeps the server free of
plotly's Python side and makes each figure easy to test.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from leaderboard.ranking import Scatter
from leaderboard.schemas import MetricPublic, RowPublic
from scoring import pareto_mask

__all__ = [
    "MAX_SCATTER_POINTS",
    "contributions_figure",
    "datasets_figure",
    "drift_figure",
    "lineage_figure",
    "pareto_figure",
    "rounds_figure",
]

Figure = dict[str, Any]

#: The most models a Pareto chart draws besides its front and the model of the page.
MAX_SCATTER_POINTS = 2000

_ACCENT = "#1f6feb"
_MUTED = "#9aa4b2"
_FRONT = "#d9480f"
_HEIGHT = 350


def _layout(
    title: str,
    *,
    xaxis: dict[str, Any] | None = None,
    yaxis: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    # automargin: the margins grow to fit tick labels and axis titles, so none is cut
    # ("Througl"); the title sits on a row of its own under the toolbar's (which plotly
    # draws in the top 40 px), so the toolbar never covers it.
    return {
        "title": {
            "text": title,
            "font": {"size": 14},
            "x": 0.02,
            "xanchor": "left",
            "yref": "container",
            "y": 1 - 46 / _HEIGHT,
            "yanchor": "top",
        },
        "margin": {"l": 50, "r": 16, "t": 76, "b": 40},
        "height": _HEIGHT,
        "paper_bgcolor": "rgba(0,0,0,0)",
        "plot_bgcolor": "rgba(0,0,0,0)",
        "xaxis": {"automargin": True, **(xaxis or {})},
        "yaxis": {"automargin": True, **(yaxis or {})},
        **extra,
    }


def contributions_figure(row: RowPublic, labels: dict[str, str]) -> Figure:
    """Each metric's share of this model's Dynascore (weight x good / AMRS)."""
    names = [n for n in row.contributions]
    return {
        "data": [
            {
                "type": "bar",
                "x": [labels.get(n, n) for n in names],
                "y": [round(row.contributions[n], 4) for n in names],
                "marker": {"color": _ACCENT},
                "hovertemplate": "%{x}: %{y:.2f}<extra></extra>",
            }
        ],
        "layout": _layout(
            f"Dynascore {row.dynascore:.2f}: what each metric adds"
            if row.dynascore is not None
            else "Dynascore contributions",
            yaxis={"title": {"text": "points"}, "zeroline": True},
        ),
    }


def datasets_figure(scores: Sequence[tuple[str, str, float]]) -> Figure:
    """Bars per dataset: ``(dataset, figure name, value)``, e.g. perf or robustness."""
    kinds = sorted({kind for _, kind, _ in scores})
    return {
        "data": [
            {
                "type": "bar",
                "name": kind,
                "x": [d for d, k, _ in scores if k == kind],
                "y": [round(v, 3) for _, k, v in scores if k == kind],
            }
            for kind in kinds
        ],
        "layout": _layout(
            "Scores per dataset",
            barmode="group",
            yaxis={"title": {"text": "x100"}, "range": [0, 100]},
            legend={"orientation": "h", "y": -0.25},
        ),
    }


def rounds_figure(perf_by_round: dict[int, float]) -> Figure:
    rounds = sorted(perf_by_round)
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "x": [f"round {r}" if r else "static" for r in rounds],
                "y": [round(perf_by_round[r], 3) for r in rounds],
                "line": {"color": _ACCENT},
            }
        ],
        "layout": _layout("Perf per round", yaxis={"title": {"text": "perf"}}),
    }


def lineage_figure(
    label: str, unit: str, direction: str, points: Sequence[tuple[str, str, float]]
) -> Figure:
    """One metric of a lineage's releases over time: a line through ``(submitted at (ISO
    8601), release name, value)`` of each release scored on every scoring dataset."""
    better = "lower" if direction == "lower" else "higher"
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": label,
                "x": [when for when, _, _ in points],
                "y": [round(value, 4) for _, _, value in points],
                "text": [name for _, name, _ in points],
                "line": {"color": _ACCENT},
                "hovertemplate": "%{text}<br>%{x}<br>" + label + " %{y:.3g}<extra></extra>",
            }
        ],
        "layout": _layout(
            f"{label} per release ({better} is better)",
            xaxis={"title": {"text": "submitted"}, "type": "date"},
            yaxis={"title": {"text": unit or label}},
        ),
    }


def pareto_figure(scatter: Scatter, info: MetricPublic | None, highlight: str) -> Figure:
    """Perf against ``scatter``'s metric for the ranked models, with the Pareto front
    drawn: the front and the highlighted model always, the others thinned to
    :data:`MAX_SCATTER_POINTS` (every n-th by rank, said in the legend) where there are
    more: a cloud of 10,000 markers shows no more than 2,000 and costs a megabyte."""
    metric = scatter.metric
    label = f"{info.label} ({info.unit})" if info else metric
    lower = info is not None and info.direction == "lower"
    # Goods, higher is better: from the arrays (100,000 models: no table of mappings).
    values, perf = scatter.values, scatter.perf
    goods = np.column_stack([perf, -values if lower else values])
    front = np.flatnonzero(pareto_mask(goods)) if len(goods) else np.zeros(0, dtype=np.intp)
    on_front = front[np.argsort(values[front], kind="stable")]
    mine = [scatter.keys.index(highlight)] if highlight in scatter.keys else []
    count = len(scatter.keys) - len(mine)
    step = max(1, -(-count // MAX_SCATTER_POINTS))  # ceil: every step-th kept
    others_name = "models" if step == 1 else f"models (1 in {step}, by rank)"
    others = [i for i in range(0, len(scatter.keys), step) if i not in mine]

    def trace(name: str, subset: Sequence[int] | NDArray[np.intp], **style: Any) -> dict[str, Any]:
        picked = np.asarray(subset, dtype=np.intp)
        return {
            "type": "scatter",
            "name": name,
            "x": values[picked].tolist(),
            "y": perf[picked].tolist(),
            "text": [scatter.names[i] for i in picked.tolist()],
            "hovertemplate": "%{text}<br>perf %{y:.2f}<br>" + metric + " %{x:.3g}<extra></extra>",
            **style,
        }

    better = "lower" if lower else "higher"
    return {
        "data": [
            # The cloud first: the front's line is drawn over it, not hidden under it.
            trace(others_name, others, mode="markers", marker={"color": _MUTED, "size": 9}),
            trace("Pareto front", on_front, mode="lines", line={"color": _FRONT, "dash": "dot"}),
            trace(
                "this model",
                mine,
                mode="markers",
                marker={"color": _ACCENT, "size": 13, "symbol": "diamond"},
            ),
        ],
        "layout": _layout(
            f"Perf vs {info.label.lower() if info else metric} ({better} is better)",
            xaxis={"title": {"text": label}},
            yaxis={"title": {"text": "perf"}},
            legend={"orientation": "h", "y": -0.3},
        ),
    }


def drift_figure(
    edges: Sequence[float], traffic: Sequence[int], reference: Sequence[int], *, title: str
) -> Figure:
    """A drift check's shift scores: the share of each side's inputs per bin, overlaid.

    Shares, not counts, so a small traffic sample and a large reference compare; traffic
    to the right of the reference is what the classifier found unlike the task's data.
    """
    centres = [round((a + b) / 2, 6) for a, b in zip(edges, edges[1:], strict=False)]
    width = (edges[-1] - edges[0]) / max(len(centres), 1)

    def trace(name: str, counts: Sequence[int], colour: str) -> dict[str, Any]:
        total = sum(counts) or 1
        return {
            "type": "bar",
            "name": f"{name} ({sum(counts)})",
            "x": centres,
            "y": [round(c / total, 4) for c in counts],
            "width": width,
            "opacity": 0.6,
            "marker": {"color": colour},
            "hovertemplate": "score %{x:.3f}: %{y:.1%}<extra>" + name + "</extra>",
        }

    return {
        "data": [trace("reference", reference, _MUTED), trace("traffic", traffic, _FRONT)],
        "layout": _layout(
            title,
            barmode="overlay",
            xaxis={"title": {"text": "shift score (out-of-fold domain classifier)"}},
            yaxis={"title": {"text": "share of inputs"}, "tickformat": ".0%"},
            legend={"orientation": "h", "y": -0.3},
        ),
    }
