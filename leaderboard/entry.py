"""A submission's row of the leaderboard, derived from its jobs' stored results.

The one place that reads ``Result.metrics`` for the board: a result holds one dataset's
figures (``evaluator.result.DatasetMetrics``); a model's row averages them over the
task's scoring datasets with the dataset weights, exactly as the evaluator's own summary
does (:func:`evaluator.scorecard.summarize`).
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray
from pydantic import Base64Bytes, BaseModel, ValidationError

from evalboard.core.states import JobStatus, SubmissionKind
from evalboard.core.tables import Dataset, Submission
from evaluator import (
    CONTENDED_SHARE,
    DatasetOutcome,
    TaskMetrics,
    shown_metrics,
    stored_outcome,
    summarize,
)
from scoring import METRICS, FloatArray, packed_figures, unpacked_figures
from submission_sandbox import ModelCard

__all__ = [
    "EntryDetails",
    "ModelEntry",
    "board_methods",
    "board_metrics",
    "counted_arrays",
    "derive_entry",
    "figure_arrays_of",
    "stored_card",
    "summary_status",
]

logger = logging.getLogger(__name__)

Method = Literal["estimated", "measured"]


def board_metrics(summary: TaskMetrics) -> dict[str, float | None]:
    """The evaluator's summary under the board's metric names (``scoring.METRICS``)."""
    return {name: getattr(summary, metric.result_field) for name, metric in METRICS.items()}


def board_methods(summary: TaskMetrics) -> dict[str, Method]:
    """How each figure that says so was obtained (``BoardMetric.method_field``)."""
    found = {
        name: getattr(summary, metric.method_field)
        for name, metric in METRICS.items()
        if metric.method_field
    }
    return {name: method for name, method in found.items() if method is not None}


#: One original dataset's timed runs: its name, its own weight, throughput per run.
TimedRuns = tuple[str, float, tuple[float, ...]]


class _PerDataset(BaseModel):
    per_dataset: dict[str, dict[str, Any]]


class _Outcomes(BaseModel):
    outcomes: list[DatasetOutcome]


@dataclass(frozen=True, slots=True)
class EntryDetails:
    """A row's per-dataset figures and outcomes, packed: the zlib of their JSON, about
    0.7 KB against 17 KB as Python objects, so that a 100,000-submission board fits the
    derived-data cache. Unpacked again on each read, by the few that read them: a model's
    page, a comparison, lineages, and re-averaging a row whose counted figures cannot be
    used. What every page row shows, and what re-weighing the datasets needs, is kept
    beside, unpacked.
    """

    #: ``zlib(JSON {"per_dataset": ..., "outcomes": [...]})``; empty without results.
    packed: Base64Bytes = b""
    #: The largest share of the worker's CPU other processes used while the model was
    #: timed on an original dataset; None when no load was recorded.
    busiest_load: float | None = None
    #: The originals' timed runs, for ``leaderboard.table.timed_runs``.
    timed: tuple[TimedRuns, ...] = ()
    #: Each outcome's weight name (its original's), its own weight and the figures its
    #: row's averages count from it (float64 ``(outcomes, len(METRICS))``, NaN where one
    #: does not count), so that re-weighing the datasets is arithmetic
    #: (:meth:`counted`); names None where they cannot be (an outcome's name repeats or a
    #: figure is infinite: re-averaged from the outcomes).
    counted_names: tuple[str, ...] | None = ()
    counted_weights: tuple[float, ...] = ()
    counted_figures: Base64Bytes = b""

    @classmethod
    def of(
        cls, per_dataset: Mapping[str, Mapping[str, Any]], outcomes: Sequence[DatasetOutcome]
    ) -> EntryDetails:
        if not per_dataset and not outcomes:
            return cls()
        # The standard library's JSON: a figure that is NaN or infinite stays one.
        text = json.dumps(
            {
                "per_dataset": per_dataset,
                "outcomes": [o.model_dump(mode="json") for o in outcomes],
            },
            separators=(",", ":"),
        )
        names, weights, figures = _counted(outcomes)
        originals = [o for o in outcomes if o.perturbation is None and o.metrics is not None]
        loads = [
            o.metrics.load.others_cpu_share
            for o in originals
            if o.metrics is not None and o.metrics.load is not None
        ]
        return cls(
            packed=zlib.compress(text.encode(), 1),
            busiest_load=max(loads) if loads else None,
            timed=tuple(
                (o.dataset, o.weight, tuple(o.metrics.throughput_runs))
                for o in originals
                if o.metrics is not None
            ),
            counted_names=names,
            counted_weights=weights,
            counted_figures=figures.tobytes() if names is not None else b"",
        )

    def counted(self) -> tuple[tuple[str, ...], tuple[float, ...], FloatArray] | None:
        """Each outcome's weight name, own weight and counted figures (read-only), or None
        where the row must be re-averaged from its outcomes."""
        if self.counted_names is None:
            return None
        return self.counted_names, self.counted_weights, counted_arrays([self])[0]

    def __bool__(self) -> bool:
        """Whether the model has a result on any dataset."""
        return bool(self.packed)

    @property
    def per_dataset(self) -> dict[str, dict[str, Any]]:
        """Dataset -> the figures of its finished job (``evaluator.shown_metrics``)."""
        if not self.packed:
            return {}
        return _PerDataset.model_validate_json(zlib.decompress(self.packed)).per_dataset

    @property
    def outcomes(self) -> list[DatasetOutcome]:
        """The finished results on scoring datasets, to re-average with other weights."""
        if not self.packed:
            return []
        return _Outcomes.model_validate_json(zlib.decompress(self.packed)).outcomes


def _counted(
    outcomes: Sequence[DatasetOutcome],
) -> tuple[tuple[str, ...] | None, tuple[float, ...], FloatArray]:
    """Each outcome's weight name (its original's, as the board re-weighs it), its own
    weight and the figures its row's averages count from it: :func:`evaluator.summarize`
    itself, with that outcome alone weighing 1, says which (the one rule of which dataset
    counts towards which figure). Names None when an outcome's name repeats or a figure
    is infinite: arithmetic would not give summarize's averages."""
    names = [o.dataset for o in outcomes]
    figures = np.full((len(names), len(METRICS)), np.nan)
    for j, name in enumerate(names):
        alone = {other: 1.0 if other == name else 0.0 for other in names}
        row = board_metrics(summarize(outcomes, weights=alone)).values()
        figures[j] = [np.nan if v is None else v for v in row]
    usable = len(set(names)) == len(names) and not np.isinf(figures).any()
    keys = tuple(o.derived_from or o.dataset for o in outcomes)
    return (keys if usable else None), tuple(o.weight for o in outcomes), figures


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
    #: How a figure was obtained, where its metric says (energy: estimated or measured).
    methods: dict[str, Method] = field(default_factory=dict)
    predictions: dict[str, str] = field(default_factory=dict)
    #: Its per-dataset figures and outcomes, packed.
    details: EntryDetails = field(default_factory=EntryDetails)
    #: Predictions made elsewhere, scored as given (no throughput, memory or energy).
    predictions_only: bool = False
    #: Its ``metrics`` packed (``scoring.packed_figures``), once :func:`figure_arrays_of`
    #: first read it: a board's new version shares its unchanged entries with the one
    #: before, so it packs only its new rows (at 100,000 rows, reading every row's
    #: metrics again took 0.4 s of the first request after each new result).
    packed: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def per_dataset(self) -> dict[str, dict[str, Any]]:
        """Dataset -> its figures (unpacked on each read: bind it once)."""
        return self.details.per_dataset

    @property
    def outcomes(self) -> list[DatasetOutcome]:
        """The finished results on scoring datasets (unpacked on each read: bind it once)."""
        return self.details.outcomes

    def busiest_load(self) -> float | None:
        """The largest share of the worker's CPU other processes used while this model was
        timed on an original dataset; None when no load was recorded."""
        return self.details.busiest_load

    @property
    def contended(self) -> bool:
        """Whether it was timed while other processes used more than
        ``evaluator.CONTENDED_SHARE`` of the worker's CPU (the board's "busy worker")."""
        share = self.busiest_load()
        return share is not None and share > CONTENDED_SHARE


def counted_arrays(rows: Sequence[EntryDetails]) -> FloatArray:
    """``(rows, outcomes, len(METRICS))``: the counted figures of rows with as many
    counted outcomes each (:attr:`EntryDetails.counted_figures`), read in one join
    (read-only)."""
    joined = b"".join([d.counted_figures for d in rows])
    return np.frombuffer(joined, dtype=np.float64).reshape(len(rows), -1, len(METRICS))


def figure_arrays_of(entries: Sequence[ModelEntry]) -> tuple[FloatArray, NDArray[np.bool_]]:
    """``scoring.figure_arrays`` of the entries' metrics (``scoring.METRICS``' order),
    each entry's row packed once (:attr:`ModelEntry.packed`). An entry is never changed
    once made; a copy with other metrics (``leaderboard.table``) packs its own."""
    names = list(METRICS)
    unpacked = [m for m in entries if m.packed is None]
    # Two requests packing one entry at once write the same bytes.
    for entry, packed in zip(
        unpacked, packed_figures((m.metrics for m in unpacked), names), strict=True
    ):
        entry.packed = packed
    return unpacked_figures([m.packed or b"" for m in entries], names)  # each packed above


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


def derive_entry(
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
        predictions_only=submission.kind == SubmissionKind.PREDICTIONS,
    )
    per_dataset: dict[str, dict[str, Any]] = {}
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
        per_dataset[job.dataset.name] = shown_metrics(job.result.metrics)
        if job.result.predictions_key:
            entry.predictions[job.dataset.name] = job.result.predictions_key
        if job.dataset_id in scoring_ids:
            finished.add(job.dataset_id)
            outcomes.append(outcome)
    entry.complete = bool(scoring_ids) and finished == scoring_ids
    entry.details = EntryDetails.of(per_dataset, outcomes)
    if entry.complete:
        summary = summarize(outcomes)
        entry.metrics = board_metrics(summary)
        entry.methods = board_methods(summary)
    return entry
