"""How a waiting job is announced: polling workers need nothing sent; Celery workers get a
message on the job's queue (``cpu`` or ``gpu``) that only says "look at job N".

The sending side only: the Celery app here knows the task by name, and the worker side
(:mod:`evaluator.jobs.broker`) registers what runs it. So the queue, which announces, does
not import the worker that runs jobs.
"""

from __future__ import annotations

import logging
import threading
from typing import Any, Protocol

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evalboard.core.settings import Settings

__all__ = [
    "TASK_NAME",
    "CeleryDispatcher",
    "Dispatcher",
    "dispatcher_for",
    "make_celery",
    "ping_broker",
]

logger = logging.getLogger(__name__)

TASK_NAME = "evalboard.run_job"

_apps: dict[str, Any] = {}
_apps_lock = threading.Lock()


class Dispatcher(Protocol):
    """Tells workers that a job is waiting (Celery sends a message; the pool polls)."""

    def dispatch(self, job_id: int, queue: str, delay_s: float = 0.0) -> None: ...


class _Polling:
    """The embedded default: in-process workers poll the database; nothing to send."""

    def dispatch(self, job_id: int, queue: str, delay_s: float = 0.0) -> None:
        return None


def dispatcher_for(ctx: Context) -> Dispatcher:
    """Celery when a broker is configured, else polling workers."""
    if not ctx.settings.broker_url:
        return _Polling()
    return CeleryDispatcher(ctx.settings)


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
        _apps[settings.broker_url] = app
        return app


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
