"""The embedded default: WorkerPool threads running real jobs (local sandbox, SQLite)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from datasets_registry.registry import list_datasets
from evalboard.core.context import Context
from evalboard.core.tables import Dataset, Job, Result
from evaluator import (
    RunOptions,
    TestSet,
    WorkerPool,
    enqueue_submission,
    evaluate,
    read_records,
    run_job,
    stored_outcome,
    summarize,
)
from tests.evaluator.conftest import BundleFactory, submit
from tests.helpers.tasks import sentiment_spec


def _finished_jobs(ctx: Context) -> list[tuple[Job, Dataset, Result | None]]:
    with ctx.db.session() as session:
        rows = session.execute(
            select(Job, Dataset).join(Dataset, Job.dataset_id == Dataset.id).order_by(Job.id)
        ).all()
        return [
            (job, dataset, session.scalar(select(Result).where(Result.job_id == job.id)))
            for job, dataset in rows
        ]


def test_jobs_give_the_same_numbers_as_a_direct_evaluation(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    bundle = keyword_bundle(log_lines=3)
    submission = submit(ctx, bundle)
    with WorkerPool(ctx, concurrency=2, poll_s=0.05) as pool:
        created = enqueue_submission(ctx, submission)
        pool.wake()
        assert pool.wait_idle(timeout=120)
    rows = _finished_jobs(ctx)
    assert len(rows) == len(created) == 3  # mini and its robustness and fairness copies
    datasets = list_datasets(ctx, sentiment_task)
    names = {d.id: d.name for d in datasets}
    direct = evaluate(
        bundle,
        task=sentiment_spec(),
        datasets=[
            TestSet.from_table(ctx, d, derived_from=names.get(d.derived_from_id or -1))
            for d in datasets
        ],
        options=RunOptions(sandbox="local", measure_energy=False),
    )
    outcomes = []
    for job, dataset, result in rows:
        assert job.status == "finished" and job.attempts == 1 and job.lease_owner is None
        # The model's last lines, kept for the submitter's page.
        assert job.log_tail is not None and "model log line 2" in job.log_tail
        assert result is not None and result.predictions_key is not None
        assert ctx.artifacts.exists(result.predictions_key)
        assert result.provenance["dataset_sha256"][dataset.name] == dataset.sha256
        assert result.provenance["sandbox"] == "local"
        assert result.metrics["schema_version"] == 1
        original = next((d for d in datasets if d.id == dataset.derived_from_id), None)
        outcome = stored_outcome(result, dataset, original)
        outcomes.append(outcome)
        expected = direct.outcome(dataset.name).metrics
        assert expected is not None and outcome.metrics is not None
        for figure in ("perf", "fairness", "robustness", "examples", "ece"):
            assert getattr(outcome.metrics, figure) == getattr(expected, figure), figure
    assert summarize(outcomes).perf == direct.summary.perf


def test_a_model_failure_fails_its_jobs_with_the_reason(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    submission = submit(ctx, keyword_bundle(mode="unknown_label"))
    with WorkerPool(ctx, concurrency=1, poll_s=0.05) as pool:
        enqueue_submission(ctx, submission)
        assert pool.wait_idle(timeout=120)
    for job, _, result in _finished_jobs(ctx):
        assert (job.status, job.reason, result) == ("failed", "protocol_error", None)
        assert "'banana'" in (job.message or "")


def test_a_fault_of_ours_is_retried_then_failed_as_a_platform_error(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    from evalboard.core.tables import Submission
    from evaluator.jobs.queue import MAX_ATTEMPTS

    submission = submit(ctx, keyword_bundle())
    with ctx.db.session() as session:
        row = session.get(Submission, submission)
        assert row is not None
        ctx.artifacts.delete(row.artifact_key)  # the store lost the bundle
    with WorkerPool(ctx, concurrency=1, poll_s=0.02) as pool:
        enqueue_submission(ctx, submission)
        assert pool.wait_idle(timeout=120)
    for job, _, result in _finished_jobs(ctx):
        assert (job.status, job.reason, result) == ("failed", "platform_error", None)
        assert job.attempts == MAX_ATTEMPTS
    with ctx.db.session() as session:
        row = session.get(Submission, submission)
        assert row is not None and row.platform_fault


def test_a_reaper_cycle_without_a_docker_engine_does_not_fail(
    ctx: Context, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    caplog.set_level(logging.DEBUG, logger="evaluator.jobs.lease")

    WorkerPool(ctx, concurrency=1).reap()

    [record] = [r for r in caplog.records if r.name == "evaluator.jobs.lease"]
    assert record.levelno == logging.DEBUG
    assert "not looking for orphaned sandbox containers" in record.getMessage()


def test_a_copy_is_compared_with_the_stored_predictions_on_its_originals(
    ctx: Context, sentiment_task: str, keyword_bundle: BundleFactory
) -> None:
    submission = submit(ctx, keyword_bundle())
    enqueue_submission(ctx, submission)
    jobs = {dataset.name: job for job, dataset, _ in _finished_jobs(ctx)}
    assert run_job(ctx, jobs["mini"].id, sandbox="local") == "finished"
    # Rewrite what the original's job stored: if the copy's job predicted the originals
    # again it would not see this; reusing the stored predictions, it must.
    with ctx.db.session() as session:
        key = session.scalar(select(Result.predictions_key).where(Result.job_id == jobs["mini"].id))
    assert key is not None
    records = read_records(ctx.artifacts.read_bytes(key))
    predicted = {str(r["uid"]): r["output"]["label"] for r in records}
    labels = sentiment_spec().output.labels
    tampered = {
        uid: labels[(labels.index(label) + 1) % len(labels)] for uid, label in predicted.items()
    }
    for record in records:
        label = tampered[str(record["uid"])]
        record["output"] = {"label": label, "probs": {label: 1.0}}
    ctx.artifacts.put_bytes(key, "".join(json.dumps(r) + "\n" for r in records).encode())

    assert run_job(ctx, jobs["robustness-mini"].id, sandbox="local") == "finished"
    with ctx.db.session() as session:
        result = session.scalar(select(Result).where(Result.job_id == jobs["robustness-mini"].id))
    assert result is not None and result.predictions_key is not None
    perturbed = read_records(ctx.artifacts.read_bytes(result.predictions_key))

    def agreement(originals: dict[str, str]) -> float:
        same = [r["output"]["label"] == originals[str(r["input_id"])] for r in perturbed]
        return 100 * sum(same) / len(same)

    assert agreement(tampered) != agreement(predicted)
    assert result.metrics["robustness"] == pytest.approx(agreement(tampered))
