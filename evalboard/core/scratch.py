"""Scratch folders that name their owner process, so that a dead owner's can be swept.

A worker killed with SIGKILL never runs its ``finally`` blocks: its temporary folders
(an unpacked bundle, the local sandbox's socket and log) would stay in the temp dir for
good. Every scratch folder is named ``<prefix>-<pid>-<random>``; :func:`sweep_orphan_scratch`
removes those whose process is gone. Only folders of processes on this machine are seen,
which is where they live.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = ["SCRATCH_PREFIXES", "scratch_dir", "scratch_prefix", "sweep_orphan_scratch"]

#: The kinds of scratch folder Evalboard makes.
SCRATCH_PREFIXES = ("evalboard-job", "evalboard-local")
_NAME = re.compile(r"^(?P<prefix>evalboard-[a-z]+)-(?P<pid>\d+)-")


def scratch_prefix(kind: str) -> str:
    """The ``tempfile`` prefix for a scratch folder of this process: ``<kind>-<pid>-``."""
    if kind not in SCRATCH_PREFIXES:
        raise ValueError(f"Unknown scratch kind {kind!r}; known: {', '.join(SCRATCH_PREFIXES)}")
    return f"{kind}-{os.getpid()}-"


def scratch_dir(kind: str) -> Path:
    """A new scratch folder owned by this process (the caller removes it when done)."""
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(kind)))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def sweep_orphan_scratch(root: Path | None = None) -> list[Path]:
    """Remove the scratch folders whose owner process has died; the folders removed."""
    base = root or Path(tempfile.gettempdir())
    removed = []
    for entry in base.iterdir():
        match = _NAME.match(entry.name)
        if match is None or match["prefix"] not in SCRATCH_PREFIXES or not entry.is_dir():
            continue
        if _alive(int(match["pid"])):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed
