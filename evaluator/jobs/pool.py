"""The embedded default: a pool of worker threads polling the same database.

Used by the single-machine setup (``evalboard serve``/``demo`` with no broker) and by
``evalboard worker`` when no broker is configured. Each thread claims the oldest queued
job of its queues and runs it with :func:`evaluator.jobs.job.execute_claimed`, the same code a
Celery worker runs. One of the threads also reaps expired leases now and then, so a job
whose process died is picked up again.

While the database does not answer, the threads back off (doubling up to
``MAX_BACKOFF_S``) and :data:`evaluator.jobs.faults.DATABASE` says so once, and once more when
it answers again.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Sequence
from typing import Self

from sqlalchemy import func, select

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evalboard.core.tables import Job
from evaluator.energy import warm_up
from evaluator.jobs import faults, queue
from evaluator.jobs.job import execute_claimed
from evaluator.jobs.lease import ORPHAN_REAP_EVERY_S, reap_orphans_of_dead_workers, worker_identity

__all__ = ["MAX_BACKOFF_S", "WorkerPool"]

logger = logging.getLogger(__name__)
MAX_BACKOFF_S = 30.0


class _Outage:
    """The pool's shared view of the database: the wait before the next try while it does
    not answer (the process's :data:`~evaluator.jobs.faults.DATABASE` watch says when it goes
    and when it comes back)."""

    def __init__(self, first_wait_s: float) -> None:
        self._lock = threading.Lock()
        self._first = first_wait_s
        self.wait_s = 0.0

    @property
    def down(self) -> bool:
        return self.wait_s > 0

    def failed(self, exc: BaseException) -> float:
        with self._lock:
            if not self.down:
                logger.debug("the database does not answer: %s", exc)
                faults.DATABASE.went_down(faults.DATABASE_PART)
                self.wait_s = self._first
            else:
                self.wait_s = min(self.wait_s * 2, MAX_BACKOFF_S)
            return self.wait_s

    def answered(self) -> None:
        if not self.down:
            return
        with self._lock:
            if self.down:
                faults.DATABASE.came_back()
                self.wait_s = 0.0


class WorkerPool:
    """``concurrency`` threads running queued jobs until :meth:`stop`.

    Example::

        with WorkerPool(ctx, concurrency=2) as pool:
            enqueue_submission(ctx, submission_id)
            pool.wait_idle(timeout=600)
    """

    def __init__(
        self,
        ctx: Context,
        *,
        concurrency: int | None = None,
        queues: Sequence[str] = ("cpu",),
        lease_s: float = queue.DEFAULT_LEASE_S,
        poll_s: float = 0.5,
        reap_every_s: float | None = None,
        sandbox: str | None = None,
    ) -> None:
        self.ctx = ctx
        self.concurrency = concurrency or ctx.settings.worker_concurrency
        self.queues = tuple(queues)
        self.lease_s = lease_s
        self.poll_s = poll_s
        self.reap_every_s = reap_every_s if reap_every_s is not None else lease_s / 2
        self.sandbox = sandbox
        self._stopping = threading.Event()
        self._wake = threading.Event()
        self._reap_lock = threading.Lock()
        self._last_reap = 0.0
        self._last_orphan_reap = -math.inf  # the first worker thread looks at once
        self._threads: list[threading.Thread] = []
        self._outage = _Outage(first_wait_s=max(poll_s, 0.5))

    def start(self) -> None:
        warm_up()  # codecarbon's one-off hardware probe, off the first job's clock
        for number in range(self.concurrency):
            thread = threading.Thread(
                target=self._work, name=f"evalboard-worker-{number}", daemon=True
            )
            thread.start()
            self._threads.append(thread)

    def wake(self) -> None:
        """Look for work now rather than at the next poll (after enqueueing)."""
        self._wake.set()

    def stop(self, *, wait: bool = True) -> None:
        """Stop taking jobs; with ``wait``, let running ones finish first."""
        self._stopping.set()
        self._wake.set()
        if wait:
            for thread in self._threads:
                thread.join()

    def pending(self) -> int:
        """Jobs of this pool's queues that are queued or running."""
        with self.ctx.db.session() as session:
            return int(
                session.scalar(
                    select(func.count(Job.id)).where(
                        Job.queue.in_(self.queues), Job.status.in_(("queued", *queue.ACTIVE))
                    )
                )
                or 0
            )

    def wait_idle(self, *, timeout: float | None = None) -> bool:
        """Block until no job of this pool's queues is queued or running; False on timeout."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.pending():
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(self.poll_s / 2)
        return True

    def reap(self) -> None:
        """One reaper cycle now: re-queue or fail jobs whose lease expired, and remove
        sandbox containers whose owner process died (where a Docker engine answers)."""
        with self._reap_lock:
            self._reap(leases=True, orphans=True)

    def _maybe_reap(self) -> None:
        now = time.monotonic()
        leases = now - self._last_reap >= self.reap_every_s
        orphans = now - self._last_orphan_reap >= ORPHAN_REAP_EVERY_S
        if self._outage.down or not (leases or orphans) or not self._reap_lock.acquire(False):
            return
        try:
            self._reap(leases=leases, orphans=orphans)
        finally:
            self._reap_lock.release()

    def _reap(self, *, leases: bool, orphans: bool) -> None:
        now = time.monotonic()
        if leases:
            self._last_reap = now
            try:
                queue.reap_expired(self.ctx)
            except PlatformError as exc:  # the database is away: the outage says so once
                self._outage.failed(exc)
            except Exception:
                logger.warning("reaping expired leases failed", exc_info=True)
        if orphans:
            self._last_orphan_reap = now
            reap_orphans_of_dead_workers()

    def _work(self) -> None:
        owner = worker_identity()
        engine_waits = 0
        while not self._stopping.is_set():
            self._maybe_reap()
            if not faults.claimable(self.ctx):  # its engine or store is down: claim nothing
                self._stopping.wait(faults.backoff_s(self.ctx.settings, engine_waits))
                engine_waits += 1
                continue
            engine_waits = 0
            try:
                job_id = queue.claim_next(
                    self.ctx, owner=owner, queues=self.queues, lease_s=self.lease_s
                )
            except Exception as exc:
                self._stopping.wait(self._outage.failed(exc))
                continue
            self._outage.answered()
            if job_id is None:
                self._wake.wait(self.poll_s)
                self._wake.clear()
                continue
            try:
                execute_claimed(
                    self.ctx, job_id, owner=owner, lease_s=self.lease_s, sandbox=self.sandbox
                )
            except Exception:  # execute_claimed records failures; this is a last resort
                logger.exception("job %s: unexpected error in the worker", job_id)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
