from __future__ import annotations

from pathlib import Path

import pytest

from evalboard.core.states import FailureReason
from submission_sandbox import SandboxFailure, open_sandbox
from tests.helpers.fake_sandbox import FakeSandbox, register_fake_sandbox


def test_the_fake_records_requests_and_runs_the_lifecycle() -> None:
    box = FakeSandbox(predict=lambda batch: [{"label": x["text"]} for x in batch])
    with box:
        assert box.predict([{"uid": "1", "text": "a"}]) == [{"label": "a"}]
    assert box.started and box.closed
    assert box.requests == [[{"uid": "1", "text": "a"}]]


def test_the_fake_fails_with_the_reason_asked_for() -> None:
    box = FakeSandbox(fail_with=FailureReason.OOM, fail_on_request=2)
    with box:
        box.predict([{"uid": "1"}])
        with pytest.raises(SandboxFailure) as caught:
            box.predict([{"uid": "2"}])
    assert caught.value.reason is FailureReason.OOM
    assert "fake model loaded" in caught.value.log_tail


def test_the_base_class_refuses_the_wrong_number_of_outputs() -> None:
    with FakeSandbox(predict=lambda batch: []) as box, pytest.raises(SandboxFailure) as caught:
        box.predict([{"uid": "1"}])
    assert caught.value.reason is FailureReason.PROTOCOL_ERROR


def test_the_fake_registers_by_name(tmp_path: Path) -> None:
    register_fake_sandbox()
    box = open_sandbox(tmp_path, kind="fake")
    assert isinstance(box, FakeSandbox)
