"""Work a request starts and does not wait for: what a later request reads from the cache.

A board of 10,000 models bootstraps a dataset weighting no request asked for before in
seconds; the request that asks answers at once without the intervals and leaves them to
this process's one background thread, and the page asks again until they are in the
cache (:mod:`leaderboard.intervals`). One thread, not a pool: the work is CPU-bound and a
server's requests need the other cores.

Written here rather than with ``concurrent.futures``: an executor's queue is first in,
first out and unbounded, while a viewer moving a slider wants the weighting asked last
done first and the ones it passed over dropped.

>>> work = Background()
>>> done = []
>>> work.submit("a", lambda: done.append("a"))
True
>>> work.wait_idle(timeout=5)
True
>>> done
['a']
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable

__all__ = ["Background"]

logger = logging.getLogger(__name__)


class Background:
    """Keyed work done one piece at a time in one daemon thread, the latest asked first.

    A key asked again while its work waits or runs is not queued twice. At most ``keep``
    pieces wait; a piece asked beyond that drops the one asked longest ago (its asker
    asks again, and it is queued again). A piece that raises is logged and forgotten:
    asked again, it runs again. A piece starts ``delay_s`` after it was asked at the
    earliest, so that the request asking answers first: sharing the interpreter with a
    10,000-model resampling from its start made that answer 4x slower (40 -> 175 ms).
    """

    def __init__(self, *, keep: int = 4, delay_s: float = 0.1) -> None:
        self.keep = keep
        self.delay_s = delay_s
        self._waiting: OrderedDict[Hashable, tuple[float, Callable[[], object]]] = OrderedDict()
        self._running: Hashable | None = None
        self._thread: threading.Thread | None = None
        self._changed = threading.Condition()

    def submit(self, key: Hashable, work: Callable[[], object]) -> bool:
        """Queue ``work`` under ``key``; False where that key already waits or runs."""
        with self._changed:
            if self._holds(key):
                return False
            self._waiting[key] = (time.monotonic(), work)
            self._waiting.move_to_end(key, last=False)  # the latest asked goes first
            while len(self._waiting) > self.keep:
                dropped, _ = self._waiting.popitem()
                logger.debug("background work %r dropped: %d newer wait", dropped, self.keep)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="background", daemon=True)
                self._thread.start()
            self._changed.notify_all()
            return True

    def busy(self, key: Hashable) -> bool:
        """Whether the work under ``key`` waits or runs."""
        with self._changed:
            return self._holds(key)

    def wait(self, key: Hashable, timeout: float | None = None) -> bool:
        """Wait until the work under ``key`` neither waits nor runs (done, dropped or
        failed); False where ``timeout`` seconds passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._holds(key), timeout=timeout)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing waits or runs; False where ``timeout`` seconds passed first."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._waiting and self._running is None, timeout=timeout
            )

    def _holds(self, key: Hashable) -> bool:
        """Whether ``key``'s work waits or runs (the caller holds the lock)."""
        return key in self._waiting or (self._running is not None and self._running == key)

    def _run(self) -> None:
        while True:
            with self._changed:
                if not self._waiting:
                    self._thread = None  # the next submit starts another
                    self._changed.notify_all()
                    return
                key, (asked, work) = self._waiting.popitem(last=False)
                self._running = key
            try:
                time.sleep(max(0.0, asked + self.delay_s - time.monotonic()))
                work()
            except Exception:  # noqa: BLE001 - logged; the thread serves the next piece
                logger.exception("background work %r failed", key)
            finally:
                with self._changed:
                    self._running = None
                    self._changed.notify_all()
