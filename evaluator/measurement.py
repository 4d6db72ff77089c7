"""Send a dataset through a started sandbox, timing every batch and checking every output.

The timed phase starts with the first request and ends with the last response checked;
start-up is measured apart. Requests are pipelined (:meth:`Sandbox.predict_stream`, at
least two in flight, more for small batches: :func:`in_flight_for`): the model works on
the next batch while we check this one, as it would behind any serving loop, so
throughput is the model's and not our round trip's. Outputs are
checked against the task's output contract (:mod:`datasets_registry.outputs`, the same
rules as ``evalboard model test``) before anything is scored. A bad output is the model's
``protocol_error``, with the bad value in the message.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from itertools import pairwise
from typing import Any

from datasets_registry import OutputProblem, TaskSpec, output_problems
from evalboard.core.heap import full_passes_held
from evalboard.core.states import FailureReason
from evaluator.testset import model_inputs
from submission_sandbox import Sandbox, SandboxFailure

__all__ = [
    "IN_FLIGHT",
    "IN_FLIGHT_EXAMPLES",
    "TIMED_RUNS",
    "Aborted",
    "Measurement",
    "check_outputs",
    "in_flight_for",
    "measure",
    "percentile",
    "timed_runs",
]

#: Called after each batch with the number of examples done so far.
OnBatch = Callable[[int], None]
#: Requests kept in flight at least: one being answered, one waiting, so the model never
#: idles on our side of the round trip.
IN_FLIGHT = 2
#: Examples kept in flight at least: small batches need more requests waiting, or the
#: model idles whenever this process is slow to wake for an answer (on a busy 2-core
#: worker, batch 1 reached 0.59 of in-process with 2 in flight, 0.86 with 16).
IN_FLIGHT_EXAMPLES = 16
#: Throughput and latency come from at least this many timed runs (median and spread).
TIMED_RUNS = 3


class Aborted(Exception):
    """The run was stopped from outside (a cancelled job, a lost lease)."""


@dataclass
class Measurement:
    """What a timed run through the sandbox gave: outputs in input order, and timings."""

    outputs: list[dict[str, Any]]
    batch_size: int
    predict_s: float
    batch_latencies: list[float] = field(default_factory=list)
    #: Seconds from the first request to each batch's checked answer, and its size.
    batch_ends: list[float] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)

    @property
    def throughput(self) -> float:
        return len(self.outputs) / self.predict_s if self.predict_s > 0 else 0.0


def timed_runs(measured: Measurement, runs: int = TIMED_RUNS) -> list[tuple[float, float]] | None:
    """``runs`` consecutive segments of one pass as (throughput, median batch latency)
    each; None when the pass has fewer batches than ``runs`` (send it again instead).

    A large dataset is timed in segments of its one scored pass rather than sent again:
    the figures vary as repeated passes would (the same model, the same sandbox, the
    worker's load at that moment), at no extra inference.

    >>> m = Measurement(outputs=[{}] * 6, batch_size=2, predict_s=3.0,
    ...                 batch_latencies=[1.0, 0.5, 1.5], batch_ends=[1.0, 1.5, 3.0],
    ...                 batch_sizes=[2, 2, 2])
    >>> timed_runs(m)
    [(2.0, 1.0), (4.0, 0.5), (1.3333333333333333, 1.5)]
    """
    batches = len(measured.batch_ends)
    if batches < runs or batches != len(measured.batch_sizes):
        return None
    # Consecutive parts as numpy's array_split cuts them: the first ones a batch longer.
    each, longer = divmod(batches, runs)
    bounds = [0]
    for n in range(runs):
        bounds.append(bounds[-1] + each + (n < longer))
    found = []
    start = 0.0
    for first, stop in pairwise(bounds):
        part = range(first, stop)
        end = measured.batch_ends[part[-1]]
        examples = sum(measured.batch_sizes[i] for i in part)
        latencies = [measured.batch_latencies[i] for i in part if i < len(measured.batch_latencies)]
        found.append(
            (examples / (end - start) if end > start else 0.0, percentile(latencies, 50) or 0.0)
        )
        start = end
    return found


def in_flight_for(batch_size: int) -> int:
    """Requests kept in flight for batches of ``batch_size``: enough to hold
    :data:`IN_FLIGHT_EXAMPLES` examples, and never fewer than :data:`IN_FLIGHT`.

    >>> [in_flight_for(n) for n in (1, 4, 8, 32)]
    [16, 4, 2, 2]
    """
    return max(IN_FLIGHT, -(-IN_FLIGHT_EXAMPLES // max(1, batch_size)))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (linear interpolation), None for no values.

    The figure of ``numpy.percentile``'s default method to the last bit (its index, and
    its interpolation from whichever neighbour is nearer), in plain Python: for a few
    hundred batch latencies numpy's first call alone took 8-12 ms of each evaluation.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50)
    2.5
    >>> percentile([0.5, 0.1, 0.2], 95)
    0.47
    """
    if not values:
        return None
    ordered = sorted(float(value) for value in values)
    if any(math.isnan(value) for value in ordered):
        return math.nan
    index = (len(ordered) - 1) * (q / 100)
    if index >= len(ordered) - 1:
        return ordered[-1]
    if index < 0:
        return ordered[0]
    below = math.floor(index)
    low, high = ordered[below], ordered[below + 1]
    weight = index - below
    step = high - low
    return high - step * (1 - weight) if weight >= 0.5 else low + step * weight


def _protocol_error(box: Sandbox, message: str) -> SandboxFailure:
    return SandboxFailure(FailureReason.PROTOCOL_ERROR, message, log_tail=box.log_tail())


def check_outputs(
    box: Sandbox, inputs: Sequence[dict[str, Any]], outputs: Sequence[Any], task: TaskSpec
) -> None:
    """Refuse outputs that break the task's output contract
    (:func:`~datasets_registry.outputs.output_problems`): raises SandboxFailure
    (protocol_error) naming the first bad output and its bad value."""
    problems = output_problems(task.output, inputs, outputs)
    if problems:
        raise _protocol_error(box, problems[0].describe())


def _batches(
    inputs: Sequence[dict[str, Any]],
    batch_size: int,
    abort: threading.Event | None,
    input_names: Sequence[str],
) -> Iterator[list[dict[str, Any]]]:
    for offset in range(0, len(inputs), batch_size):
        if abort is not None and abort.is_set():
            raise Aborted("stopped from outside")
        yield model_inputs(inputs[offset : offset + batch_size], input_names)


def measure(
    box: Sandbox,
    inputs: Sequence[dict[str, Any]],
    task: TaskSpec,
    *,
    batch_size: int,
    on_batch: OnBatch | None = None,
    abort: threading.Event | None = None,
    in_flight: int | None = None,
    collect: list[OutputProblem] | None = None,
) -> Measurement:
    """Predict every input in batches of ``batch_size``; the sandbox must be started.

    ``inputs`` may be whole examples: each batch is cut down to ``uid`` and the task's
    input fields (:func:`~evaluator.testset.model_inputs`) as it is sent, so gold never
    enters the sandbox and the copy is made while the model works on the batch before.
    ``in_flight`` requests are kept unanswered at once (1: one at a time; default
    :func:`in_flight_for` the batch size). A batch's
    latency is the sandbox's figure (:attr:`PredictionStream.latencies`): for the docker
    and local sandboxes, from the later of its request's send and the previous answer's
    arrival to its own answer's arrival. One at a time that is the round trip; pipelined,
    the model's time per batch, without the wait behind the batch before it.

    A bad output stops the run as the model's ``protocol_error``; given ``collect``, every
    bad output's problems are gathered there instead (``evalboard model test`` shows them
    all). A wrong number of outputs always stops: the rest would not line up.
    """
    outputs: list[dict[str, Any]] = []
    sent: deque[list[dict[str, Any]]] = deque()  # asked for, not yet checked

    def recorded() -> Iterator[list[dict[str, Any]]]:
        for batch in _batches(inputs, batch_size, abort, task.input_names):
            sent.append(batch)
            yield batch

    clock = time.perf_counter
    ends: list[float] = []
    sizes: list[int] = []
    depth = in_flight if in_flight is not None else in_flight_for(batch_size)
    # No full pass of the collector while timing: the model would idle behind it.
    with full_passes_held():
        started = clock()
        with box.predict_stream(recorded(), in_flight=depth) as stream:
            for got in stream:
                found = output_problems(task.output, sent.popleft(), got)
                if found and (collect is None or found[0].index is None):
                    raise _protocol_error(box, found[0].describe())
                if collect is not None:
                    done = len(outputs)
                    collect.extend(replace(p, index=done + (p.index or 0)) for p in found)
                outputs.extend(got)
                ends.append(clock() - started)
                sizes.append(len(got))
                if on_batch is not None:
                    on_batch(len(outputs))
        predict_s = clock() - started
    if len(outputs) != len(inputs):
        raise _protocol_error(
            box, f"the model answered {len(outputs)} of {len(inputs)} inputs; answer every request"
        )
    return Measurement(
        outputs=outputs,
        batch_size=batch_size,
        predict_s=predict_s,
        batch_latencies=list(stream.latencies),
        batch_ends=ends,
        batch_sizes=sizes,
    )
