from __future__ import annotations

import threading

import pytest

from evalboard.core.states import FailureReason
from leaderboard.loop import TargetPool
from submission_sandbox.sandbox import SandboxFailure
from tests.helpers.tasks import sentiment_spec
from tests.loop.fakes import FakeFactory

TASK = sentiment_spec()
INPUT = [{"uid": "u", "statement": "great stuff"}]


def test_a_target_starts_once_and_is_reused() -> None:
    factory = FakeFactory()
    pool = TargetPool(factory)
    pool.warm(1, [10, 11])
    for _ in range(5):
        assert pool.predict(1, 10, INPUT, TASK)[0]["label"] == "positive"
    assert [(sid, box.starts) for sid, box in factory.made] == [(10, 1), (11, 1)]
    assert factory.boxes(10)[0].requests == 5 and pool.is_warm(1, 10)
    pool.close()


def test_concurrent_first_requests_start_one_sandbox() -> None:
    factory = FakeFactory(start_delay_s=0.05)
    pool = TargetPool(factory)
    errors: list[BaseException] = []

    def ask() -> None:
        try:
            pool.predict(1, 10, INPUT, TASK)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=ask) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    (box,) = factory.boxes(10)
    assert box.starts == 1 and box.requests == 16
    pool.close()


def test_release_closes_only_that_rounds_targets() -> None:
    factory = FakeFactory()
    pool = TargetPool(factory)
    pool.warm(1, [10])
    pool.warm(2, [20])
    assert pool.release(1) == 1
    assert factory.boxes(10)[0].closes == 1 and factory.boxes(20)[0].closes == 0
    assert not pool.is_warm(1, 10) and pool.is_warm(2, 20)
    pool.close()
    assert factory.boxes(20)[0].closes == 1
    with pytest.raises(RuntimeError, match="closed"):
        pool.predict(2, 20, INPUT, TASK)


def test_a_failed_target_is_restarted_by_the_next_request() -> None:
    factory = FakeFactory()
    pool = TargetPool(factory)
    pool.warm(1, [10])
    first = factory.boxes(10)[0]
    first.fail_next = FailureReason.CRASHED
    with pytest.raises(SandboxFailure, match="crashed"):
        pool.predict(1, 10, INPUT, TASK)
    assert first.closes == 1
    assert pool.predict(1, 10, INPUT, TASK)[0]["label"] == "positive"
    assert len(factory.boxes(10)) == 2
    pool.close()


def test_outputs_outside_the_contract_are_refused() -> None:
    factory = FakeFactory()
    pool = TargetPool(factory)
    pool.warm(1, [10])
    factory.boxes(10)[0].broken_outputs = True
    with pytest.raises(SandboxFailure, match="protocol_error.*banana"):
        pool.predict(1, 10, INPUT, TASK)
    pool.close()


def test_retain_closes_rounds_closed_elsewhere() -> None:
    factory = FakeFactory()
    pool = TargetPool(factory)
    pool.warm(1, [10])
    pool.warm(2, [20])
    assert pool.retain([2]) == 1
    assert not pool.is_warm(1, 10) and pool.is_warm(2, 20)
    pool.close()
