"""The generative task end to end in the Docker sandbox with a real language model: the
demo's GPT-2 (trained from scratch, transformers runtime, ``generate()`` in batches) and
the template n-gram model, on SQuAD 2.0 dev questions read from ../shared/datasets.

chrF and BLEU are sacrebleu's own corpus figures over the predictions the sandbox gave;
the board ranks both models with every metric, through the job queue and the worker pool.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import sacrebleu

from datasets_registry import add_dataset, create_task
from datasets_registry.taskspec import TaskSpec, load_task_spec
from evalboard.core.context import Context
from evaluator import RunOptions, WorkerPool, enqueue_submission, evaluate
from leaderboard import build_leaderboard, load_table
from tests.evaluator.conftest import submit
from tests.evaluator.test_generative_qa import bundle_dir, generative_examples, generative_sets
from tests.helpers.tasks import write_jsonl

pytestmark = pytest.mark.docker

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def task() -> TaskSpec:
    return load_task_spec(ROOT / "examples" / "tasks" / "generative-qa.yaml")


@pytest.fixture(scope="module")
def engine() -> Any:
    docker = pytest.importorskip("docker")
    try:
        client = docker.from_env(timeout=30)
        client.ping()
    except Exception as exc:  # any failure means: no usable engine here
        pytest.skip(f"no Docker engine ({exc})")
    return client


def _streams(references: list[list[str]]) -> list[list[str | None]]:
    width = max(map(len, references))
    return [[r[k] if k < len(r) else None for r in references] for k in range(width)]


def test_the_gpt2_bundle_answers_in_the_docker_sandbox_scored_as_sacrebleu_scores(
    engine: Any, gpt2_bundle: Path, task: TaskSpec, tmp_path: Path
) -> None:
    result = evaluate(
        gpt2_bundle,
        task=task,
        datasets=generative_sets(),
        options=RunOptions(sandbox="docker", measure_energy=False),
        predictions_dir=tmp_path,
    )
    outcome = result.outcome("squad-gen")
    assert not result.failed, outcome.failure
    assert result.provenance.sandbox == "docker"
    assert outcome.metrics is not None and outcome.predictions is not None
    records = [json.loads(line) for line in Path(outcome.predictions).read_text().splitlines()]
    texts = [r["output"]["text"] for r in records]
    streams = _streams([r["gold"] for r in records])
    assert outcome.metrics.perf == sacrebleu.corpus_chrf(texts, streams).score
    assert outcome.metrics.extra["bleu"] == sacrebleu.corpus_bleu(texts, streams).score
    # A model that generates: answers differ from one another, and none runs past the
    # stop string (a new line) or the task's 32 new tokens (a token is at least a byte).
    assert len(set(texts)) > 1
    assert all("\n" not in text and len(text.encode()) <= 32 * 8 for text in texts)
    assert outcome.metrics.throughput is not None and outcome.metrics.throughput > 0
    copy = result.outcome("squad-gen-lower").metrics
    assert copy is not None and copy.robustness is not None


def test_the_board_ranks_gpt2_and_the_ngram_model_with_every_metric(
    engine: Any, gpt2_bundle: Path, ctx: Context, task: TaskSpec, tmp_path: Path
) -> None:
    create_task(ctx, task)
    examples = generative_examples()[:40]
    add_dataset(
        ctx,
        task_id=task.id,
        name="squad-gen",
        round=1,
        path=write_jsonl(tmp_path / "squad-gen.jsonl", examples),
    )
    submissions = [
        submit(ctx, bundle, task_id=task.id)
        for bundle in (gpt2_bundle, bundle_dir("overlap_answer_bundle"))
    ]
    with WorkerPool(ctx, concurrency=1, poll_s=0.05, sandbox="docker") as pool:
        for submission in submissions:
            enqueue_submission(ctx, submission)
        pool.wake()
        assert pool.wait_idle(timeout=600)
    table = load_table(ctx, task.id)
    board = build_leaderboard(ctx, table)
    ranked = [row for row in board.rows if row.rank is not None]
    assert sorted(row.name for row in ranked) == ["overlap-answer", "tiny-gpt2"]
    shown = {metric.name for metric in board.metrics}
    for row in ranked:
        # Every metric of the board has a value for both models, and the Dynascore too.
        assert {name for name, value in row.metrics.items() if value is not None} >= shown - {
            "fairness"
        }, row.metrics
        assert row.dynascore is not None
    # Ranked by chrF alone, the order is that of the two perf figures.
    by_perf = build_leaderboard(ctx, table, {"perf": 1.0})
    order = [row for row in by_perf.rows if row.rank is not None]
    perfs = [row.metrics["perf"] for row in order]
    assert all(p is not None for p in perfs)
    assert perfs == sorted(perfs, reverse=True)  # type: ignore[type-var]
