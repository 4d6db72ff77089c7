"""The process's long-lived objects, kept out of CPython's full collections.

A serving process keeps large derived values for long (the boards and rankings in
:class:`evalboard.core.cache.MemoryCache`); the garbage collector's full passes walk all of
them again and again, stopping whichever request allocated last. The policy is the
process's, not a module's: whoever adds a large long-lived value calls
:func:`keep_long_lived`.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["full_passes_held", "keep_long_lived", "paused_collection"]

_settling = threading.Lock()
_pausing = threading.Lock()
#: Blocks inside :func:`paused_collection` now, and whether the collector ran before them.
_paused = {"depth": 0, "enabled": True}
#: Objects frozen after the last full pass over them, and frozen since it was counted.
_frozen = {"counted": 0, "since": 0}
_holding = threading.Lock()
#: Blocks inside :func:`full_passes_held` now, and the collector's thresholds before them.
_held = {"depth": 0, "full_pass_after": 0}
#: A full pass's threshold (young collections between two) that is never reached.
_NEVER = 2**30


def keep_long_lived() -> None:
    """Take what this process keeps (the boards and rankings in the derived-data cache, the
    imports) out of the collector's full passes; called once a large long-lived value (a
    ranking, ``leaderboard.ranking``) has joined them.

    Why: every cached ranking adds some 20,000 long-lived objects, and CPython's full pass
    walks all of them (a 10,000-row board and a full cache: about a million),
    0.2-0.9 s, stopping whichever request allocated last: the p95 of re-weighted boards
    (issue #20). ``gc.freeze`` moves every object alive into a generation no pass walks;
    objects frozen are still freed by their reference counts, so a ranking the cache
    evicts is freed as it goes (rankings, boards and tables hold no reference cycles).

    The collection before it walks only what was made since the last freeze (a ranking
    and a request's temporaries, ~10 ms), so no cyclic garbage is frozen. What a freeze
    can still keep is an object alive then (another request's) that later dies in a
    cycle: frozen, no pass finds it. So once the frozen objects number twice what they
    did after the last full pass over them, they are unfrozen and collected in one pass:
    CPython's own rule (a full pass once the long-lived heap has grown by a fraction),
    counted after reference counts freed what the cache evicted, so a full cache that
    evicts as it adds does not trigger it, and the frozen stay within twice the live.
    Counting the frozen walks them all (~50 ms for a million), so they are counted only
    once as many were frozen since the last count as that count found.

    Measured side by side (10,000 rows, 15 fresh weights each, one seeded database):
    p95 0.95-1.2 s unchanged; freezing once after start-up, 1.2 s; after each new board
    only, 0.4-0.5 s (the rankings stay in every pass); this, 0.2-0.3 s, p50 unchanged.
    """
    if not _settling.acquire(blocking=False):
        return  # another thread is settling: the next ranking settles this one's objects
    try:
        gc.collect()
        _frozen["since"] += len(gc.get_objects(generation=2))  # all a full pass left
        gc.freeze()
        if _frozen["since"] <= _frozen["counted"]:
            return
        frozen = gc.get_freeze_count()  # the first count: all there was, after a full pass
        if _frozen["counted"] and frozen > 2 * _frozen["counted"]:
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            frozen = gc.get_freeze_count()
        _frozen.update(counted=frozen, since=0)
    finally:
        _settling.release()


@contextmanager
def paused_collection() -> Iterator[None]:
    """Pause the cyclic collector while a block builds a bulk of long-lived objects, then
    keep them out of its full passes (:func:`keep_long_lived`).

    Why: reading a board's 10,000 stored rows back makes some 300,000 objects, and every
    pass the allocations trigger walks the heap they grow: 1.7-2.9 s of a restarted
    server's first board, 0.7 s with the collector paused (the rows hold no cycles; any
    cyclic garbage made meanwhile is collected once the block ends). Blocks in several
    threads at once keep it paused until the last one ends.
    """
    with _pausing:
        if _paused["depth"] == 0:
            _paused["enabled"] = gc.isenabled()
            gc.disable()
        _paused["depth"] += 1
    try:
        yield
    finally:
        with _pausing:
            _paused["depth"] -= 1
            resume = _paused["depth"] == 0 and _paused["enabled"]
            if resume:
                gc.enable()
        if resume:
            keep_long_lived()


@contextmanager
def full_passes_held() -> Iterator[None]:
    """Hold the cyclic collector's full passes back while a block is timed (an
    evaluation's timed phase), young objects still collected as before.

    Why: a full pass walks every object the process holds and stops the thread that
    allocated last: 12-19 ms in a 10,000-example ``evalboard evaluate``, where the host
    reads the model's answers, so the model idled behind it and its throughput came out
    lower (predict_s 13 ms longer with the collector on than off, measured side by side).
    The pass comes due again once the block ends. Blocks in several threads at once hold
    it until the last one ends.
    """
    with _holding:
        if _held["depth"] == 0:
            young, middle, _held["full_pass_after"] = gc.get_threshold()
            gc.set_threshold(young, middle, _NEVER)
        _held["depth"] += 1
    try:
        yield
    finally:
        with _holding:
            _held["depth"] -= 1
            if _held["depth"] == 0:
                young, middle, _ = gc.get_threshold()
                gc.set_threshold(young, middle, _held["full_pass_after"])
