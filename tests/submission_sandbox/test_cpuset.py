"""Cores of its own for a sandbox: reserved across processes, never the first core."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from evalboard.core.limits import SandboxLimits
from submission_sandbox import open_sandbox
from submission_sandbox.cpuset import reserve_cores

ECHO = (
    "class Model:\n    def __init__(self, d):\n        pass\n    def predict(self, batch):\n"
    "        return [{'label': 'positive'} for _ in batch]\n"
)


def test_reservations_take_the_highest_free_cores_and_never_the_first(tmp_path: Path) -> None:
    cores = [0, 1, 2, 3, 4]
    first = reserve_cores(2, available=cores, slot_dir=tmp_path)
    second = reserve_cores(1.5, available=cores, slot_dir=tmp_path)  # ceil: 2 cores
    assert first is not None and second is not None
    assert first.cores == (3, 4) and first.cpuset == "3,4"
    assert second.cores == (1, 2)
    assert reserve_cores(1, available=cores, slot_dir=tmp_path) is None  # core 0 is kept
    first.release()
    again = reserve_cores(1, available=cores, slot_dir=tmp_path)
    assert again is not None and again.cores == (4,)
    for held in (second, again):
        held.release()


def test_too_few_cores_means_unpinned(tmp_path: Path) -> None:
    assert reserve_cores(2, available=[0, 1], slot_dir=tmp_path) is None
    assert reserve_cores(1, available=[0], slot_dir=tmp_path) is None


def test_a_core_held_by_another_process_is_not_given(tmp_path: Path) -> None:
    # The lock lives with the process that holds it, and goes with it.
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from submission_sandbox.cpuset import reserve_cores\n"
        f"held = reserve_cores(1, available=[0, 1, 2], slot_dir=Path({str(tmp_path)!r}))\n"
        "print(held.cpuset, flush=True)\n"
        "sys.stdin.read()\n"
    )
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "2"
        mine = reserve_cores(1, available=[0, 1, 2], slot_dir=tmp_path)
        assert mine is not None and mine.cores == (1,)
        mine.release()
        assert holder.stdin is not None
        holder.stdin.close()  # the holder exits, and its lock goes with it
    after = reserve_cores(1, available=[0, 1, 2], slot_dir=tmp_path)
    assert after is not None and after.cores == (2,)
    after.release()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="one core: nothing to pin to")
def test_the_local_sandbox_runs_its_model_on_its_cores(tmp_path: Path) -> None:
    (tmp_path / "evalboard.yaml").write_text(
        "name: echo\ntask: sentiment\nruntime: python\nentry: handler:Model\n"
    )
    (tmp_path / "handler.py").write_text(ECHO)
    limits = SandboxLimits(cpus=1, timeout_s=60)
    with open_sandbox(tmp_path, kind="local", limits=limits, pin_cpus=True) as box:
        assert box.cpuset is not None
        pid = box._process.pid  # type: ignore[attr-defined]
        assert os.sched_getaffinity(pid) == {int(box.cpuset)}
        assert box.cpuset != str(min(os.sched_getaffinity(0)))
    with open_sandbox(tmp_path, kind="local", limits=limits) as box:
        assert box.cpuset is None  # off unless asked
