"""From stored results to the leaderboard's table: the one place that reads ``Result.metrics``.

A result holds one dataset's figures (``evaluator.result.DatasetMetrics``). A model's row
averages them over the task's scoring datasets with the dataset weights, exactly as the
evaluator's own summary does (:func:`evaluator.scorecard.summarize`): perf, throughput,
memory and latency over the originals, fairness and robustness over their copies. A model
is ranked once it has a finished result on every scoring dataset; until then it is pending.

The majority-class baseline predicts, on every scoring dataset, the label most frequent
across those datasets; it has a perf and nothing else, and is shown, not ranked. It is
the floor of :mod:`scoring.floor`.

A viewer may weigh the datasets otherwise (:meth:`TaskTable.reweighted`): every average,
the baseline's included, is then taken again with those weights; a perturbed copy
follows its original's weight.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import selectinload

from datasets_registry import TaskSpec, get_task, list_datasets, read_examples, scoring_datasets
from evalboard.core.context import Context
from evalboard.core.states import Access, JobStatus
from evalboard.core.tables import Dataset, Job, Submission, Task, User
from evaluator import DatasetOutcome, TaskMetrics, shown_metrics, stored_outcome, summarize
from scoring import METRICS, InvalidWeightsError, check_weights, compute, weighted_mean
from submission_sandbox import ModelCard

__all__ = ["ModelEntry", "TaskTable", "load_table", "stored_card", "summary_status"]

logger = logging.getLogger(__name__)


def _board_metrics(summary: TaskMetrics) -> dict[str, float | None]:
    """The evaluator's summary under the board's metric names (``scoring.METRICS``)."""
    return {name: getattr(summary, metric.result_field) for name, metric in METRICS.items()}


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
    runtime: str | None = None
    #: What the model is, as its submitter last described it (``leaderboard.cards``).
    card: ModelCard = field(default_factory=ModelCard)
    published: bool = True
    metrics: dict[str, float | None] = field(default_factory=dict)
    per_dataset: dict[str, dict[str, Any]] = field(default_factory=dict)
    predictions: dict[str, str] = field(default_factory=dict)
    #: The finished results on scoring datasets, kept to re-average with other weights.
    outcomes: list[DatasetOutcome] = field(default_factory=list)

    def throughput_runs(self, weights: Mapping[str, float]) -> list[float]:
        """The model's throughput per timed run, each averaged over the originals with
        ``weights`` (run j of every dataset together); empty without repeated runs."""
        originals = [o for o in self.outcomes if o.perturbation is None and o.metrics]
        runs = [o.metrics.throughput_runs for o in originals if o.metrics is not None]
        if not runs or any(len(r) < 2 for r in runs):
            return []
        total = sum(weights.get(o.dataset, o.weight) for o in originals)
        if not total > 0:
            return []
        return [
            sum(
                weights.get(o.dataset, o.weight) * r[j]
                for o, r in zip(originals, runs, strict=True)
            )
            / total
            for j in range(min(len(r) for r in runs))
        ]

    def busiest_load(self) -> float | None:
        """The largest share of the worker's CPU other processes used while this model was
        timed on an original dataset; None when no load was recorded."""
        shares = [
            o.metrics.load.others_cpu_share
            for o in self.outcomes
            if o.perturbation is None and o.metrics is not None and o.metrics.load is not None
        ]
        return max(shares) if shares else None


@dataclass
class TaskTable:
    """Everything the leaderboard, its pages and its CLI show for one task."""

    task: TaskSpec
    default_weights: dict[str, float]
    owner_id: int | None
    datasets: list[Dataset]
    scoring: list[Dataset]
    models: list[ModelEntry]
    #: The majority-class baseline's perf on each original scoring dataset.
    majority_by_dataset: dict[str, float] | None
    #: The label the majority-class baseline answers (None: not a classification task).
    majority_label: str | None = None
    #: Original scoring dataset -> its weight in the averages (the owner's unless a
    #: viewer chose others).
    dataset_weights: dict[str, float] = field(default_factory=dict)

    @property
    def weighable_datasets(self) -> list[str]:
        """The original scoring datasets a viewer may weigh: hidden sets keep the owner's
        weight, and their names are never shown."""
        return [d.name for d in self.originals if d.access != Access.HIDDEN]

    @property
    def majority_perf(self) -> float | None:
        """The baseline's perf averaged with :attr:`dataset_weights`."""
        return _weighted_mean(self.majority_by_dataset, self.dataset_weights)

    def reweighted(self, weights: Mapping[str, float] | None) -> TaskTable:
        """This table with the original scoring datasets weighed by ``weights`` (names not
        given keep the owner's weight); None gives the table itself.

        Raises:
            scoring.InvalidWeightsError: an unknown dataset, a weight that is not a finite
                number >= 0, or every dataset at 0.
        """
        if weights is None:
            return self
        chosen = check_weights(weights, known=self.weighable_datasets, what="dataset", partial=True)
        merged = {**self.dataset_weights, **chosen}
        if not sum(merged.values()) > 0:
            raise InvalidWeightsError(
                f"Every scoring dataset would weigh 0 with {_text(chosen)}; give at least one "
                "a weight above 0"
            )
        models = [_reaveraged(m, merged) for m in self.models]
        return replace(self, models=models, dataset_weights=merged)

    @property
    def ranked(self) -> list[ModelEntry]:
        return [m for m in self.models if m.complete]

    @property
    def originals(self) -> list[Dataset]:
        return [d for d in self.scoring if d.perturbation is None]

    def entry(self, submission_id: int) -> ModelEntry | None:
        return next((m for m in self.models if m.submission_id == submission_id), None)


def _text(weights: Mapping[str, float]) -> str:
    return ",".join(f"{k}:{v:g}" for k, v in weights.items())


def _weighted_mean(
    values: Mapping[str, float] | None, weights: Mapping[str, float]
) -> float | None:
    if not values:
        return None
    return weighted_mean((value, weights.get(name, 0.0)) for name, value in values.items())


def _reaveraged(entry: ModelEntry, weights: Mapping[str, float]) -> ModelEntry:
    if not entry.complete:
        return entry
    outcomes = [
        o.model_copy(update={"weight": weights.get(o.derived_from or o.dataset, o.weight)})
        for o in entry.outcomes
    ]
    return replace(entry, metrics=_board_metrics(summarize(outcomes)), outcomes=outcomes)


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


def stored_card(submission: Submission) -> ModelCard:
    """A submission's model card: as its submitter last edited it, else as its manifest
    gave it (``leaderboard.cards`` edits it)."""
    return ModelCard.of(submission.card if submission.card is not None else submission.manifest)


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
        runtime=submission.manifest.get("runtime"),
        card=stored_card(submission),
        published=submission.published,
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
        entry.per_dataset[job.dataset.name] = shown_metrics(job.result.metrics)
        if job.result.predictions_key:
            entry.predictions[job.dataset.name] = job.result.predictions_key
        if job.dataset_id in scoring_ids:
            finished.add(job.dataset_id)
            outcomes.append(outcome)
    entry.complete = bool(scoring_ids) and finished == scoring_ids
    entry.outcomes = outcomes
    if entry.complete:
        entry.metrics = _board_metrics(summarize(outcomes))
    return entry


def _majority_by_dataset(
    ctx: Context, task: TaskSpec, originals: list[Dataset]
) -> tuple[str, dict[str, float]] | None:
    if task.output.type != "multiclass" or not originals:
        return None
    cache_key = ("majority", task.perf_metric, tuple((d.name, d.sha256) for d in originals))
    if ctx.cache.has(cache_key):
        return ctx.cache.get(cache_key)  # type: ignore[no-any-return]
    golds = {d.name: [str(task.gold(e)) for e in read_examples(ctx, d)] for d in originals}
    counts = Counter(label for labels in golds.values() for label in labels)
    # Ties go to the label listed first in the task spec.
    majority = max(task.output.labels, key=lambda label: counts[label])
    perf = {
        name: compute(task.perf_metric, [majority] * len(labels), labels, labels=task.output.labels)
        for name, labels in golds.items()
    }
    ctx.cache.put(cache_key, (majority, perf))
    return majority, perf


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
    majority = _majority_by_dataset(ctx, spec, originals)
    return TaskTable(
        task=spec,
        default_weights=default_weights,
        owner_id=owner_id,
        datasets=datasets,
        scoring=scoring,
        models=models,
        majority_by_dataset=majority[1] if majority else None,
        majority_label=majority[0] if majority else None,
        dataset_weights={d.name: float(d.weight) for d in originals},
    )
