"""From stored results to the leaderboard's table: the one place that reads ``Result.metrics``.

A result holds one dataset's figures (``evaluator.result.DatasetMetrics``). A model's row
averages them over the task's scoring datasets with the dataset weights, exactly as the
evaluator's own summary does (:func:`evaluator.scorecard.summarize`): perf, throughput,
memory and latency over the originals, fairness and robustness over their copies. A model
is ranked once it has a finished result on every scoring dataset; until then it is pending.

The majority-class baseline predicts, on every scoring dataset, the label most frequent
across those datasets; it has a perf and nothing else, and is shown, not ranked.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from datasets_registry import TaskSpec, get_task, list_datasets, read_examples, scoring_datasets
from evalboard.core.context import Context
from evalboard.core.states import JobStatus
from evalboard.core.tables import Dataset, Job, Submission, Task, User
from evaluator import DatasetOutcome, stored_outcome, summarize
from scoring import compute

__all__ = ["ModelEntry", "TaskTable", "load_table", "summary_status"]

logger = logging.getLogger(__name__)

#: Leaderboard metric name -> the evaluator's summary field.
SUMMARY_FIELDS = {
    "perf": "perf",
    "throughput": "throughput",
    "memory": "memory_gib",
    "fairness": "fairness",
    "robustness": "robustness",
    "latency_p50": "latency_p50_s",
    "ece": "ece",
}


@dataclass
class ModelEntry:
    """One submission's row: its averaged metrics, per-dataset figures and status."""

    key: str
    submission_id: int
    name: str
    user: str | None
    user_id: int | None
    is_baseline: bool
    status: JobStatus
    complete: bool
    metrics: dict[str, float | None] = field(default_factory=dict)
    per_dataset: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, str] = field(default_factory=dict)


@dataclass
class TaskTable:
    """Everything the leaderboard, its pages and its CLI show for one task."""

    task: TaskSpec
    default_weights: dict[str, float]
    owner_id: int | None
    datasets: list[Dataset]
    scoring: list[Dataset]
    models: list[ModelEntry]
    majority_perf: float | None

    @property
    def ranked(self) -> list[ModelEntry]:
        return [m for m in self.models if m.complete]

    @property
    def originals(self) -> list[Dataset]:
        return [d for d in self.scoring if d.perturbation is None]

    def entry(self, submission_id: int) -> ModelEntry | None:
        return next((m for m in self.models if m.submission_id == submission_id), None)


def summary_status(statuses: list[str]) -> JobStatus:
    """One status for a submission's jobs: active beats queued beats failed."""
    found = {JobStatus(s) for s in statuses}
    for status in (JobStatus.RUNNING, JobStatus.BUILDING, JobStatus.QUEUED):
        if status in found:
            return status
    if not found:
        return JobStatus.QUEUED
    if JobStatus.FAILED in found:
        return JobStatus.FAILED
    if found == {JobStatus.CANCELLED}:
        return JobStatus.CANCELLED
    return JobStatus.FINISHED if JobStatus.FINISHED in found else JobStatus.CANCELLED


def _entry(
    submission: Submission, users: dict[int, str], scoring: list[Dataset], by_id: dict[int, Dataset]
) -> ModelEntry:
    scoring_ids = {d.id for d in scoring}
    outcomes: list[DatasetOutcome] = []
    entry = ModelEntry(
        key=str(submission.id),
        submission_id=submission.id,
        name=submission.name,
        user=users.get(submission.user_id) if submission.user_id is not None else None,
        user_id=submission.user_id,
        is_baseline=submission.is_baseline,
        status=summary_status([job.status for job in submission.jobs]),
        complete=False,
    )
    finished: set[int] = set()
    for job in submission.jobs:
        if job.status != JobStatus.FINISHED or job.result is None:
            continue
        original = by_id.get(job.dataset.derived_from_id or -1)
        try:
            outcome = stored_outcome(job.result, job.dataset, original)
        except ValidationError as exc:
            logger.warning("result of job %s does not fit DatasetMetrics: %s", job.id, exc)
            continue
        entry.per_dataset[job.dataset.name] = {
            k: v for k, v in job.result.metrics.items() if k != "schema_version"
        }
        if job.result.predictions_key:
            entry.predictions[job.dataset.name] = job.result.predictions_key
        if job.dataset_id in scoring_ids:
            finished.add(job.dataset_id)
            outcomes.append(outcome)
    entry.complete = bool(scoring_ids) and finished == scoring_ids
    if entry.complete:
        summary = summarize(outcomes)
        entry.metrics = {name: getattr(summary, attr) for name, attr in SUMMARY_FIELDS.items()}
    return entry


_majority_cache: dict[tuple[Any, ...], float | None] = {}


def _majority_perf(ctx: Context, task: TaskSpec, originals: list[Dataset]) -> float | None:
    if task.output.type != "multiclass" or not originals:
        return None
    cache_key = (task.perf_metric, tuple((d.sha256, d.weight) for d in originals))
    if cache_key in _majority_cache:
        return _majority_cache[cache_key]
    golds = {d.id: [str(e["label"]) for e in read_examples(ctx, d)] for d in originals}
    counts = Counter(label for labels in golds.values() for label in labels)
    # Ties go to the label listed first in the task spec.
    majority = max(task.output.labels, key=lambda label: counts[label])
    total = sum(d.weight for d in originals)
    perf = (
        sum(
            d.weight
            * compute(
                task.perf_metric,
                [majority] * len(golds[d.id]),
                golds[d.id],
                labels=task.output.labels,
            )
            for d in originals
        )
        / total
    )
    _majority_cache[cache_key] = perf
    return perf


def load_table(ctx: Context, task_id: str) -> TaskTable:
    """The task's models with their averaged metrics, ready for :mod:`leaderboard.ranking`."""
    spec = get_task(ctx, task_id)
    datasets = list_datasets(ctx, task_id)
    scoring = scoring_datasets(datasets)
    by_id = {d.id: d for d in datasets}
    with ctx.db.session() as session:
        task = session.get(Task, task_id)
        assert task is not None
        submissions = session.scalars(
            select(Submission)
            .where(Submission.task_id == task_id)
            .options(
                selectinload(Submission.jobs).selectinload(Job.result),
                selectinload(Submission.jobs).selectinload(Job.dataset),
            )
            .order_by(Submission.id)
        ).all()
        user_ids = {s.user_id for s in submissions if s.user_id is not None}
        users = dict(session.execute(select(User.id, User.name).where(User.id.in_(user_ids))).all())
        models = [_entry(s, users, scoring, by_id) for s in submissions]
        default_weights = {k: float(v) for k, v in task.default_weights.items()}
        owner_id = task.owner_id
    originals = [d for d in scoring if d.perturbation is None]
    return TaskTable(
        task=spec,
        default_weights=default_weights,
        owner_id=owner_id,
        datasets=datasets,
        scoring=scoring,
        models=models,
        majority_perf=_majority_perf(ctx, spec, originals),
    )
