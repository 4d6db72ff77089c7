"""A job's lease, kept alive by a heartbeat thread while the job runs.

The heartbeat renews ``lease_expires_at`` every third of the lease and writes the job's
progress with it (one small UPDATE, not one per batch). When a renewal finds the lease
gone (the job was cancelled, or reaped because this worker looked dead) it sets ``lost``,
which the evaluation checks between batches and stops on.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from types import TracebackType
from typing import Self

from evalboard.core.context import Context
from evaluator.queue import DEFAULT_LEASE_S, renew

__all__ = ["Lease", "worker_identity"]

logger = logging.getLogger(__name__)


def worker_identity() -> str:
    """``host:pid:thread``: who holds a lease, as shown to operators."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.current_thread().name}"


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
        self.progress: float | None = None
        #: Set when the lease is gone: stop the job and write nothing.
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"heartbeat-job-{job_id}", daemon=True
        )

    def _beat(self) -> None:
        failures = 0
        while not self._stop.wait(self.interval_s):
            try:
                held = renew(
                    self.ctx,
                    self.job_id,
                    owner=self.owner,
                    lease_s=self.lease_s,
                    progress=self.progress,
                )
            except Exception:
                # A database blip: keep trying until the lease would have run out.
                failures += 1
                logger.warning("job %s: heartbeat failed", self.job_id, exc_info=True)
                if failures * self.interval_s < self.lease_s:
                    continue
                held = False
            else:
                failures = 0
            if not held:
                logger.warning("job %s: lease lost by %s; stopping", self.job_id, self.owner)
                self.lost.set()
                return

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stop.set()
        self._thread.join()
