"""Beyond one machine: Celery over Redis or RabbitMQ, with the database as the truth.

A message carries only a job id; the task claims the job in the database and runs it with
:func:`evaluator.job.execute_claimed`, the same code as the in-process pool. Celery is set
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
from evalboard.core.settings import Settings
from evaluator import faults, queue
from evaluator.energy import warm_up
from evaluator.job import run_job
from evaluator.lease import ORPHAN_REAP_EVERY_S, reap_orphans_of_dead_workers

__all__ = ["TASK_NAME", "CeleryDispatcher", "make_celery", "ping_broker", "run_celery_worker"]

logger = logging.getLogger(__name__)

TASK_NAME = "evalboard.run_job"

_apps: dict[str, Any] = {}
_apps_lock = threading.Lock()
_worker: dict[str, Any] = {}  # the worker process's context and options


def ping_broker(settings: Settings) -> None:
    """Raise :class:`PlatformError` unless the configured broker accepts a connection
    (none configured: nothing to check). The message never names the broker's host."""
    if not settings.broker_url:
        return
    from kombu.connection import Connection

    try:
        with Connection(settings.broker_url, connect_timeout=2) as connection:  # type: ignore[no-untyped-call]
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=2)
    except Exception as exc:
        logger.warning("broker check failed: %s", exc)
        raise PlatformError(
            "The job broker does not answer; check EVALBOARD_BROKER_URL and that the broker "
            "runs (the server log has details)"
        ) from None


def make_celery(settings: Settings) -> Any:
    """The Celery app for a broker URL (one per URL and process)."""
    with _apps_lock:
        app = _apps.get(settings.broker_url)
        if app is not None:
            return app
        from celery import Celery

        app = Celery("evalboard", broker=settings.broker_url, set_as_current=False)
        app.conf.update(
            task_acks_late=True,
            worker_prefetch_multiplier=1,
            task_reject_on_worker_lost=True,
            task_ignore_result=True,
            task_default_queue="cpu",
            task_create_missing_queues=True,
            broker_connection_retry_on_startup=True,
            worker_hijack_root_logger=False,
            worker_cancel_long_running_tasks_on_connection_loss=True,
            task_serializer="json",
            accept_content=["json"],
        )
        app.task(name=TASK_NAME, ignore_result=True)(_run_job_task)
        _apps[settings.broker_url] = app
        return app


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


class CeleryDispatcher:
    """Sends "job N is waiting" to the job's queue."""

    def __init__(self, settings: Settings) -> None:
        self.app = make_celery(settings)

    def dispatch(self, job_id: int, queue: str, delay_s: float = 0.0) -> None:
        # A deferred job's message arrives when its back-off is over (``countdown``).
        try:
            self.app.send_task(
                TASK_NAME, args=[job_id], queue=queue, countdown=delay_s if delay_s > 0 else None
            )
        except Exception as exc:  # kombu's message names the broker's host: log it only
            logger.warning("sending job %s to the broker failed: %s", job_id, exc)
            raise PlatformError(
                "The job broker does not answer; what was asked for is stored and its jobs "
                "wait in the queue (an operator re-sends them with resend_queued once the "
                "broker is back)"
            ) from None


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
            faults.DATABASE.went_down("the database")
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
