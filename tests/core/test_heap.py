"""The collector paused while a board's rows are built, and resumed after, in any thread."""

from __future__ import annotations

import gc
import threading

from evalboard.core.heap import paused_collection


def test_the_collector_is_paused_inside_and_resumed_after() -> None:
    assert gc.isenabled()
    with paused_collection():
        assert not gc.isenabled()
        with paused_collection():  # nested: still paused when the inner block ends
            pass
        assert not gc.isenabled()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0  # what was built is kept out of full passes


def test_blocks_in_two_threads_keep_it_paused_until_the_last_ends() -> None:
    first_in, second_done, states = threading.Event(), threading.Event(), []

    def second() -> None:
        first_in.wait()
        with paused_collection():
            pass
        states.append(gc.isenabled())  # the first thread's block is still open
        second_done.set()

    worker = threading.Thread(target=second)
    worker.start()
    with paused_collection():
        first_in.set()
        second_done.wait(timeout=30)
    worker.join()
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
