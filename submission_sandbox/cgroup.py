"""Peak memory and CPU time of a container, read from its cgroup on the host.

cgroup v2: ``memory.peak`` and ``usage_usec`` of ``cpu.stat``; v1: the memory
controller's ``memory.max_usage_in_bytes`` and cpuacct's ``cpuacct.usage`` (ns). The
cgroup is found from the container's main process (``/proc/PID/cgroup``), which works for
the cgroupfs and systemd drivers alike. The runtime removes the cgroup when the container
stops, so read it before the model is told to shut down.

:func:`beside` is for comparisons: it runs this process under the same CPU scheduling as
a container (a cgroup of its own next to the container's, with its weight and quota).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CgroupFiles", "beside", "find_cgroup"]

_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class CgroupFiles:
    """Where one process's memory peak and CPU usage live."""

    memory_peak: Path | None
    cpu_usage: Path | None
    version: int

    def peak_memory_bytes(self) -> int | None:
        try:
            return int(self.memory_peak.read_text()) if self.memory_peak else None
        except (OSError, ValueError):
            return None

    def cpu_seconds(self) -> float | None:
        if self.cpu_usage is None:
            return None
        try:
            text = self.cpu_usage.read_text()
        except OSError:
            return None
        if self.version == 1:
            return int(text) / 1e9
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "usage_usec":
                return int(value) / 1e6
        return None


def _controllers(pid: int) -> dict[str, str]:
    """controller -> cgroup path for a process (``""`` is the v2 unified hierarchy)."""
    paths: dict[str, str] = {}
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            paths[controller] = path
    return paths


def find_cgroup(pid: int, *, root: Path = _ROOT) -> CgroupFiles | None:
    """The cgroup files of ``pid``, v1 when its memory controller is there, else v2."""
    try:
        paths = _controllers(pid)
    except (OSError, ValueError):
        return None
    if "memory" in paths:
        memory = root / "memory" / paths["memory"].lstrip("/") / "memory.max_usage_in_bytes"
        cpu_dir = next(
            (
                root / name / paths[key].lstrip("/")
                for name, key in (("cpuacct", "cpuacct"), ("cpu,cpuacct", "cpuacct"))
                if key in paths and (root / name / paths[key].lstrip("/")).is_dir()
            ),
            None,
        )
        cpu = cpu_dir / "cpuacct.usage" if cpu_dir else None
        if memory.is_file():
            return CgroupFiles(memory, cpu if cpu and cpu.is_file() else None, 1)
    if "" in paths:
        for base in (root, root / "unified"):
            directory = base / paths[""].lstrip("/")
            if (directory / "memory.peak").is_file() or (directory / "cpu.stat").is_file():
                peak = directory / "memory.peak"
                stat = directory / "cpu.stat"
                return CgroupFiles(
                    peak if peak.is_file() else None, stat if stat.is_file() else None, 2
                )
    return None


#: The CPU controller's files that decide a cgroup's share of the machine, in the order
#: they are written (v1's period before its quota; v2's cpu.max holds both).
_SHARE_FILES = {
    1: ("cpu.shares", "cpu.cfs_period_us", "cpu.cfs_quota_us"),
    2: ("cpu.weight", "cpu.max"),
}


def _cpu_dir(paths: dict[str, str], root: Path) -> tuple[Path, int] | None:
    """The directory of a process's cgroup in the CPU controller, and its version."""
    if "cpu" in paths:
        for mount in ("cpu", "cpu,cpuacct"):
            directory = root / mount / paths["cpu"].lstrip("/")
            if (directory / "cpu.shares").is_file():
                return directory, 1
    if "" in paths:
        directory = root / paths[""].lstrip("/")
        if (directory / "cpu.weight").is_file():
            return directory, 2
    return None


@contextmanager
def beside(pid: int, *, root: Path = _ROOT) -> Iterator[Path | None]:
    """Run this process, while inside, in a new CPU cgroup next to ``pid``'s (a
    container's main process), with the same CPU weight and quota.

    The scheduler then weighs the two alike against the machine's other work: a container
    competes as one group under the engine's parent (``/docker``: every container of the
    machine), while a process of the root cgroup competes per session (autogroup). Yields
    the new cgroup, or None where it cannot be made (not root, no CPU controller); this
    process goes back to its own cgroup on leaving.
    """
    made: Path | None = None
    home: Path | None = None
    try:
        there, version = _cpu_dir(_controllers(pid), root) or (None, 0)
        here = _cpu_dir(_controllers(os.getpid()), root)
        if there is not None and here is not None and here[1] == version:
            home = here[0]
            made = there.parent / f"evalboard-beside-{os.getpid()}"
            made.mkdir(exist_ok=True)
            for name in _SHARE_FILES[version]:
                (made / name).write_text((there / name).read_text())
            (made / "cgroup.procs").write_text(str(os.getpid()))
    except (OSError, ValueError):
        _leave(made, home)
        made = home = None
    try:
        yield made
    finally:
        _leave(made, home)


def _leave(made: Path | None, home: Path | None) -> None:
    if made is None:
        return
    with suppress(OSError):
        if home is not None:
            (home / "cgroup.procs").write_text(str(os.getpid()))
        made.rmdir()
