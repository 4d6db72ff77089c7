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
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from evalboard.core.cache import approximate_size, sampled_size
from evalboard.core.context import Context
from evalboard.core.heap import keep_long_lived
from evaluator import CONTENDED_SHARE
from leaderboard.intervals import has_predictions, leaderboard_intervals
from leaderboard.paging import BoardQuery
from leaderboard.schemas import (
    IntervalPublic,
    LeaderboardPublic,
    MetricPublic,
    PendingPublic,
    RowPublic,
)
from leaderboard.table import ModelEntry, TaskTable
from scoring import (
    METRICS,
    WEIGHABLE_METRICS,
    BootstrapResult,
    check_weights,
    contributions,
    dominant_term,
    fill_missing,
    floor_order,
    goods_transform,
    normalise,
    not_above_baseline,
    rankable,
)
from scoring import parse_weights as scoring_parse_weights

__all__ = [
    "build_leaderboard",
    "parse_dataset_weights",
    "parse_weights",
    "to_csv",
    "predictions_only",
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
    ranked = [m for m in table.ranked if not m.predictions_only] or table.ranked
    present = [
        name
        for name in WEIGHABLE_METRICS
        if name == "perf" or (ranked and rankable(name, (m.metrics.get(name) for m in ranked)))
    ]
    if ranked and any(m.metrics.get("perf") is None for m in ranked):
        present.remove("perf")
    return present


def _usable_weights(
    table: TaskTable, requested: Mapping[str, float] | None, metrics: list[str]
) -> dict[str, float]:
    """The requested weights (None: the owner's), through the one weight check, with at
    least one of the board's ``metrics`` weighing above 0 when a model is ranked."""
    weights = requested if requested is not None else table.default_weights
    return check_weights(weights, known=WEIGHABLE_METRICS, usable=metrics if table.ranked else None)


@dataclass
class _Ranking:
    """What ranking a table gives for one set of weights, before any page is cut: kept in
    the context's cache under the table's version and the weights."""

    table: TaskTable
    requested: dict[str, float]
    metrics: list[str]
    used: dict[str, float]
    by_key: dict[str, ModelEntry] = field(default_factory=dict)
    grid: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    terms: dict[str, dict[str, float]] = field(default_factory=dict)
    amrs: dict[str, float | None] = field(default_factory=dict)
    runs: dict[str, list[float]] = field(default_factory=dict)
    boot: BootstrapResult | None = None
    flagged: set[str] = field(default_factory=set)
    order: list[str] = field(default_factory=list)
    positions: dict[str, int] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    shown_metrics: list[MetricPublic] = field(default_factory=list)
    pending: list[PendingPublic] = field(default_factory=list)

    def approximate_size(self) -> int:
        """About how much memory it holds of its own, for the cache's byte budget: a
        sample of its rows measured and scaled (walking 10,000 rows would cost more than
        ranking them). The rows' cards, outcomes and per-dataset figures are the board's
        (``leaderboard.aggregates``, counted there); a re-weighed row's averages are new."""
        per_row = [
            (m.metrics, self.grid.get(m.key), self.terms.get(m.key), self.runs.get(m.key))
            for m in self.table.models
        ]
        return sampled_size(per_row) + approximate_size(self.boot)


def build_leaderboard(
    ctx: Context,
    table: TaskTable,
    weights: Mapping[str, float] | None = None,
    *,
    dataset_weights: Mapping[str, float] | None = None,
    intervals: bool = True,
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
        query: which ranked rows to send (every model is ranked all the same); None: all.
        keep: which models may be sent at all (a card filter, ``leaderboard.cards``): the
            others are ranked, but neither sent nor counted in ``total``.
    """
    cache_key = (
        "ranking",
        table.version,
        None if weights is None else tuple(sorted(weights.items())),
        None if dataset_weights is None else tuple(sorted(dataset_weights.items())),
        intervals,
    )
    ranking = ctx.cache.get(cache_key) if table.version else None
    if ranking is None:
        ranking = _rank(ctx, table, weights, dataset_weights=dataset_weights, intervals=intervals)
        if table.version:
            ctx.cache.put(cache_key, ranking, size=ranking.approximate_size())
            keep_long_lived()
    return _board(ranking, query or BoardQuery(), keep)


def _rank(
    ctx: Context,
    table: TaskTable,
    weights: Mapping[str, float] | None,
    *,
    dataset_weights: Mapping[str, float] | None,
    intervals: bool,
) -> _Ranking:
    table = table.reweighted(dataset_weights, cache=ctx.cache if ctx is not None else None)
    metrics = weighable_metrics(table)
    requested = _usable_weights(table, weights, metrics)
    used = {k: v for k, v in requested.items() if k in metrics}
    directions, offsets = goods_transform(metrics, memory_cap_gib=table.task.memory_cap_gib)
    ranked = table.ranked
    baseline = table.majority_perf
    found = _Ranking(table=table, requested=requested, metrics=metrics, used=used)
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
        if name in metrics or any(m.metrics.get(name) is not None for m in ranked)
    ]
    found.pending = [
        PendingPublic(submission_id=m.submission_id, name=m.name, user=m.user, status=m.status)
        for m in table.models
        if not m.complete
    ]
    if not ranked:
        return found
    # A missing figure ranks as the board's worst (scoring.fill_missing, the one rule).
    grid = fill_missing(
        {m.key: m.metrics for m in ranked}, metrics, may_lack=predictions_only(ranked)
    )
    normalised = normalise(grid, directions=directions, offsets=offsets)
    found.grid = grid
    found.scores = dict(zip(normalised.models, normalised.scores(used).tolist(), strict=True))
    found.terms = {k: dict(v) for k, v in contributions(normalised, used).items()}
    found.amrs = {
        k: (v if math.isfinite(v) else None) for k, v in normalised.amrs_by_metric.items()
    }
    found.by_key = {m.key: m for m in ranked}
    found.names = {m.key: m.name for m in ranked}
    bootstrapped = intervals and "perf" in metrics and has_predictions(table, ranked)
    # A row's throughput runs are re-averaged for the rows sent, unless the bootstrap
    # needs every model's.
    found.runs = (
        {m.key: m.throughput_runs(table.dataset_weights) for m in ranked} if bootstrapped else {}
    )
    repeats = (
        {k: {"throughput": r} for k, r in found.runs.items() if r}
        if "throughput" in metrics
        else {}
    )
    found.boot = (
        leaderboard_intervals(
            ctx,
            table,
            ranked,
            other_metrics={
                k: {n: v for n, v in row.items() if n != "perf"} for k, row in grid.items()
            },
            weights=used,
            directions=directions,
            offsets=offsets,
            baseline=baseline,
            repeats=repeats,
        )
        if bootstrapped
        else None
    )
    if found.boot is not None:
        found.flagged = {k for k, v in found.boot.not_above_baseline.items() if v}
        found.order = list(found.boot.order)
    else:
        found.flagged = (
            {
                k
                for k in grid
                if not_above_baseline(high=grid[k].get("perf", 0.0), baseline=baseline)
            }
            if "perf" in metrics
            else set()
        )
        found.order = list(floor_order(normalised.rank(used), found.flagged))
    found.positions = {key: position for position, key in enumerate(found.order, start=1)}
    found.warnings = _warnings(found.terms, table)
    return found


def _board(
    ranking: _Ranking, query: BoardQuery, keep: Callable[[ModelEntry], bool] | None
) -> LeaderboardPublic:
    """One page of ``ranking``, as the API sends it."""
    table, by_key = ranking.table, ranking.by_key
    baseline = table.majority_perf
    total = 0
    rows: list[RowPublic] = []
    if by_key:
        total, page = query.select(
            ranking.order if keep is None else [k for k in ranking.order if keep(by_key[k])],
            names=ranking.names,
            value=lambda key, name: (
                ranking.scores[key] if name == "dynascore" else by_key[key].metrics.get(name)
            ),
        )
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
        amrs=dict(ranking.amrs),
        dataset_weights={name: table.dataset_weights[name] for name in table.weighable_datasets},
        baseline_perf=baseline,
        warnings=list(ranking.warnings),
        phase=table.phase,
        withheld_sets=table.withheld_sets,
    )


def predictions_only(entries: Iterable[ModelEntry]) -> set[str]:
    """The keys of predictions-only rows: they may lack any figure a run measures."""
    return {entry.key for entry in entries if entry.predictions_only}


def _page_row(ranking: _Ranking, key: str) -> RowPublic:
    entry, boot = ranking.by_key[key], ranking.boot
    row = _row(entry, ranking.positions[key], ranking.scores[key], ranking.terms[key])
    row.ranked_as_worst = [
        name for name in ranking.metrics if ranking.used.get(name) and row.metrics.get(name) is None
    ]
    runs = ranking.runs.get(key)
    if runs is None:
        runs = entry.throughput_runs(ranking.table.dataset_weights)
    if runs:
        row.spread = {"throughput": IntervalPublic(low=min(runs), high=max(runs))}
    share = entry.busiest_load()
    if share is not None and share > CONTENDED_SHARE:
        row.contended = True
        row.load_note = (
            f"measured while other processes used {share:.0%} of the worker's CPU: "
            "throughput and latency may be low"
        )
    if key in ranking.flagged:
        row.not_above_baseline = True
        above = boot.above_baseline.get(key) if boot is not None else None
        row.reason = _reason(
            ranking.grid[key]["perf"],
            ranking.table.majority_perf,
            above.high if above is not None else None,
        )
    if boot is not None:
        row.intervals = {
            "perf": IntervalPublic(low=boot.perf[key].low, high=boot.perf[key].high),
            "gap_to_leader": IntervalPublic(
                low=boot.gap_to_leader[key].low, high=boot.gap_to_leader[key].high
            ),
        }
        row.p_first = boot.p_first[key]
        row.rank_interval = boot.rank_interval[key]
    return row


def _reason(perf: float, baseline: float | None, above_high: float | None) -> str:
    why = (
        f"its perf ({perf:.2f}) does not clear the majority-class baseline's "
        f"({baseline or 0.0:.2f})"
    )
    if above_high is not None:
        why += f": the 95% paired bootstrap puts it at most {above_high:+.2f} points above"
    return f"not above baseline: {why}; ranked after every model that clears it"


def _warnings(terms: Mapping[str, Mapping[str, float]], table: TaskTable) -> list[str]:
    found = dominant_term(terms)
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
                row.name,
                row.user or "",
                row.kind,
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
                *(row.methods.get(n, "") for n in methods),
                _fmt(perf.low if perf else None),
                _fmt(perf.high if perf else None),
            ]
        )
    return out.getvalue()


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.6g}"
