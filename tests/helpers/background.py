"""Holding a context's background thread, so that work asked of it waits."""

from __future__ import annotations

import threading

from evalboard.core.background import Background


def hold(work: Background) -> threading.Event:
    """Occupy ``work``'s thread until the returned event is set (at most 10 s)."""
    release = threading.Event()
    started = threading.Event()

    def held() -> None:
        started.set()
        release.wait(10)

    work.submit(("held", id(release)), held)
    if not started.wait(10):
        raise AssertionError("the background thread did not start the held work")
    return release
