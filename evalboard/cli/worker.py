"""``evalboard worker``: run evaluation jobs, from a broker or straight from the database."""

from __future__ import annotations

import signal
import threading
from types import FrameType

import typer

from evalboard.cli._context import context
from evalboard.cli._output import err_console, warn
from evalboard.cli._sandbox import SANDBOX_HELP, chosen_sandbox
from evalboard.core.errors import UsageError
from evalboard.core.states import DEFAULT_LEASE_S

__all__ = ["worker"]

_QUEUES = ("cpu", "gpu")


def worker(
    queues: str = typer.Option("cpu", "--queues", "-Q", help="Comma-separated: cpu, gpu."),
    concurrency: int | None = typer.Option(
        None,
        "--concurrency",
        "-c",
        min=1,
        help="Jobs at once (default: EVALBOARD_WORKER_CONCURRENCY, else 1).",
    ),
    lease_s: float = typer.Option(
        DEFAULT_LEASE_S,
        "--lease-s",
        min=1,
        help="Lease length; a job whose worker is silent this long is run elsewhere.",
    ),
    sandbox: str | None = typer.Option(None, "--sandbox", help=SANDBOX_HELP),
    loglevel: str = typer.Option("INFO", "--loglevel", help="Celery's log level."),
) -> None:
    """Run evaluation jobs until stopped (SIGTERM/Ctrl-C lets running jobs finish).

    With EVALBOARD_BROKER_URL set (redis:// or amqp://) this is a Celery worker of the
    named queues; without it, a pool of threads that polls the database.
    """
    names = tuple(name.strip() for name in queues.split(",") if name.strip())
    unknown = sorted(set(names) - set(_QUEUES))
    if not names or unknown:
        raise UsageError(
            f"Unknown queue(s) {', '.join(unknown) or '(none)'} in --queues; "
            f"known: {', '.join(_QUEUES)}"
        )
    # A typo is refused before any job is claimed (each would fail on it, attempt after
    # attempt); `auto` is still chosen per job, as its bundle and limits decide.
    chosen_sandbox(sandbox, choose=False)
    if "gpu" in names:
        from evaluator import gpu_name

        if gpu_name() is None:
            warn(
                "--queues gpu on a machine without an NVIDIA GPU: GPU jobs taken here "
                "will fail; run GPU workers on GPU machines"
            )
    ctx = context()
    workers = concurrency or ctx.settings.worker_concurrency
    from evalboard.cli._readiness import start_heartbeat

    stop = threading.Event()
    if not ctx.settings.broker_url:  # Celery stops on these signals its own way

        def _stop(signum: int, frame: FrameType | None) -> None:
            err_console.print("Stopping: letting running jobs finish...")
            stop.set()

        # Before the heartbeat says the worker is live: a stop asked for from then on is
        # a clean one (exit 0), never the interpreter's default.
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    heartbeat = start_heartbeat(ctx, sandbox=sandbox)
    try:
        if ctx.settings.broker_url:
            from evaluator import run_celery_worker

            run_celery_worker(
                ctx,
                queues=names,
                concurrency=workers,
                lease_s=lease_s,
                sandbox=sandbox,
                loglevel=loglevel,
            )
            return
        err_console.print(
            f"Worker polling {ctx.db.url.render_as_string()} for queues "
            f"{', '.join(names)} with {workers} thread(s)",
            highlight=False,
        )
        from evaluator import WorkerPool

        with WorkerPool(ctx, concurrency=workers, queues=names, lease_s=lease_s, sandbox=sandbox):
            stop.wait()
    finally:
        heartbeat.stop()
