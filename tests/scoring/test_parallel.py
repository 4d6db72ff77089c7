"""Row-wise work over the machine's cores: every row once, failures after every part."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from scoring.parallel import MIN_CELLS_PER_PART, over_rows

CORES = len(os.sched_getaffinity(0))


def _record(rows: int, cells_per_row: int) -> list[tuple[slice, int]]:
    seen: list[tuple[slice, int]] = []
    lock = threading.Lock()

    def work(part: slice) -> None:
        with lock:
            seen.append((part, threading.get_ident()))

    over_rows(rows, work, cells_per_row=cells_per_row)
    return seen


@pytest.mark.parametrize("rows", [1, 2, 3, 7, 1000])
def test_every_row_is_given_to_one_part(rows: int) -> None:
    seen = _record(rows, MIN_CELLS_PER_PART)
    covered = sorted(i for part, _ in seen for i in range(rows)[part])
    assert covered == list(range(rows))
    assert len(seen) == min(rows, CORES, 4)


@pytest.mark.skipif(CORES < 2, reason="one core: every part runs in the caller's thread")
def test_large_work_runs_in_several_threads_and_small_work_in_the_callers() -> None:
    assert len({thread for _, thread in _record(100, MIN_CELLS_PER_PART)}) > 1
    small = _record(100, MIN_CELLS_PER_PART // 1000)
    assert [(part, thread) for part, thread in small] == [(slice(0, 100), threading.get_ident())]


def test_work_inside_a_part_runs_in_its_thread() -> None:
    """A part that splits its own work again does it alone (no part waits on the pool
    its own thread belongs to)."""
    inner: list[list[tuple[slice, int]]] = []

    def work(part: slice) -> None:
        inner.append(_record(50, MIN_CELLS_PER_PART))

    over_rows(8, work, cells_per_row=MIN_CELLS_PER_PART)
    assert all(len(seen) == 1 for seen in inner)


def test_the_first_failure_is_raised_once_every_part_is_done() -> None:
    finished: list[slice] = []
    lock = threading.Lock()

    def work(part: slice) -> None:
        if part.start == 0:
            raise ValueError("the first part fails")
        threading.Event().wait(0.05)  # a slow part: the failure waits for it
        with lock:
            finished.append(part)

    with pytest.raises(ValueError, match="the first part fails"):
        over_rows(40, work, cells_per_row=MIN_CELLS_PER_PART)
    assert len(finished) == min(40, CORES, 4) - 1


@pytest.mark.skipif(CORES < 2, reason="one core: no pool is made")
def test_a_forked_process_splits_work_with_threads_of_its_own() -> None:
    """The pool is made before the fork (as a prefork worker's parent would); the child
    has the pool but none of its threads, and still finishes its work."""
    assert len(_record(100, MIN_CELLS_PER_PART)) > 1  # the pool exists, with its threads
    pid = os.fork()
    if pid == 0:  # the child: exit 0 once the work is done, 1 if it fails
        try:
            covered = sorted(
                i for part, _ in _record(100, MIN_CELLS_PER_PART) for i in range(100)[part]
            )
            os._exit(0 if covered == list(range(100)) else 1)
        except BaseException:
            os._exit(1)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            assert os.waitstatus_to_exitcode(status) == 0
            return
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    pytest.fail("the forked process's work never finished")
