"""A generative task on the board: both text models through the job queue (local
sandbox, the embedded worker pool), ranked by chrF with bootstrap intervals over
sacrebleu's corpus statistics."""

from __future__ import annotations

from pathlib import Path

from datasets_registry import add_dataset, create_task
from datasets_registry.taskspec import load_task_spec
from evalboard.core.context import Context
from evaluator import WorkerPool, enqueue_submission
from leaderboard import build_leaderboard, load_table
from tests.evaluator.conftest import submit
from tests.evaluator.test_generative_qa import bundle_dir, generative_examples
from tests.helpers.tasks import write_jsonl

ROOT = Path(__file__).resolve().parents[2]


def test_the_board_ranks_the_two_text_models_by_chrf(ctx: Context, tmp_path: Path) -> None:
    task = load_task_spec(ROOT / "examples" / "tasks" / "generative-qa.yaml")
    create_task(ctx, task)
    add_dataset(
        ctx,
        task_id=task.id,
        name="squad-gen",
        round=1,
        path=write_jsonl(tmp_path / "squad-gen.jsonl", generative_examples()),
    )
    submissions = [
        submit(ctx, bundle_dir(name), task_id=task.id)
        for name in ("first_sentence_bundle", "overlap_answer_bundle")
    ]
    with WorkerPool(ctx, concurrency=2, poll_s=0.05) as pool:
        for submission in submissions:
            enqueue_submission(ctx, submission)
        pool.wake()
        assert pool.wait_idle(timeout=120)
    # Weighted on chrF alone: with the default weights two close models trade places on
    # throughput and memory, which vary from run to run on a shared machine.
    board = build_leaderboard(ctx, load_table(ctx, task.id), {"perf": 1.0})
    ranked = [row for row in board.rows if row.rank is not None]
    assert [row.name for row in ranked] == ["overlap-answer", "first-sentence"]
    leader, second = ranked
    perf_leader, perf_second = leader.metrics["perf"], second.metrics["perf"]
    assert perf_leader is not None and perf_second is not None and perf_leader > perf_second
    # Fairness and robustness: chrF of each model's answers on the copies against its own.
    assert all(row.metrics["robustness"] is not None for row in ranked)
    assert leader.rank_interval is not None
