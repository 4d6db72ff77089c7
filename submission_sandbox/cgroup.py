"""Peak memory and CPU time of a container, read from its cgroup on the host.

cgroup v2: ``memory.peak`` and ``usage_usec`` of ``cpu.stat``; v1: the memory
controller's ``memory.max_usage_in_bytes`` and cpuacct's ``cpuacct.usage`` (ns). The
cgroup is found from the container's main process (``/proc/PID/cgroup``), which works for
the cgroupfs and systemd drivers alike. The runtime removes the cgroup when the container
stops, so read it before the model is told to shut down.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CgroupFiles", "find_cgroup"]

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
