"""Quality figures of one dataset from the model's outputs, and the task's averages.

Scoring itself is the ``scoring`` package's (the metric registry, the delta metric, ECE);
this module pairs outputs with gold answers (or, for perturbed copies, with the model's
own predictions on the originals) and builds the per-example records kept for drill-down.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import orjson

from datasets_registry import TaskSpec
from evaluator.result import DatasetOutcome, TaskMetrics
from scoring import (
    TEXT_METRICS,
    FloatArray,
    calibration_error,
    compute,
    delta_per_example,
    get_metric,
    per_example,
    weighted_mean,
)

__all__ = [
    "Quality",
    "outputs_by_uid",
    "read_records",
    "score",
    "summarize",
]

_EXTRA_METRICS = {
    "macro_f1": ("accuracy",),
    "accuracy": ("macro_f1",),
    "squad_f1": ("squad_em",),
    # A text task reports every text metric, whichever one is its perf.
    **{name: tuple(other for other in TEXT_METRICS if other != name) for name in TEXT_METRICS},
}


@dataclass
class Quality:
    """A dataset's quality figures (x100), and what its per-example records are made of.

    The records (uid, the model's output, gold or the original prediction, the score) are
    built only when asked for: an evaluation that keeps no predictions does not pay.
    """

    perf: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    delta: float | None = None
    ece: float | None = None
    uids: Sequence[Any] = ()
    outputs: Sequence[Mapping[str, Any]] = ()
    scores: Sequence[float] = ()
    #: Per example: ``gold`` (against gold) or ``input_id`` and ``original`` (a copy).
    references: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    @property
    def records(self) -> list[dict[str, Any]]:
        columns = list(self.references.items())
        return [
            {
                "uid": uid,
                "output": dict(output),
                "score": float(value),
                **{name: values[i] for name, values in columns},
            }
            for i, (uid, output, value) in enumerate(
                zip(self.uids, self.outputs, self.scores, strict=True)
            )
        ]

    def jsonl(self) -> bytes:
        """The per-example records as JSON lines (the drill-down file).

        Raises:
            ValueError: a record holds NaN or an infinity, which JSON has not: written,
                :func:`read_records` could not read the file back (the output contract
                refuses such outputs before they are scored).
        """
        return b"".join(
            json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False).encode() + b"\n"
            for record in self.records
        )


def read_records(data: bytes) -> list[dict[str, Any]]:
    """The per-example records of a drill-down file (what :meth:`Quality.jsonl` wrote):
    strict JSON, as written (NaN or an infinity raises ``orjson.JSONDecodeError``, a
    ``ValueError``)."""
    return [orjson.loads(line) for line in data.splitlines() if line]


def outputs_by_uid(records: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The model's output on each example of a drill-down file, by uid."""
    return {str(r["uid"]): r["output"] for r in records if "output" in r}


def score(
    task: TaskSpec,
    examples: Sequence[Mapping[str, Any]],
    outputs: Sequence[Mapping[str, Any]],
    *,
    originals: Mapping[str, Mapping[str, Any]] | None = None,
) -> Quality:
    """Score outputs (aligned with ``examples``).

    Args:
        originals: for a perturbed copy, the model's outputs on the original examples by
            uid; each example's ``input_id`` picks its original. The figure is then the
            delta metric (fairness or robustness), not perf against gold.
    """
    predictions = [task.prediction(output) for output in outputs]
    uids = [example["uid"] for example in examples]
    if originals is not None:
        input_ids = [example["input_id"] for example in examples]
        original_predictions = [task.prediction(originals[str(i)]) for i in input_ids]
        scores = delta_per_example(task.perf_metric, predictions, original_predictions)
        return Quality(
            delta=float(100.0 * scores.mean()),
            uids=uids,
            outputs=outputs,
            scores=scores.tolist(),
            references={"input_id": input_ids, "original": original_predictions},
        )

    golds = [task.gold(example) for example in examples]
    labels = task.output.labels or None
    per_name = _per_example_metric(task)
    scores = per_example(per_name, predictions, golds)
    quality = Quality(
        perf=_value(task.perf_metric, per_name, scores, predictions, golds, labels),
        uids=uids,
        outputs=outputs,
        scores=scores.tolist(),
        references={"gold": golds},
    )
    for name in _EXTRA_METRICS.get(task.perf_metric, ()):
        quality.extra[name] = _value(name, per_name, scores, predictions, golds, labels)
    if task.output.type == "multiclass":
        matrix = _probability_matrix(outputs, task.output.labels)
        if matrix is not None:
            quality.ece = calibration_error(matrix, golds, labels=task.output.labels)
    return quality


def _per_example_metric(task: TaskSpec) -> str:
    """The metric whose per-example scores the drill-down records show: for a text task its
    perf where that is a mean of per-example scores, token F1 where it is a corpus figure
    (chrF, BLEU)."""
    if task.output.type == "span":
        return "squad_f1"
    if task.output.type == "text":
        perf = get_metric(task.perf_metric)
        return perf.name if perf.per_example_fn is not None else "text_f1"
    return "accuracy"


def _value(
    name: str,
    per_name: str,
    scores: FloatArray,
    predictions: Sequence[Any],
    golds: Sequence[Any],
    labels: Sequence[Any] | None,
) -> float:
    """Metric ``name``; from the per-example ``scores`` already computed when it is theirs
    (the registry's own reduction of them, so the figure is the same as ``compute``'s)."""
    if name != per_name:
        return compute(name, predictions, golds, labels=labels)
    entry = get_metric(name)
    return float(entry.reduce(scores[:, None].sum(axis=0), len(scores)))


def _probability_matrix(
    outputs: Sequence[Mapping[str, Any]], labels: Sequence[str]
) -> FloatArray | None:
    """Each output's ``probs`` as a row over ``labels`` (0 where a label is left out);
    None unless every output gives a non-empty mapping (no calibration figure then)."""
    rows = [output.get("probs") for output in outputs]
    if not all(isinstance(row, Mapping) and row for row in rows):
        return None
    given: list[Mapping[str, float]] = rows  # type: ignore[assignment]
    cells = (row.get(label, 0.0) for row in given for label in labels)
    matrix = np.fromiter(cells, dtype=np.float64, count=len(given) * len(labels))
    return matrix.reshape(len(given), len(labels))


def summarize(
    outcomes: Sequence[DatasetOutcome], *, weights: Mapping[str, float] | None = None
) -> TaskMetrics:
    """Dataset-weighted averages over the finished, scored datasets.

    Perf, speed, memory and calibration average over the originals; fairness and
    robustness over the copies of each kind. ``standard`` datasets (shown, not scored) and
    failed ones are left out; the result lists them, the averages do not.

    Args:
        weights: dataset name -> weight, in place of the outcome's own where named (a
            board re-weighed by a viewer), so that no outcome is copied to re-average.
    """
    chosen = weights or {}

    def weight(outcome: DatasetOutcome) -> float:
        return chosen.get(outcome.dataset, outcome.weight)

    def averaged(
        among: Iterable[DatasetOutcome], value: Callable[[DatasetOutcome], float | None]
    ) -> float | None:
        return weighted_mean((value(o), weight(o)) for o in among)

    done = [
        o
        for o in outcomes
        if o.status == "finished" and o.metrics is not None and o.access != "standard"
    ]
    originals = [o for o in done if o.perturbation is None]

    def of(name: str) -> Callable[[DatasetOutcome], float | None]:
        return lambda o: getattr(o.metrics, name)

    return TaskMetrics(
        perf=averaged(originals, of("perf")),
        throughput=averaged(originals, of("throughput")),
        memory_gib=averaged(originals, of("memory_gib")),
        fairness=averaged((o for o in done if o.perturbation == "fairness"), of("fairness")),
        robustness=averaged((o for o in done if o.perturbation == "robustness"), of("robustness")),
        latency_p50_s=averaged(originals, of("latency_p50_s")),
        latency_p95_s=averaged(originals, of("latency_p95_s")),
        startup_s=averaged(originals, of("startup_s")),
        cpu_seconds=averaged(originals, of("cpu_seconds")),
        ece=averaged(originals, of("ece")),
        energy_j_per_1k=averaged(originals, of("energy_j_per_1k")),
        energy_method=_energy_method(originals),
        extra=_extra_averages(originals, weight),
    )


def _energy_method(originals: Sequence[DatasetOutcome]) -> Literal["estimated", "measured"] | None:
    """measured when every original's energy figure was; None when none has one."""
    methods = {
        o.metrics.energy_method
        for o in originals
        if o.metrics is not None and o.metrics.energy_j_per_1k is not None
    }
    if not methods:
        return None
    return "measured" if methods == {"measured"} else "estimated"


def _extra_averages(
    originals: Sequence[DatasetOutcome], weight: Callable[[DatasetOutcome], float]
) -> dict[str, float]:
    """Each extra metric that every original has, averaged with the dataset weights."""
    extras = [(o.metrics.extra, weight(o)) for o in originals if o.metrics is not None]
    shared = set.intersection(*(set(extra) for extra, _ in extras)) if extras else set()
    averages: dict[str, float] = {}
    for name in sorted(shared):
        value = weighted_mean((extra[name], weight) for extra, weight in extras)
        if value is not None:
            averages[name] = value
    return averages
