"""cgroup.beside: this process scheduled like another one (its CPU weight and quota)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from submission_sandbox.cgroup import beside

CPU = Path("/sys/fs/cgroup/cpu")


def _cpu_path(pid: int) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        if "cpu" in controllers.split(","):
            return path
    raise AssertionError("no cpu controller")


@pytest.mark.skipif(
    not (CPU / "cpu.shares").is_file() or not os.access(CPU, os.W_OK),
    reason="needs the cgroup v1 CPU controller, writable (root)",
)
def test_this_process_runs_beside_another_with_its_share_and_quota() -> None:
    group = CPU / f"evalboard-test-{os.getpid()}"
    group.mkdir()
    neighbour = subprocess.Popen(["sleep", "30"])
    home = _cpu_path(os.getpid())
    try:
        (group / "cpu.shares").write_text("512")
        (group / "cpu.cfs_quota_us").write_text("50000")
        (group / "cgroup.procs").write_text(str(neighbour.pid))
        with beside(neighbour.pid) as made:
            assert made is not None and made.parent == group.parent
            assert _cpu_path(os.getpid()) == "/" + str(made.relative_to(CPU))
            assert (made / "cpu.shares").read_text().strip() == "512"
            assert (made / "cpu.cfs_quota_us").read_text().strip() == "50000"
        assert _cpu_path(os.getpid()) == home
        assert not made.exists()
    finally:
        neighbour.kill()
        neighbour.wait()
        group.rmdir()
