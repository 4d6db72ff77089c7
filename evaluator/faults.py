"""Faults of the platform's own parts are waits, not failures.

When a job meets an error of ours, :func:`unreachable_part` asks the parts it needs whether
they answer: the sandbox engine (Docker, for the ``docker``/``gvisor``/``auto`` sandboxes)
and the artifact store. Probing rather than classifying exceptions: an engine that goes
away mid-run surfaces as a dozen different errors (a refused socket, a broken attach, a
``requests`` timeout), but "does it answer a ping now" has one answer.

A job whose part is unreachable goes back to the queue with a capped, jittered,
exponential :func:`backoff_s`, and fails as ``platform_error`` only once the run of faults
has lasted ``EVALBOARD_PLATFORM_FAULT_BUDGET_S``. Meanwhile :data:`ENGINE` tells the
worker (pool thread or Celery task) to stop claiming until the engine answers again,
saying so once when it goes and once when it comes back.
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

__all__ = ["ENGINE", "EngineWatch", "backoff_s", "unreachable_part"]

logger = logging.getLogger(__name__)

#: Sandboxes that run in the local Docker engine (``local`` needs none).
_ENGINE_KINDS = frozenset({"auto", "docker", "gvisor"})
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


def _engine_fault() -> str | None:
    host = os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"
    try:
        client = docker_client(timeout=5)
    except Exception as exc:  # PlatformError, or anything the SDK raises on a dead socket
        logger.debug("engine probe failed: %s", exc)
        return f"the Docker engine at {host}"
    client.close()
    return None


def _store_fault(ctx: Context) -> str | None:
    try:
        ctx.artifacts.exists(_STORE_PROBE_KEY)
    except Exception as exc:  # fsspec backends raise OSError, botocore errors, timeouts
        return f"the artifact store {ctx.settings.artifacts} ({type(exc).__name__}: {exc})"
    return None


def unreachable_part(ctx: Context, sandbox: str) -> str | None:
    """What this job needs that does not answer now (None: every part answers, so the
    error was something else). Marks :data:`ENGINE` down when it is the engine."""
    if sandbox in _ENGINE_KINDS:
        fault = _engine_fault()
        if fault is not None:
            ENGINE.went_down(fault)
            return fault
    return _store_fault(ctx)


class EngineWatch:
    """One process's view of its sandbox engine: claiming pauses while it is down.

    Thread-safe; the pool's threads and Celery's task threads share :data:`ENGINE`.
    ``probe`` returns None when the engine answers, else what is wrong (injectable).
    """

    def __init__(self, probe: Callable[[], str | None] = _engine_fault) -> None:
        self._probe = probe
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

    def check(self) -> bool:
        """Probe the engine if it was down; True when it answers (logged once on return)."""
        if self._down is None:
            return True
        why = self._probe()
        with self._lock:
            if why is None:
                if self._down is not None:
                    logger.warning("the Docker engine answers again: this worker claims jobs")
                    _remove_leftovers()
                self._down = None
                return True
            self._down = why
            return False

    def wait_until_up(self, settings: Settings, *, stop: Any, limit_s: float) -> bool:
        """Probe with back-off until the engine answers, ``stop`` is set, or ``limit_s``
        passes; True when it answers."""
        waited, tries = 0.0, 0
        while not self.check():
            pause = min(backoff_s(settings, tries), max(limit_s - waited, 0.0))
            if pause <= 0 or stop.wait(pause):
                return False
            waited, tries = waited + pause, tries + 1
        return True


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
