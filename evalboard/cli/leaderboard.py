"""``evalboard leaderboard``: the ranking the API and the task page show."""

from __future__ import annotations

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._output import console, print_json, print_table

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
    as_json: bool = typer.Option(False, "--json", help="The API's JSON, on stdout."),
    intervals: bool = typer.Option(
        True, "--intervals/--no-intervals", help="Bootstrap 95% intervals (a second or so)."
    ),
) -> None:
    """Print a task's leaderboard: rank, Dynascore and every metric."""
    from leaderboard import build_leaderboard, load_table, parse_weights

    ctx = context()
    board = build_leaderboard(
        ctx, load_table(ctx, task), parse_weights(weights), intervals=intervals
    )
    if as_json:
        print_json(board.model_dump(mode="json"))
        return
    if not board.rows:
        console.print(f"No model of {task} has results on every scoring dataset yet.")
    else:
        arrows = {"higher": "↑", "lower": "↓"}
        table = Table(
            "#",
            "model",
            "by",
            "Dynascore ↑",
            *(f"{m.label} {arrows[m.direction]}" for m in board.metrics),
        )
        for row in board.rows:
            interval = row.intervals.get("dynascore")
            score = _fmt(row.dynascore) + (
                f" [{_fmt(interval.low)}, {_fmt(interval.high)}]" if interval else ""
            )
            name = row.name + (" (baseline)" if row.kind == "baseline" else "")
            table.add_row(
                str(row.rank or ""),
                name,
                row.user or "",
                score,
                *(_fmt(row.metrics.get(m.name)) for m in board.metrics),
            )
        print_table(table)
    used = ", ".join(f"{k}={v:g}" for k, v in board.weights.items())
    console.print(f"weights: {used}", highlight=False)
    for pending in board.pending:
        console.print(f"not ranked yet: {pending.name} ({pending.status})", highlight=False)
