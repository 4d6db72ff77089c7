"""What every benchmark's results file carries, written one way: where it was measured,
and each figure as a median with its range."""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["load_average", "machine", "reference_speed", "save", "spread", "user_env"]


def machine() -> dict[str, Any]:
    """The machine and versions a figure was measured with (spread out into a report), and
    how fast it was then (:func:`reference_speed`)."""
    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "machine": platform.machine(),
        "reference_ms": reference_speed(),
    }


def reference_speed(repeats: int = 3) -> dict[str, float]:
    """Milliseconds of two fixed pieces of work, best of ``repeats``: a 1,000,000-step
    Python loop and sorting 1,000 rows of 10,000 floats. The shared machines this project
    runs on differ by about 3x (numpy's argsort of such rows: ~120 ms on one, ~400 ms on
    another), so a figure from one machine is compared with another's through these."""
    values = np.random.default_rng(0).random((1_000, 10_000))
    loop, sort = [], []
    for _ in range(repeats):
        start = time.perf_counter()
        total = 0
        for i in range(1_000_000):
            total += i
        loop.append(time.perf_counter() - start)
        start = time.perf_counter()
        np.sort(values, axis=1)
        sort.append(time.perf_counter() - start)
    return {"python_loop": round(min(loop) * 1000, 1), "numpy_sort": round(min(sort) * 1000, 1)}


def user_env(**extra: str) -> dict[str, str]:
    """The environment for a command timed as a user runs it: Python writes and reuses its
    bytecode. (Some machines set PYTHONDONTWRITEBYTECODE; every import of the project's own
    modules then compiles them from source, measured 1.3 s of a 3 s ``evaluate`` start.)"""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, **extra}


def load_average() -> float:
    """The 1-minute load average now: a figure taken on a busy machine says so."""
    return round(os.getloadavg()[0], 2)


def spread(samples: Sequence[float], digits: int = 4) -> dict[str, Any]:
    """A figure measured several times: its median, least and greatest value, and count.

    The README states each figure as its median with this range (``make bench`` is expected
    to land inside it on a machine as quiet as the one that measured it).

    >>> spread([3.0, 1.0, 2.0])
    {'median': 2.0, 'min': 1.0, 'max': 3.0, 'runs': 3}
    """
    if not samples:
        raise ValueError("a spread needs at least one sample")
    return {
        "median": round(statistics.median(samples), digits),
        "min": round(min(samples), digits),
        "max": round(max(samples), digits),
        "runs": len(samples),
    }


def save(path: Path, report: dict[str, Any]) -> None:
    """Write ``report`` as indented JSON at ``path`` (its folder made if need be)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
