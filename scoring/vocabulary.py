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
('perf', 'throughput', 'memory', 'fairness', 'robustness', 'energy')
>>> DEFAULT_WEIGHTS["perf"], DEFAULT_WEIGHTS["memory"], DEFAULT_WEIGHTS["energy"]
(4.0, 1.0, 0.0)
>>> fill_missing({"a": {"energy": 2.0}, "b": {"energy": None}, "c": {"energy": 5.0}}, ["energy"])
{'a': {'energy': 2.0}, 'b': {'energy': 5.0}, 'c': {'energy': 5.0}}
>>> goods_transform(["perf", "memory"], memory_cap_gib=16)
({'memory': -1.0}, {'memory': 16.0})
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from scoring.dynascore import DEFAULT_PERF_WEIGHT

__all__ = [
    "DEFAULT_WEIGHTS",
    "DIRECTION_ARROWS",
    "METRICS",
    "WEIGHABLE_METRICS",
    "BoardMetric",
    "figure_arrays",
    "fill_missing",
    "fill_missing_array",
    "goods_transform",
    "packed_figures",
    "rankable",
    "rankable_present",
    "unpacked_figures",
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
        default_weight: its weight in a task spec that sets none (Dynaboard's: perf 4,
            the rest 1; a metric many results lack, such as energy, 0).
        missing_is_worst: a ranked row without a figure is ranked as if it had the
            board's worst one (:func:`fill_missing`), so the metric stays weighable on a
            board with older results; otherwise one row without it leaves the metric out
            of the board's Dynascore.
        method_field: the evaluator's summary field that says how the row's figure was
            obtained (``"estimated"`` or ``"measured"``), shown beside it ("" if none).
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
    default_weight: float = 1.0
    missing_is_worst: bool = False
    method_field: str = ""

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
                default_weight=DEFAULT_PERF_WEIGHT,
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
                "energy",
                "Energy",
                "J/1k examples",
                "lower",
                weighable=True,
                result_field="energy_j_per_1k",
                measured="Energy the sandbox drew per 1,000 examples over the timed phase: "
                "its cgroup CPU seconds times the power codecarbon assumes one CPU draws "
                '(its TDP for this CPU model over the logical CPUs; "estimated"), or the '
                "CPU packages' RAPL energy counters shared out by the sandbox's part of the "
                "machine's CPU time (\"measured\"); a GPU's NVML energy counter added where "
                "the sandbox had one.",
                caveat="CPU (and GPU) only, no memory, disk or cooling; an estimate assumes "
                "every CPU second costs the same. Results from before energy was "
                "measured, and the local sandbox (no cgroup), have none: they show a dash "
                "and rank as the board's worst figure when energy weighs. Off (weight 0) "
                "unless the task owner sets it.",
                default_weight=0.0,
                missing_is_worst=True,
                method_field="energy_method",
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

DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {m.name: m.default_weight for m in METRICS.values() if m.weighable}
)
"""A task spec's weights when it sets none."""


def rankable(name: str, values: Iterable[float | None]) -> bool:
    """Whether metric ``name`` can enter the Dynascore of rows with these ``values``: every
    row has one, or the metric ranks a missing figure as the worst and some row has one."""
    return rankable_present(name, np.array([value is not None for value in values], dtype=bool))


def rankable_present(name: str, present: NDArray[np.bool_]) -> bool:
    """:func:`rankable` of rows of which ``present`` marks those with a value."""
    if present.all():
        return True
    return METRICS[name].missing_is_worst and bool(present.any())


def fill_missing(
    table: Mapping[str, Mapping[str, float | None]],
    names: Iterable[str],
    *,
    may_lack: Collection[str] = (),
) -> dict[str, dict[str, float]]:
    """Rows of ``names`` ready to rank, the one rule for a figure a row lacks: it becomes
    the worst figure another row has (the highest where lower is better), so a row without
    one never ranks better on it than a row with one. That holds for a ``missing_is_worst``
    metric in any row, and for every metric in the rows of ``may_lack`` (predictions made
    elsewhere: no run measured their throughput, memory or energy).

    Raises:
        ValueError: a missing figure of another metric, or of one no row has
            (:func:`rankable` says which metrics may rank).
    """
    wanted = list(names)
    keys = list(table)
    values, missing = figure_arrays(table.values(), wanted)
    filled = fill_missing_array(
        keys,
        wanted,
        values,
        missing,
        may_lack=np.array([key in may_lack for key in keys], dtype=bool),
    )
    return {
        key: dict(zip(wanted, row, strict=True))
        for key, row in zip(keys, filled.tolist(), strict=True)
    }


def figure_arrays(
    rows: Iterable[Mapping[str, float | None]], names: Sequence[str]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """``rows``' figures ``names`` as arrays, ``(values, missing)`` (rows x names): a figure
    a row lacks (absent or None) is NaN in ``values`` and True in ``missing``."""
    rows = list(rows)
    # One flat pass (numpy reads None as NaN): a third of the time of a list per row, at
    # 100,000 rows.
    cells = [row.get(name) for row in rows for name in names]
    shape = (len(rows), len(names))
    values = np.array(cells, dtype=np.float64)
    # numpy reads None as NaN, so only a NaN cell can be a missing one: only those are
    # looked at again (a pass over every cell cost 90 ms at 100,000 rows).
    missing = np.isnan(values)
    nans = np.flatnonzero(missing)
    missing[nans] = [cells[i] is None for i in nans.tolist()]
    return values.reshape(shape), missing.reshape(shape)


def packed_figures(rows: Iterable[Mapping[str, float | None]], names: Sequence[str]) -> list[bytes]:
    """Each of ``rows``' :func:`figure_arrays` row, packed: its figures as float64, then
    a byte per figure, 1 where missing. A row packed once is read again at the cost of a
    copy (:func:`unpacked_figures`), so a board's new version packs only its new rows.

    >>> values, missing = unpacked_figures(packed_figures([{"perf": 1.5}, {}], ["perf"]), ["perf"])
    >>> values.tolist(), missing.tolist()
    ([[1.5], [nan]], [[False], [True]])
    """
    values, missing = figure_arrays(rows, names)
    packed = np.concatenate([values.view(np.uint8), missing.view(np.uint8)], axis=1).tobytes()
    size = _packed_size(names)
    return [packed[at : at + size] for at in range(0, len(packed), size)]


def unpacked_figures(
    rows: Sequence[bytes], names: Sequence[str]
) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """:func:`figure_arrays` of rows :func:`packed_figures` packed with these ``names``."""
    width = len(names)
    cells = np.frombuffer(b"".join(rows), dtype=np.uint8).reshape(len(rows), _packed_size(names))
    values = np.ascontiguousarray(cells[:, : 8 * width]).view(np.float64)
    return values, cells[:, 8 * width :].astype(bool)


def _packed_size(names: Sequence[str]) -> int:
    return 9 * len(names)  # a float64 and a flag each


def fill_missing_array(
    keys: Sequence[str],
    names: Sequence[str],
    values: NDArray[np.float64],
    missing: NDArray[np.bool_],
    *,
    may_lack: NDArray[np.bool_],
) -> NDArray[np.float64]:
    """:func:`fill_missing` of ``values[i, k]`` (metric ``names[k]`` of row ``keys[i]``,
    lacking where ``missing``; ``may_lack[i]``: row ``i`` is a predictions-only one).

    Raises:
        ValueError: as :func:`fill_missing`, naming the first such row and metric.
    """
    filled = values.copy()
    bad = np.zeros(missing.shape, dtype=bool)
    for k, name in enumerate(names):
        lacking = missing[:, k]
        if not lacking.any():
            continue
        present = values[~lacking, k]
        allowed = may_lack | METRICS[name].missing_is_worst
        bad[:, k] = lacking & ~allowed if len(present) else lacking
        if len(present):
            worst = present.max() if METRICS[name].direction == "lower" else present.min()
            filled[lacking, k] = worst
    if bad.any():
        i = int(np.flatnonzero(bad.any(axis=1))[0])
        k = int(np.flatnonzero(bad[i])[0])
        raise ValueError(f"Model {keys[i]!r} has no {names[k]} figure to rank by")
    return filled


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
