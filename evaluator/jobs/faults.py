"""Faults of the platform's own parts are waits, not failures.

When a job meets an error of ours, :func:`unreachable_part` asks the parts it needs whether
they answer: the sandbox engine (Docker, for the ``docker``/``gvisor``/``auto`` sandboxes)
and the artifact store. Probing rather than classifying exceptions: an engine that goes
away mid-run surfaces as a dozen different errors (a refused socket, a broken attach, a
``requests`` timeout), but "does it answer a ping now" has one answer.

A job whose part is unreachable goes back to the queue with a capped, jittered,
exponential :func:`backoff_s`, and fails as ``platform_error`` only once the run of faults
has lasted ``EVALBOARD_PLATFORM_FAULT_BUDGET_S``. Meanwhile :data:`ENGINE` and
:data:`STORE` tell the worker (pool thread or Celery task) to stop claiming until the part
answers again, saying so once when it goes and once when it comes back. The worker's
heartbeat (:mod:`evaluator.jobs.heartbeat`) probes both, so an idle worker notices too.

The database is the one part a job cannot be deferred through (the queue lives there):
whoever meets it away (a pool thread, the reaper, a lease's heartbeat, the heartbeat, a job
writing its result) backs off and retries, and :data:`DATABASE` says so once per process
each way.
"""

from __future__ import annotations

import logging
import os
import random
import threading
from collections.abc import Callable
from typing import Any

from evalboard.core.context import Context
from evalboard.core.settings import Settings
from submission_sandbox import docker_client, reap_orphans

__all__ = [
    "DATABASE",
    "DATABASE_PART",
    "ENGINE",
    "ENGINE_KINDS",
    "STORE",
    "EngineWatch",
    "PartWatch",
    "backoff_s",
    "claimable",
    "engine_fault",
    "store_fault",
    "unreachable_part",
]

logger = logging.getLogger(__name__)

#: Sandboxes that run in the local Docker engine (``local`` needs none).
ENGINE_KINDS = frozenset({"auto", "docker", "gvisor"})
#: A key no one writes: asking whether it exists is the cheapest round trip to the store.
_STORE_PROBE_KEY = ".evalboard-probe"


def backoff_s(
    settings: Settings, faults: int, *, rng: Callable[[], float] = random.random
) -> float:
    """The wait before retry number ``faults + 1``: doubling from ``platform_backoff_s``,
    capped at ``platform_backoff_max_s``, then jittered down by up to half so that the jobs
    of one outage do not all come back in the same second."""
    ceiling = min(
        settings.platform_backoff_max_s, settings.platform_backoff_s * 2.0 ** min(faults, 30)
    )
    return ceiling * (0.5 + 0.5 * rng())


def engine_fault() -> str | None:
    """None when the Docker engine answers a ping, else what does not answer."""
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker_client(timeout=5)
    except Exception as exc:  # PlatformError, or anything the SDK raises on a dead socket
        logger.debug("engine probe failed: %s", exc)
        return f"the Docker engine at {host}"
    client.close()
    return None


def store_fault(ctx: Context) -> str | None:
    """None when the artifact store answers, else what does not answer (with its URL:
    for logs and job messages, never for anonymous callers)."""
    try:
        ctx.artifacts.exists(_STORE_PROBE_KEY)
    except Exception as exc:  # fsspec backends raise OSError, botocore errors, timeouts
        return f"the artifact store {ctx.settings.artifacts} ({type(exc).__name__}: {exc})"
    return None


def unreachable_part(ctx: Context, sandbox: str) -> str | None:
    """What this job needs that does not answer now (None: every part answers, so the
    error was something else). Marks :data:`ENGINE` or :data:`STORE` down."""
    if sandbox in ENGINE_KINDS:
        fault = engine_fault()
        if fault is not None:
            ENGINE.went_down(fault)
            return fault
    fault = store_fault(ctx)
    if fault is not None:
        STORE.went_down(fault)
    return fault


class PartWatch:
    """One process's view of one part (its engine, its store): claiming pauses while it
    is down.

    Thread-safe; the pool's threads and Celery's task threads share one watch. ``probe``
    returns None when the part answers, else what is wrong (injectable; a call may pass
    its own, for parts that need a context to be asked). ``back`` is said once when the
    part answers again, after which ``on_back`` runs (cleaning up what the outage left).
    """

    def __init__(
        self,
        probe: Callable[[], str | None] | None = None,
        *,
        back: str = "the part answers again",
        on_back: Callable[[], None] | None = None,
    ) -> None:
        self._probe = probe
        self._back = back
        self._on_back = on_back
        self._lock = threading.Lock()
        self._down: str | None = None

    @property
    def down(self) -> bool:
        return self._down is not None

    def went_down(self, why: str) -> None:
        with self._lock:
            if self._down is None:
                logger.warning("%s does not answer: this worker stops claiming jobs", why)
            self._down = why

    def came_back(self) -> None:
        """The part answered (a probe made elsewhere, such as the heartbeat's)."""
        with self._lock:
            was_down, self._down = self._down is not None, None
        if was_down:
            logger.warning("%s: this worker claims jobs", self._back)
            if self._on_back is not None:
                self._on_back()

    def check(self, probe: Callable[[], str | None] | None = None) -> bool:
        """Probe the part if it was down; True when it answers (logged once on return)."""
        if self._down is None:
            return True
        ask = probe or self._probe
        why = ask() if ask is not None else None
        if why is None:
            self.came_back()
            return True
        with self._lock:
            self._down = why
        return False

    def wait_until_up(
        self,
        settings: Settings,
        *,
        stop: Any,
        limit_s: float,
        probe: Callable[[], str | None] | None = None,
    ) -> bool:
        """Probe with back-off until the part answers, ``stop`` is set, or ``limit_s``
        passes; True when it answers."""
        waited, tries = 0.0, 0
        while not self.check(probe):
            pause = min(backoff_s(settings, tries), max(limit_s - waited, 0.0))
            if pause <= 0 or stop.wait(pause):
                return False
            waited, tries = waited + pause, tries + 1
        return True


class EngineWatch(PartWatch):
    """The watch of a Docker engine: on its return, the containers the outage kept from
    removal are removed."""

    def __init__(self, probe: Callable[[], str | None] | None = None) -> None:
        super().__init__(
            probe or engine_fault,
            back="the Docker engine answers again",
            on_back=_remove_leftovers,
        )


def claimable(ctx: Context) -> bool:
    """Whether this worker may claim now: its engine and its store answer (each probed
    only while it is down)."""
    return ENGINE.check() and STORE.check(lambda: store_fault(ctx))


def _remove_leftovers() -> None:
    # Containers whose removal the outage interrupted (and any of dead workers).
    try:
        removed = reap_orphans()
    except Exception:
        logger.warning("removing containers left by the outage failed", exc_info=True)
        return
    if removed:
        logger.warning("removed %d sandbox container(s) left by the outage", len(removed))


#: The engine this process's sandboxes run in.
ENGINE = EngineWatch()
#: The artifact store this process reads bundles from and writes predictions to.
STORE = PartWatch(back="the artifact store answers again")
#: How the database is named in the lines and in a worker's faults.
DATABASE_PART = "the database"
#: The database (the queue, the results): told by whoever meets it away or back, never
#: probed by the watch itself.
DATABASE = PartWatch(back=f"{DATABASE_PART} answers again")
