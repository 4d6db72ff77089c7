"""One evaluation: a submission over every dataset of its task, measured and scored; and
the job queue that runs evaluations on one machine or many."""

from typing import TYPE_CHECKING

from evalboard.core.lazy import lazy_exports

if TYPE_CHECKING:
    from evaluator.energy import EnergyMeter, warm_up
    from evaluator.evaluation import (
        DatasetRun,
        ProgressSink,
        RunOptions,
        check_bundle_fits,
        evaluate,
        evaluate_dataset,
    )
    from evaluator.jobs.broker import run_celery_worker
    from evaluator.jobs.dispatch import Dispatcher, dispatcher_for, ping_broker
    from evaluator.jobs.faults import store_fault
    from evaluator.jobs.heartbeat import WorkerHeartbeat, live_workers
    from evaluator.jobs.job import execute_claimed, run_job, stored_outcome
    from evaluator.jobs.lease import Lease, reap_orphan_sandboxes, worker_identity
    from evaluator.jobs.pool import WorkerPool
    from evaluator.jobs.queue import (
        cancel_submission,
        claim,
        claim_next,
        enqueue_submission,
        queue_missing_jobs,
        reap_expired,
    )
    from evaluator.load import CONTENDED_SHARE, LoadMeter, WorkerLoad
    from evaluator.measurement import Aborted, check_outputs, measure
    from evaluator.provenance import gpu_name
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
    from evaluator.scorecard import outputs_by_uid, read_records, score, summarize
    from evaluator.testset import TestSet, model_inputs


# Names load on first use (evalboard.core.lazy): a reader of one name (the energy meter,
# a result model) does not pay for the queue (sqlalchemy) and the sandboxes (docker).
__getattr__, __dir__, __all__ = lazy_exports(
    __name__,
    {
        "evaluator.jobs.dispatch": ("Dispatcher", "dispatcher_for", "ping_broker"),
        "evaluator.energy": ("EnergyMeter", "warm_up"),
        "evaluator.jobs.broker": ("run_celery_worker",),
        "evaluator.jobs.faults": ("store_fault",),
        "evaluator.jobs.heartbeat": ("WorkerHeartbeat", "live_workers"),
        "evaluator.provenance": ("gpu_name",),
        "evaluator.evaluation": (
            "DatasetRun",
            "ProgressSink",
            "RunOptions",
            "check_bundle_fits",
            "evaluate",
            "evaluate_dataset",
        ),
        "evaluator.jobs.job": (
            "execute_claimed",
            "run_job",
            "stored_outcome",
        ),
        "evaluator.jobs.lease": (
            "Lease",
            "reap_orphan_sandboxes",
            "worker_identity",
        ),
        "evaluator.load": (
            "CONTENDED_SHARE",
            "LoadMeter",
            "WorkerLoad",
        ),
        "evaluator.measurement": (
            "Aborted",
            "check_outputs",
            "measure",
        ),
        "evaluator.jobs.pool": ("WorkerPool",),
        "evaluator.jobs.queue": (
            "cancel_submission",
            "claim",
            "claim_next",
            "enqueue_submission",
            "queue_missing_jobs",
            "reap_expired",
        ),
        "evaluator.result": (
            "SCHEMA_VERSION",
            "DatasetMetrics",
            "DatasetOutcome",
            "Energy",
            "EvaluationResult",
            "Failure",
            "Provenance",
            "TaskMetrics",
            "shown_metrics",
            "stored_metrics",
        ),
        "evaluator.scorecard": (
            "outputs_by_uid",
            "read_records",
            "score",
            "summarize",
        ),
        "evaluator.testset": (
            "TestSet",
            "model_inputs",
        ),
    },
)
