"""The background thread: the latest work asked goes first, none twice, failures logged."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import pytest

from evalboard.core.background import Background
from tests.helpers.background import hold


def _record(done: list[str], name: str) -> Callable[[], None]:
    return lambda: done.append(name)


def test_the_latest_asked_runs_first_and_a_waiting_key_is_not_queued_twice() -> None:
    work = Background()
    release = hold(work)
    done: list[str] = []
    assert work.submit("a", _record(done, "a"))
    assert work.submit("b", _record(done, "b"))
    assert not work.submit("a", _record(done, "a again"))  # waits already
    assert work.busy("a") and not work.busy("c")
    release.set()
    assert work.wait_idle(timeout=10)
    assert done == ["b", "a"]
    assert not work.busy("a")
    assert work.submit("a", _record(done, "a later"))  # done: asked again, it runs again
    assert work.wait_idle(timeout=10)
    assert done[-1] == "a later"


def test_beyond_keep_the_work_asked_longest_ago_is_dropped() -> None:
    work = Background(keep=2)
    release = hold(work)
    done: list[str] = []
    for name in ("a", "b", "c"):
        work.submit(name, _record(done, name))
    assert not work.busy("a")  # dropped: its asker asks again
    release.set()
    assert work.wait_idle(timeout=10)
    assert done == ["c", "b"]


def test_work_that_raises_is_logged_and_the_next_still_runs(
    caplog: pytest.LogCaptureFixture,
) -> None:
    work = Background()
    done: list[str] = []

    def fail() -> None:
        raise RuntimeError("statistics unreadable")

    with caplog.at_level(logging.ERROR, logger="evalboard.core.background"):
        work.submit("bad", fail)
        assert work.wait_idle(timeout=10)
        work.submit("good", _record(done, "good"))
        assert work.wait_idle(timeout=10)
    assert done == ["good"]
    assert "statistics unreadable" in caplog.text
    assert not work.busy("bad")


def test_a_running_key_is_not_queued_again() -> None:
    work = Background()
    started, release = threading.Event(), threading.Event()

    def run() -> None:
        started.set()
        release.wait(10)

    work.submit("k", run)
    assert started.wait(10)
    assert work.busy("k")
    assert not work.submit("k", run)
    release.set()
    assert work.wait_idle(timeout=10)
    assert not work.busy("k")


def test_waiting_for_a_key_returns_once_its_work_is_done() -> None:
    work = Background()
    release = hold(work)
    done: list[str] = []
    work.submit("a", _record(done, "a"))
    assert not work.wait("a", timeout=0.05)  # still waiting behind the held work
    release.set()
    assert work.wait("a", timeout=10)
    assert done == ["a"]
    assert work.wait("never asked", timeout=0)


def test_work_starts_no_sooner_than_its_delay_after_it_was_asked() -> None:
    work = Background(delay_s=0.2)
    started: list[float] = []
    asked = time.monotonic()
    work.submit("a", lambda: started.append(time.monotonic()))
    assert work.wait_idle(timeout=10)
    assert started[0] - asked >= 0.2
