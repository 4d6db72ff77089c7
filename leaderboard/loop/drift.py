"""Drift checks: production inputs measured against a task's datasets; the most shifted queued.

A team sends a sample of its model's unlabeled production inputs (``POST
/tasks/{id}/traffic`` or ``evalboard drift check``). The check compares them with the
inputs of the task's datasets (the *reference*: every dataset added or closed from a
round, hidden ones included, perturbed copies left out; a seeded sample of at most
:data:`MAX_REFERENCE` of them) by the domain-classifier test of :mod:`scoring.shift`,
and reports the cross-validated AUC with its interval and a permutation p-value. The
traffic is *shifted* when ``p < alpha``. Then, and only then, the ``queue`` inputs with
the highest shift scores are queued unlabeled for validators
(:mod:`leaderboard.loop.candidates`), for classification tasks.

Hidden sets count in the reference but are never named: the report gives their number
and how many inputs they hold. Every check is stored, numbered per task, with its report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from datasets_registry import (
    ColumnMapping,
    Format,
    TaskSpec,
    get_task,
    list_datasets,
    read_examples,
    read_inputs,
)
from evalboard.core.context import Context
from evalboard.core.errors import Conflict, NotFound, UsageError
from evalboard.core.states import Access
from evalboard.core.tables import DriftCheck
from leaderboard.loop.answers import check_inputs
from leaderboard.loop.candidates import (
    MAX_QUEUE,
    Candidate,
    dataset_input_keys,
    queue_candidates,
)
from scoring import SHIFT_METHOD, ShiftTest, domain_shift

__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_QUEUE",
    "MAX_REFERENCE",
    "MAX_TRAFFIC_BYTES",
    "MAX_TRAFFIC_ROWS",
    "MIN_INPUTS",
    "DriftOptions",
    "TrafficTooLarge",
    "check_drift",
    "check_traffic_size",
    "get_drift_check",
    "list_drift_checks",
    "read_traffic",
]

#: The most traffic inputs one check takes (a sample of the traffic, not all of it).
MAX_TRAFFIC_ROWS = 2_000
#: The largest traffic file (2,000 rows of long QA contexts fit).
MAX_TRAFFIC_BYTES = 32 * 1024**2
#: The fewest inputs on each side for the test to mean anything (5 folds of 4 or more).
MIN_INPUTS = 20
#: The reference is a seeded sample of at most this many dataset inputs.
MAX_REFERENCE = 2_000
DEFAULT_QUEUE = 20
DEFAULT_ALPHA = 0.01
#: How many of the most shifted inputs the report shows beyond those queued.
_SHOWN = 10
_BINS = 25
_SEED = 0


class TrafficTooLarge(UsageError):
    """A traffic file over :data:`MAX_TRAFFIC_BYTES`: HTTP 413."""

    http_status = 413


def check_traffic_size(size: int) -> None:
    """Refuse a traffic file of ``size`` bytes over the cap, before reading it."""
    if size > MAX_TRAFFIC_BYTES:
        raise TrafficTooLarge(
            f"The traffic file has {size / 1024**2:.1f} MiB; a drift check takes at most "
            f"{MAX_TRAFFIC_BYTES // 1024**2} MiB and {MAX_TRAFFIC_ROWS:,} inputs. Send a sample"
        )


def read_traffic(
    path: Path,
    spec: TaskSpec,
    *,
    mapping: ColumnMapping | None = None,
    format: Format | None = None,
) -> list[dict[str, str]]:
    """The task's inputs in a traffic file (JSONL, CSV, TSV), checked as dataset rows are.

    Raises:
        TrafficTooLarge: the file is over :data:`MAX_TRAFFIC_BYTES`.
        InvalidDataset: it cannot be read, a row lacks an input field or holds a NUL or
            a lone surrogate, or it holds no rows or more than :data:`MAX_TRAFFIC_ROWS`.
    """
    if path.is_file():
        check_traffic_size(path.stat().st_size)
    return read_inputs(path, spec, mapping=mapping, format=format, max_rows=MAX_TRAFFIC_ROWS)


@dataclass(frozen=True)
class DriftOptions:
    """How a check decides and what it queues.

    Attributes:
        queue: the most shifted inputs to queue when the traffic is shifted (0: none).
        alpha: the significance level: shifted when the p-value is below it.
    """

    queue: int = DEFAULT_QUEUE
    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        if not 0 <= self.queue <= MAX_QUEUE:
            raise UsageError(f"queue {self.queue} must be between 0 and {MAX_QUEUE}")
        if not 0 < self.alpha <= 0.5:
            raise UsageError(f"alpha {self.alpha} must be in (0, 0.5], e.g. 0.01")


@dataclass(frozen=True)
class _Reference:
    inputs: list[dict[str, str]]
    summary: dict[str, Any]


def _reference(ctx: Context, task_id: str, spec: TaskSpec) -> _Reference:
    """The task's original datasets' inputs, sampled; hidden sets counted, not named."""
    originals = [d for d in list_datasets(ctx, task_id) if d.derived_from_id is None]
    pooled: list[dict[str, str]] = []
    shown: list[dict[str, Any]] = []
    hidden = {"datasets": 0, "inputs": 0}
    for dataset in sorted(originals, key=lambda d: d.name):
        rows = [
            {n: example[n] for n in spec.input_names} for example in read_examples(ctx, dataset)
        ]
        pooled.extend(rows)
        if dataset.access == Access.HIDDEN:
            hidden["datasets"] += 1
            hidden["inputs"] += len(rows)
        else:
            shown.append({"name": dataset.name, "inputs": len(rows)})
    if len(pooled) < MIN_INPUTS:
        raise UsageError(
            f"Task {task_id!r} has {len(pooled)} dataset input(s) to compare traffic with; a "
            f"drift check needs at least {MIN_INPUTS}. Add a dataset first (evalboard "
            "dataset add)"
        )
    sampled = len(pooled) > MAX_REFERENCE
    if sampled:
        picked = np.random.default_rng(_SEED).choice(len(pooled), MAX_REFERENCE, replace=False)
        pooled = [pooled[i] for i in sorted(picked.tolist())]
    summary = {"datasets": shown, "hidden": hidden, "sampled": sampled}
    return _Reference(inputs=pooled, summary=summary)


def _texts(spec: TaskSpec, inputs: Sequence[dict[str, str]]) -> list[str | tuple[str, ...]]:
    if len(spec.input_names) == 1:
        (name,) = spec.input_names
        return [row[name] for row in inputs]
    return [tuple(row[n] for n in spec.input_names) for row in inputs]


def _checked(spec: TaskSpec, traffic: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    if len(traffic) < MIN_INPUTS:
        raise UsageError(
            f"A drift check needs at least {MIN_INPUTS} traffic inputs to tell anything; got "
            f"{len(traffic)}. Send a larger sample"
        )
    if len(traffic) > MAX_TRAFFIC_ROWS:
        raise UsageError(
            f"A drift check takes at most {MAX_TRAFFIC_ROWS:,} traffic inputs; got "
            f"{len(traffic):,}. Send a sample, or several checks"
        )
    checked = []
    for number, inputs in enumerate(traffic, start=1):
        try:
            checked.append(check_inputs(spec, inputs))
        except UsageError as exc:
            raise UsageError(f"input {number}: {exc.message}") from None
    return checked


def _histogram(test: ShiftTest) -> dict[str, list[float] | list[int]]:
    """Shift scores of both sides in common bins, for the page's plot."""
    scores = np.concatenate([test.traffic_scores, test.reference_scores])
    low, high = float(scores.min()), float(scores.max())
    if math.isclose(low, high):
        low, high = low - 0.5, high + 0.5
    edges = np.linspace(low, high, _BINS + 1)
    return {
        "edges": [round(float(e), 6) for e in edges],
        "traffic": np.histogram(test.traffic_scores, edges)[0].tolist(),
        "reference": np.histogram(test.reference_scores, edges)[0].tolist(),
    }


def _report(
    task_id: str, number: int, test: ShiftTest, reference: _Reference, options: DriftOptions
) -> dict[str, Any]:
    return {
        "task": task_id,
        "number": number,
        "method": SHIFT_METHOD,
        "statistic": "auc",
        "auc": test.auc.estimate,
        "auc_low": test.auc.low,
        "auc_high": test.auc.high,
        "p_value": test.p_value,
        "alpha": options.alpha,
        "shifted": test.p_value < options.alpha,
        "n_traffic": test.n_traffic,
        "n_reference": test.n_reference,
        "n_permutations": test.n_permutations,
        "folds": test.folds,
        "features": test.features,
        "seed": test.seed,
        "reference": reference.summary,
        "histogram": _histogram(test),
    }


def _why_none(spec: TaskSpec, shifted: bool, options: DriftOptions) -> str | None:
    if options.queue == 0:
        return "queue 0: nothing was to be queued"
    if not shifted:
        return f"not shifted (p >= {options.alpha:g}): nothing queued"
    if spec.output.type != "multiclass":
        return (
            f"a {spec.output.type} task: traffic candidates are queued for classification "
            "tasks only (validators give a label)"
        )
    return None


def check_drift(
    ctx: Context,
    task_id: str,
    traffic: Sequence[dict[str, str]],
    *,
    reporter_id: int | None,
    options: DriftOptions | None = None,
) -> DriftCheck:
    """Measure the traffic's shift from the task's datasets, store the check, queue the
    most shifted inputs when it is shifted.

    Args:
        traffic: the production inputs, each the task's input fields.
        reporter_id: who sent them (recorded with the check).

    Raises:
        UsageError: fewer than :data:`MIN_INPUTS` inputs on either side, more than
            :data:`MAX_TRAFFIC_ROWS`, or an input that does not fit the task.
        Conflict: another check took its number, or queued one of its inputs, just now.
    """
    spec = get_task(ctx, task_id)
    options = options or DriftOptions()
    inputs = _checked(spec, traffic)
    reference = _reference(ctx, task_id, spec)
    test = domain_shift(_texts(spec, inputs), _texts(spec, reference.inputs), seed=_SEED)
    shifted = test.p_value < options.alpha
    order = sorted(range(len(inputs)), key=lambda i: -test.traffic_scores[i])
    why_none = _why_none(spec, shifted, options)
    known = dataset_input_keys(ctx, task_id, spec.input_names) if why_none is None else set()
    with ctx.db.session() as session:
        number = 1 + (
            session.scalar(select(func.max(DriftCheck.number)).where(DriftCheck.task_id == task_id))
            or 0
        )
        report = _report(task_id, number, test, reference, options)
        check = DriftCheck(
            task_id=task_id,
            number=number,
            created_by=reporter_id,
            auc=test.auc.estimate,
            p_value=test.p_value,
            shifted=shifted,
            report=report,
        )
        session.add(check)
        try:
            session.flush()
        except IntegrityError:
            raise Conflict(
                f"Drift check {number} of task {task_id!r} was made by someone else just now; "
                "send the file again"
            ) from None
        ids: list[int | None] = []
        if why_none is None:
            ids = queue_candidates(
                task_id,
                (
                    Candidate(
                        inputs=inputs[i],
                        note=f"Production input from drift check {number}: shift score "
                        f"{test.traffic_scores[i]:.3f}, rank {rank} of {len(inputs)}",
                    )
                    for rank, i in enumerate(order, start=1)
                ),
                limit=options.queue,
                known=known,
                session=session,
            )
        shown = max(len(ids), _SHOWN)
        check.report = {
            **report,
            "queued": [i for i in ids if i is not None],
            "duplicates": sum(1 for i in ids if i is None),
            "not_queued_because": why_none,
            "top": [
                {
                    "rank": rank,
                    "score": round(float(test.traffic_scores[i]), 6),
                    "inputs": inputs[i],
                    "example_id": ids[rank - 1] if rank <= len(ids) else None,
                    "duplicate": rank <= len(ids) and ids[rank - 1] is None,
                }
                for rank, i in enumerate(order[:shown], start=1)
            ],
        }
        session.flush()
        return check


def list_drift_checks(ctx: Context, task_id: str) -> list[DriftCheck]:
    """The task's drift checks, newest first."""
    get_task(ctx, task_id)
    query = select(DriftCheck).where(DriftCheck.task_id == task_id)
    with ctx.db.session() as session:
        return list(session.scalars(query.order_by(DriftCheck.number.desc())))


def get_drift_check(ctx: Context, task_id: str, number: int) -> DriftCheck:
    get_task(ctx, task_id)
    with ctx.db.session() as session:
        check = session.scalar(
            select(DriftCheck).where(DriftCheck.task_id == task_id, DriftCheck.number == number)
        )
        if check is None:
            raise NotFound(
                f"Task {task_id!r} has no drift check {number}; send traffic with "
                f"`evalboard drift check --task {task_id} FILE`"
            )
        return check
