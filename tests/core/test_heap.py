"""The collector paused while a board's rows are built, and resumed after, in any thread;
its full passes held back while an evaluation is timed."""

from __future__ import annotations

import gc
import threading
from collections.abc import Callable
from typing import Any

from evalboard.core.heap import full_passes_held, paused_collection


def test_the_collector_is_paused_inside_and_resumed_after() -> None:
    assert gc.isenabled()
    with paused_collection():
        assert not gc.isenabled()
        with paused_collection():  # nested: still paused when the inner block ends
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what was built is kept out of full passes


def _seen_from_a_second_thread(
    block: Callable[[], Any], observe: Callable[[], Any], *, fail: bool = False
) -> list[Any]:
    """Open ``block`` here; meanwhile a second thread opens and closes one of its own and
    records ``observe()`` right after, while this thread's is still open. ``fail``: this
    thread's block then raises, as a model failing mid-run does."""
    first_in, second_done, seen = threading.Event(), threading.Event(), []

    def second() -> None:
        first_in.wait()
        with block():
            pass
        seen.append(observe())  # the first thread's block is still open
        second_done.set()

    worker = threading.Thread(target=second)
    worker.start()
    try:
        with block():
            first_in.set()
            second_done.wait(timeout=30)
            if fail:
                raise RuntimeError("the model failed mid-run")
    except RuntimeError:
        if not fail:
            raise
    worker.join()
    return seen


def test_blocks_in_two_threads_keep_it_paused_until_the_last_ends() -> None:
    states = _seen_from_a_second_thread(paused_collection, gc.isenabled)
    assert states == [False]
    assert gc.isenabled()


def test_a_block_that_raises_resumes_the_collector() -> None:
    try:
        with paused_collection():
            raise RuntimeError("a row that would not parse")
    except RuntimeError:
        pass
    assert gc.isenabled()


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    try:
        with paused_collection():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def _passes(block: Callable[[], Any]) -> set[int]:
    """The generations the collector passed over while ``block`` made 100,000 objects that
    stay alive (each young pass moves them on, toward a full pass)."""
    passes: set[int] = set()

    def seen(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.add(info["generation"])

    gc.freeze()  # the test process's own objects: a full pass falls due at once
    gc.collect()
    gc.callbacks.append(seen)
    try:
        with block():
            kept = [[n] for n in range(100_000)]
    finally:
        gc.callbacks.remove(seen)
        gc.unfreeze()
    assert len(kept) == 100_000
    return passes


def test_full_passes_are_held_back_young_ones_run() -> None:
    thresholds = gc.get_threshold()
    assert 2 in _passes(threading.Lock)  # a lock holds nothing back: a full pass fell due
    assert _passes(full_passes_held) == {0, 1}
    assert gc.get_threshold() == thresholds


def test_blocks_in_two_threads_hold_full_passes_until_the_last_ends() -> None:
    thresholds = gc.get_threshold()
    inside = _seen_from_a_second_thread(full_passes_held, gc.get_threshold, fail=True)
    assert inside[0][2] > thresholds[2]
    assert gc.get_threshold() == thresholds
