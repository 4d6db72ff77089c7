"""What an evaluation produces: per-dataset metrics, task averages, energy and provenance.

These are the pydantic models that cross boundaries (the CLI's ``--json``, the ``results``
table, the API). A stored result carries ``schema_version``; bump it when a field changes
meaning, never silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, Protocol, Self

from pydantic import BaseModel, ConfigDict, Field

from evaluator.load import WorkerLoad

__all__ = [
    "LOG_TAIL_BYTES",
    "LOG_TAIL_LINES",
    "SCHEMA_VERSION",
    "DatasetFacts",
    "DatasetMetrics",
    "DatasetOutcome",
    "Energy",
    "EvaluationResult",
    "Failure",
    "PowerModel",
    "Provenance",
    "TaskMetrics",
    "shown_metrics",
    "stored_metrics",
]

SCHEMA_VERSION = 1


#: What a finished run keeps of the model's log: its last lines, capped twice.
LOG_TAIL_LINES = 50
LOG_TAIL_BYTES = 8 * 1024


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Failure(_Model):
    """Why a model failed on a dataset, in the sandbox's exact words."""

    reason: str = Field(description="A FailureReason value: oom, timeout, crashed, ...")
    message: str = Field(description="What went wrong and how to fix it.")
    log_tail: str = Field("", description="The last lines the model wrote.")


class DatasetMetrics(_Model):
    """Every figure measured on one dataset; ``None`` where it does not apply."""

    perf: float | None = Field(
        None, description="Task metric x100 against gold (not on perturbed copies)."
    )
    perf_metric: str = Field(
        description="The task's perf metric: accuracy, macro_f1, squad_f1, or for a text "
        "task chrf, bleu, rouge_l, text_f1 or exact_match."
    )
    extra: dict[str, float] = Field(
        default_factory=dict, description="Other task metrics x100 (e.g. squad_em, accuracy)."
    )
    fairness: float | None = Field(None, description="x100; fairness copies only.")
    robustness: float | None = Field(None, description="x100; robustness copies only.")
    examples: int = Field(ge=0, description="Examples predicted in the timed phase.")
    throughput: float | None = Field(
        None,
        ge=0,
        description="Examples per second: the median of the timed runs (throughput_runs); "
        "None for predictions made elsewhere (a predictions-only submission).",
    )
    batch_size: int | None = Field(
        None, ge=1, description="Examples per request in the timed phase (None: predictions only)."
    )
    predict_s: float | None = Field(
        None, ge=0, description="Seconds of the timed prediction phase (None: predictions only)."
    )
    startup_s: float | None = Field(None, description="Sandbox start until the model's hello.")
    latency_p50_s: float | None = Field(None, description="Median seconds per batch.")
    latency_p95_s: float | None = Field(None, description="95th percentile seconds per batch.")
    memory_gib: float | None = Field(None, description="Peak memory of the sandbox, GiB.")
    cpu_seconds: float | None = Field(None, description="CPU time used by the sandbox.")
    cpu_per_example_s: float | None = Field(
        None,
        description="CPU seconds the sandbox used per example in the timed phase (its "
        "cgroup; the local sandbox: its process). A neighbour on the worker's cores moves "
        "it less than throughput.",
    )
    ece: float | None = Field(
        None, description="Expected calibration error x100, where the model gave probabilities."
    )
    energy_kwh: float | None = Field(
        None, description="Energy of this dataset's run (codecarbon; see Energy.estimate)."
    )
    co2_kg: float | None = Field(None, description="CO2-equivalent of that energy.")
    energy_j_per_1k: float | None = Field(
        None,
        ge=0,
        description="Energy attributed to the sandbox per 1,000 examples of the timed phase, "
        "joules (evaluator.power; the provenance's power model says how); None: no cgroup CPU "
        "time (the local sandbox) or no power model.",
    )
    energy_method: Literal["estimated", "measured"] | None = Field(
        None,
        description="How energy_j_per_1k was obtained: measured (RAPL, and NVML for a GPU) "
        "or estimated (codecarbon's power for this CPU times the CPU time).",
    )
    throughput_runs: list[float] = Field(
        default_factory=list,
        description="Examples per second of each timed run (at least 3; see docs/scoring.md).",
    )
    latency_p50_runs: list[float] = Field(
        default_factory=list, description="Median seconds per batch of each timed run."
    )
    load: WorkerLoad | None = Field(
        None, description="The worker's load while this dataset was timed."
    )


class DatasetFacts(Protocol):
    """What a dataset is, as an outcome names it: a TestSet or a stored dataset row."""

    @property
    def name(self) -> str: ...
    @property
    def sha256(self) -> str: ...
    @property
    def round(self) -> int: ...
    @property
    def access(self) -> str: ...
    @property
    def weight(self) -> float: ...
    @property
    def perturbation(self) -> str | None: ...


class DatasetOutcome(_Model):
    """One dataset of the evaluation: what it is, and what came of it."""

    dataset: str
    sha256: str
    round: int = 0
    access: str = "scoring"
    weight: float = 1.0
    perturbation: Literal["robustness", "fairness"] | None = None
    derived_from: str | None = None
    status: Literal["finished", "failed"] = "finished"
    metrics: DatasetMetrics | None = None
    failure: Failure | None = None
    predictions: str | None = Field(
        None, description="Path or artifact key of the per-example predictions (JSONL)."
    )
    log_tail: str | None = Field(
        None,
        description="A finished run's last log lines (at most LOG_TAIL_LINES lines and "
        "LOG_TAIL_BYTES bytes); never kept for a hidden dataset, whose inputs a model could "
        "print. A failed run's are in failure.log_tail.",
    )

    @classmethod
    def of(cls, dataset: DatasetFacts, *, derived_from: str | None, **fields: Any) -> Self:
        """The outcome on ``dataset``: its header copied from the dataset, then ``fields``."""
        return cls(
            dataset=dataset.name,
            sha256=dataset.sha256,
            round=dataset.round,
            access=dataset.access,
            weight=dataset.weight,
            perturbation=dataset.perturbation,
            derived_from=derived_from,
            **fields,
        )


class TaskMetrics(_Model):
    """Dataset-weighted averages over the task's scoring datasets (and their copies)."""

    perf: float | None = None
    throughput: float | None = None
    memory_gib: float | None = None
    fairness: float | None = None
    robustness: float | None = None
    latency_p50_s: float | None = None
    latency_p95_s: float | None = None
    startup_s: float | None = None
    cpu_seconds: float | None = None
    ece: float | None = None
    energy_j_per_1k: float | None = Field(
        None, description="Averaged over the originals that have one (see DatasetMetrics)."
    )
    energy_method: Literal["estimated", "measured"] | None = Field(
        None, description="measured only if every averaged figure was measured."
    )
    extra: dict[str, float] = Field(
        default_factory=dict,
        description="The task's other metrics x100 (for a text task every text metric "
        "beside perf), averaged like perf; a metric some original lacks is left out.",
    )


class Energy(_Model):
    """Energy and emissions of the whole evaluation, from codecarbon's offline tracker."""

    kwh: float | None = None
    co2_kg: float | None = None
    estimate: bool = Field(
        True,
        description="True when no RAPL or GPU counter was read: "
        "codecarbon then estimates from CPU load and a TDP table.",
    )
    method: str = ""
    country_iso_code: str = ""


class PowerModel(_Model):
    """How the sandbox's energy was worked out, with every input (``evaluator.power``)."""

    method: Literal["estimated", "measured"] = Field(
        description="measured: the RAPL counters (and NVML for a GPU); estimated: a power "
        "figure for this CPU times the sandbox's CPU time."
    )
    source: str = Field(description="Where the power figure or the counters came from.")
    cpu_model: str = ""
    tdp_w: float | None = Field(
        None, description="codecarbon's full-load power of the machine's CPUs (its TDP table)."
    )
    cpus: int = Field(0, ge=0, description="Logical CPUs the TDP is spread over.")
    watts_per_cpu: float | None = Field(
        None, description="tdp_w / cpus: one CPU second costs this many joules (estimated)."
    )
    rapl_zones: list[str] = Field(
        default_factory=list, description="The RAPL package zones read (measured)."
    )
    gpu: str | None = Field(
        None, description="How a GPU's energy was read (NVML), None when none was counted."
    )


class Provenance(_Model):
    """Everything needed to reproduce (or doubt) a number."""

    bundle_sha256: str
    image_digest: str | None = None
    dataset_sha256: dict[str, str] = Field(default_factory=dict)
    evaluator_version: str
    sandbox: str
    sandbox_isolating: bool = True
    limits: dict[str, Any] = Field(default_factory=dict)
    cpu_model: str = ""
    cpu_count: int = 0
    gpu: str | None = None
    seed: int = 0
    power: PowerModel | None = Field(
        None, description="How energy_j_per_1k was worked out; None where it was not."
    )
    python: str = ""
    platform: str = ""
    started_at: datetime
    finished_at: datetime


class EvaluationResult(_Model):
    """A submission over every dataset of its task."""

    schema_version: int = SCHEMA_VERSION
    task: str
    model: str = Field("", description="The bundle's name, as its hello gave it.")
    datasets: list[DatasetOutcome]
    summary: TaskMetrics
    energy: Energy
    provenance: Provenance

    @property
    def failed(self) -> list[DatasetOutcome]:
        return [outcome for outcome in self.datasets if outcome.status == "failed"]

    def outcome(self, dataset: str) -> DatasetOutcome:
        for item in self.datasets:
            if item.dataset == dataset:
                return item
        known = ", ".join(item.dataset for item in self.datasets)
        raise KeyError(f"No dataset {dataset!r} in this result; known: {known}")


def stored_metrics(metrics: DatasetMetrics) -> dict[str, Any]:
    """A dataset's metrics as a job's result row keeps them: with the schema version."""
    return {"schema_version": SCHEMA_VERSION, **metrics.model_dump(mode="json")}


def shown_metrics(stored: Mapping[str, Any]) -> dict[str, Any]:
    """A job's stored metrics as the table, the API and :func:`stored_outcome` read them:
    the figures without the schema version."""
    return {k: v for k, v in stored.items() if k != "schema_version"}
