"""Output checks and the timed phase, against the in-process FakeSandbox."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from datasets_registry.taskspec import parse_task_spec
from evalboard.core.states import FailureReason
from evaluator.measurement import Aborted, check_outputs, in_flight_for, measure, percentile
from submission_sandbox.sandbox import SandboxFailure
from tests.helpers.fake_sandbox import FakeSandbox
from tests.helpers.tasks import QA, sentiment_spec

Outputs = Callable[[list[dict[str, Any]]], list[Any]]


INPUTS = [{"uid": str(i), "statement": f"text {i}"} for i in range(5)]


def _box(answer: Outputs) -> FakeSandbox:
    box = FakeSandbox(predict=answer)
    box.logs.append("model log line")
    box.start()
    return box


def test_measure_keeps_order_and_batches_by_batch_size() -> None:
    box = _box(lambda batch: [{"label": "neutral"} for _ in batch])
    done: list[int] = []
    measured = measure(box, INPUTS, sentiment_spec(), batch_size=2, on_batch=done.append)
    assert [len(batch) for batch in box.requests] == [2, 2, 1]
    assert len(measured.outputs) == 5 and done == [2, 4, 5]
    assert len(measured.batch_latencies) == 3
    assert measured.throughput == pytest.approx(5 / measured.predict_s)


@pytest.mark.parametrize(
    ("answer", "needle"),
    [
        (lambda batch: [{"label": "banana"} for _ in batch], "'banana'"),
        (lambda batch: [{"label": "positive"}], "1 outputs for 2 inputs"),
        (lambda batch: ["positive" for _ in batch], "not an object"),
        (lambda batch: [{"label": "positive", "probs": {"happy": 1.0}} for _ in batch], "'happy'"),
        (lambda batch: [{"label": "positive", "probs": {"positive": 1.5}} for _ in batch], "1.5"),
        (
            lambda batch: [
                {"label": "positive", "probs": {"positive": float("nan")}} for _ in batch
            ],
            "nan",
        ),
    ],
)
def test_bad_outputs_are_protocol_errors_naming_the_bad_value(answer: Outputs, needle: str) -> None:
    box = _box(answer)
    with pytest.raises(SandboxFailure) as caught:
        measure(box, INPUTS[:2], sentiment_spec(), batch_size=2)
    assert caught.value.reason is FailureReason.PROTOCOL_ERROR
    assert needle in caught.value.detail
    assert "model log line" in caught.value.log_tail


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
    assert len(box.requests) == 1


def test_percentile_interpolates_and_is_none_when_empty() -> None:
    assert percentile([], 50) is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 95) == pytest.approx(4.8)


class StreamingSandbox(FakeSandbox):
    """Pipelines as the docker and local sandboxes do: reports how many were in flight."""

    in_flight_asked: int | None = None

    def _predict_stream(
        self, batches: Iterator[list[dict[str, Any]]], in_flight: int, latencies: list[float]
    ) -> Iterator[list[dict[str, Any]]]:
        self.in_flight_asked = in_flight
        for batch in batches:
            latencies.append(0.25)
            yield self._predict(batch)


def test_measure_pipelines_through_predict_stream_and_keeps_its_latencies() -> None:
    box = StreamingSandbox(predict=lambda batch: [{"label": "neutral"} for _ in batch])
    box.start()
    measured = measure(box, INPUTS, sentiment_spec(), batch_size=2)
    # Enough requests in flight to hold 16 examples: 8 of 2 (the default's rule).
    assert box.in_flight_asked == in_flight_for(2) == 8 and len(measured.outputs) == 5
    assert measured.batch_latencies == [0.25, 0.25, 0.25]
    assert measure(box, INPUTS, sentiment_spec(), batch_size=2, in_flight=1).outputs
    assert box.in_flight_asked == 1


def test_a_stream_that_stops_early_is_a_protocol_error() -> None:
    class Short(StreamingSandbox):
        def _predict_stream(
            self, batches: Iterator[list[dict[str, Any]]], in_flight: int, latencies: list[float]
        ) -> Iterator[list[dict[str, Any]]]:
            yield self._predict(next(batches))

    box = Short(predict=lambda batch: [{"label": "neutral"} for _ in batch])
    box.start()
    with pytest.raises(SandboxFailure, match="answered 2 of 5"):
        measure(box, INPUTS, sentiment_spec(), batch_size=2)


def test_a_bad_output_mid_stream_stops_the_stream() -> None:
    answers = iter([[{"label": "neutral"}] * 2, [{"label": "banana"}] * 2])
    box = StreamingSandbox(predict=lambda batch: next(answers, [{"label": "neutral"}] * 2))
    box.start()
    with pytest.raises(SandboxFailure, match="'banana'"):
        measure(box, INPUTS, sentiment_spec(), batch_size=2)
    assert len(box.requests) == 2  # the stream was left at the bad answer
