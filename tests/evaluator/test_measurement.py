"""Output checks and the timed phase, against a scripted in-process sandbox."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from datasets_registry.taskspec import parse_task_spec
from evalboard.core.limits import SandboxLimits
from evalboard.core.states import FailureReason
from evaluator.measurement import Aborted, check_outputs, measure, percentile
from submission_sandbox.sandbox import ModelHello, ResourceUsage, Sandbox, SandboxFailure
from tests.helpers.tasks import QA, sentiment_spec

Outputs = Callable[[list[dict[str, Any]]], list[Any]]


class ScriptedSandbox(Sandbox):
    """Answers with a Python function; records what it was sent (not registered)."""

    kind = "scripted"

    def __init__(self, answer: Outputs) -> None:
        super().__init__(Path("."), limits=SandboxLimits())
        self.answer = answer
        self.sent: list[list[dict[str, Any]]] = []

    def _start(self) -> ModelHello:
        return ModelHello(name="scripted", batch_size=2)

    def _predict(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        self.sent.append(inputs)
        return self.answer(inputs)

    def _usage(self) -> ResourceUsage:
        return ResourceUsage()

    def _close(self) -> ResourceUsage:
        return ResourceUsage()

    def _log_tail(self, lines: int) -> str:
        return "model log line"


INPUTS = [{"uid": str(i), "statement": f"text {i}"} for i in range(5)]


def _box(answer: Outputs) -> ScriptedSandbox:
    box = ScriptedSandbox(answer)
    box.start()
    return box


def test_measure_keeps_order_and_batches_by_batch_size() -> None:
    box = _box(lambda batch: [{"label": "neutral"} for _ in batch])
    done: list[int] = []
    measured = measure(box, INPUTS, sentiment_spec(), batch_size=2, on_batch=done.append)
    assert [len(batch) for batch in box.sent] == [2, 2, 1]
    assert len(measured.outputs) == 5 and done == [2, 4, 5]
    assert len(measured.batch_latencies) == 3
    assert measured.throughput == pytest.approx(5 / measured.predict_s)


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (lambda batch: [{"label": "banana"} for _ in batch], "'banana'"),
        (lambda batch: [{"label": "positive"}], "1 outputs for 2 inputs"),
        (lambda batch: ["positive" for _ in batch], "not an object"),
        (lambda batch: [{"label": "positive", "probs": {"happy": 1.0}} for _ in batch],
         "'happy'"),
        (lambda batch: [{"label": "positive", "probs": {"positive": 1.5}} for _ in batch],
         "1.5"),
        (lambda batch: [{"label": "positive", "probs": {"positive": float("nan")}}
                        for _ in batch], "nan"),
    ],
)
def test_bad_outputs_are_protocol_errors_naming_the_bad_value(
    answer: Outputs, needle: str
) -> None:
    box = _box(answer)
    with pytest.raises(SandboxFailure) as caught:
        measure(box, INPUTS[:2], sentiment_spec(), batch_size=2)
    assert caught.value.reason is FailureReason.PROTOCOL_ERROR
    assert needle in caught.value.detail
    assert caught.value.log_tail == "model log line"


def test_span_outputs_need_a_string_answer() -> None:
    qa = parse_task_spec(QA)
    inputs = [{"uid": "q1", "context": "c", "question": "q"}]
    check_outputs(_box(lambda b: []), inputs, [{"answer": "", "conf": 0.1}], qa)
    with pytest.raises(SandboxFailure, match="answer None"):
        check_outputs(_box(lambda b: []), inputs, [{"label": "x"}], qa)


def test_measure_stops_when_aborted() -> None:
    import threading

    abort = threading.Event()
    box = _box(lambda batch: (abort.set(), [{"label": "neutral"} for _ in batch])[1])
    with pytest.raises(Aborted):
        measure(box, INPUTS, sentiment_spec(), batch_size=2, abort=abort)
    assert len(box.sent) == 1


def test_percentile_interpolates_and_is_none_when_empty() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)
