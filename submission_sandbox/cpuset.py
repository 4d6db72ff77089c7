"""Cores of its own for a sandbox, so that a busy neighbour moves its figures less.

Throughput is a wall-clock figure: on a shared worker another process on the same cores
slows the model down. With pinning on (``EVALBOARD_CPU_PINNING=auto``) each sandbox
reserves ``ceil(limits.cpus)`` cores that no other sandbox of this machine holds and runs
on those only (docker's ``cpuset_cpus``; the local sandbox's CPU affinity). The first core
this process may use is never given out: the evaluator reads and checks answers there, and
the system's other work gathers there. Where too few cores are free (a 2-core machine and
a 2-CPU limit), the sandbox runs unpinned, and its result says so
(:attr:`Sandbox.cpuset` is None).

Reservations are ``flock`` locks on one file per core in a folder every process of the
machine shares, so they hold across workers and data directories, and a process that dies
gives its cores back with its open files.
"""

from __future__ import annotations

import fcntl
import math
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

__all__ = ["PINNING_MODES", "CoreReservation", "reserve_cores"]

PINNING_MODES = ("off", "auto")
SLOT_DIR = Path(tempfile.gettempdir()) / "evalboard-cpu-slots"


@dataclass
class CoreReservation:
    """Cores held for one sandbox until :meth:`release`."""

    cores: tuple[int, ...]
    _locks: list[IO[bytes]] = field(default_factory=list, repr=False)

    @property
    def cpuset(self) -> str:
        """The cores as docker's ``cpuset_cpus`` writes them (``3`` or ``2,3``)."""
        return ",".join(str(core) for core in self.cores)

    def release(self) -> None:
        """Give the cores back (closing a lock file releases its lock)."""
        for lock in self._locks:
            lock.close()
        self._locks.clear()


def _hold(slot_dir: Path, core: int) -> IO[bytes] | None:
    handle = open(slot_dir / f"core-{core}.lock", "ab")  # noqa: SIM115 - held until release
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


def reserve_cores(
    cpus: float,
    *,
    available: Sequence[int] | None = None,
    slot_dir: Path = SLOT_DIR,
) -> CoreReservation | None:
    """Reserve ``ceil(cpus)`` cores no other sandbox of this machine holds; None where
    that many are not free (the first available core is never given out).

    Args:
        cpus: the sandbox's CPU limit.
        available: the cores to choose from (default: those this process may run on).
        slot_dir: where the per-core lock files live (shared by the machine's processes).
    """
    count = max(1, math.ceil(cpus))
    cores = sorted(available if available is not None else os.sched_getaffinity(0))
    candidates = cores[1:]
    if len(candidates) < count:
        return None
    slot_dir.mkdir(parents=True, exist_ok=True)
    # Windows from the highest cores down: the system's own work tends to the low ones.
    for start in range(len(candidates) - count, -1, -1):
        window = candidates[start : start + count]
        held = []
        for core in window:
            lock = _hold(slot_dir, core)
            if lock is None:
                break
            held.append(lock)
        if len(held) == count:
            return CoreReservation(tuple(window), held)
        for lock in held:
            lock.close()
    return None
