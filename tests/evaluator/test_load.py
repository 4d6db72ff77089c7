"""The worker's load while a model is timed (evaluator.load)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from evaluator import CONTENDED_SHARE, LoadMeter


def _cpu(process: psutil.Process) -> float:
    times = process.cpu_times()
    return float(times.user + times.system)


def test_another_busy_process_counts_and_the_sandboxs_own_cpu_does_not() -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 60\nwhile time.time() < end: pass"]
    )
    try:
        child = psutil.Process(busy.pid)
        started = time.perf_counter()
        meter = LoadMeter()
        before = _cpu(child)  # read inside the meter's window, as is every later read
        # At least 1.2 s, and until it has spun half a second: a loaded machine gives it less.
        while (spun := _cpu(child) - before) < 0.5 or time.perf_counter() - started < 1.2:
            assert time.perf_counter() - started < 50, f"the busy process spun {spun:.2f} s"
            time.sleep(0.1)
        meter.stop()
        wall = time.perf_counter() - started  # the meter's window, or a little more
    finally:
        busy.kill()
        busy.wait()
    cpus = psutil.cpu_count() or 1
    as_other = meter.load(sandbox_cpu_seconds=None)
    as_sandbox = meter.load(sandbox_cpu_seconds=spun)
    share = spun / (wall * cpus)  # no more than its share of the meter's window
    # The busy process is someone else's load, unless it is the sandbox being timed.
    assert as_other.others_cpu_share >= min(1.0, share) - 0.05
    assert as_sandbox.others_cpu_share <= as_other.others_cpu_share - share + 0.05
    assert as_other.cpus == cpus
    assert as_other.contended == (as_other.others_cpu_share > CONTENDED_SHARE)
