"""Where a number came from: the bundle's hash, the machine, the versions, the seed."""

from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

__all__ = ["bundle_sha256", "cpu_model", "evaluator_version", "gpu_name", "python_version"]

_CHUNK = 1024 * 1024


def bundle_sha256(path: Path) -> str:
    """sha256 of an archive's bytes, or of a directory's sorted (path, content) pairs.

    The directory form ignores timestamps and permissions, so the same files give the same
    hash on every machine; ``__pycache__`` folders are left out.
    """
    if path.is_file():
        digest = hashlib.sha256()
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        return digest.hexdigest()
    digest = hashlib.sha256()
    files = sorted(
        p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    for file in files:
        digest.update(file.relative_to(path).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            inner = hashlib.sha256()
            while chunk := handle.read(_CHUNK):
                inner.update(chunk)
        digest.update(inner.hexdigest().encode() + b"\n")
    return digest.hexdigest()


def evaluator_version() -> str:
    from evalboard import __version__

    return f"evalboard {__version__}"


def python_version() -> str:
    return platform.python_version()


@lru_cache(maxsize=1)
def cpu_model() -> str:
    """The CPU's marketing name (``/proc/cpuinfo``), or what platform knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 0
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
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    names = [line.strip() for line in out.splitlines() if line.strip()]
    return names[0] if names else None
