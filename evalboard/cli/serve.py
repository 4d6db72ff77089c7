"""``evalboard serve``: the API and the pages (uvicorn), with the inline worker pool when no
broker is configured."""

from __future__ import annotations

import typer

from evalboard.cli._context import context
from evalboard.cli._output import err_console
from evalboard.cli._sandbox import chosen_sandbox

__all__ = ["serve"]


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on."),
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port (0: any free one)."),
    worker: bool = typer.Option(
        True,
        "--worker/--no-worker",
        help="Run evaluation jobs in this process when EVALBOARD_BROKER_URL is unset.",
    ),
    log_level: str = typer.Option("info", "--log-level", help="uvicorn's log level."),
) -> None:
    """Serve the API (docs at /docs) and the leaderboard pages (at /ui)."""
    import uvicorn

    from evaluator import WorkerPool
    from leaderboard import create_app

    ctx = context()
    app = create_app(ctx)
    pool = WorkerPool(ctx) if worker and not ctx.settings.broker_url else None
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    config = uvicorn.Config(app, host=host, port=port, log_level=log_level)
    server = uvicorn.Server(config)
    heartbeat = None
    if pool is not None:
        from evalboard.cli._readiness import start_heartbeat

        # The inline pool is a worker like `evalboard worker`: /ready counts it, and its
        # heartbeat stops and resumes its claiming when the engine or store goes and returns.
        heartbeat = start_heartbeat(ctx, sandbox=None)
        pool.start()
    jobs = (
        # Said once at start (a fallback from auto with its one warning line); each job
        # still chooses when it starts, and its result records what ran.
        f"in this process, in the {chosen_sandbox(None)} sandbox"
        if pool is not None
        else "by `evalboard worker`"
        if ctx.settings.broker_url
        else "nowhere (--no-worker)"
    )
    err_console.print(
        f"Evalboard on [bold]http://{shown}:{port}/ui[/bold] (API docs: http://{shown}:{port}"
        f"/docs); evaluation jobs run {jobs}. Ctrl-C stops.",
        highlight=False,
    )
    try:
        server.run()
    finally:
        if pool is not None:
            pool.stop(wait=False)
        if heartbeat is not None:
            heartbeat.stop()
