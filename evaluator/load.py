"""How busy the worker was while a model was timed: a figure taken on a loaded machine
says so.

Throughput and latency are wall-clock figures: another process on the same cores slows
the model down (on a busy 2-core server, 0.55-0.65 of the same model measured alone).
:class:`LoadMeter` reads the machine's CPU time around the timed phase and subtracts the
sandbox's own and this process's: what is left is other processes' share of the machine.
Above :data:`CONTENDED_SHARE` the figures are marked as measured under contention.
"""

from __future__ import annotations

import os
import time

import psutil
from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CONTENDED_SHARE", "LoadMeter", "WorkerLoad"]

CONTENDED_SHARE = 0.25
"""Other processes using more than this share of the machine's CPU time: contended."""


class WorkerLoad(BaseModel):
    """The worker's load while a dataset was timed."""

    model_config = ConfigDict(extra="forbid")

    others_cpu_share: float = Field(
        ge=0, le=1, description="Share of the machine's CPU time other processes used."
    )
    loadavg_1m: float | None = Field(None, description="The 1-minute load average at the end.")
    cpus: int = Field(ge=1, description="Logical CPUs of the worker.")
    contended: bool = Field(description="others_cpu_share above CONTENDED_SHARE.")
    cpuset: str | None = Field(
        None,
        description="The cores the sandbox was pinned to (EVALBOARD_CPU_PINNING=auto); "
        "None: it shared every core.",
    )


def _busy_seconds() -> float:
    times = psutil.cpu_times()
    idle = times.idle + getattr(times, "iowait", 0.0)
    return float(sum(times) - idle)


def _own_seconds() -> float:
    own = psutil.Process().cpu_times()
    return float(own.user + own.system)


class LoadMeter:
    """Made before the timed phase; :meth:`stop` after it; :meth:`load` once the sandbox's
    CPU time is known."""

    def __init__(self) -> None:
        self._started = time.perf_counter()
        self._busy = _busy_seconds()
        self._own = _own_seconds()
        self._wall = 0.0
        self._others = 0.0

    def stop(self) -> None:
        """End the timed phase."""
        self._wall = time.perf_counter() - self._started
        self._others = _busy_seconds() - self._busy - (_own_seconds() - self._own)

    def load(self, *, sandbox_cpu_seconds: float | None, cpuset: str | None = None) -> WorkerLoad:
        """Other processes' share of the machine during the timed phase.

        ``sandbox_cpu_seconds`` may cover more than the timed phase (start-up too); the
        share is then an underestimate, never an overestimate, of the contention.
        """
        wall = self._wall
        cpus = psutil.cpu_count() or 1
        others = self._others - (sandbox_cpu_seconds or 0.0)
        share = min(1.0, max(0.0, others / (wall * cpus))) if wall > 0 else 0.0
        try:
            loadavg: float | None = os.getloadavg()[0]
        except OSError:  # not every platform has one
            loadavg = None
        return WorkerLoad(
            others_cpu_share=share,
            loadavg_1m=loadavg,
            cpus=cpus,
            contended=share > CONTENDED_SHARE,
            cpuset=cpuset,
        )
