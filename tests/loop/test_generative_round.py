"""A collection round on the generative task, end to end with real text models: simulated
annotators write SQuAD questions with reference answers against the template model (live,
in its local sandbox), validators verify the ones that fooled it under the task's
``chrf_below`` rule, and the closed round becomes a dataset both models are scored on."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from datasets_registry import add_dataset, create_task, read_examples
from datasets_registry.taskspec import load_task_spec
from evalboard.core.context import Context
from evalboard.core.states import ExampleStatus, Verdict
from evalboard.core.tables import Job
from evaluator import WorkerPool, enqueue_submission
from leaderboard.loop import (
    BundleSandboxes,
    TargetPool,
    close_round,
    collect_example,
    open_round,
    validate_example,
)
from tests.evaluator.conftest import submit
from tests.evaluator.test_generative_qa import ROOT, bundle_dir, generative_examples
from tests.helpers.tasks import write_jsonl
from tests.loop.conftest import People


def test_a_generative_round_closes_into_a_dataset_both_models_are_scored_on(
    ctx: Context, people: People, tmp_path: Path
) -> None:
    spec = load_task_spec(ROOT / "examples" / "tasks" / "generative-qa.yaml")
    spec = spec.model_copy(
        update={
            "model_wrong": spec.model_wrong.model_copy(
                update={"rule": "chrf_below", "threshold": 0.5}
            )
        }
    )
    create_task(ctx, spec)
    questions = generative_examples()
    add_dataset(
        ctx,
        task_id=spec.id,
        name="static",
        path=write_jsonl(tmp_path / "static.jsonl", questions[:10]),
        perturb=False,
    )
    template, baseline = (
        submit(ctx, bundle_dir(name), task_id=spec.id)
        for name in ("overlap_answer_bundle", "first_sentence_bundle")
    )
    round_ = open_round(ctx, spec.id, submission_ids=[template])
    pool = TargetPool(BundleSandboxes(ctx, kind="local"))
    try:
        collected = [
            collect_example(
                ctx,
                spec.id,
                round_.number,
                author_id=people.alice,
                inputs={"context": q["context"], "question": q["question"]},
                gold={"references": q["references"]},
                predictor=pool,
            ).example
            for q in questions[10:22]
        ]
    finally:
        pool.close()
    fooled = [e for e in collected if e.fooled]
    # The template model is wrong often enough (chrF under 0.5), right sometimes.
    assert 0 < len(fooled) < len(collected)
    assert all(e.status == ExampleStatus.NOT_FOOLING for e in collected if not e.fooled)
    for example in fooled:
        assert "text" in example.model_output  # what the annotator saw, live
        for validator in people.validators:
            validate_example(ctx, example.id, user_id=validator, verdict=Verdict.CORRECT)

    closed = close_round(ctx, spec.id, round_.number)
    assert closed.dataset is not None and closed.examples == len(fooled)
    rows = read_examples(ctx, closed.dataset)
    assert all(isinstance(row["references"], list) and row["references"] for row in rows)

    with WorkerPool(ctx, concurrency=2, poll_s=0.05) as workers:
        enqueue_submission(ctx, baseline)
        enqueue_submission(ctx, template)
        workers.wake()
        assert workers.wait_idle(timeout=120)
    with ctx.db.session() as session:
        jobs = session.scalars(select(Job).where(Job.dataset_id == closed.dataset.id)).all()
        scored = {job.submission_id: job.status for job in jobs}
    assert scored == {template: "finished", baseline: "finished"}
