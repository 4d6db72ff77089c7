"""``evalboard serve``: the API and the pages (uvicorn), with the inline worker pool when no
broker is configured."""

from __future__ import annotations

import typer

from evalboard.cli._context import context
from evalboard.cli._listener import bind_listener
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
    log_level: str = typer.Option(
        "info",
        "--log-level",
        help="uvicorn's log level: critical, error, warning, info, debug or trace.",
    ),
) -> None:
    """Serve the API (docs at /docs) and the leaderboard pages (at /ui)."""
    import uvicorn
    from uvicorn.config import LOG_LEVELS

    level = log_level.lower()
    if level not in LOG_LEVELS:
        raise typer.BadParameter(
            f"unknown log level {log_level!r}; known: {', '.join(LOG_LEVELS)}",
            param_hint="--log-level",
        )
    from evaluator import WorkerPool
    from leaderboard import create_app

    ctx = context()
    # Bound before the app, the pool or the heartbeat start: a port in use is refused with
    # nothing started and no job claimed.
    listener = bind_listener(host, port)
    bound_port = listener.getsockname()[1]
    shown = "localhost" if host in ("127.0.0.1", "0.0.0.0") else host
    pool = WorkerPool(ctx) if worker and not ctx.settings.broker_url else None
    heartbeat = None
    try:
        app = create_app(ctx)
        server = uvicorn.Server(uvicorn.Config(app, host=host, port=bound_port, log_level=level))
        if pool is not None:
            from evalboard.cli._readiness import start_heartbeat

            # The inline pool is a worker like `evalboard worker`: /ready counts it, and its
            # heartbeat stops and resumes its claiming when the engine or store goes and
            # returns.
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
            f"Evalboard on [bold]http://{shown}:{bound_port}/ui[/bold] (API docs: "
            f"http://{shown}:{bound_port}/docs); evaluation jobs run {jobs}. Ctrl-C stops.",
            highlight=False,
        )
        server.run(sockets=[listener])
    finally:
        if pool is not None:
            pool.stop(wait=False)
        if heartbeat is not None:
            heartbeat.stop()
        listener.close()
