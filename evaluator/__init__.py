"""One evaluation: a submission over every dataset of its task, measured and scored; and
the job queue that runs evaluations on one machine or many."""

from evaluator.broker import ping_broker
from evaluator.energy import EnergyMeter
from evaluator.evaluation import DatasetRun, ProgressSink, evaluate, evaluate_dataset
from evaluator.job import execute_claimed, run_job, stored_outcome
from evaluator.lease import Lease, reap_orphan_sandboxes, worker_identity
from evaluator.load import CONTENDED_SHARE, LoadMeter, WorkerLoad
from evaluator.measurement import Aborted, check_outputs, measure
from evaluator.pool import WorkerPool
from evaluator.queue import (
    cancel_submission,
    claim,
    claim_next,
    enqueue_submission,
    queue_missing_jobs,
    reap_expired,
)
from evaluator.result import (
    SCHEMA_VERSION,
    DatasetMetrics,
    DatasetOutcome,
    Energy,
    EvaluationResult,
    Failure,
    Provenance,
    TaskMetrics,
    shown_metrics,
    stored_metrics,
)
from evaluator.scorecard import outputs_by_uid, read_records, summarize
from evaluator.testset import TestSet, model_inputs

__all__ = [
    "CONTENDED_SHARE",
    "SCHEMA_VERSION",
    "Aborted",
    "DatasetMetrics",
    "DatasetOutcome",
    "DatasetRun",
    "Energy",
    "EnergyMeter",
    "EvaluationResult",
    "Failure",
    "Lease",
    "LoadMeter",
    "ProgressSink",
    "Provenance",
    "TaskMetrics",
    "TestSet",
    "WorkerLoad",
    "WorkerPool",
    "cancel_submission",
    "check_outputs",
    "claim",
    "claim_next",
    "enqueue_submission",
    "evaluate",
    "evaluate_dataset",
    "execute_claimed",
    "measure",
    "model_inputs",
    "outputs_by_uid",
    "ping_broker",
    "queue_missing_jobs",
    "read_records",
    "reap_expired",
    "reap_orphan_sandboxes",
    "run_job",
    "shown_metrics",
    "stored_metrics",
    "stored_outcome",
    "summarize",
    "worker_identity",
]
