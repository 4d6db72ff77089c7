"""``evalboard demo``: the whole platform on this machine, with nothing but the install."""

from __future__ import annotations

import socket
from typing import Any

import typer
from rich.table import Table

from evalboard.cli._context import context
from evalboard.cli._listener import bind_listener
from evalboard.cli._output import console, err_console, print_table, progress, warn

__all__ = ["demo"]


class _ProgressReporter:
    """The demo's steps as the CLI's progress display (bars on a terminal, lines elsewhere)."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar
        self.task_id: int | None = None

    def begin(self, step: str, total: int | None = None) -> None:
        self.task_id = self.bar.add_task(step, total=total or 1)

    def advance(self, completed: int, total: int | None = None) -> None:
        if self.task_id is not None:
            self.bar.update(self.task_id, completed=completed, total=total)

    def end(self, note: str) -> None:
        if self.task_id is not None:
            self.bar.finish(self.task_id, note)
        self.task_id = None

    def notice(self, message: str) -> None:
        warn(message)


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _print_board(ctx: Any, task_id: str) -> None:
    from leaderboard import build_leaderboard, load_table
    from scoring import DIRECTION_ARROWS

    board = build_leaderboard(ctx, load_table(ctx, task_id), intervals=False)
    metrics = [m for m in board.metrics if m.weighable]
    table = Table(title=f"Leaderboard of {task_id} (default weights)")
    table.add_column("#")
    table.add_column("model", no_wrap=True)
    table.add_column("Dynascore ↑", justify="right")
    for metric in metrics:
        table.add_column(f"{metric.label} {DIRECTION_ARROWS[metric.direction]}", justify="right")
    for row in board.rows:
        if row.kind == "majority":
            continue
        table.add_row(
            str(row.rank or ""),
            row.name,
            _fmt(row.dynascore),
            *(_fmt(row.metrics.get(m.name)) for m in metrics),
        )
    print_table(table)
    for pending in board.pending:
        warn(f"not ranked: {pending.name} ({pending.status})")


def demo(
    serve: bool = typer.Option(
        True, "--serve/--no-serve", help="Serve the leaderboard afterwards (--no-serve: exit)."
    ),
    sandbox: str | None = typer.Option(
        None,
        "--sandbox",
        help="gvisor, docker or local (default: gvisor where the engine has runsc, else docker "
        "where it answers, else local).",
    ),
    host: str = typer.Option("127.0.0.1", "--host", help="Address to serve on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one)."),
    concurrency: int = typer.Option(2, "--workers", min=1, help="Evaluation jobs at once."),
) -> None:
    """Build three demo models, evaluate them, run a collection round, serve the leaderboard.

    Everything lives in EVALBOARD_DATA_DIR; a second run reuses what the first built.
    """
    from evalboard.demo import run_demo
    from evaluator import WorkerPool

    ctx = context()
    listener = bind_listener(host, port) if serve else None  # fail before minutes of work
    try:
        with progress() as bar:
            result = run_demo(
                ctx, reporter=_ProgressReporter(bar), sandbox=sandbox, concurrency=concurrency
            )
        _print_board(ctx, result.task_id)
        if result.generative:
            _print_board(ctx, result.generative_task_id)
        total = sum(step.seconds for step in result.steps)
        console.print(
            "steps: "
            + "; ".join(f"{s.step} {s.seconds:.1f} s" for s in result.steps)
            + f"; total {total:.1f} s",
            highlight=False,
        )
        if result.round is not None and result.round.vmer is not None:
            console.print(
                f"round {result.round.number}: vMER {result.round.vmer:.0%} "
                f"({result.round.verified} verified model errors of {result.round.collected} "
                "examples)",
                highlight=False,
            )
        if listener is not None:
            pool = WorkerPool(ctx, concurrency=concurrency, sandbox=result.sandbox)
            _serve(ctx, listener, pool, host, result)
    finally:
        if listener is not None:
            listener.close()


def _serve(ctx: Any, listener: socket.socket, pool: Any, host: str, result: Any) -> None:
    import uvicorn

    from leaderboard import create_app

    bound_port = listener.getsockname()[1]
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    base = f"http://{shown}:{bound_port}"
    accounts = result.accounts
    console.print(
        f"\nLeaderboard: [bold]{base}/ui/tasks/{result.task_id}[/bold]\n"
        f"API docs:    {base}/docs\n"
        f"Sign in as demo-owner with password {accounts.owner_password} to promote, "
        "collect and validate (kept in EVALBOARD_DATA_DIR/demo/owner-password).\n"
        "New uploads are evaluated in this process. Ctrl-C stops.",
        highlight=False,
    )
    server = uvicorn.Server(uvicorn.Config(create_app(ctx), log_level="warning"))
    pool.start()
    try:
        server.run(sockets=[listener])
    finally:
        pool.stop(wait=False)
        err_console.print("Stopped.")
