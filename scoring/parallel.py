"""Row-wise array work split over the machine's cores, for one request's latency.

numpy lets go of the interpreter's lock inside its loops (``take``, the ufuncs, ``sort``,
``searchsorted``), so a few threads, each given some rows of a ``(resamples, models)``
array, run on as many cores at once: a page's rank intervals under new metric weights at
10,000 models took 37 ms on this project's two cores, not 63 (the request 59 ms, not 75;
benchmarks/bench_leaderboard.py). The figures are the same bit for
bit however the rows are split: each row is made by the same operations whichever part
holds it. Where the work is small, or already runs in one of these threads, it runs in
the caller's thread alone.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

__all__ = ["MIN_CELLS_PER_PART", "over_rows"]

#: Fewer cells than this in a part are not worth handing to another thread (a hand-over
#: costs tens of microseconds; 100,000 cells of arithmetic about a hundred).
MIN_CELLS_PER_PART = 100_000
#: Beyond this many parts, memory bandwidth, not cores, bounds these loops.
_MAX_PARTS = 4

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None
_pool_pid = 0  # the process that made the pool: a forked child makes its own
_in_part = threading.local()


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _executor() -> ThreadPoolExecutor:
    global _pool, _pool_pid
    with _lock:
        # A process forked after the pool was made (a prefork worker) has the pool but not
        # its threads: work handed to it would wait for ever.
        if _pool is None or _pool_pid != os.getpid():
            _pool = ThreadPoolExecutor(max_workers=_MAX_PARTS - 1, thread_name_prefix="rows")
            _pool_pid = os.getpid()
        return _pool


def _part(work: Callable[[slice], None], rows: slice) -> None:
    _in_part.active = True
    try:
        work(rows)
    finally:
        _in_part.active = False


def over_rows(rows: int, work: Callable[[slice], None], *, cells_per_row: int) -> None:
    """Call ``work`` on slices that together cover ``range(rows)``, once each, some in other
    threads, and return once every call has; ``work`` writes its rows' results in place
    (each slice its own rows). The first failure is raised, after every part is done."""
    parts = min(_MAX_PARTS, _cores(), rows, max(1, rows * cells_per_row // MIN_CELLS_PER_PART))
    if parts <= 1 or getattr(_in_part, "active", False):
        work(slice(0, rows))
        return
    bounds = [rows * i // parts for i in range(parts + 1)]
    slices = [slice(start, stop) for start, stop in zip(bounds, bounds[1:], strict=False)]
    pool = _executor()
    others: list[Future[None]] = [pool.submit(_part, work, part) for part in slices[1:]]
    failure: BaseException | None = None
    try:
        _part(work, slices[0])
    except BaseException as exc:  # noqa: BLE001 - raised below, once the others are done
        failure = exc
    for other in others:  # no part may still write into the caller's arrays
        try:
            other.result()
        except BaseException as exc:  # noqa: BLE001 - the first failure is raised
            failure = failure or exc
    if failure is not None:
        raise failure
