"""A job's lease, kept alive by a heartbeat thread while the job runs.

The heartbeat renews ``lease_expires_at`` every third of the lease and writes the job's
progress with it: examples done of the total, reported by the evaluation
(:meth:`Lease.report`, which only stores two numbers) and written by the heartbeat's own
thread at most once per :data:`PROGRESS_EVERY_S` while it moves (one small UPDATE, not one
per batch; the evaluation never waits for the database). When a renewal finds the lease
gone (the job was cancelled, or reaped because this worker looked dead) it sets ``lost``,
which the evaluation checks between batches and stops on.

A worker that dies mid-job leaves its sandbox container behind as well as its lease;
:func:`reap_orphan_sandboxes`, run by every worker's reaper, removes those containers.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Self

from evalboard.core.context import Context
from evalboard.core.errors import PlatformError
from evalboard.core.scratch import sweep_orphan_scratch
from evaluator.jobs import faults
from evaluator.jobs.queue import DEFAULT_LEASE_S, renew
from submission_sandbox import docker_client, reap_orphans

__all__ = [
    "ORPHAN_REAP_EVERY_S",
    "PROGRESS_EVERY_S",
    "Lease",
    "reap_orphan_sandboxes",
    "reap_orphans_of_dead_workers",
    "worker_identity",
]

logger = logging.getLogger(__name__)

#: How often a worker's reaper looks for orphaned sandbox containers (one engine query).
ORPHAN_REAP_EVERY_S = 300.0

#: The most often a job's progress is written while it moves (seconds): the submitter's
#: page reads it every few seconds, so a second is fresh enough and costs one UPDATE.
PROGRESS_EVERY_S = 1.0


def worker_identity() -> str:
    """``host:pid:thread``: who holds a lease, as shown to operators."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.current_thread().name}"


def reap_orphan_sandboxes() -> list[str]:
    """Remove sandbox containers whose owner process died; the ids removed.

    See :func:`submission_sandbox.reap_orphans`. Never raises: where no Docker engine
    answers there is nothing to reap (logged at debug level), and any other failure is
    logged as a warning, so a worker never stops over it.
    """
    try:
        client = docker_client(timeout=30)
    except PlatformError as exc:
        logger.debug("not looking for orphaned sandbox containers: %s", exc)
        return []
    try:
        removed = reap_orphans(client)
    except Exception:
        logger.warning("removing orphaned sandbox containers failed", exc_info=True)
        return []
    finally:
        client.close()
    if removed:
        logger.info(
            "removed %d orphaned sandbox container(s): %s",
            len(removed),
            ", ".join(container_id[:12] for container_id in removed),
        )
    return removed


def reap_orphans_of_dead_workers() -> None:
    """Everything a killed worker left behind: sandbox containers and scratch folders."""
    reap_orphan_sandboxes()
    try:
        swept = sweep_orphan_scratch()
    except OSError:
        logger.warning("sweeping orphaned scratch folders failed", exc_info=True)
        return
    if swept:
        logger.info("removed %d scratch folder(s) of dead workers", len(swept))


class Lease:
    """Holds a claimed job: ``with Lease(ctx, job_id, owner) as lease: ...``."""

    def __init__(
        self, ctx: Context, job_id: int, owner: str, *, lease_s: float = DEFAULT_LEASE_S
    ) -> None:
        self.ctx = ctx
        self.job_id = job_id
        self.owner = owner
        self.lease_s = lease_s
        self.interval_s = max(lease_s / 3, 0.05)
        #: (examples done, examples in all), as last reported; None before the first batch.
        self.progress: tuple[int, int] | None = None
        #: Set when the lease is gone: stop the job and write nothing.
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"heartbeat-job-{job_id}", daemon=True
        )

    def report(self, done: int, total: int) -> None:
        """The evaluation's progress: stored here, written by the heartbeat's thread."""
        self.progress = (done, total)

    def _beat(self) -> None:
        tick = min(self.interval_s, PROGRESS_EVERY_S)
        written: tuple[int, int] | None = None
        renewed = tried = time.monotonic()  # the last renewal that held, the last try
        failing = False
        while not self._stop.wait(tick):
            now, progress = time.monotonic(), self.progress
            if now - tried < self.interval_s and (failing or progress == written):
                continue  # the lease is fresh and there is nothing new (or: a blip's wait)
            tried = now
            try:
                held = renew(
                    self.ctx,
                    self.job_id,
                    owner=self.owner,
                    lease_s=self.lease_s,
                    progress=progress,
                )
            except Exception as exc:
                # A database blip: try again each interval until the lease would have run out.
                failing = True
                if isinstance(exc, PlatformError):  # the database does not answer
                    faults.DATABASE.went_down(faults.DATABASE_PART)
                else:
                    logger.warning("job %s: heartbeat failed", self.job_id, exc_info=True)
                if now - renewed < self.lease_s:
                    continue
                held = False
            else:
                failing = False
                written, renewed = progress, now
                faults.DATABASE.came_back()
            if not held:
                logger.warning("job %s: lease lost by %s; stopping", self.job_id, self.owner)
                self.lost.set()
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
