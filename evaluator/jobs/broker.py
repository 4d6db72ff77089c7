"""Beyond one machine: Celery over Redis or RabbitMQ, with the database as the truth.

A message carries only a job id; the task claims the job in the database and runs it with
:func:`evaluator.jobs.job.execute_claimed`, the same code as the in-process pool. Celery is set
up for work that must not be lost: late acknowledgement (a message is acked after the job,
not before), prefetch 1 (a busy worker holds no waiting messages), and rejection when the
worker process is lost. The leases do the rest: every ``evalboard worker`` runs a reaper
thread that re-queues (and re-sends) jobs whose worker stopped renewing its lease, however
it died, so recovery does not wait for the broker's visibility timeout. The same thread
removes sandbox containers whose owner process died, at start and every few minutes.

GPU jobs are sent to the ``gpu`` queue, which only workers started with ``--queues gpu``
consume.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Sequence
from typing import Any

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evaluator.energy import warm_up
from evaluator.jobs import faults, queue
from evaluator.jobs.dispatch import TASK_NAME, CeleryDispatcher, make_celery
from evaluator.jobs.job import run_job
from evaluator.jobs.lease import ORPHAN_REAP_EVERY_S, reap_orphans_of_dead_workers

__all__ = ["run_celery_worker"]

logger = logging.getLogger(__name__)

_worker: dict[str, Any] = {}  # the worker process's context and options


def _run_job_task(job_id: int) -> str:
    ctx: Context = _worker.get("ctx") or Context.from_settings()
    waiting = threading.Event()
    limit = ctx.settings.platform_backoff_max_s
    if not (
        faults.ENGINE.wait_until_up(ctx.settings, stop=waiting, limit_s=limit)
        and faults.STORE.wait_until_up(
            ctx.settings, stop=waiting, limit_s=limit, probe=lambda: faults.store_fault(ctx)
        )
    ):
        # This worker's engine or store is down: hand the message back for later (or
        # another worker) rather than claim a job it cannot run; it stays queued.
        _send_again(ctx, int(job_id), ctx.settings.platform_backoff_s)
        return "deferred"
    status = run_job(
        ctx,
        int(job_id),
        lease_s=_worker.get("lease_s", queue.DEFAULT_LEASE_S),
        sandbox=_worker.get("sandbox"),
    )
    if status is None:
        # Not claimed. A deferred job whose message came before its back-off ended (the
        # clocks of two machines differ) would otherwise wait for no message at all.
        wait = queue.due_in(ctx, int(job_id))
        if wait is not None:
            _send_again(ctx, int(job_id), wait)
            return "deferred"
    return status.value if status is not None else "skipped"


def _send_again(ctx: Context, job_id: int, delay_s: float) -> None:
    queue_name = queue.queue_of_job(ctx, job_id)
    if queue_name is not None:
        CeleryDispatcher(ctx.settings).dispatch(job_id, queue_name, max(delay_s, 0.1))


def _reap_forever(ctx: Context, every_s: float, stop: threading.Event) -> None:
    dispatcher = CeleryDispatcher(ctx.settings)
    orphans_due = time.monotonic()
    while True:
        if time.monotonic() >= orphans_due:
            orphans_due = time.monotonic() + ORPHAN_REAP_EVERY_S
            reap_orphans_of_dead_workers()
        if stop.wait(every_s):
            return
        try:
            queue.reap_expired(ctx, dispatcher=dispatcher)
        except PlatformError as exc:  # an outage is one line when it starts, not one a cycle
            logger.debug("the reaper cannot reach the database: %s", exc)
            faults.DATABASE.went_down(faults.DATABASE_PART)
            continue
        except Exception:
            logger.warning("reaping expired leases failed", exc_info=True)
        faults.DATABASE.came_back()


def run_celery_worker(
    ctx: Context,
    *,
    queues: Sequence[str] = ("cpu",),
    concurrency: int = 1,
    lease_s: float = queue.DEFAULT_LEASE_S,
    reap_every_s: float | None = None,
    sandbox: str | None = None,
    loglevel: str = "INFO",
) -> None:
    """Consume the queues until stopped (SIGTERM: finish running jobs, then exit)."""
    _worker.update(ctx=ctx, lease_s=lease_s, sandbox=sandbox)
    warm_up()
    stop = threading.Event()
    reaper = threading.Thread(
        target=_reap_forever,
        args=(ctx, reap_every_s or lease_s / 2, stop),
        name="evalboard-reaper",
        daemon=True,
    )
    reaper.start()
    app = make_celery(ctx.settings)
    if TASK_NAME not in app.tasks:  # the worker side runs what the dispatcher announces
        app.task(name=TASK_NAME, ignore_result=True)(_run_job_task)
    try:
        app.worker_main(
            [
                "worker",
                f"--queues={','.join(queues)}",
                f"--concurrency={concurrency}",
                # Threads: a job's work happens in its sandbox, and a SIGKILL takes the whole
                # worker down at once (no orphaned pool children holding leases).
                "--pool=threads",
                f"--loglevel={loglevel}",
                f"--hostname=evalboard-{os.getpid()}@{socket.gethostname()}",
                "--without-gossip",
                "--without-mingle",
            ]
        )
    finally:
        stop.set()
