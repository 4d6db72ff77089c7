"""The worker's load while a model is timed (evaluator.load)."""

from __future__ import annotations

import subprocess
import sys
import time

import psutil

from evaluator import CONTENDED_SHARE, LoadMeter


def test_another_busy_process_counts_and_the_sandboxs_own_cpu_does_not() -> None:
    busy = subprocess.Popen(
        [sys.executable, "-c", "import time\nend = time.time() + 3\nwhile time.time() < end: pass"]
    )
    try:
        time.sleep(0.3)  # let it start spinning
        child = psutil.Process(busy.pid)
        before = child.cpu_times()
        meter = LoadMeter()
        time.sleep(1.2)
        meter.stop()
        after = child.cpu_times()
    finally:
        busy.kill()
        busy.wait()
    spun = (after.user + after.system) - (before.user + before.system)
    cpus = psutil.cpu_count() or 1
    as_other = meter.load(sandbox_cpu_seconds=None)
    as_sandbox = meter.load(sandbox_cpu_seconds=spun)
    assert spun > 0.3  # it really ran
    # The busy process is someone else's load, unless it is the sandbox being timed.
    assert as_other.others_cpu_share >= min(1.0, spun / (1.3 * cpus)) - 0.05
    assert as_sandbox.others_cpu_share <= as_other.others_cpu_share - spun / (1.3 * cpus) + 0.05
    assert as_other.cpus == cpus
    assert as_other.contended == (as_other.others_cpu_share > CONTENDED_SHARE)
