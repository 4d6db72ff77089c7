"""The board's metric vocabulary: one entry per metric, read by every layer.

The task spec's weights, the leaderboard's table and ranking, the API's ``metrics`` list,
the page's column headers and tooltips, the browser's re-ranking (its directions and
offsets reach ``static/dynascore.js`` in the page's data) and the CLI's columns all come
from :data:`METRICS`. Adding a metric to the board is adding an entry here.

A board metric's name is what the API, the weights and the task spec use; the
evaluator's summary may call it otherwise (``memory_gib``, ``latency_p50_s``), and
:attr:`BoardMetric.result_field` is the one place that says so.

>>> METRICS["memory"].sign, METRICS["memory"].offset(memory_cap_gib=16)
(-1.0, 16.0)
>>> WEIGHABLE_METRICS
('perf', 'throughput', 'memory', 'fairness', 'robustness')
>>> goods_transform(["perf", "memory"], memory_cap_gib=16)
({'memory': -1.0}, {'memory': 16.0})
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

__all__ = [
    "DIRECTION_ARROWS",
    "METRICS",
    "WEIGHABLE_METRICS",
    "BoardMetric",
    "goods_transform",
]

Direction = Literal["higher", "lower"]

DIRECTION_ARROWS: Mapping[Direction, str] = MappingProxyType({"higher": "↑", "lower": "↓"})
"""How the CLI marks a direction beside a column's label."""


@dataclass(frozen=True)
class BoardMetric:
    """One metric of the board.

    Attributes:
        name: the name in the API, the weights and the task spec, e.g. ``"memory"``.
        label: the column header, e.g. ``"Memory"``.
        unit: what the number counts, e.g. ``"GiB peak"``.
        direction: ``"higher"`` or ``"lower"`` is better.
        weighable: whether it may enter the Dynascore (with a weight).
        result_field: the field of the evaluator's summary (``evaluator.TaskMetrics``)
            that holds it.
        measured: how it is measured, in one sentence, for tooltips and docs.
        caveat: what the figure does not say, for the page's column explanations ("" if
            nothing needs saying).
        capped: the good is ``memory_cap_gib - value`` (the task's cap), as Dynaboard
            turns memory into a good; otherwise ``sign * value``.
    """

    name: str
    label: str
    unit: str
    direction: Direction
    weighable: bool
    result_field: str
    measured: str
    caveat: str = ""
    capped: bool = False

    @property
    def sign(self) -> float:
        """+1 where higher is better, -1 where lower is: the good's direction."""
        return 1.0 if self.direction == "higher" else -1.0

    def offset(self, *, memory_cap_gib: float) -> float:
        """The good's offset: the task's memory cap for a capped metric, else 0."""
        return float(memory_cap_gib) if self.capped else 0.0


METRICS: Mapping[str, BoardMetric] = MappingProxyType(
    {
        m.name: m
        for m in (
            BoardMetric(
                "perf",
                "Perf",
                "x100",
                "higher",
                weighable=True,
                result_field="perf",
                measured="The task's metric (accuracy, macro-F1, SQuAD F1; for text chrF, "
                "BLEU, ROUGE-L, token F1 or exact match) x100 on each scoring dataset, "
                "averaged with the dataset weights.",
                caveat="Only as good as the test sets: a high perf on one round's data "
                "says little about examples written to fool the model later.",
            ),
            BoardMetric(
                "throughput",
                "Throughput",
                "examples/s",
                "higher",
                weighable=True,
                result_field="throughput",
                measured="Examples per second over the timed prediction phase, after "
                "start-up: the median of repeated timed runs.",
                caveat="Depends on the worker's hardware and load; figures marked "
                '"busy worker" were measured while other processes shared its CPU.',
            ),
            BoardMetric(
                "memory",
                "Memory",
                "GiB peak",
                "lower",
                weighable=True,
                result_field="memory_gib",
                measured="Peak memory of the sandbox (cgroup); enters the Dynascore as the "
                "task's memory cap minus the peak.",
                caveat="The sandbox's whole peak (runtime and libraries included), "
                "not the model's weights alone.",
                capped=True,
            ),
            BoardMetric(
                "fairness",
                "Fairness",
                "x100",
                "higher",
                weighable=True,
                result_field="fairness",
                measured="Predictions on the fairness copies (gendered words and names "
                "swapped) scored against the model's own predictions on the originals, x100.",
                caveat="Measures stability, not correctness: a model that gives the same "
                "answer with the words swapped scores 100 even when that answer is wrong.",
            ),
            BoardMetric(
                "robustness",
                "Robustness",
                "x100",
                "higher",
                weighable=True,
                result_field="robustness",
                measured="Predictions on the robustness copies (typos, case, punctuation) "
                "scored against the model's own predictions on the originals, x100.",
                caveat="Measures stability, not correctness: a model that gives the same "
                "answer despite the typos scores 100 even when that answer is wrong.",
            ),
            BoardMetric(
                "latency_p50",
                "Latency p50",
                "s/batch",
                "lower",
                weighable=False,
                result_field="latency_p50_s",
                measured="Median seconds per batch over the timed prediction phase.",
                caveat="Per batch of the task's batch size, on the worker's hardware: "
                "compare it between models of one board only.",
            ),
            BoardMetric(
                "ece",
                "Calibration error",
                "x100",
                "lower",
                weighable=False,
                result_field="ece",
                measured="Expected calibration error of the predicted probabilities, x100, "
                "where the model gives probabilities.",
                caveat="Only for models that give probabilities; says nothing about "
                "which answers are right.",
            ),
        )
    }
)
"""Every metric the board shows, in column order."""

WEIGHABLE_METRICS: tuple[str, ...] = tuple(m.name for m in METRICS.values() if m.weighable)
"""The metrics a Dynascore can weigh, in column order."""


def goods_transform(
    names: Iterable[str], *, memory_cap_gib: float
) -> tuple[dict[str, float], dict[str, float]]:
    """The ``directions`` and ``offsets`` that turn ``names`` into goods for
    :func:`scoring.normalise` (and the browser's ``Dynascore``), leaving out the defaults
    (+1 and 0) so that they name only metrics of the table."""
    directions: dict[str, float] = {}
    offsets: dict[str, float] = {}
    for name in names:
        metric = METRICS[name]
        if metric.sign != 1.0:
            directions[name] = metric.sign
        if metric.capped:
            offsets[name] = metric.offset(memory_cap_gib=memory_cap_gib)
    return directions, offsets
