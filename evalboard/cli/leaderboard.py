"""``evalboard leaderboard``: the ranking the API and the task page show."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from evalboard.cli._context import context
from evalboard.cli._output import print_json, print_table, say

__all__ = ["leaderboard"]


def _fmt(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.2f}"


def leaderboard(
    task: str = typer.Option(..., "--task", help="Task id."),
    weights: str | None = typer.Option(
        None,
        "--weights",
        help="METRIC=WEIGHT,... e.g. perf=4,throughput=1 (default: the task owner's).",
    ),
    dataset_weights: str | None = typer.Option(
        None,
        "--dataset-weights",
        help="DATASET=WEIGHT,... over the original scoring datasets, e.g. r1-test=1,round-2=0 "
        "(default: the task owner's; copies follow their original).",
    ),
    as_json: bool = typer.Option(False, "--json", help="The API's JSON, on stdout."),
    intervals: bool = typer.Option(
        True,
        "--intervals/--no-intervals",
        help="Bootstrap 95% intervals, rank intervals and P(first) (a second or so).",
    ),
) -> None:
    """Print a task's leaderboard: rank, Dynascore and every metric."""
    from leaderboard import build_leaderboard, parse_dataset_weights, parse_weights, public_table
    from scoring import DIRECTION_ARROWS

    ctx = context()
    metric_weights = parse_weights(weights)
    table = public_table(ctx, task)  # the public board, as the API shows it to a visitor
    board = build_leaderboard(
        ctx,
        table,
        metric_weights,
        dataset_weights=parse_dataset_weights(table, dataset_weights),
        intervals=intervals,
    )
    if as_json:
        print_json(board.model_dump(mode="json"))
        return
    if not board.rows:
        say(f"No model of {task} has results on every scoring dataset yet.")
    else:
        table_out = Table(
            "#",
            "rank 95%",
            "P(first)",
            "model",
            "by",
            "Dynascore ↑",
            "gap to leader 95%",
            *(f"{m.label} {DIRECTION_ARROWS[m.direction]}" for m in board.metrics),
        )
        for row in board.rows:
            gap = row.intervals.get("gap_to_leader")
            name = row.name + (" (baseline)" if row.kind == "baseline" else "")
            if row.not_above_baseline:
                name += " [not above baseline]"
            table_out.add_row(
                str(row.rank or ""),
                f"{row.rank_interval[0]}-{row.rank_interval[1]}" if row.rank_interval else "",
                f"{row.p_first:.2f}" if row.p_first is not None else "",
                # Names and intervals are data, not markup: "[not above baseline]" shows.
                Text(name),
                Text(row.user or ""),
                _fmt(row.dynascore),
                Text(f"[{_fmt(gap.low)}, {_fmt(gap.high)}]" if gap else ""),
                *(_fmt(row.metrics.get(m.name)) for m in board.metrics),
            )
        print_table(table_out)
    notes = [f"{r.name}: {n}" for r in board.rows for n in (r.reason, r.load_note) if n]
    notes += [f"warning: {warning}" for warning in board.warnings]
    notes.append("weights: " + ", ".join(f"{k}={v:g}" for k, v in board.weights.items()))
    datasets = ", ".join(f"{k}={v:g}" for k, v in board.dataset_weights.items())
    notes.append(f"dataset weights: {datasets}")
    rates = ", ".join(f"{k}={v:.3g}" for k, v in board.amrs.items() if v is not None)
    if rates:
        notes.append(f"AMRS (units per perf point): {rates}")
    notes += [f"not ranked yet: {p.name} ({p.status})" for p in board.pending]
    for note in notes:
        say(note)
