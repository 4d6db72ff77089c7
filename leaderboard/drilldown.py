"""Per-example drill-down: each example's inputs, gold answer, the model's output and score.

Only for datasets the caller may see (callers check access); the records come from the
result's predictions file, the inputs from the dataset itself.
"""

from __future__ import annotations

from typing import Any

from datasets_registry import GOLD_FIELDS, get_task, read_examples
from evalboard.core.context import Context
from evalboard.core.errors import NotFound
from evalboard.core.states import Access
from evalboard.core.tables import Job, Submission
from leaderboard.accounts import Principal
from leaderboard.intervals import load_records

__all__ = ["drilldown", "visible_job"]

# Not the model's inputs: the gold (of any output type) and the bookkeeping fields.
_NOT_INPUTS = ("uid", *GOLD_FIELDS, "input_id", "perturbation")


def visible_job(principal: Principal, submission: Submission, dataset: str) -> Job:
    """The submission's job on ``dataset`` if ``principal`` may see its examples: a hidden
    dataset's only for the task owner.

    Raises:
        NotFound: no such job, or a hidden one (named as if it did not exist).
    """
    job = next((j for j in submission.jobs if j.dataset.name == dataset), None)
    if job is None or (
        job.dataset.access == Access.HIDDEN and not principal.owns(submission.task_id)
    ):
        raise NotFound(
            f"Submission {submission.id} has no results on a dataset {dataset!r} you may see"
        )
    return job


def drilldown(
    ctx: Context,
    submission: Submission,
    job: Job,
    *,
    offset: int = 0,
    limit: int = 50,
    wrong_only: bool = False,
) -> list[dict[str, Any]]:
    """Examples ``offset .. offset+limit`` (after the ``wrong_only`` filter), in file order."""
    if job.result is None or not job.result.predictions_key:
        return []
    records = load_records(ctx, job.result.predictions_key)
    if wrong_only:
        records = [r for r in records if float(r.get("score", 1.0)) < 1.0]
    page = records[offset : offset + limit]
    task = get_task(ctx, submission.task_id)
    inputs = {
        str(e["uid"]): {k: v for k, v in e.items() if k not in _NOT_INPUTS}
        for e in read_examples(ctx, job.dataset)
    }
    rows = []
    for record in page:
        output = record.get("output", {})
        rows.append(
            {
                "uid": str(record.get("uid")),
                "inputs": inputs.get(str(record.get("uid")), {}),
                "gold": record.get("gold", record.get("original")),
                "prediction": task.prediction(output) if output else None,
                "probs": output.get("probs"),
                "score": record.get("score"),
            }
        )
    return rows
