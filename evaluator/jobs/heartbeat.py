"""A worker process's heartbeat: the readiness of its parts, written where ``/ready`` reads.

Every ``evalboard worker`` (pool or Celery) runs one :class:`WorkerHeartbeat` thread. Each
beat probes the parts the worker needs (its sandbox engine, when its sandbox uses one, and
the artifact store), updates :data:`evaluator.jobs.faults.ENGINE` / ``STORE`` (so an idle
worker stops claiming, and resumes, without a job having to fail first), and upserts one
``worker_beats`` row. A row lives ``LIVE_BEATS`` beats: a worker that dies, or that lost
the database, drops out of :func:`live_workers` by itself. A clean stop removes its row.

The first beat is the worker's readiness, which ``evalboard worker`` says at start.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from dataclasses import dataclass
from datetime import timedelta
from typing import Self

from sqlalchemy import delete, select

from evalboard.core.context import Context
from evalboard.core.tables import WorkerBeat, utcnow
from evaluator.jobs import faults

__all__ = [
    "BEAT_S",
    "LIVE_BEATS",
    "Readiness",
    "WorkerHeartbeat",
    "live_workers",
    "probe_parts",
]

logger = logging.getLogger(__name__)

#: Seconds between beats (an engine ping, a store ``exists`` and one upsert).
BEAT_S = 15.0
#: A worker missing this many beats in a row is no longer live.
LIVE_BEATS = 3


@dataclass(frozen=True)
class Readiness:
    """What one beat found: ``engine`` is ``ok``, ``down`` or ``unused`` (a ``local``
    sandbox); ``store`` is ``ok`` or ``down``; ``faults`` says what does not answer."""

    engine: str
    store: str
    faults: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return not self.faults

    def summary(self, sandbox: str) -> str:
        """One line: each part and its state (what does not answer is in ``faults``)."""
        database = "down" if faults.DATABASE_PART in self.faults else "ok"
        return (
            f"database {database}, artifact store {self.store}, "
            f"sandbox engine {self.engine} ({sandbox})"
        )


def probe_parts(ctx: Context, sandbox: str) -> Readiness:
    """Ask this worker's parts whether they answer, and tell the claim gates."""
    found: list[str] = []
    engine = "unused"
    if sandbox in faults.ENGINE_KINDS:
        why = faults.engine_fault()
        engine = "ok" if why is None else "down"
        if why is None:
            faults.ENGINE.came_back()
        else:
            faults.ENGINE.went_down(why)
            found.append(why)
    why = faults.store_fault(ctx)
    if why is None:
        faults.STORE.came_back()
    else:
        faults.STORE.went_down(why)
        found.append(why)
    return Readiness(engine=engine, store="ok" if why is None else "down", faults=tuple(found))


class WorkerHeartbeat:
    """The heartbeat thread of one worker process (a context manager: start, stop)."""

    def __init__(self, ctx: Context, *, sandbox: str | None = None, every_s: float = BEAT_S):
        self.ctx = ctx
        self.sandbox = sandbox or ctx.settings.sandbox
        self.every_s = every_s
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def beat(self) -> Readiness:
        """Probe the parts and write this worker's row (a database fault is told to
        :data:`evaluator.jobs.faults.DATABASE` and retried at the next beat: the heartbeat never
        stops the worker)."""
        found = probe_parts(self.ctx, self.sandbox)
        now = utcnow()
        row = WorkerBeat(
            name=self.name,
            engine=found.engine,
            store=found.store,
            seen_at=now,
            expires_at=now + timedelta(seconds=self.every_s * LIVE_BEATS),
        )
        try:
            with self.ctx.db.session() as session:
                # Rows of workers long gone (SIGKILLed: no clean stop) go with any beat.
                session.execute(delete(WorkerBeat).where(WorkerBeat.expires_at < now))
                session.merge(row)
        except Exception as exc:
            logger.debug("the heartbeat cannot reach the database: %s", exc)
            faults.DATABASE.went_down(faults.DATABASE_PART)
            return Readiness(found.engine, found.store, (*found.faults, faults.DATABASE_PART))
        faults.DATABASE.came_back()
        return found

    def start(self) -> Readiness:
        """The first beat (this worker's readiness, for the caller to say); then one beat
        every ``every_s`` in a thread."""
        found = self.beat()
        self._thread = threading.Thread(target=self._run, name="evalboard-heartbeat", daemon=True)
        self._thread.start()
        return found

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            try:
                self.beat()
            except Exception:  # a heartbeat never takes its worker down
                logger.warning("heartbeat failed", exc_info=True)

    def stop(self) -> None:
        """Stop beating and remove this worker's row (it is no longer live)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            with self.ctx.db.session() as session:
                session.execute(delete(WorkerBeat).where(WorkerBeat.name == self.name))
        except Exception:  # the row expires by itself
            logger.debug("removing the heartbeat row failed", exc_info=True)

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def live_workers(ctx: Context) -> list[WorkerBeat]:
    """The workers whose last beat has not expired (one small indexed query)."""
    with ctx.db.session() as session:
        rows = list(
            session.scalars(
                select(WorkerBeat)
                .where(WorkerBeat.expires_at > utcnow())
                .order_by(WorkerBeat.seen_at)
            )
        )
        session.expunge_all()
        return rows
