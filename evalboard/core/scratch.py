"""Scratch folders that name their owner process, so that a dead owner's can be swept.

A worker killed with SIGKILL never runs its ``finally`` blocks: its temporary folders
(an unpacked bundle, the local sandbox's socket and log) would stay in the temp dir for
good. Every scratch folder is named ``<prefix>-<pid>-<random>``; :func:`sweep_orphan_scratch`
removes those whose process is gone. Only folders of processes on this machine are seen,
which is where they live.

A scratch disk that fills (:func:`scratch_full`) is a fault of the worker's machine, not of
the model: the job fails as ``platform_error`` naming the scratch root and its free space.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import tempfile
from pathlib import Path

__all__ = [
    "SCRATCH_PREFIXES",
    "scratch_dir",
    "scratch_full",
    "scratch_prefix",
    "scratch_tree",
    "sweep_orphan_scratch",
]

#: The kinds of scratch folder Evalboard makes (one word after ``evalboard-``).
SCRATCH_PREFIXES = (
    "evalboard-build",  # a bundle's image build context
    "evalboard-dataset",  # an uploaded dataset file, before it is imported
    "evalboard-demo",  # the demo's bundles being packed for upload
    "evalboard-deps",  # a bundle's dependency set being resolved (beside its cache)
    "evalboard-evaluate",  # `evalboard evaluate`'s unpacked bundle and predictions
    "evalboard-gate",  # the release gate's unpacked bundle
    "evalboard-init",  # `evalboard model init`'s template being trained
    "evalboard-job",  # a worker's job: the fetched bundle
    "evalboard-local",  # the local sandbox's socket and log
    "evalboard-round",  # a closing round's dataset file
    "evalboard-run",  # the docker sandbox's channel socket
    "evalboard-targets",  # the loop's warm target bundles
    "evalboard-test",  # `evalboard model test`'s unpacked bundle
    "evalboard-upload",  # an upload being joined and checked, or a bundle being packed
)
_NAME = re.compile(r"^(?P<prefix>evalboard-[a-z]+)-(?P<pid>\d+)-")


def scratch_prefix(kind: str) -> str:
    """The ``tempfile`` prefix for a scratch folder of this process: ``<kind>-<pid>-``."""
    if kind not in SCRATCH_PREFIXES:
        raise ValueError(f"Unknown scratch kind {kind!r}; known: {', '.join(SCRATCH_PREFIXES)}")
    return f"{kind}-{os.getpid()}-"


def scratch_dir(kind: str) -> Path:
    """A new scratch folder owned by this process (the caller removes it when done)."""
    return Path(tempfile.mkdtemp(prefix=scratch_prefix(kind)))


def scratch_tree(kind: str, *, under: Path | None = None) -> tempfile.TemporaryDirectory[str]:
    """A scratch folder of this process removed when closed (``with scratch_tree(...) as
    name``); ``under`` puts it beside what it works on rather than in the temp dir."""
    return tempfile.TemporaryDirectory(prefix=scratch_prefix(kind), dir=under)


#: Errors that mean the disk (or the user's quota on it) has no room left.
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


def _root(root: Path | None) -> Path:
    return root or Path(tempfile.gettempdir())


def _full_error(exc: BaseException) -> OSError | None:
    # The OSError may be wrapped (tarfile, shutil): follow the chain, as a traceback would.
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in _FULL:
            return current
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return None


def _mib(size: int) -> str:
    return f"{size / 1024**2:.1f} MiB"


def scratch_full(exc: BaseException, root: Path | None = None) -> str | None:
    """What to tell the operator when ``exc`` says the scratch disk is full, else None.

    Names the scratch root (``TMPDIR``, not the job's own folder, which is gone by now)
    and the space free on it now, and says how to fix it.
    """
    if _full_error(exc) is None:
        return None
    base = _root(root)
    try:
        usage = shutil.disk_usage(base)
        space = f"{_mib(usage.free)} free of {_mib(usage.total)}"
    except OSError:
        space = "free space unknown"
    return (
        f"the worker's scratch space at {base} is full ({space}); free space there or point "
        "the worker's TMPDIR at a bigger disk. A platform fault: it does not count against "
        "the submitter's quota"
    )


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
    base = _root(root)
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
