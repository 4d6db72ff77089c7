"""Where a number came from: the machine and the versions (the bundle's digest is
``submission_sandbox.bundle_digest``)."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import threading
from contextlib import suppress
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

from evaluator.result import PowerModel, Provenance

__all__ = [
    "collect",
    "cpu_count",
    "cpu_model",
    "cpuinfo",
    "evaluator_version",
    "gpu_name",
    "look_up_machine",
]


def evaluator_version() -> str:
    from evalboard import __version__

    return f"evalboard {__version__}"


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo``), or what platform knows."""
    return cpuinfo().get("model name") or platform.processor() or platform.machine()


def cpuinfo(path: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """``/proc/cpuinfo``'s fields, names lowercased, each as it first appears (the first
    processor's); empty where there is no such file."""
    fields: dict[str, str] = {}
    with suppress(OSError):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            name, _, value = line.partition(":")
            fields.setdefault(name.strip().lower(), value.strip())
    return fields


def cpu_count() -> int:
    return (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)
    )


@lru_cache(maxsize=1)
def gpu_name() -> str | None:
    """The first NVIDIA GPU's name, None where there is none (or no driver)."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return names[0] if names else None


def look_up_machine() -> None:
    """Find, in a thread, what :func:`collect` reads of the machine that takes a while:
    ``platform.platform()`` runs ``uname -p`` (about 11 ms) the first time in a process,
    then answers from its cache. Called as an evaluation starts, the look-up runs while
    the sandbox starts and the model answers, and ``collect`` records the same value."""
    threading.Thread(target=platform.platform, name="look-up-machine", daemon=True).start()


def collect(
    *,
    bundle_sha256: str,
    image_digest: str | None,
    dataset_sha256: dict[str, str],
    sandbox: str,
    sandbox_isolating: bool,
    limits: dict[str, Any],
    gpu: str | None,
    started_at: datetime,
    seed: int = 0,
    power: PowerModel | None = None,
) -> Provenance:
    """A result's provenance, finished now: what the run reports, and this machine's facts.

    The one builder for the CLI's whole evaluation and a worker's single job alike.
    """
    return Provenance(
        bundle_sha256=bundle_sha256,
        image_digest=image_digest,
        dataset_sha256=dataset_sha256,
        evaluator_version=evaluator_version(),
        sandbox=sandbox,
        sandbox_isolating=sandbox_isolating,
        limits=limits,
        cpu_model=cpu_model(),
        cpu_count=cpu_count(),
        gpu=gpu or gpu_name(),
        seed=seed,
        power=power,
        python=platform.python_version(),
        platform=platform.platform(),
        started_at=started_at,
        finished_at=datetime.now(UTC),
    )
